"""Which chunked axes a traced graph can run on chunk by chunk.

Every axis of an argument leaf gets a class; ops that line axes up (elementwise operands,
a matmul's batch axes) merge classes, and ops that mix positions along an axis (a
reduction, a shifted slice, a sort, a contraction over it) break its class. A class that
survives is chunk-local: each output position along it depends only on the same position
of the inputs, so the jitted function applied to a block of every input gives that block of
the output. Broken classes are computed whole (one chunk along them).

Each dim of each value is a class number, UNIFORM (its values do not change along it: a
broadcast) or FULL (they do, but no argument's chunking reaches it: a constant, an iota).
"""

from __future__ import annotations

import numpy as np

from jitc import ops
from jitc.primitives import dot_free_dims

UNIFORM, FULL = "uniform", "full"


class Classes:
    """Union-find over axis classes, with the reason each broken class was broken."""

    def __init__(self):
        self.parent: list[int] = []
        self.broken: dict[int, str] = {}

    def new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, c: int) -> int:
        while self.parent[c] != c:
            self.parent[c] = self.parent[self.parent[c]]
            c = self.parent[c]
        return c

    def union(self, a: int, b: int) -> int:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[b] = a
            if b in self.broken:
                self.broken.setdefault(a, self.broken.pop(b))
        return a

    def brk(self, state, why: str) -> None:
        if isinstance(state, int):
            self.broken.setdefault(self.find(state), why)

    def is_broken(self, c: int) -> bool:
        return self.find(c) in self.broken

    def reason(self, c: int) -> str | None:
        return self.broken.get(self.find(c))


def _where(node) -> str:
    return f"{node.op} at {node.loc}" if node.loc else node.op


def _combine(classes, states, node):
    """One dim of an elementwise result from its operands' dims at that position."""
    found = [s for s in states if isinstance(s, int)]
    if not found:
        return FULL if FULL in states else UNIFORM
    c = found[0]
    for other in found[1:]:
        c = classes.union(c, other)
    if FULL in states:
        classes.brk(c, f"{_where(node)} combines it with an array that is not chunked "
                       "along it")
    return c


def _reshape(classes, node, src):
    """A reshape keeps the dims of its common prefix and suffix of equal sizes."""
    old, new = node.operands[0].shape, node.shape
    pre = 0
    while pre < min(len(old), len(new)) and old[pre] == new[pre]:
        pre += 1
    suf = 0
    while (suf < min(len(old), len(new)) - pre and old[len(old) - 1 - suf] ==
           new[len(new) - 1 - suf]):
        suf += 1
    for s in src[pre:len(old) - suf]:
        classes.brk(s, f"{_where(node)} merges or splits it")
    middle = [FULL] * (len(new) - pre - suf)
    return src[:pre] + tuple(middle) + (src[len(old) - suf:] if suf else ())


def _propagate(classes, node, operand_states):
    """The per-dim states of `node`'s value; breaks the classes it mixes along."""
    op, a = node.op, node.attrs
    if op in ops.ELEMENTWISE:
        return tuple(_combine(classes, [s[d] for s in operand_states if len(s) == node.ndim],
                              node) for d in range(node.ndim))
    if op == "constant":
        return tuple(UNIFORM if n == 1 else FULL for n in node.shape)
    if op == "iota":
        return tuple(FULL if d == a["dimension"] else UNIFORM for d in range(node.ndim))
    src = operand_states[0] if operand_states else ()
    if op == "broadcast_in_dim":
        out = [UNIFORM] * node.ndim
        for i, d in enumerate(a["broadcast_dimensions"]):
            out[d] = src[i]
        return tuple(out)
    if op == "transpose":
        return tuple(src[p] for p in a["permutation"])
    if op == "reshape":
        return _reshape(classes, node, src)
    if op == "slice":
        n = node.operands[0].shape
        for d, (s, lim, st) in enumerate(zip(a["start"], a["limit"], a["stride"])):
            if (s, lim, st) != (0, n[d], 1):
                classes.brk(src[d], f"{_where(node)} takes part of it")
        return src
    if op == "concatenate":
        axis = a["dimension"]
        for s in operand_states:
            classes.brk(s[axis], f"{_where(node)} joins along it")
        return tuple(FULL if d == axis else
                     _combine(classes, [s[d] for s in operand_states], node)
                     for d in range(node.ndim))
    if op in ("reduce", "argmax", "argmin"):
        axes = a["axes"] if op == "reduce" else (a["axis"],)
        for d in axes:
            classes.brk(src[d], f"{_where(node)} reduces over it")
        return tuple(s for d, s in enumerate(src) if d not in axes)
    if op in ops.SCANS or op in ops.SORTS:
        classes.brk(src[a["axis"]], f"{_where(node)} runs along it")
        return src
    if op == "gather":
        idx = operand_states[1]
        axis = a["axis"]
        classes.brk(src[axis], f"{_where(node)} picks positions along it")
        return src[:axis] + idx + src[axis + 1:]
    if op == "dot_general":
        lhs, rhs = operand_states
        lc, rc = a["lhs_contracting"], a["rhs_contracting"]
        lb, rb = a["lhs_batch"], a["rhs_batch"]
        for d in lc:
            classes.brk(lhs[d], f"{_where(node)} contracts over it")
        for d in rc:
            classes.brk(rhs[d], f"{_where(node)} contracts over it")
        batch = tuple(_combine(classes, [lhs[x], rhs[y]], node) for x, y in zip(lb, rb))
        return (batch + tuple(lhs[d] for d in dot_free_dims(len(lhs), lc, lb))
                + tuple(rhs[d] for d in dot_free_dims(len(rhs), rc, rb)))
    # Anything else (linalg, writes into a buffer): every class it touches runs whole.
    for s in operand_states:
        for dim in s:
            classes.brk(dim, f"{_where(node)} is not partitioned")
    return tuple(FULL for _ in range(node.ndim))


def analyze(graph, leaf_count: int):
    """(classes, {node id: per-dim states}) for a traced graph whose first `leaf_count`
    parameters are the argument leaves (the rest: captured arrays, computed whole)."""
    classes = Classes()
    states: dict = {}
    for i, p in enumerate(graph.params):
        states[p.id] = tuple(classes.new() if i < leaf_count and n > 1 else
                             (UNIFORM if n == 1 else FULL) for n in p.shape)
    for node in graph.nodes:
        if node.op == "parameter":
            continue
        states[node.id] = _propagate(classes, node, [states[o.id] for o in node.operands])
    # One value with the same class on two dims (x + x.T, an outer product) would need
    # every pair of blocks, not the diagonal ones.
    for node in list(graph.params) + list(graph.nodes):
        seen = set()
        for s in states[node.id]:
            if isinstance(s, int):
                root = classes.find(s)
                if root in seen:
                    classes.brk(root, f"{_where(node)} has it on two axes")
                seen.add(root)
    return classes, states


def _extent_ok(state, full, chunk, classes, sizes) -> bool:
    """May a dim of this state have extent `full` in the whole trace and `chunk` in a
    block's trace? Class dims shrink to their block, uniform ones may (a broadcast
    built from an argument's shape), all others must not change."""
    if isinstance(state, int) and classes.find(state) in sizes:
        return (full, chunk) == sizes[classes.find(state)]
    if state == UNIFORM:
        return full == chunk or (full, chunk) in sizes.values()
    return full == chunk


# Attributes that restate a node's shape (checked through the shapes themselves).
_SHAPE_ATTRS = {"shape", "new_sizes"}


def block_mismatch(whole, block, states, classes, sizes) -> str | None:
    """Why the trace for one block (`block`) is not the whole trace (`whole`) restricted to
    that block, or None. `sizes`: class root -> (whole extent, block extent) of the
    classes run chunk by chunk. A function that reads an argument's shape as a number
    (x.sum() / x.shape[0]) traces to another program per block: computing it by blocks
    would silently give another answer."""
    a_nodes = list(whole.params) + list(whole.nodes)
    b_nodes = list(block.params) + list(block.nodes)
    if len(a_nodes) != len(b_nodes) or len(whole.outputs) != len(block.outputs):
        return "the function traces to another program for a block"
    index = {n.id: i for i, n in enumerate(a_nodes)}
    b_index = {n.id: i for i, n in enumerate(b_nodes)}
    for a, b in zip(a_nodes, b_nodes):
        where = f"{a.op} at {a.loc}" if a.loc else a.op
        if (a.op != b.op or a.dtype != b.dtype or len(a.shape) != len(b.shape)
                or [index[o.id] for o in a.operands] != [b_index[o.id] for o in b.operands]):
            return f"{where} differs in a block's trace"
        if not all(_extent_ok(s, m, n, classes, sizes)
                   for s, m, n in zip(states[a.id], a.shape, b.shape)):
            return f"{where} has another shape in a block's trace"
        for key, value in a.attrs.items():
            other = b.attrs.get(key)
            if key in _SHAPE_ATTRS:
                continue
            if key == "limit" and a.op == "slice":  # full along class dims (else broken)
                kept = [not (isinstance(s, int) and classes.find(s) in sizes)
                        for s in states[a.operands[0].id]]
                value, other = ([v for v, k in zip(t, kept) if k] for t in (value, other))
            if key == "value":
                if value.shape != other.shape or not np.array_equal(value, other,
                                                                   equal_nan=True):
                    return (f"{where} holds another constant in a block's trace (a value "
                            "computed from an argument's shape?)")
            elif value != other:
                return f"{where} has another {key} in a block's trace"
    if [index[o.id] for o in whole.outputs] != [b_index[o.id] for o in block.outputs]:
        return "the function returns other values for a block"
    for a, b in zip(whole.outputs, block.outputs):
        if any(s == UNIFORM and m != n for s, m, n in zip(states[a.id], a.shape, b.shape)):
            return f"a result built from an argument's shape ({a.op} at {a.loc})"
    return None
