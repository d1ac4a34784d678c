"""Multi-output fusion: merge kernels of the fused graph into kernels with several results.

Two kinds of merges, decided on clusters of top-level kernels and built in one rebuild:

1. producer into consumer: a kernel whose result another kernel reads, and that stayed apart
   only because its result must be materialized anyway (a function result, or read by
   several kernels), joins that consumer; the merged kernel writes the result and the
   consumer uses it from cache (LSTM: the cell state c and the hidden state h in one pass).
   The merged fusion keeps the kind of its ops (loop, reduction, or dot if one is a dot
   fusion).
2. siblings: kernels that read a common array and do not depend on each other merge into
   kind "multi", reading it once: mean and mean-of-squares of the same rows, the q/k/v
   slices of one projection.

A merge happens only when the merged body obeys the contract (fusion/contract.py: one
iteration space S, same R if reducing) and creates no cycle. Identical subcomputations of
the merged parts are shared (CSE inside the body) when that keeps the contract. Results read
outside the merged kernel are its outputs, read through `get` when there are several. Dots,
views (reshapes, contiguous slices of parameters: fusion/views.py) and kernels that are
already multi-output are left alone.
"""

from __future__ import annotations

import heapq

from jitc.core.ir import Graph, Node
from jitc.fusion.contract import BODY_OPS, ContractError, check_region, single_op_body
from jitc.fusion.cse import cse
from jitc.fusion.fuse import MAX_ARRAYS
from jitc.fusion.rewrite import nbytes, numel
from jitc.fusion.views import is_view

MIN_SHARED_BYTES = 64  # a shared input smaller than this is not worth a sibling merge


def _candidate(n: Node) -> bool:
    if n.tuple_types is not None:
        return False  # already multi-output: read through `get`, left alone
    if n.op == "fusion":
        return n.attrs["kind"] in ("loop", "reduction", "multi", "dot")
    return (
        n.op in BODY_OPS
        and not is_view(n)
        and numel(n) > 0
        and all(numel(o) > 0 for o in n.operands)
    )


def _body(n: Node) -> Graph:
    """The nested graph of a fusion, or a one-op body for a single op."""
    return n.subgraph if n.op == "fusion" else single_op_body(n)[0]


def _top_inputs(n: Node) -> list[Node]:
    """The top-level values a one-op body's parameters stand for (scalar constants inline)."""
    if n.op == "fusion":
        return list(n.operands)
    return [o for o in n.operands if not (o.op == "constant" and o.shape == ())]


def merge_bodies(members: list[Node], outputs: list[Node]):
    """One canonical body computing `outputs` (some of the members' results) from the
    members' bodies; a member reading another member uses its value directly.
    Returns (body, top-level operands)."""
    inside = set(members)
    body = Graph("fused")
    params: dict[Node, Node] = {}
    operands: list[Node] = []
    subs = [(_body(m), _top_inputs(m)) for m in members]
    for sub, inputs in subs:  # parameters first (canonical body order)
        for p in sub.params:
            top = inputs[p.attrs["index"]]
            if top not in inside and top not in params:
                params[top] = body.add_parameter(top.shape, top.dtype, top.loc)
                operands.append(top)
    result: dict[Node, Node] = {}
    ops: list = []
    for m, (sub, inputs) in zip(members, subs):
        mapping = {
            p: params.get(inputs[p.attrs["index"]]) or result[inputs[p.attrs["index"]]]
            for p in sub.params
        }
        for x in sub.nodes:
            if x.op != "parameter":
                mapping[x] = Node(
                    -1, x.op, [mapping[o] for o in x.operands], x.attrs, x.shape, x.dtype, x.loc
                )
                ops.append(mapping[x])
        result[m] = mapping[sub.outputs[0]]
    # the dot (if any) first, then the rest in order; ids renumbered
    ops.sort(key=lambda x: x.op != "dot_general")
    for x in ops:
        x.id = body._next_id
        body._next_id += 1
        body.nodes.append(x)
    body.outputs = [result[o] for o in outputs]
    return body, operands


def _legal(body: Graph, kind: str) -> bool:
    members = {n for n in body.nodes if n.op != "parameter"}
    try:
        check_region(body.nodes, members, body.outputs, kind)
    except ContractError:
        return False
    return True


def _kind(body: Graph, siblings: bool) -> str:
    ops = {n.op for n in body.nodes}
    if "dot_general" in ops:
        return "dot"
    if siblings and len(body.outputs) > 1:
        return "multi"
    return "reduction" if ops & {"reduce", "argmax", "argmin"} else "loop"


class _Clusters:
    """Union-find over top-level nodes, with ancestor and descendant bitsets of clusters
    (kept transitively closed as clusters merge)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.position = {n: i for i, n in enumerate(graph.nodes)}
        self.top = [n for n in graph.nodes if n.op != "parameter"]
        self.parent = {n: n for n in self.top}
        self.group = {n: [n] for n in self.top}  # cluster root -> members in order
        self.siblings: set = set()  # cluster roots formed by a sibling merge
        self.bodies: dict = {}  # cluster root -> (body, operands, outputs, kind)
        self.users = graph.users()
        self.outputs = set(graph.outputs)
        bit = {n: 1 << i for i, n in enumerate(self.top)}
        self.bits = dict(bit)
        self.anc: dict = {}
        for n in self.top:  # topological order: operands are final before n
            a = 0
            for o in n.operands:
                if o in bit:
                    a |= bit[o] | self.anc[o]
            self.anc[n] = a
        self.desc: dict = {}
        for n in reversed(self.top):
            d = 0
            for u in self.users[n]:
                if u in bit:
                    d |= bit[u] | self.desc[u]
            self.desc[n] = d

    def find(self, n):
        while self.parent[n] is not n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def members(self, c) -> list[Node]:
        return self.group[c]

    def independent(self, a, b) -> bool:
        return not (self.anc[a] & self.bits[b]) and not (self.anc[b] & self.bits[a])

    def only_direct(self, a, b) -> bool:
        """Does b depend on a only directly (no third cluster between them)?"""
        return not (self.desc[a] & self.anc[b]) and not (self.anc[a] & self.bits[b])

    def _union(self, a, b):
        """Merge cluster b into a and keep the closure (no cycle may result)."""
        self.parent[b] = a
        self.group[a] = sorted(self.group[a] + self.group.pop(b), key=self.position.__getitem__)
        bits = self.bits[a] | self.bits.pop(b)
        anc = (self.anc[a] | self.anc.pop(b)) & ~bits
        desc = (self.desc[a] | self.desc.pop(b)) & ~bits
        self.bits[a], self.anc[a], self.desc[a] = bits, anc, desc
        for x in self.bits:
            if x is a:
                continue
            if self.anc[x] & bits:
                self.anc[x] |= anc | bits
            if self.desc[x] & bits:
                self.desc[x] |= desc | bits

    def needed(self, members) -> list[Node]:
        inside = set(members)
        return [
            m for m in members if m in self.outputs or any(u not in inside for u in self.users[m])
        ]

    def try_merge(self, a, b, siblings: bool) -> bool:
        members = sorted(self.group[a] + self.group[b], key=self.position.__getitem__)
        outputs = self.needed(members)
        if not outputs:
            return False
        body, operands = merge_bodies(members, outputs)
        if len(operands) + len(outputs) > MAX_ARRAYS:
            return False
        sib = siblings or a in self.siblings or b in self.siblings
        kind = _kind(body, sib)
        if sib and kind != "multi":
            return False
        if not _legal(body, kind):
            return False
        shared = cse(body.copy())
        if len(shared.outputs) == len(body.outputs) and _legal(shared, kind):
            body = shared
        self._union(a, b)
        if sib:
            self.siblings.add(a)
        self.bodies.pop(b, None)
        self.bodies[a] = (body, operands, outputs, kind)
        return True


def multi_output(graph: Graph) -> Graph:
    """Merge producer/consumer and sibling kernels into multi-output fusions."""
    cl = _Clusters(graph)
    merged = False
    # 1. producer into consumer, for results that are materialized anyway
    for c in graph.nodes:
        if not _candidate(c):
            continue
        for p in dict.fromkeys(c.operands):
            if p.op == "parameter" or p not in cl.parent or not _candidate(p):
                continue
            if not (p in cl.outputs or len(cl.users[p]) > 1):
                continue  # its only reader is c: the fuser kept them apart for a reason
            a, b = cl.find(p), cl.find(c)
            if a is not b and cl.only_direct(a, b):
                merged |= cl.try_merge(a, b, siblings=False)
    # 2. siblings reading a common array
    for x in graph.nodes:
        if x.tuple_types is not None or (x.op == "constant" and x.shape == ()):
            continue
        if nbytes(x) < MIN_SHARED_BYTES:
            continue
        readers = list(dict.fromkeys(u for u in cl.users[x] if _candidate(u)))
        for r in readers[1:]:
            a, b = cl.find(readers[0]), cl.find(r)
            if a is b or not cl.independent(a, b):
                continue
            if any(
                m.op == "dot_general" or (m.op == "fusion" and m.attrs["kind"] == "dot")
                for m in cl.members(a) + cl.members(b)
            ):
                continue
            merged |= cl.try_merge(a, b, siblings=True)
    return _rebuild(graph, cl) if merged else graph


def _rebuild(graph: Graph, cl: _Clusters) -> Graph:
    position = cl.position
    clusters: dict[Node, list] = {}
    for n in cl.top:
        clusters.setdefault(cl.find(n), []).append(n)
    # Topological order of clusters, stable by position.
    deps = {c: set() for c in clusters}
    readers = {c: set() for c in clusters}
    for c, ms in clusters.items():
        for m in ms:
            for o in m.operands:
                if o in cl.parent and cl.find(o) is not c:
                    deps[c].add(cl.find(o))
                    readers[cl.find(o)].add(c)
    waiting = {c: len(d) for c, d in deps.items()}
    heap = [(position[ms[0]], id(c), c) for c, ms in clusters.items() if not deps[c]]
    heapq.heapify(heap)
    new = Graph(graph.name)
    value: dict[Node, Node] = {}
    for p in graph.params:
        value[p] = new.add_parameter(p.shape, p.dtype, p.loc)
    done = 0
    while heap:
        _, _, c = heapq.heappop(heap)
        done += 1
        ms = clusters[c]
        if len(ms) > 1:
            _emit_merged(new, value, cl.bodies[c])
        else:
            (n,) = ms
            value[n] = new.add(
                n.op,
                [value[o] for o in n.operands],
                n.attrs,
                n.shape,
                n.dtype,
                n.loc,
                n.subgraph,
                n.tuple_types,
            )
        for r in readers[c]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(heap, (position[clusters[r][0]], id(r), r))
    assert done == len(clusters), "multi-output fusion created a cycle"
    new.outputs = [value[o] for o in graph.outputs]
    notes = getattr(graph, "fusion_notes", {})
    new.fusion_notes = {}
    for (p, c), why in notes.items():
        if p in value and c in value:
            consumer = value[c]
            if consumer.op == "get":  # merged into a multi-output fusion
                consumer = consumer.operands[0]
            new.fusion_notes[(value[p], consumer)] = why
    return new


def _emit_merged(new: Graph, value, merged):
    """Add a merged fusion; map each member read outside it to its result (a `get` when the
    fusion has several)."""
    body, operands, outputs, kind = merged
    loc = outputs[-1].loc
    args = [value[o] for o in operands]
    if len(outputs) == 1:
        (o,) = outputs
        value[o] = new.add("fusion", args, {"kind": kind}, o.shape, o.dtype, loc, body)
        return
    types = tuple((o.shape, o.dtype) for o in outputs)
    f = new.add("fusion", args, {"kind": kind}, None, None, loc, body, types)
    for k, m in enumerate(outputs):
        value[m] = new.add("get", [f], {"index": k}, m.shape, m.dtype, m.loc)
