"""The cpu backend's Executable: kernels loaded (or compiled) at construction, one numba
driver per specialization. A driver not in the cache compiles on jitc's background thread
while the calls run the wide driver (wide.py), compiled once per installation: a cold first
call waits for its kernels only. With JITC_CONCURRENT=1 (opt-in), independent small kernels
of one call run concurrently (schedule.py)."""

from __future__ import annotations

import functools
import logging
import os
import time

import numpy as np

from jitc.backends import Executable
from jitc.backends.cpu import blas, schedule
from jitc.backends.cpu.driver import (
    FAILED,
    FAILURE_OF,
    LAUNCH_ENTRY,
    LAUNCH_TABLE,
    LAUNCHER,
    PACK_BASE,
    WIDE_DRIVER_SOURCE,
    emit,
)
from jitc.backends.cpu.launcher import group_address, launcher_address, launcher_module, splits
from jitc.backends.cpu.lowering import storage
from jitc.backends.cpu.plan import plan_program
from jitc.backends.cpu.wide import collector_modules, plain, posting_run, table_run, wide_run
from jitc.backends.native import background
from jitc.backends.native.cache import is_cached, load_module, seal
from jitc.backends.native.recycle import allocator
from jitc.core import config, failures, interrupts
from jitc.core.errors import SignatureMiss
from jitc.core.failures import KERNEL_FAILURES
from jitc.core.ir import Graph

log = logging.getLogger("jitc")


class CpuExecutable(Executable):
    def __init__(self, graph: Graph):
        with interrupts.deferred():  # numba's first compile loads its registries
            blas.preload()  # before the first numba compile or cache load
        self.optimized = graph  # as the caller has it: stats() names kernels by its order
        if config.CONCURRENT and not any(n.op == "while" for n in graph.nodes):  # loops: in order
            self.graph, self.program, launches = schedule.schedule(graph, graph.name)
        else:
            self.graph, self.program, launches = graph, plan_program(graph, graph.name), None
        emitted = emit(self.program, launches)
        self.launch_chains = emitted.launch_chains
        # a launch's pack offset -> the launch (profiled_call names launches by their packs)
        self._launch_of_pack = {e[1]: i for i, e in enumerate(emitted.launches)}
        self.source = "\n\n".join(emitted.kernel_sources + [emitted.driver_source])
        if config.DUMP_DIR:
            os.makedirs(config.DUMP_DIR, exist_ok=True)
            with open(os.path.join(config.DUMP_DIR, f"{graph.name}.cpu.py"), "w") as f:
                f.write(self.source)
        self.kernel_modules = [load_module(s) for s in emitted.kernel_sources]
        addresses = [m.kernel.address for m in self.kernel_modules]
        self.constants = [_frozen(c) for c in emitted.constants]  # the state points at them
        state = emitted.state(
            launcher_address(),
            group_address(),
            [addresses[i] for i in emitted.source_of_kernel],
            self.constants,
        )
        self.state = state  # the driver notes a failed launch in it
        self.results = [(tuple(shape), np.dtype(dtype)) for shape, dtype in self.program.results]
        self._allocators = [allocator(shape, dtype) for shape, dtype in self.results]
        self.compiled_modules = list(self.kernel_modules)
        self._wide = emitted.wide
        self._types = self.program.params + self.program.results
        if emitted.wide:
            self.module = wide_driver()
            self.compiled_modules += collector_modules(self._types)
        elif is_cached(emitted.driver_source):
            self.module = load_module(emitted.driver_source)
        else:  # the first calls run the wide driver while this function's own compiles
            self.module = None
            self.compiled_modules.append(wide_driver())
        # the driver with its state bound, called with the arguments and the result arrays
        # to fill; it raises SignatureMiss for other shapes, and numba's dispatch a TypeError
        # for other array types (see __call__)
        self.checked_run = self._runner(state)
        self._profiled_run = None  # (driver, checked_run with every launch timed): profiled_call
        self._sealed = False
        if self.module is None:  # after checked_run: the compile may finish at once and set it
            source = emitted.driver_source
            background.submit(
                self._compile_driver,
                source,
                finish_at_exit=True,
                leftover=lambda: [(source, False)],
            )

    def _runner(self, state):
        if self._wide:
            return wide_run(self.module.driver, state, self._types)
        if self.module is None:
            return self._interim(table_run(wide_driver().driver, state, self._types))
        return functools.partial(self.module.driver, state)

    def _interim(self, run):
        """`run` until this function's own driver has compiled, then a SignatureMiss: a fast
        call bound to it (runtime/fastpath.py) misses once and is made again for the driver."""

        def interim(*arrays):
            if self.module is not None:
                raise SignatureMiss()
            return run(*arrays)

        return interim

    def _compile_driver(self, source):
        """Compile this function's own driver (on the background thread: runtime/tiered.py) and
        switch the calls to it. numba's fixed cost for a function of typed arrays, ~0.35 s,
        is what a cold first call waited for last."""
        start = time.perf_counter()
        try:
            module = load_module(source)
        except Exception as e:  # noqa: BLE001 - the wide driver runs the same kernels
            log.warning(
                "%s: compiling its own driver failed (%s: %s); its calls keep the wide driver",
                self.graph.name,
                type(e).__name__,
                e,
            )
            return
        seal(module)  # cached for the next process even if this one never calls it again
        # the run first: once `module` is set, the wide driver's run misses, and a call that
        # took it must find the new run to retry on (_run)
        self.checked_run = functools.partial(module.driver, self.state)
        self.module = module
        log.info(
            "%s: its own driver compiled in the background in %.2f s",
            self.graph.name,
            time.perf_counter() - start,
        )

    @property
    def launch_kernels(self) -> list:
        """Per launch, the program kernels it runs (its chains', in turn)."""
        return [[i for chain in chains for i in chain] for chains in self.launch_chains]

    def __call__(self, *arrays):
        """Outputs for these arrays, as a list. Each goes in as a C-contiguous, writeable,
        aligned array, and so does each result: the driver's one numba signature."""
        return self._run(self.checked_run, arrays)

    def profiled_call(self, *arrays):
        """(outputs, [(launch index, start ns, end ns)]): a call with every kernel launch
        timed (profile.py); one profiled call at a time in the process."""
        from jitc.backends.cpu import profile

        with profile.LOCK:
            profile.start()
            outs = self._run(self._profiled_runner(), arrays, again=self._profiled_runner)
            records = profile.records()
            launches = self._launches_of(records, self._profiled_run[2])
        return outs, [
            (launch, int(start), int(end)) for launch, (_, _, start, end) in zip(launches, records)
        ]

    def _profiled_runner(self):
        """checked_run with every launch timed, for the driver calls run on now: made again
        once this function's own driver has replaced the wide one."""
        from jitc.backends.cpu import profile

        if self._profiled_run is None or self._profiled_run[0] is not self.module:
            state = self.state.copy()
            state[LAUNCHER] = profile.profiling_launcher_address()
            self._profiled_run = (self.module, self._runner(state), state)
        return self._profiled_run[1]

    def _launches_of(self, records, state) -> list:
        """The launch of each record: the one whose pack its pack address points at, the
        driver having noted its packs' address (a loop runs some launches many times)."""
        base = int(state[PACK_BASE])
        return [self._launch_of_pack[(int(pack) - base) // 8] for _, pack, _, _ in records]

    def _run(self, run, arrays, again=None):
        """Fill the results with `run`; a run of the wide driver that misses (this function's
        own driver compiled meanwhile) is retried on `again()`, by default checked_run."""
        arrays = [a if plain(a) else np.array(a, order="C") for a in arrays]
        outs = [new(*result) for new, result in zip(self._allocators, self.results)]
        try:
            try:
                run(*map(_stored, arrays), *map(_stored, outs))
            except SignatureMiss:  # the driver compiled since `run` was taken (_interim)
                if run is self.checked_run:
                    raise
                run = again() if again is not None else self.checked_run
                run(*map(_stored, arrays), *map(_stored, outs))
        except KERNEL_FAILURES as e:
            located = self.failure(e)
            if located is None:
                raise
            raise located from None
        self.seal_cache()
        return outs

    def seal_cache(self) -> None:
        """Seal the cache files of every module this executable compiled or loaded (once):
        after its first call, or once compiled in the background (runtime/tiered.py). A driver
        compiled in the background seals itself."""
        if not self._sealed:
            for m in self.compiled_modules + [launcher_module()]:
                seal(m)
            if self.module is not None:
                seal(self.module)
            self._sealed = True

    def runs_on_one_thread(self) -> bool:
        """Does no kernel of a call split its rows over threads (launcher.splits)?"""
        return not any(splits(k.rows, k.work) for k in self.program.kernels)

    def posting_run(self, post):
        """run(*arrays) that checks the arrays as the driver would and hands `post(state,
        table, arrays)` a job for jitc's native worker (runtime/native.py)."""
        return posting_run(post, self.state, self._types)

    def failure(self, error: Exception, failed_at: int | None = None) -> Exception | None:
        """The driver's `error` naming the NumPy call and line of the nodes of the launch
        that failed (None: not a kernel failure). The fast path (runtime/fastpath.py) calls
        checked_run itself, and this on a failure. `failed_at`: the failed launch's position
        in the state (the native worker's job notes it), else the state's FAILED slot."""
        kind = FAILURE_OF.get((type(error).__name__, str(error)))
        if kind is None:
            return None
        if failed_at is None:
            failed_at = int(self.state[FAILED])
        launch = (failed_at - int(self.state[LAUNCH_TABLE])) // LAUNCH_ENTRY
        (kernel,) = self.launch_kernels[launch]  # a kernel that can fail runs alone
        return failures.located(self.program.kernels[kernel].sites, kind, type(error), str(error))

    def can_write_into(self, param_index: int, output_index: int) -> bool:
        """May the caller pass parameter `param_index`'s array as the buffer of result
        `output_index` (the driver then writes the new contents in place, no copy)?"""
        from jitc.fusion.buffers import can_write_into_parameter

        return can_write_into_parameter(self.graph, param_index, output_index)

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.optimized)

    def as_text(self, stage: str = "kernels") -> str:
        """The generated numba source of every kernel and the driver (stage "kernels"),
        headed by the BLAS its matrix products call."""
        if stage != "kernels":
            raise ValueError(f"cpu backend: unknown stage {stage!r}; use 'kernels'")
        blas_kernels = sum(k.blas for k in self.program.kernels)
        head = f"# matrix products: {blas.gemm_library()} (BLAS kernels: {blas_kernels})\n\n"
        return (head if blas_kernels else "") + self.source


def wide_driver():
    """The one driver of functions with many arrays, and of any function's first calls while
    its own driver compiles: a fixed runtime piece, compiled once per installation."""
    return load_module(WIDE_DRIVER_SOURCE, runtime=True)


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
