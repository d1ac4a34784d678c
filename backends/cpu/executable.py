"""The cpu backend's Executable: kernels loaded (or compiled) at construction, one numba
driver per specialization, compiled on the first call. With JITC_CONCURRENT (the default),
independent small kernels of one call run concurrently (schedule.py)."""

from __future__ import annotations

import functools
import os

import numpy as np

from jitc import config, failures
from jitc.backends.cpu import schedule
from jitc.backends.cpu.cache import load_module, seal
from jitc.backends.cpu.driver import FAILED, FAILURE_OF, LAUNCH_ENTRY, LAUNCH_TABLE, emit
from jitc.backends.cpu.launcher import group_address, launcher_address, launcher_module
from jitc.backends.cpu.lowering import storage
from jitc.backends.cpu.plan import plan_program
from jitc.backends.cpu.threads import single_threaded_scipy_blas
from jitc.backends.cpu.wide import collector_modules, wide_run
from jitc.failures import KERNEL_FAILURES
from jitc.ir import Graph


class CpuExecutable:
    def __init__(self, graph: Graph):
        single_threaded_scipy_blas()
        if config.CONCURRENT:
            self.graph, self.program, launches = schedule.schedule(graph, graph.name)
        else:
            self.graph, self.program, launches = graph, plan_program(graph, graph.name), None
        emitted = emit(self.program, launches)
        self.launch_kernels = emitted.launch_kernels
        self.source = "\n\n".join(emitted.kernel_sources + [emitted.driver_source])
        if config.DUMP_DIR:
            os.makedirs(config.DUMP_DIR, exist_ok=True)
            with open(os.path.join(config.DUMP_DIR, f"{graph.name}.cpu.py"), "w") as f:
                f.write(self.source)
        self.kernel_modules = [load_module(s) for s in emitted.kernel_sources]
        addresses = [m.kernel.address for m in self.kernel_modules]
        self.constants = [_frozen(c) for c in emitted.constants]  # the state points at them
        state = emitted.state(launcher_address(), group_address(),
                              [addresses[i] for i in emitted.source_of_kernel], self.constants)
        self.state = state  # the driver notes a failed launch in it
        self.module = load_module(emitted.driver_source)
        self.results = [(tuple(shape), np.dtype(dtype)) for shape, dtype in self.program.results]
        # the driver with its state bound, called with the arguments and the result arrays
        # to fill; it raises SignatureMiss for other shapes, and numba's dispatch a TypeError
        # for other array types (see __call__)
        self.compiled_modules = self.kernel_modules + [self.module]
        if emitted.wide:
            types = self.program.params + self.program.results
            self.checked_run = wide_run(self.module.driver, state, types)
            self.compiled_modules += collector_modules(types)
        else:
            self.checked_run = functools.partial(self.module.driver, state)
        self._sealed = False

    def __call__(self, *arrays):
        """Outputs for these arrays, as a list. Each goes in as a C-contiguous, writeable,
        aligned array, and so does each result: the driver's one numba signature."""
        arrays = [a if _plain(a) else np.array(a, order="C") for a in arrays]
        outs = [np.empty(shape, dtype) for shape, dtype in self.results]
        try:
            self.checked_run(*map(_stored, arrays), *map(_stored, outs))
        except KERNEL_FAILURES as e:
            located = self.failure(e)
            if located is None:
                raise
            raise located from None
        if not self._sealed:
            for m in self.compiled_modules + [launcher_module()]:
                seal(m)
            self._sealed = True
        return outs

    def failure(self, error: Exception) -> Exception | None:
        """The driver's `error` naming the NumPy call and line of the nodes of the launch
        that failed (None: not a kernel failure). The fast path (jitc/fastpath.py) calls
        checked_run itself, and this on a failure."""
        kind = FAILURE_OF.get((type(error).__name__, str(error)))
        if kind is None:
            return None
        launch = (int(self.state[FAILED]) - int(self.state[LAUNCH_TABLE])) // LAUNCH_ENTRY
        (kernel,) = self.launch_kernels[launch]  # a kernel that can fail runs alone
        return failures.located(self.program.kernels[kernel].sites, kind, type(error),
                                str(error))

    def can_write_into(self, param_index: int, output_index: int) -> bool:
        """May the caller pass parameter `param_index`'s array as the buffer of result
        `output_index` (the driver then writes the new contents in place, no copy)?"""
        from jitc.fusion.buffers import can_write_into_parameter

        return can_write_into_parameter(self.graph, param_index, output_index)

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.graph)


def _stored(a):
    """`a` as the driver reads it: a float16 array as a view of its bits (half.py)."""
    return a.view(storage(a.dtype)) if a.dtype == np.float16 else a


def _frozen(c: np.ndarray) -> np.ndarray:
    """A read-only C-contiguous copy of a constant the kernels read by address (the tracer
    freezes captured arrays; constant folding makes writeable ones)."""
    if c.flags.c_contiguous and not c.flags.writeable and c.flags.aligned:
        return c
    c = np.array(c, order="C")
    c.flags.writeable = False
    return c


def _plain(a) -> bool:
    flags = a.flags
    return flags.c_contiguous and flags.writeable and flags.aligned
