"""Dead code elimination: drop nodes no output depends on."""

from __future__ import annotations

from jitc.core.ir import Graph


def dce(graph: Graph) -> Graph:
    """Keep the nodes the outputs depend on (parameters stay: they are the signature)."""
    live = set(graph.live_nodes())
    if len(live) != len(graph.nodes):
        graph.nodes = [n for n in graph.nodes if n in live]
    return graph
