"""Loop steps optimized on their own: each `while` node's step graph runs the whole
pipeline (simplify, fuse) as a function of its own, before the graph around it does; the
loop itself stays one node there, which no fusion crosses."""

from __future__ import annotations

from jitc.core.ir import Graph


def optimize_steps(graph: Graph, optimize) -> Graph:
    """`graph` with each loop's step replaced by optimize(step): the pipeline this pass is
    the first of (passed in: this module is below the package that assembles it)."""
    for n in graph.nodes:
        if n.op == "while":
            n.subgraph = optimize(n.subgraph)
    return graph
