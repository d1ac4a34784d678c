"""Vertical fusion: producers join the fusion of their consumers (XLA's instruction fusion).

Nodes are visited consumers first (reverse topological order). Each node either

- joins the one group that reads it, when the group stays within the contract
  (fusion/contract.py; checked incrementally with the access signatures of access.py);
- is copied into every group that reads it, when it is cheap and the byte cost model
  (cost.py) prefers recomputing it to materializing it;
- or is materialized: it becomes the root (output) of a new group, which its own producers
  may then join. Graph outputs, expensive ops read by several groups (never computed
  twice), dot operands, and nodes the contract keeps out are materialized.

A dot joins the group of its consumers as a dot epilogue; a reduce joins the elementwise
consumers of its rows (and its producers join it), which gives softmax and layernorm as one
reduction fusion each. Every finished group is checked against the full contract; a group
that fails (a row read of an expensive op whose reduce never joined, say) has its culprit
materialized and fusion runs again.

Each materialized boundary gets a note (why the producer stayed out of that consumer), which
`fusion_report` prints.
"""

from __future__ import annotations

import heapq

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.fusion import cost
from jitc.fusion.access import IDENT, extend, is_row
from jitc.fusion.contract import (
    BODY_OPS,
    ContractError,
    Space,
    check_region,
    duplicated,
    node_rule,
    reduce_axes,
    signatures,
)
from jitc.fusion.rewrite import numel
from jitc.fusion.views import external_view

CHEAP = (ops.ELEMENTWISE - ops.EXPENSIVE) | {
    "broadcast_in_dim",
    "reshape",
    "transpose",
    "slice",
    "concatenate",
    "iota",
    "gather",
}
MAX_SIGNATURES = 16
MAX_ROUNDS = 6
# A fusion reads and writes at most this many arrays: a kernel's compile time grows faster
# than its arrays (numba and LLVM work per array, alias checks between pairs), so a sum of
# 300 arguments becomes a chain of kernels of MAX_ARRAYS arrays, which share compiled code
# where their structure repeats. XLA caps its fusions' operands for the same reason.
MAX_ARRAYS = 16


RESHAPE_VIEW = "a reshape read by region writes stays a free view of its operand"


REGION_BASE = (
    "a region write stores into the memory of the array it writes: that array is its "
    "kernel's buffer, not a value computed in it"
)


def not_fusible(op: str) -> str:
    """Why an op that fuses with nothing stays out (fusion_report prints it)."""
    if op == "update_slice":
        return (
            "a region write is a kernel of its own: it stores into the array it writes, "
            "which later ops read from memory"
        )
    return f"{op} is not fusible"


SMALL_REGION = (
    "a region write of one element or of none runs alone (its value is computed elsewhere, "
    "then copied into the region)"
)


def region_fusible(n: Node) -> bool:
    """May the computation of region write n's value join its kernel (a region fusion,
    fusion/region.py)? Its region must run along some axis."""
    return n.op == "update_slice" and any(s > 1 for s in n.operands[1].shape)


def is_scalar_constant(n: Node) -> bool:
    return n.op == "constant" and n.shape == ()


class Group:
    """A set of nodes that will become one fusion (or stay a single op)."""

    __slots__ = (
        "root",
        "members",
        "member_set",
        "space",
        "sigs",
        "has_dot",
        "forbidden",
        "reads",
        "pending",
        "sealed",
    )

    def __init__(self, root: Node, sealed: str = ""):
        self.root = root
        self.members = [root]  # consumers first
        self.member_set = {root}
        self.has_dot = root.op == "dot_general"
        self.forbidden = set(root.operands) if self.has_dot else set()
        self.reads = set(root.operands)
        self.pending: set = set()
        self.sealed = sealed  # why nothing may join this group ("" if anything may)
        if root.op in ops.REDUCTIONS:
            self.space = Space(root.operands[0].shape, reduce_axes(root))
            if not self.space.reduces_something():
                self.sealed = self.sealed or f"{root.op} over size-1 axes runs alone"
        elif root.op == "update_slice":  # the kernel runs over the region (its update)
            self.space = Space(root.operands[1].shape)
        else:
            self.space = Space(root.shape)
        self.sigs = {root: {self.space.output_sig(root) or IDENT}}

    @property
    def kind(self) -> str:
        if self.root.op == "update_slice":
            return "region"
        if self.has_dot:
            return "dot"
        return "reduction" if self.space.reduced is not None else "loop"

    def add(self, p: Node, sigs) -> None:
        self.members.append(p)
        self.member_set.add(p)
        self.sigs[p] = sigs
        self.reads.discard(p)
        self.reads.update(p.operands)
        if p.op == "dot_general":
            self.has_dot = True
            self.forbidden.update(p.operands)
        if p.op in ops.EXPENSIVE and self.space.reduced is None and any(map(is_row, sigs)):
            self.pending.add(p)


def _zero_size(n: Node) -> bool:
    return numel(n) == 0 or any(numel(o) == 0 for o in n.operands)


class Fuser:
    def __init__(self, graph: Graph, forced: set):
        self.graph = graph
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.uses: dict[Node, list] = {n: [] for n in graph.nodes}
        for n in graph.nodes:
            for k, o in enumerate(n.operands):
                self.uses[o].append((n, k))
        self.outputs = set(graph.outputs)
        self.forced = forced
        self.groups_of: dict[Node, list[Group]] = {}
        self.home: dict[Node, Group] = {}  # materialized node -> the group it is the root of
        self.notes: dict[tuple, str] = {}  # (producer, consumer group) -> why not fused

    # -- joining
    def try_join(self, g: Group, p: Node) -> str | None:
        """Add p to g and return None, or return why p cannot join g."""
        if g.sealed:
            return g.sealed
        if p in g.forbidden:
            if p.op == "dot_general":
                return "dot output feeds a second dot (a dot reads its operands from memory)"
            return "a dot reads its operands from memory (library call)"
        if p.op not in BODY_OPS and p.op != "dot_general":
            return not_fusible(p.op)
        if g.kind == "region":
            if p is g.root.operands[0]:
                return REGION_BASE
            if p.op in ops.REDUCTIONS or p.op == "dot_general":
                return f"a region write's kernel computes no {p.op} (it is a loop over the region)"
        if _zero_size(p):
            return "zero-size arrays are not fused"
        # its output, the inputs known so far, and one left for a producer that stays out
        arrays = 2 + self._known_inputs((g.reads - {p}) | set(p.operands))
        if arrays > MAX_ARRAYS:
            return (
                f"the kernel would read and write more than {MAX_ARRAYS} arrays "
                "(compile time grows faster than its arrays)"
            )
        sigs = set()
        for u, k in self.uses[p]:
            if u in g.member_set:
                for s in g.sigs[u]:
                    e = IDENT if u is g.root and g.kind == "region" else extend(s, u, k)
                    if e is None:
                        return f"{u.op} cannot read {p.op} inside one kernel"
                    sigs.add(e)
        if len(sigs) > MAX_SIGNATURES:
            return f"{p.op} is read through too many index maps"
        why = duplicated(p, sigs, lambda o: o.op not in ("parameter", "constant"), g.space)
        if why:
            return why
        if p.op in ops.REDUCTIONS:
            return self._join_reduce(g, p, sigs)
        if p.op == "dot_general" and g.has_dot:
            return "the consumer fusion already holds a dot (one dot per kernel)"
        why = node_rule(p, sigs, g.space, tentative=True)
        if why:
            return why
        g.add(p, sigs)
        return None

    def _known_inputs(self, reads) -> int:
        """How many of a group's reads are arrays it will read from memory for sure:
        parameters, array constants and values already materialized. The others are not
        visited yet (the walk goes consumers first) and may still join the group."""
        return sum(
            1
            for o in reads
            if o.op == "parameter" or o in self.home or (o.op == "constant" and o.shape != ())
        )

    def _join_reduce(self, g: Group, p: Node, sigs) -> str | None:
        space = Space(p.operands[0].shape, reduce_axes(p))
        if not space.reduces_something():
            return "a reduction over size-1 axes runs alone"
        if g.has_dot and (space.shape != g.space.shape or space.reduced != (len(space.shape) - 1,)):
            return "a dot epilogue only reduces the dot's last axis"
        if g.space.reduced is not None:
            why = node_rule(p, sigs, g.space)
            if why:
                return why
            g.add(p, sigs)
            return None
        if p.operands[0].shape == g.space.shape:  # consumers read its rows through broadcasts
            why = node_rule(p, sigs, space)
            if why:
                return why
            for n in g.pending:
                why = node_rule(n, g.sigs[n], space)
                if why:
                    return why
            g.space = space
            g.pending.clear()
            g.add(p, sigs)
            return None
        # The group so far computes row values of p: rebase it on p's iteration space.
        members = sorted(g.member_set | {p}, key=self.order.__getitem__)
        try:
            new_sigs = signatures(members, set(members), [g.root], space)
            for n in members:
                if n.op != "constant":
                    why = node_rule(n, new_sigs[n], space)
                    if why:
                        return why
        except ContractError as e:
            return str(e)
        g.space = space
        g.pending.clear()
        g.add(p, new_sigs[p])
        g.sigs = {n: new_sigs[n] for n in g.member_set}
        return None

    # -- the walk
    def run(self) -> None:
        for n in reversed(self.graph.nodes):
            if n.op == "parameter" or n.op == "constant":
                continue
            if n.op == "get" or n.op in ops.NESTED:
                self._materialize(n, [], sealed=f"{n.op} is fused already")
                continue
            readers = []
            for u, _ in self.uses[n]:
                for g in self.groups_of.get(u, ()):
                    if g not in readers:
                        readers.append(g)
            if external_view(n) is not None:
                self._materialize(
                    n,
                    readers,
                    reason="a contiguous slice of a parameter or constant: read in place, no copy",
                )
                continue
            if n.op == "reshape" and n not in self.outputs and self._read_by_sealed_writes(n):
                # a free view: the kernel computing its operand writes the operand's shape
                # (not one with the unit axes a region's integer indices add)
                self._materialize(n, readers, reason=SMALL_REGION, sealed=RESHAPE_VIEW)
                continue
            why = self._must_materialize(n)
            if why is None and len(readers) == 1:
                why = self.try_join(readers[0], n)
                if why is None:
                    self.groups_of[n] = [readers[0]]
                    continue
                self._materialize(n, readers, reasons={readers[0]: why})
                continue
            if why is None and readers:
                why = self._join_several(n, readers)
                if why is None:
                    continue
            if isinstance(why, dict):
                self._materialize(n, readers, reasons=why)
            else:
                self._materialize(n, readers, reason=why or "nothing reads it")

    def _read_by_sealed_writes(self, n: Node) -> bool:
        """Do region writes that are kernels of their own alone read n?"""
        return bool(self.uses[n]) and all(
            u.op == "update_slice" and not region_fusible(u) for u, _ in self.uses[n]
        )

    def _must_materialize(self, n: Node) -> str | None:
        if n in self.outputs:
            return "it is a result of the function (written to memory anyway)"
        if n in self.forced:
            return self.forced[n]
        if n.op not in BODY_OPS and n.op != "dot_general":
            return not_fusible(n.op)
        return None

    def _join_several(self, n: Node, readers):
        """Copy a cheap n into each reader, or say why not (a reason, or one per reader)."""
        k = len(readers)
        if n.op not in CHEAP:
            what = (
                "the reduction"
                if n.op in ops.REDUCTIONS
                else ("the dot" if n.op == "dot_general" else f"{n.op} (expensive)")
            )
            return f"{k} kernels read it; fusing {what} into each would compute it {k} times"
        if not cost.should_recompute(n, [g.reads for g in readers]):
            return (
                f"cost model: recomputing {n.op} in {k} kernels reads "
                f"{cost.recompute_bytes(n, [g.reads for g in readers])} bytes, "
                f"materializing it {cost.materialize_bytes(n, k)}"
            )
        # Every reader must take it: a partial copy would still materialize n.
        reasons = {}
        for g in readers:
            why = self._probe(g, n)
            if why:
                reasons[g] = why
        if reasons:
            return reasons
        for g in readers:
            why = self.try_join(g, n)
            assert why is None, why
        self.groups_of[n] = list(readers)
        return None

    def _probe(self, g: Group, n: Node) -> str | None:
        """Would n join g? (try_join on a scratch copy of g's state)."""
        saved = (
            list(g.members),
            set(g.member_set),
            g.space,
            dict(g.sigs),
            g.has_dot,
            set(g.forbidden),
            set(g.reads),
            set(g.pending),
        )
        why = self.try_join(g, n)
        (g.members, g.member_set, g.space, g.sigs, g.has_dot, g.forbidden, g.reads, g.pending) = (
            saved
        )
        return why

    def _materialize(self, n: Node, readers, reason: str = "", reasons=None, sealed=""):
        if not sealed and _zero_size(n):
            sealed = "zero-size arrays are not fused"
        elif not sealed and n.op == "update_slice" and not region_fusible(n):
            sealed = SMALL_REGION
        elif not sealed and n.op not in BODY_OPS | {"dot_general", "update_slice"}:
            sealed = not_fusible(n.op)
        g = Group(n, sealed=sealed)
        self.home[n] = g
        self.groups_of[n] = [g]
        reasons = reasons or {}
        first = next(iter(reasons.values()), "")
        for r in readers:
            self.notes[(n, r)] = (
                reasons.get(r)
                or reason
                or (f"materialized for another reader ({first}), so this one reads it too")
            )

    # -- checking
    def check(self) -> dict:
        """Culprits of groups that break the full contract: {node: reason}."""
        bad = {}
        for g in self.groups():
            if len(g.members) == 1:
                continue
            members = sorted(g.member_set, key=self.order.__getitem__)
            outputs, kind = [g.root], g.kind
            if kind == "region":  # its value's loop
                members.remove(g.root)
                outputs, kind = [g.root.operands[1]], "loop"
            try:
                check_region(members, set(members), outputs, kind, body=False)
            except ContractError as e:
                culprit = e.node if e.node is not None and e.node is not g.root else None
                if culprit is None:  # blame the last producer that joined
                    culprit = g.members[-1]
                bad[culprit] = str(e)
        return bad

    def groups(self) -> list[Group]:
        return list(self.home.values())


def group_nodes(graph: Graph):
    """Run the fuser until every group obeys the contract; returns the Fuser."""
    forced: dict = {}
    for _ in range(MAX_ROUNDS):
        f = Fuser(graph, forced)
        f.run()
        bad = f.check()
        if not bad:
            return f
        forced.update(bad)
    # Give up on the groups that still fail: materialize every member of them.
    for g in f.groups():
        for m in g.members:
            forced.setdefault(m, "kept apart (fusion did not converge)")
    f = Fuser(graph, forced)
    f.run()
    return f


# ----------------------------------------------------------------------------- building


def body_of(members, outputs, order, name="fused"):
    """The nested graph of a group: (body, external operands in parameter order).

    Canonical form: parameters first (in first-use order), then the dot if any, then the
    other ops in topological order; scalar constants are copied in before their first use."""
    inside = set(members)
    ordered = sorted(inside, key=lambda n: (n.op != "dot_general", order[n]))
    body = Graph(name)
    mapping: dict[Node, Node] = {}
    externals: list[Node] = []
    for n in ordered:
        for o in n.operands:
            if o not in inside and o not in mapping and not is_scalar_constant(o):
                mapping[o] = body.add_parameter(o.shape, o.dtype, o.loc)
                externals.append(o)
    for n in ordered:
        for o in n.operands:
            if o not in mapping and is_scalar_constant(o):
                mapping[o] = body.add("constant", (), o.attrs, (), o.dtype, o.loc)
        mapping[n] = body.add(
            n.op, [mapping[o] for o in n.operands], n.attrs, n.shape, n.dtype, n.loc
        )
    body.outputs = [mapping[o] for o in outputs]
    return body, externals


def _ordered_groups(f: Fuser) -> list[Group]:
    """Groups in an order where each follows the groups whose results it reads."""
    groups = f.groups()
    deps: dict[int, set] = {}
    readers: dict[int, list] = {id(g): [] for g in groups}
    for g in groups:
        d = set()
        for m in g.members:
            for o in m.operands:
                if o not in g.member_set and o in f.home:
                    d.add(id(f.home[o]))
        deps[id(g)] = d
        for x in d:
            readers[x].append(g)
    by_id = {id(g): g for g in groups}
    heap = [(f.order[g.root], id(g)) for g in groups if not deps[id(g)]]
    heapq.heapify(heap)
    out = []
    waiting = {gid: len(d) for gid, d in deps.items()}
    while heap:
        _, gid = heapq.heappop(heap)
        g = by_id[gid]
        out.append(g)
        for r in readers[gid]:
            waiting[id(r)] -= 1
            if waiting[id(r)] == 0:
                heapq.heappush(heap, (f.order[r.root], id(r)))
    if len(out) != len(groups):
        raise AssertionError("fusion created a cycle between groups")
    return out


def build(graph: Graph, f: Fuser) -> Graph:
    new = Graph(graph.name)
    value: dict[Node, Node] = {}
    for p in graph.params:
        value[p] = new.add_parameter(p.shape, p.dtype, p.loc)

    def get(o):
        if o not in value:  # a constant (array constants stay at the top level)
            value[o] = new.add("constant", (), o.attrs, o.shape, o.dtype, o.loc)
        return value[o]

    node_of_group: dict[int, Node] = {}
    for g in _ordered_groups(f):
        root = g.root
        if len(g.members) == 1 and g.kind != "region":
            value[root] = new.add(
                root.op,
                [get(o) for o in root.operands],
                root.attrs,
                root.shape,
                root.dtype,
                root.loc,
                root.subgraph,
                root.tuple_types,
            )
        else:
            body, externals = body_of(g.members, [root], f.order)
            value[root] = new.add(
                "fusion",
                [get(o) for o in externals],
                {"kind": g.kind},
                root.shape,
                root.dtype,
                root.loc,
                body,
            )
        node_of_group[id(g)] = value[root]
    new.outputs = [get(o) for o in graph.outputs]
    notes = {}
    for (n, g), why in f.notes.items():
        consumer = node_of_group.get(id(g))
        if consumer is not None and n in value and why:
            notes[(value[n], consumer)] = why
    new.fusion_notes = notes
    return new


def fuse(graph: Graph) -> Graph:
    """Producer-into-consumer fusion: loop, reduction and dot-epilogue fusions."""
    return build(graph, group_nodes(graph))
