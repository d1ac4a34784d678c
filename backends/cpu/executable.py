"""The cpu backend's Executable: one numba driver per specialization."""

from __future__ import annotations

import numpy as np

from jitc import config
from jitc.backends.cpu.cache import load_module
from jitc.backends.cpu.codegen import build_module
from jitc.ir import Graph


class CpuExecutable:
    def __init__(self, graph: Graph):
        self.graph = graph
        module_source = build_module(graph)
        self.source = module_source.source
        self.constants = tuple(module_source.constants)
        if config.DUMP_DIR:
            import os

            os.makedirs(config.DUMP_DIR, exist_ok=True)
            with open(os.path.join(config.DUMP_DIR, f"{graph.name}.cpu.py"), "w") as f:
                f.write(self.source)
        self.module = load_module(self.source)
        self.driver = self.module.driver

    def __call__(self, *arrays):
        args = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in arrays]
        return list(self.driver(*args, *self.constants))

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.graph)
