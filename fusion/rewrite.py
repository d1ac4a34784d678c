"""Graph rewriting: rebuild a graph node by node, letting rewrites replace nodes.

A rewrite is `rule(node, g) -> Node | None`: it matches `node` (whose operands are already
rewritten, in the new graph `g`) and returns a replacement built in `g`, or None.
"""

from __future__ import annotations

from jitc.ir import Graph, Node


def rebuild(graph: Graph, rules) -> Graph:
    new = Graph(graph.name)
    mapping: dict[Node, Node] = {}
    for n in graph.nodes:
        if n.op == "parameter":
            mapping[n] = new.add_parameter(n.shape, n.dtype, n.loc)
            continue
        m = new.add(n.op, [mapping[o] for o in n.operands], n.attrs, n.shape, n.dtype, n.loc,
                    n.subgraph, n.tuple_types)
        for rule in rules:
            r = rule(m, new)
            if r is not None:
                m = r
                break
        mapping[n] = m
    new.outputs = [mapping[o] for o in graph.outputs]
    return new


def dce(graph: Graph) -> Graph:
    """Drop nodes no output depends on (parameters stay: they are the signature)."""
    live = set(graph.live_nodes())
    graph.nodes = [n for n in graph.nodes if n in live]
    return graph
