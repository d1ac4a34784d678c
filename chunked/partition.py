"""Which axes of a traced graph can be computed block by block.

Every dim of every value gets an axis class; ops that line dims up (elementwise operands,
a broadcast's kept dims, a matmul's batch dims) merge their classes. A class that an
argument is chunked along runs block by block: each position along it then depends only
on the same position of the inputs, so the graph restricted to a block of every input
computes that block of every value. Some dims vary in a way no chunking reaches (a
constant's values, an iota's counter, a concatenation's axis): their class is pinned, and
so is every class an op mixes positions along (a shifted slice, a sort, a gather's source
axis). A pinned class is computed whole, with the reason kept for the plan.

Reductions (sum, prod, max, min, all, any, and a matmul's contraction) over a chunked
class are the exception: they become cross-block reductions, each block's partial
combined across blocks (chunked/stages.py).
"""

from __future__ import annotations

import numpy as np

from jitc.core import ops
from jitc.core.primitives import dot_free_dims

# Reduce kinds whose partial results combine exactly: NumPy's functions of two partials.
COMBINE = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.logical_and,
    "or": np.logical_or,
}


class Classes:
    """Union-find over axis classes; `whole` maps a pinned class to why it is pinned."""

    def __init__(self):
        self.parent: list[int] = []
        self.whole: dict[int, str] = {}

    def new(self, pinned: str | None = None) -> int:
        self.parent.append(len(self.parent))
        if pinned:
            self.whole[len(self.parent) - 1] = pinned
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
            if b in self.whole:
                self.whole.setdefault(a, self.whole.pop(b))
        return a

    def pin(self, c: int, why: str) -> None:
        self.whole.setdefault(self.find(c), why)

    def reason(self, c: int) -> str | None:
        return self.whole.get(self.find(c))


def where(node) -> str:
    return f"{node.op} at {node.loc}" if node.loc else node.op


class Partition:
    """The axis class of every dim of every node of `graph`, whose first `leaf_count`
    parameters are the argument leaves (the others, captured arrays, are computed whole)."""

    def __init__(self, graph, leaf_count: int):
        self.graph = graph
        self.classes = Classes()
        self.dims: dict[int, tuple] = {}  # node id -> class per dim
        # node id -> (kind, the classes it reduces over) for every reduce and contraction
        self.reductions: dict[int, tuple] = {}
        # node id -> (parameter, axis, shift) for every np.roll of an argument, and the
        # halo each class needs for them (class -> depth; resolve with find)
        self.rolls, self._roll_parts = _rolls(graph)
        self.halo_of: dict[int, int] = {}
        for i, p in enumerate(graph.params):
            why = None if i < leaf_count else f"the captured array {where(p)} is not chunked"
            self.dims[p.id] = tuple(self._fresh(n, why) for n in p.shape)
        for node in graph.nodes:
            if node.op != "parameter":
                self.dims[node.id] = self._propagate(node, [self.dims[o.id] for o in node.operands])
        self._pin_repeated()

    def _fresh(self, extent, why=None):
        return self.classes.new(why if extent > 1 else "its extent is 1")

    def _same(self, node, dims):
        """One class for the dims an elementwise op lines up."""
        c = dims[0]
        for other in dims[1:]:
            c = self.classes.union(c, other)
        return c

    def _propagate(self, node, operands):
        op, a, cls = node.op, node.attrs, self.classes
        if node.id in self.rolls:  # a shifted copy: blocks read their neighbours' edges
            param, axis, shift = self.rolls[node.id]
            c = cls.find(self.dims[param.id][axis])
            self.halo_of[c] = max(self.halo_of.get(c, 0), abs(shift))
            return self.dims[param.id]
        if node.id in self._roll_parts:
            return operands[0]  # read only by its roll, which reads the argument itself
        if op in ops.ELEMENTWISE:
            same = [s for s in operands if len(s) == node.ndim]
            return tuple(self._same(node, [s[d] for s in same]) for d in range(node.ndim))
        if op == "constant":
            return tuple(
                cls.new(f"the constant {where(node)} varies along it") if n > 1 else cls.new()
                for n in node.shape
            )
        if op == "iota":
            return tuple(
                cls.new(f"{where(node)} counts along it") if d == a["dimension"] else cls.new()
                for d in range(node.ndim)
            )
        src = operands[0] if operands else ()
        if op == "broadcast_in_dim":
            out = [cls.new() for _ in range(node.ndim)]
            for i, d in enumerate(a["broadcast_dimensions"]):
                out[d] = src[i]
            return tuple(out)
        if op == "transpose":
            return tuple(src[p] for p in a["permutation"])
        if op == "reshape":
            return self._reshape(node, src)
        if op == "slice":
            n = node.operands[0].shape
            for d, (s, lim, st) in enumerate(zip(a["start"], a["limit"], a["stride"])):
                if (s, lim, st) != (0, n[d], 1):
                    cls.pin(src[d], f"{where(node)} takes part of it")
            return src
        if op == "concatenate":
            axis = a["dimension"]
            for s in operands:
                cls.pin(s[axis], f"{where(node)} joins along it")
            return tuple(
                cls.new(f"{where(node)} joins along it")
                if d == axis
                else self._same(node, [s[d] for s in operands])
                for d in range(node.ndim)
            )
        if op == "reduce":
            kept = tuple(s for d, s in enumerate(src) if d not in a["axes"])
            reduced = tuple(src[d] for d in a["axes"])
            if node.dtype == np.dtype(np.float16):  # NumPy rounds every add: one order
                for c in reduced:
                    cls.pin(c, f"{where(node)} (float16) reduces over it")
            self.reductions[node.id] = (a["kind"], reduced)
            return kept
        if op in ("argmax", "argmin"):
            cls.pin(src[a["axis"]], f"{where(node)} reduces over it")
            return tuple(s for d, s in enumerate(src) if d != a["axis"])
        if op in ops.SCANS or op in ops.SORTS:
            cls.pin(src[a["axis"]], f"{where(node)} runs along it")
            return src
        if op == "gather":
            cls.pin(src[a["axis"]], f"{where(node)} picks positions along it")
            return src[: a["axis"]] + operands[1] + src[a["axis"] + 1 :]
        if op == "dot_general":
            return self._dot(node, *operands)
        if op == "get":  # an element of a loop's results (a loop runs whole, below)
            return tuple(cls.new(f"{where(node)} comes out of a loop") for _ in range(node.ndim))
        # Anything else (linalg, writes into a buffer, a loop): every class it touches runs
        # whole.
        for s in operands:
            for c in s:
                cls.pin(c, f"{where(node)} is not partitioned")
        return tuple(
            cls.new(f"{where(node)} is not partitioned") for _ in range(len(node.shape or ()))
        )

    def _reshape(self, node, src):
        """A reshape keeps the dims of its common prefix and suffix of equal sizes."""
        old, new = node.operands[0].shape, node.shape
        pre = 0
        while pre < min(len(old), len(new)) and old[pre] == new[pre]:
            pre += 1
        suf = 0
        while (
            suf < min(len(old), len(new)) - pre
            and old[len(old) - 1 - suf] == new[len(new) - 1 - suf]
        ):
            suf += 1
        why = f"{where(node)} merges or splits it"
        for c in src[pre : len(old) - suf]:
            self.classes.pin(c, why)
        middle = tuple(self.classes.new(why) for _ in range(len(new) - pre - suf))
        return src[:pre] + middle + (src[len(old) - suf :] if suf else ())

    def _dot(self, node, lhs, rhs):
        a = node.attrs
        lc, rc, lb, rb = (
            a[k] for k in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")
        )
        contracted = tuple(self._same(node, [lhs[x], rhs[y]]) for x, y in zip(lc, rc))
        self.reductions[node.id] = ("sum", contracted)
        batch = tuple(self._same(node, [lhs[x], rhs[y]]) for x, y in zip(lb, rb))
        return (
            batch
            + tuple(lhs[d] for d in dot_free_dims(len(lhs), lc, lb))
            + tuple(rhs[d] for d in dot_free_dims(len(rhs), rc, rb))
        )

    def _pin_repeated(self):
        """A value with one class on two dims (x + x.T, an outer product) would need every
        pair of blocks, not the matching ones: that class runs whole."""
        for node in list(self.graph.params) + list(self.graph.nodes):
            seen = set()
            for c in self.dims[node.id]:
                root = self.classes.find(c)
                if root in seen:
                    self.classes.pin(root, f"{where(node)} has it on two axes")
                seen.add(root)

    # -- queries, once the chunked classes are known
    def halos(self) -> dict:
        """class root -> the halo depth its rolls need."""
        out: dict = {}
        for c, depth in self.halo_of.items():
            root = self.classes.find(c)
            out[root] = max(out.get(root, 0), depth)
        return out

    def roots(self, node) -> list[int]:
        return [self.classes.find(c) for c in self.dims[node.id]]

    def cross_block(self, chunked) -> dict:
        """node id -> (kind, chunked classes it reduces over) for reductions that span
        blocks. An argmax-like or unsupported kind pins its classes instead (the caller
        recomputes `chunked`)."""
        out = {}
        for nid, (kind, reduced) in self.reductions.items():
            over = sorted({self.classes.find(c) for c in reduced} & set(chunked))
            if over:
                out[nid] = (kind, tuple(over))
        return out


def _rolls(graph):
    """np.roll of an argument along one axis, as the tracer writes it: the concatenation
    of its last `shift` and first N - shift positions. (node id -> (parameter, axis,
    shift in -N/2..N/2), ids of the slices only such rolls read)."""
    users = graph.users()
    rolls = {}
    for n in graph.nodes:
        if n.op != "concatenate" or len(n.operands) != 2:
            continue
        first, second = n.operands
        src, axis = first.operands[0] if first.op == "slice" else None, n.attrs["dimension"]
        if (
            src is None
            or src.op != "parameter"
            or second.op != "slice"
            or second.operands[0] is not src
        ):
            continue
        size = src.shape[axis]
        spans = [
            tuple(zip(s.attrs["start"], s.attrs["limit"], s.attrs["stride"]))
            for s in (first, second)
        ]
        others = all(
            span[d] == (0, m, 1) for span in spans for d, m in enumerate(src.shape) if d != axis
        )
        shift = size - spans[0][axis][0]
        if (
            others
            and spans[0][axis] == (size - shift, size, 1)
            and spans[1][axis] == (0, size - shift, 1)
        ):
            rolls[n] = (src, axis, shift if 2 * shift <= size else shift - size)
    # a slice something else reads pins its axis as slices do, and so that roll is none
    outputs = set(graph.outputs)
    parts = {
        s
        for r in rolls
        for s in r.operands
        if s not in outputs and all(u in rolls for u in users[s])
    }
    rolls = {r.id: v for r, v in rolls.items() if all(o in parts for o in r.operands)}
    return rolls, {s.id for s in parts}
