"""The cpu backend's Executable: one numba driver per specialization."""

from __future__ import annotations

import functools

import numpy as np

from jitc import config
from jitc.backends.cpu.cache import load_module, seal
from jitc.backends.cpu.codegen import build_module
from jitc.backends.cpu.threads import single_threaded_scipy_blas
from jitc.ir import Graph


class CpuExecutable:
    def __init__(self, graph: Graph):
        single_threaded_scipy_blas()
        self.graph = graph
        module_source = build_module(graph)
        self.source = module_source.source
        self.constants = tuple(module_source.constants)
        self.sizes = np.array(module_source.sizes or [0], dtype=np.int64)
        if config.DUMP_DIR:
            import os

            os.makedirs(config.DUMP_DIR, exist_ok=True)
            with open(os.path.join(config.DUMP_DIR, f"{graph.name}.cpu.py"), "w") as f:
                f.write(self.source)
        self.module = load_module(self.source)
        self.driver = self.module.driver

        # run(*arrays): the driver with the constants bound; numba checks types and layouts.
        self._driver_call = functools.partial(self.driver, self.sizes, *self.constants)
        self.run = self._first_run
        self.single_output = module_source.n_outputs == 1

    def _first_run(self, *arrays):
        """Compile (or load) on the first call, then seal the cache entry that worked."""
        out = self._driver_call(*arrays)
        seal(self.module)
        self.run = self._driver_call
        return out

    def __call__(self, *arrays):
        out = self.run(*arrays)
        return [out] if self.single_output else list(out)

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.graph)
