"""Counts every backend reports: ops, fusions, kernel launches, intermediate bytes."""

from __future__ import annotations

from jitc.ir import Graph

# Top-level ops that launch nothing: they name memory or are folded into addressing.
FREE = frozenset({"parameter", "constant", "get"})


def graph_stats(graph: Graph) -> dict:
    outputs = set(graph.outputs)
    kernels = sum(1 for n in graph.nodes if n.op not in FREE)
    temp = sum(n.nbytes for n in graph.nodes if n.op not in FREE and n not in outputs)
    return {
        "ops": graph.count_ops(),
        "fusions": sum(1 for n in graph.nodes if n.op == "fusion"),
        "kernels": kernels,
        "temp_bytes": temp,
    }
