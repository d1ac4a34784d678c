"""Buffer planning: where each materialized intermediate lives, in one arena per call.

The top-level nodes of an optimized graph run in order; each compute node writes a buffer
(a multi-output fusion one per element, named by its `get` nodes). A view (a `reshape`, a
contiguous slice of a parameter: fusion/views.py) writes nothing: it shares its operand's
buffer. A *storage class* is a set of values sharing one buffer; its
lifetime runs from the first definition to the last read of any member.

- In place: a kernel overwrites an operand that dies at it, when it reads that operand only at
  its own index (access signature IDENT, fusion/access.py) and writes one result of the same
  byte size -- a loop or reduction fusion, or a single elementwise op. A region write
  (update_slice) takes over its buffer wherever that dies at it, writing the region alone;
  so does a region fusion that reads its buffer only inside the region (fusion/region.py).
  Dots and dot fusions never run in place (the dot writes its result while it still reads
  its operands).
- Results of the function live in the caller's result buffers; a temporary whose storage
  class flows in place into a result lives there too, and costs no arena bytes.
- Parameters and constants are never written, except an output aliased to a parameter
  (`graph.aliases`: a caller's array the function writes): no kernel running before the
  parameter's last read merges into such an output, so it may live in the parameter.
- Every other class gets an offset in one arena (greedy by size: the largest buffer first,
  each at the lowest ALIGN-aligned offset not overlapping a buffer whose lifetime overlaps).

`plan_buffers(graph).size` is `stats()["temp_bytes"]`: the peak intermediate bytes per call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.fusion.access import IDENT
from jitc.fusion.contract import ContractError, infer_space, signatures
from jitc.fusion.region import is_region_write, reads_base_in_region, region_of
from jitc.fusion.rewrite import nbytes
from jitc.fusion.views import is_view

ALIGN = 64
EXTERNAL = ("parameter", "constant")


@dataclass
class BufferPlan:
    """offsets: arena offset of every value living in the arena (aliases share one);
    size: arena bytes; in_place: value -> the operand whose buffer it overwrites;
    in_outputs: value -> index of the graph output whose buffer holds it."""

    offsets: dict = field(default_factory=dict)
    size: int = 0
    in_place: dict = field(default_factory=dict)
    in_outputs: dict = field(default_factory=dict)


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _reads_only_at_own_index(n: Node, operand: Node) -> bool:
    """Does kernel n read `operand` only at the index it writes (so it may overwrite it)?"""
    if n.op in ops.ELEMENTWISE:
        return operand.shape == n.shape
    if n.op == "scatter":  # each row is copied, then updated, by the thread owning it
        return operand is n.operands[0] and operand not in n.operands[1:]
    if n.op == "update_slice":  # the buffer outside the region is left as it is
        return operand is n.operands[0] and operand is not n.operands[1]
    if n.op == "fusion" and n.attrs["kind"] == "region":
        base = region_of(n).base
        return all(o is not operand or k == base for k, o in enumerate(n.operands)) and (
            reads_base_in_region(n)
        )
    if n.op == "sort":  # each row is copied out, sorted, then written back by its thread
        return True
    if n.op == "fusion" and n.attrs["kind"] == "dot":
        return _epilogue_reads_at_own_index(n, operand)
    if n.op != "fusion" or n.attrs["kind"] not in ("loop", "reduction"):
        return False
    body = n.subgraph
    if len(body.outputs) != 1 or body.outputs[0].shape != n.shape:
        return False
    members = {x for x in body.nodes if x.op != "parameter"}
    try:
        space = infer_space(
            [x for x in body.nodes if x in members and x.op != "constant"],
            body.outputs,
            n.attrs["kind"],
        )
        if space.output_sig(body.outputs[0]) != IDENT:
            return False
        params = [p for p, top in zip(body.params, n.operands) if top is operand]
        users = body.users()
        sigs = signatures(body.nodes, members, body.outputs, space)
        for p in params:  # the parameter's readers must all read it at IDENT
            if p.shape != space.shape:
                return False
            for u in users[p]:
                if u.op not in ops.ELEMENTWISE or sigs[u] != {IDENT}:
                    return False
        return bool(params)
    except ContractError:
        return False


def _epilogue_reads_at_own_index(n: Node, operand: Node) -> bool:
    """Does dot fusion n read `operand` only in an elementwise epilogue, at the index it
    writes (`W - lr * (x.T @ g)`)? Then n may write over it, if the dot accumulates
    elsewhere (the cpu planner keeps the dot out of an aliased output: plan.py)."""
    body = n.subgraph
    params = [p for p, top in zip(body.params, n.operands) if top is operand]
    (dot,) = [m for m in body.nodes if m.op == "dot_general"]
    if len(body.outputs) != 1 or body.outputs[0].shape != n.shape or not params:
        return False
    users = body.users()
    for p in params:
        if p in dot.operands or p.shape != n.shape:
            return False
        if any(u.op not in ops.ELEMENTWISE or u.shape != n.shape for u in users[p]):
            return False
    return all(
        m.op in ops.ELEMENTWISE
        or m.op in ("parameter", "constant", "dot_general")
        or (m.op == "broadcast_in_dim" and m.operands[0].shape == ())
        for m in body.nodes
    )


class _Classes:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] is not x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[rb] = ra
        return ra


def plan_buffers(graph: Graph) -> BufferPlan:
    position = {n: i for i, n in enumerate(graph.nodes)}
    users = graph.users()
    classes = _Classes()
    values: list[Node] = []  # every array value a kernel writes or a view names
    for n in graph.nodes:
        if n.tuple_types is not None:
            continue  # its elements are the `get` nodes
        values.append(n)
        classes.find(n)
        if is_view(n):
            classes.union(n.operands[0], n)

    def last_use(v: Node) -> int:
        return max((position[u] for u in users[v]), default=position[v])

    def defined(v: Node) -> int:
        return position[v.operands[0]] if v.op == "get" else position[v]

    outputs = {o: k for k, o in reversed(list(enumerate(graph.outputs)))}
    span: dict = {}  # class root -> [first definition, last use]

    def extend(v: Node):
        r = classes.find(v)
        lo, hi = defined(v), last_use(v)
        if r in span:
            lo, hi = min(lo, span[r][0]), max(hi, span[r][1])
        span[r] = [lo, hi]

    for v in values:
        extend(v)

    aliased = {classes.find(graph.outputs[k]) for k in graph.aliases}
    plan = BufferPlan()
    members_of: dict = {}
    for v in values:
        members_of.setdefault(classes.find(v), []).append(v)

    for n in graph.nodes:  # in place: n takes over an operand that dies at n
        if n.op in EXTERNAL or n.op == "get" or is_view(n) or n.tuple_types is not None:
            continue
        i = position[n]
        for o in dict.fromkeys(n.operands):
            r = classes.find(o)
            if r is classes.find(n) or o.tuple_types is not None:
                continue
            group = members_of[r]
            if any(x.op in EXTERNAL or x in outputs for x in group):
                continue
            if span[r][1] != i or sum(classes.find(x) is r for x in n.operands) != n.operands.count(
                o
            ):
                continue  # o's storage is read later, or n reads it under another name too
            if nbytes(o) != nbytes(n) or o.dtype.itemsize != n.dtype.itemsize:
                continue
            if not is_region_write(n) and aliased & {classes.find(x) for x in (n, o)}:
                # the output would then be written before its parameter's reads (a region
                # write chain may: can_write_into_parameter checks its first writer)
                continue
            if not _reads_only_at_own_index(n, o):
                continue
            rn = classes.find(n)
            root = classes.union(rn, r)
            merged = members_of.pop(rn) + members_of.pop(r)
            members_of[root] = merged
            span[root] = [min(span[r][0], span[rn][0]), max(span[r][1], span[rn][1])]
            plan.in_place[n] = o
            break

    arena = []
    for r, group in members_of.items():
        if any(x.op in EXTERNAL for x in group):
            continue
        out = next((outputs[x] for x in group if x in outputs), None)
        if out is not None:
            for x in group:
                if x not in outputs:
                    plan.in_outputs[x] = out
            continue
        size = _align(max(nbytes(x) for x in group))
        if size:
            arena.append((size, span[r], group))

    arena.sort(key=lambda a: (-a[0], a[1][0]))
    placed = []  # (offset, size, span)
    for size, (lo, hi), group in arena:
        busy = sorted((off, sz) for off, sz, (l2, h2) in placed if l2 <= hi and lo <= h2)
        offset = 0
        for off, sz in busy:
            if offset + size <= off:
                break
            offset = max(offset, off + sz)
        placed.append((offset, size, (lo, hi)))
        for x in group:
            plan.offsets[x] = offset
        plan.size = max(plan.size, offset + size)
    return plan


def can_write_into_parameter(graph: Graph, param_index: int, output_index: int) -> bool:
    """Can output `output_index` be computed straight into the buffer of parameter
    `param_index` (a caller's array the function writes, as XLA's input/output aliasing)?
    Yes when every kernel writing the output's storage runs after the last read of the
    parameter, or is that last reader and reads it only at the index it writes."""
    p, o = graph.params[param_index], graph.outputs[output_index]
    if o.op in EXTERNAL or o.shape != p.shape or o.dtype != p.dtype:
        return False
    if graph.outputs.count(o) > 1:
        return False
    plan = plan_buffers(graph)
    position = {n: i for i, n in enumerate(graph.nodes)}
    users = graph.users()
    members = [o] + [x for x, k in plan.in_outputs.items() if k == output_index]
    writers = {x.operands[0] if x.op == "get" else x for x in members if not is_view(x)}
    if not writers:
        return False
    first = min(writers, key=position.__getitem__)
    views, stack = {p}, [p]  # reshapes and slices naming the parameter's bytes
    while stack:
        for u in users[stack.pop()]:
            if is_view(u) and u not in views:
                views.add(u)
                stack.append(u)
    readers = {u for v in views for u in users[v] if not is_view(u)}
    last_read = max((position[u] for u in readers), default=-1)
    if position[first] > last_read:
        return True
    if position[first] < last_read or first not in readers or first.tuple_types is not None:
        return False
    return all(
        nbytes(v) == nbytes(first) and _reads_only_at_own_index(first, v)
        for v in first.operands
        if v in views
    )


__all__ = ["BufferPlan", "plan_buffers", "can_write_into_parameter"]
