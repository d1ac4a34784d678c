"""XLA-style fusion: group producers into their consumers, then wrap each group in a fusion
node holding the group as a nested graph.

Nodes are visited consumers-first. A node joins the one group that reads it when the group
stays legal (see `legal`); a cheap node read by several groups is copied into each of them;
an expensive node (transcendental, reduction, dot) read by several groups is materialized
once, never recomputed. A dot joins its consumers' group as a dot epilogue.
"""

from __future__ import annotations

from jitc import ops
from jitc.ir import Graph, Node

FUSIBLE = ops.ELEMENTWISE | ops.REDUCTIONS | {
    "broadcast_in_dim", "reshape", "transpose", "slice", "concatenate", "gather", "iota"}
CHEAP = (ops.ELEMENTWISE - ops.EXPENSIVE) | {"broadcast_in_dim", "reshape", "transpose",
                                             "slice", "iota", "constant"}
OUTSIDE = "outside"


def _is_scalar_constant(n: Node) -> bool:
    return n.op == "constant" and n.shape == ()


class Group:
    __slots__ = ("members", "has_dot", "has_reduce", "shape")

    def __init__(self, node: Node):
        self.members: list[Node] = [node]
        self.has_dot = node.op == "dot_general"
        self.has_reduce = node.op in ops.REDUCTIONS
        self.shape = node.shape


def body_of(members, order) -> tuple[Graph, list[Node], list[Node]]:
    """The nested graph of a group: (body, external operands in parameter order, outputs)."""
    inside = set(members)
    body = Graph("fused")
    mapping: dict[Node, Node] = {}
    externals: list[Node] = []
    for n in sorted(inside, key=order.__getitem__):
        operands = []
        for o in n.operands:
            if o not in inside:
                if o not in mapping:
                    if _is_scalar_constant(o):
                        mapping[o] = body.add("constant", (), o.attrs, (), o.dtype, o.loc)
                    else:
                        mapping[o] = body.add_parameter(o.shape, o.dtype, o.loc)
                        externals.append(o)
            operands.append(mapping[o])
        mapping[n] = body.add(n.op, operands, n.attrs, n.shape, n.dtype, n.loc)
    return body, externals, mapping


def legal(members, order) -> bool:
    """Can the cpu code generator emit this group as one kernel (the fusion contract)?"""
    from jitc.backends.cpu.loops import LayoutError, LoopKernel, Sizes

    inside = set(members)
    dots = [n for n in members if n.op == "dot_general"]
    if len(dots) > 1:
        return False
    if dots and any(o in inside for o in dots[0].operands):
        return False  # a dot reads materialized operands
    body, _, mapping = body_of([n for n in members if n not in dots], order)
    # Outputs: members read from outside are unknown here; check every sink of the group.
    readers = {o for n in members for o in n.operands if o in inside}
    sinks = [mapping[n] for n in members if n not in readers and n not in dots]
    if not sinks:
        return True
    body.outputs = sinks
    try:
        LoopKernel(body, "check", Sizes()).generate()
    except LayoutError:
        return False
    return True


def fuse(graph: Graph) -> Graph:
    order = {n: i for i, n in enumerate(graph.nodes)}
    users = graph.users()
    outputs = set(graph.outputs)
    groups_of: dict[Node, list[Group]] = {}  # groups holding a node (home first)
    home: dict[Node, Group] = {}

    def readers(n):
        found = []
        for u in users[n]:
            for g in groups_of.get(u, ()):
                if g not in found:
                    found.append(g)
        return found

    def try_add(g: Group, n: Node) -> bool:
        if n.op == "dot_general" and g.has_dot:
            return False
        if not _fast_legal(g, n) and not legal(g.members + [n], order):
            return False
        g.members.append(n)
        g.has_dot |= n.op == "dot_general"
        g.has_reduce |= n.op in ops.REDUCTIONS
        groups_of.setdefault(n, []).append(g)
        return True

    for n in reversed(graph.nodes):
        if n.op == "parameter" or (n.op == "constant" and not _is_scalar_constant(n)):
            continue
        if n.op == "get" or n.op == "fusion":
            g = Group(n)
            home[n] = g
            groups_of[n] = [g]
            continue
        reading = readers(n)
        external = n in outputs or any(u.op in ("fusion", "get") for u in users[n])
        fusible = n.op in FUSIBLE or n.op == "dot_general" or _is_scalar_constant(n)
        if fusible and len(reading) == 1 and not external and try_add(reading[0], n):
            home[n] = reading[0]
            continue
        taken = []
        if fusible and (n.op in CHEAP or _is_scalar_constant(n)) and n.op != "dot_general":
            taken = [g for g in reading if try_add(g, n)]
        if external or len(taken) < len(reading) or not reading:
            if _is_scalar_constant(n) and not external:
                continue
            g = Group(n)
            home[n] = g
            groups_of.setdefault(n, []).insert(0, g)
    return _build(graph, home, groups_of, order)


def _fast_legal(g: Group, n: Node) -> bool:
    """Elementwise work of the group's own shape never changes its layout."""
    if g.has_dot or g.has_reduce:
        return False
    if _is_scalar_constant(n):
        return True
    return n.op in ops.ELEMENTWISE and n.shape == g.shape and all(
        m.op in ops.ELEMENTWISE and m.shape == g.shape for m in g.members)


def _build(graph: Graph, home, groups_of, order) -> Graph:
    all_groups: list[Group] = []
    for gs in groups_of.values():
        for g in gs:
            if g not in all_groups:
                all_groups.append(g)
    member_sets = {id(g): set(g.members) for g in all_groups}

    # What each group must export: members read by a node outside it, or graph outputs.
    exports: dict[int, list[Node]] = {id(g): [] for g in all_groups}
    for g in all_groups:
        inside = member_sets[id(g)]
        for m in g.members:
            for o in m.operands:
                if o not in inside and o in home and o not in exports[id(home[o])]:
                    exports[id(home[o])].append(o)
    for o in graph.outputs:
        if o in home and o not in exports[id(home[o])]:
            exports[id(home[o])].append(o)
    live = [g for g in all_groups if exports[id(g)]]

    # Order groups so every group follows the groups it reads from.
    deps = {id(g): set() for g in live}
    for g in live:
        inside = member_sets[id(g)]
        for m in g.members:
            for o in m.operands:
                if o not in inside and o in home and home[o] is not g:
                    deps[id(g)].add(id(home[o]))
    ordered, done = [], set()
    pending = sorted(live, key=lambda g: max(order[m] for m in g.members))
    while pending:
        for g in pending:
            if deps[id(g)] <= done:
                ordered.append(g)
                done.add(id(g))
                pending.remove(g)
                break
        else:
            raise AssertionError("fusion created a cycle")

    new = Graph(graph.name)
    value: dict[Node, Node] = {}
    for p in graph.params:
        value[p] = new.add_parameter(p.shape, p.dtype, p.loc)

    def get(o):
        if o not in value:  # an array constant (or scalar read at top level)
            value[o] = new.add("constant", (), o.attrs, o.shape, o.dtype, o.loc)
        return value[o]

    for g in ordered:
        members = sorted(set(g.members), key=order.__getitem__)
        outs = sorted(exports[id(g)], key=order.__getitem__)
        if len(members) == 1:
            (n,) = members
            value[n] = new.add(n.op, [get(o) for o in n.operands], n.attrs, n.shape, n.dtype,
                               n.loc, n.subgraph, n.tuple_types)
            continue
        body, externals, mapping = body_of(members, order)
        body.outputs = [mapping[o] for o in outs]
        kind = ("dot" if any(m.op == "dot_general" for m in members) else
                "reduction" if any(m.op in ops.REDUCTIONS for m in members) else "loop")
        loc = outs[-1].loc
        operands = [get(o) for o in externals]
        if len(outs) == 1:
            (o,) = outs
            value[o] = new.add("fusion", operands, {"kind": kind}, o.shape, o.dtype, loc, body)
        else:
            types = tuple((o.shape, o.dtype) for o in outs)
            f = new.add("fusion", operands, {"kind": kind}, None, None, loc, body, types)
            for k, o in enumerate(outs):
                value[o] = new.add("get", [f], {"index": k}, o.shape, o.dtype, o.loc)
    new.outputs = [get(o) for o in graph.outputs]
    return new
