"""Graph optimization: simplification passes, then XLA-style fusion.

PASSES is the pipeline, a plain list of named passes. `optimize` runs it on a copy of the
traced graph; with verify=True (or JITC_VERIFY=1) the verifier runs after every pass, and
with JITC_DUMP=DIR the IR after every pass is written to DIR/NAME.NN-PASS.txt.
"""

from __future__ import annotations

import os

from jitc import config
from jitc.fusion.fuse import fuse
from jitc.fusion.report import fusion_report
from jitc.fusion.simplify import cse, simplify
from jitc.ir import Graph

PASSES = [("simplify", simplify), ("cse", cse), ("fuse", fuse)]

_VERIFY = os.environ.get("JITC_VERIFY", "") not in ("", "0")


def optimize(graph: Graph, *, verify: bool = False) -> Graph:
    """The optimized copy of `graph` that every backend compiles."""
    from jitc.verify import verify as check

    g = graph.copy()
    for i, (name, run) in enumerate(PASSES):
        g = run(g)
        if verify or _VERIFY:
            check(g)
        if config.DUMP_DIR:
            os.makedirs(config.DUMP_DIR, exist_ok=True)
            with open(os.path.join(config.DUMP_DIR, f"{g.name}.{i:02d}-{name}.txt"), "w") as f:
                f.write(str(g))
    return g


__all__ = ["optimize", "fusion_report", "PASSES"]
