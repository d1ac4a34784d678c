"""Graph rewriting: walk a graph once in order, letting rules replace nodes.

A rule is `rule(node, g) -> Node | None`. It sees `node` with its operands already rewritten
(so rules match on simplified inputs) and returns a replacement -- a new node it adds to `g`
or an existing node of `g` -- or None when it does not match. Its docstring's first line is
the formula it applies. A replacement that is a new node is offered to the rules again, so
rewrites compose (transpose of transpose of transpose ...) in one walk.

The walk rewrites `graph` in place (operands are redirected, replaced nodes become dead for
DCE): passes run on the copy `optimize` makes, and building no new graph keeps a pass over
a thousand ops at a few milliseconds.
"""

from __future__ import annotations

from jitc.core import ops
from jitc.core.ir import Graph, Node

MAX_REWRITES_PER_NODE = 8


def rewrite(graph: Graph, rules) -> Graph:
    """Offer every node to `rules` (first match wins); returns `graph`, rewritten in place."""
    replaced: dict[Node, Node] = {}
    old = graph.nodes
    graph.nodes = []
    for n in old:
        if replaced and any(o in replaced for o in n.operands):
            n.operands = tuple(replaced.get(o, o) for o in n.operands)
        graph.nodes.append(n)
        if n.op == "parameter":
            continue
        r = apply_rules(n, graph, rules)
        if r is not n:
            replaced[n] = r
    if replaced:
        graph.outputs = [replaced.get(o, o) for o in graph.outputs]
    return graph


def apply_rules(m: Node, g: Graph, rules) -> Node:
    """`m` rewritten by the first matching rule, repeatedly while rules create new nodes."""
    for _ in range(MAX_REWRITES_PER_NODE):
        if m.op in ("parameter", "get") or m.op in ops.NESTED:
            return m
        before = g._next_id
        for rule in rules:
            r = rule(m, g)
            if r is not None:
                break
        else:
            return m
        assert r.shape == m.shape and r.dtype == m.dtype, (rule.__name__, m, r)
        if r.id < before:  # an existing node: already rewritten
            return r
        m = r
    return m


def numel(n: Node) -> int:
    """n.size without NumPy (the passes call it often)."""
    size = 1
    for d in n.shape:
        size *= d
    return size


def nbytes(n: Node) -> int:
    return numel(n) * n.dtype.itemsize
