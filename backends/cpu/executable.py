"""The cpu backend's Executable: kernels loaded (or compiled) at construction, one numba
driver per specialization, compiled on the first call."""

from __future__ import annotations

import functools
import os

import numpy as np

from jitc import config
from jitc.backends.cpu.cache import load_module, seal
from jitc.backends.cpu.driver import emit
from jitc.backends.cpu.launcher import launcher_address
from jitc.backends.cpu.plan import plan_program
from jitc.backends.cpu.threads import single_threaded_scipy_blas
from jitc.ir import Graph


class CpuExecutable:
    def __init__(self, graph: Graph):
        single_threaded_scipy_blas()
        self.graph = graph
        self.program = plan_program(graph, graph.name)
        emitted = emit(self.program)
        self.source = "\n\n".join(emitted.kernel_sources + [emitted.driver_source])
        if config.DUMP_DIR:
            os.makedirs(config.DUMP_DIR, exist_ok=True)
            with open(os.path.join(config.DUMP_DIR, f"{graph.name}.cpu.py"), "w") as f:
                f.write(self.source)
        self.kernel_modules = [load_module(s) for s in emitted.kernel_sources]
        addresses = [m.kernel.address for m in self.kernel_modules]
        self.fp = np.array([launcher_address()] + [addresses[i] for i in emitted.kernel_of_launch],
                           np.int64)
        self.module = load_module(emitted.driver_source)
        self.driver = self.module.driver
        # run(*arrays): the driver with its vectors and constants bound; numba checks the
        # argument types and layouts.
        self._driver_call = functools.partial(self.driver, emitted.n, self.fp, emitted.packs,
                                              *emitted.constants)
        self.run = self._first_run
        self.single_output = emitted.n_outputs == 1

    def _first_run(self, *arrays):
        """Compile (or load) the driver on the first call, then seal the cache entries."""
        out = self._driver_call(*arrays)
        for m in self.kernel_modules + [self.module]:
            seal(m)
        self.run = self._driver_call
        return out

    def __call__(self, *arrays):
        out = self.run(*arrays)
        return [out] if self.single_output else list(out)

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.graph)
