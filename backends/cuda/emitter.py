"""Emit one fusion body's values as straight-line kernel code, for every kernel kind.

Arrays reach kernels flat (1-d, C order); an element of a body value at a multi-index is an
expression built from index components. Each emitted value carries a *level*: 0 when it
depends on no index (kernel prologue), 1 when it depends only on the row (reduction kernels:
computed once per row, like the fusion contract's row values), 2 when it depends on the element.
A value is emitted into the block of its level, so loop-invariant work is hoisted by
construction: `1/sqrt(var + eps)` of a layernorm runs once per row, not once per element.

Sizes (extents, strides) are kernel arguments, never literals, so a new batch size reuses the
kernel: only ranks, dtypes and which dims are 1 (the broadcast pattern) shape the source.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.lowering import ERR_INDEX, cast, literal, load, lower
from jitc.core import ops
from jitc.core.errors import JitcError
from jitc.core.ir import Graph, Node
from jitc.core.recursion import run

ROW, ELEMENT = 1, 2
ZERO = ("0", 0)


def _varies(idx: tuple) -> bool:
    """Does index `idx` depend on the element (or row) a thread computes?"""
    return any(level for _, level in idx)


class LayoutError(JitcError):
    """A fusion body has a layout this backend does not emit (a fusion-contract bug)."""


class Sizes:
    """Shape-derived integers as scalar int64 kernel arguments n0, n1, ... (one per value)."""

    def __init__(self):
        self.values: list[int] = []
        self._names: dict[int, str] = {}

    def __call__(self, value) -> str:
        value = int(value)
        if value not in self._names:
            self._names[value] = f"n{len(self.values)}"
            self.values.append(value)
        return self._names[value]


class Writer:
    """Lines per level (0 prologue, 1 row, 2 element); `level` says where lines go now.
    Lowerings write through it (lowering.Statements)."""

    def __init__(self):
        self.blocks = {0: [], ROW: [], ELEMENT: []}
        self.indent = {0: 0, ROW: 0, ELEMENT: 0}
        self.level = ELEMENT
        self.counter = 0
        self.uses_err = False

    def tmp(self, prefix="t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def line(self, text: str) -> None:
        self.blocks[self.level].append("    " * self.indent[self.level] + text)

    def open(self, header: str) -> None:
        self.line(header)
        self.indent[self.level] += 1

    def close(self) -> None:
        self.indent[self.level] -= 1

    def error(self, code: int) -> str:
        self.uses_err = True
        return f"err[0] = {code}"

    def take(self, level: int) -> list[str]:
        """The lines written at `level` so far (and forget them)."""
        lines, self.blocks[level] = self.blocks[level], []
        return lines


def index_position(k: str, raw: str, dtype, size: str, w: Writer) -> None:
    """Lines making `k` the int64 position of index `raw` (of integer `dtype`) into an axis
    of `size`: a negative index counts from the end; an unsigned one never does (a uint64
    past int64's range is negative as int64, and so out of bounds, not from the end)."""
    w.line(f"{k} = i64({raw})")
    if np.dtype(dtype).kind != "u":
        w.open(f"if {k} < 0:")
        w.line(f"{k} = {k} + {size}")
        w.close()


def strides(shape) -> list[int]:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


def decompose(w: Writer, flat: str, shape, names, sz: Sizes) -> tuple:
    """Index components of C-order position `flat` in `shape`, as lines defining `names`."""
    comps = []
    rest = flat
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    for pos, d in enumerate(reversed(dims)):
        last = pos == len(dims) - 1
        if last:
            w.line(f"{names[d]} = {rest}")
        else:
            w.line(f"{names[d]} = {rest} % {sz(shape[d])}")
            nxt = w.tmp("q")
            w.line(f"{nxt} = {rest} // {sz(shape[d])}")
            rest = nxt
    for d in range(len(shape)):
        comps.append(ZERO if shape[d] == 1 else (names[d], w.level))
    return tuple(comps)


def offset(idx, shape, sz: Sizes) -> tuple[str, int]:
    """Flat C-order offset of index `idx` in an array of `shape`, and its level."""
    terms, level = [], 0
    for (text, lv), n, s in zip(idx, shape, strides(shape)):
        if n == 1 or text == "0":
            continue
        terms.append(text if s == 1 else f"{text} * {sz(s)}")
        level = max(level, lv)
    return (" + ".join(terms) or "0"), level


class BodyEmitter:
    """Values of one body at index tuples of (text, level) components, memoized.

    arrays: body node -> kernel argument name of its flat array (parameters).
    bound: body node -> (text, level) of values the kernel computes itself (reduce results,
        the dot accumulator), valid at `bound_index[node]` only.
    """

    def __init__(self, body: Graph, w: Writer, sz: Sizes, arrays: dict):
        self.body = body
        self.w = w
        self.sz = sz
        self.arrays = arrays
        self.bound: dict = {}
        self.bound_index: dict = {}
        self.memo: dict = {}
        self.hooks = None  # optional (read(node, idx) -> Expr | None, wrote(node, idx, Expr))
        # (index, shape, name): an array of `shape` read at `index` is read at position
        # `name`, the flat loop counter, instead of recombining the divided-out components
        # (not where the index is constant, one element: that read is invariant, level 0)
        self.flat = None

    def forget(self, level: int) -> None:
        """Drop memoized values of `level` and above (their variables are out of scope)."""
        self.memo = {k: v for k, v in self.memo.items() if v[1] < level}

    def value(self, node: Node, idx: tuple) -> tuple[str, int]:
        """(text, level) of `node` at `idx`, writing the lines it needs first (as generators
        on one stack, recursion.py: an op chain is as deep as it is long)."""
        return run(self._memoized(node, idx))

    def _memoized(self, node: Node, idx: tuple):
        key = (node, idx)
        if key not in self.memo:
            self.memo[key] = yield self._value(node, idx)
        return self.memo[key]

    def _emit(self, level: int, make) -> str:
        """Run `make()` (which writes lines, returns an expression) at `level`; bind a name."""
        saved = self.w.level
        self.w.level = level
        try:
            expr = make()
            var = self.w.tmp("v")
            self.w.line(f"{var} = {expr}")
        finally:
            self.w.level = saved
        return var

    def _value(self, n: Node, idx):
        op = n.op
        if n in self.bound:
            want = self.bound_index[n]
            if idx != want:
                raise LayoutError(
                    f"{op} result read at {[i for i, _ in idx]}, not at {[i for i, _ in want]}"
                )
            return self.bound[n]
        if self.hooks is not None:
            got = self.hooks[0](n, idx)
            if got is not None:
                return got
        if op == "parameter":
            if self.flat is not None and (idx, n.shape) == self.flat[:2] and _varies(idx):
                off, level = self.flat[2], ELEMENT
            else:
                off, level = offset(idx, n.shape, self.sz)
            arr = self.arrays[n]
            return self._emit(level, lambda: load(n.dtype, f"{arr}[{off}]")), level
        if op == "constant":
            return literal(n.attrs["value"][()], n.dtype), 0
        if op in ops.ELEMENTWISE:
            args = []
            for o in n.operands:
                args.append((yield self._memoized(o, idx)))
            level = max(lv for _, lv in args)
            dtype = n.operands[-1].dtype if op == "select" else n.operands[0].dtype
            texts = [t for t, _ in args]
            out = (
                self._emit(level, lambda: lower(op, dtype, n.dtype, texts, n.attrs, self.w)),
                level,
            )
            if self.hooks is not None:
                self.hooks[1](n, idx, out)
            return out
        if op == "iota":
            text, level = idx[n.attrs["dimension"]]
            return cast(text, n.dtype), level
        if op == "broadcast_in_dim":
            (x,) = n.operands
            dims = n.attrs["broadcast_dimensions"]
            return (
                yield self._memoized(
                    x, tuple(ZERO if x.shape[k] == 1 else idx[d] for k, d in enumerate(dims))
                )
            )
        if op == "transpose":
            (x,) = n.operands
            sub = [None] * x.ndim
            for k, p in enumerate(n.attrs["permutation"]):
                sub[p] = idx[k]
            return (yield self._memoized(x, tuple(sub)))
        if op == "slice":
            (x,) = n.operands
            sub = []
            for (text, lv), s, st, size in zip(idx, n.attrs["start"], n.attrs["stride"], x.shape):
                if size == 1:
                    sub.append(ZERO)
                    continue
                # start and stride are arguments too: the slices of an unrolled loop (x[t]
                # for each step t) then share one kernel
                term = text if st == 1 else f"{text} * {self.sz(st)}"
                sub.append((f"({self.sz(s)} + {term})" if s else term, lv))
            return (yield self._memoized(x, tuple(sub)))
        if op == "reshape":
            (x,) = n.operands
            return (yield self._memoized(x, self._reshape_index(x.shape, n.shape, idx)))
        if op == "concatenate":
            return (yield from self._concatenate(n, idx))
        if op == "gather":
            return (yield from self._gather(n, idx))
        raise LayoutError(f"cannot generate {op} inside a cuda kernel")

    def _reshape_index(self, src, dst, idx):
        """Index into `src` for index `idx` of the reshaped `dst` (unit dims map for free)."""
        if [d for d in src if d != 1] == [d for d in dst if d != 1]:
            it = iter(i for i, d in zip(idx, dst) if d != 1)
            return tuple(ZERO if d == 1 else next(it) for d in src)
        flat, level = offset(idx, dst, self.sz)
        saved = self.w.level
        self.w.level = level
        f = self.w.tmp("f")
        self.w.line(f"{f} = {flat}")
        names = [self.w.tmp("r") for _ in src]
        comps = decompose(self.w, f, src, names, self.sz)
        self.w.level = saved
        return tuple(ZERO if c == ZERO else (c[0], level) for c in comps)

    def _concatenate(self, n, idx):
        """if/elif/else over the operands; everything depending on the shifted index stays
        inside its branch (a read there is only in bounds within the branch)."""
        w = self.w
        dim = n.attrs["dimension"]
        level = max(lv for _, lv in idx)
        text = idx[dim][0]
        parts, lo = [], 0
        for o in n.operands:
            if o.shape[dim]:
                parts.append((o, lo, lo + o.shape[dim]))
            lo += o.shape[dim]
        saved = w.level
        w.level = level
        var = w.tmp("v")
        for k, (o, lo, hi) in enumerate(parts):
            branched = len(parts) > 1
            if branched:
                w.open(
                    "else:"
                    if k == len(parts) - 1
                    else f"{'if' if k == 0 else 'elif'} {text} < {self.sz(hi)}:"
                )
            shifted = text if lo == 0 else f"({text} - {self.sz(lo)})"
            sub = list(idx)
            sub[dim] = ZERO if o.shape[dim] == 1 else (shifted, level)
            before = set(self.memo)
            v, _ = yield self._memoized(o, tuple(sub))
            w.line(f"{var} = {v}")
            if branched:
                w.close()
                for key in set(self.memo) - before:  # defined inside this branch only
                    if self.memo[key][1] >= level:
                        del self.memo[key]
        w.level = saved
        return var, level

    def _gather(self, n, idx):
        w = self.w
        x, ind = n.operands
        axis = n.attrs["axis"]
        raw, level = yield self._memoized(ind, idx[axis : axis + ind.ndim])
        size = self.sz(x.shape[axis])
        saved = w.level
        w.level = level
        k = w.tmp("k")
        index_position(k, raw, ind.dtype, size, w)
        w.open(f"if {k} < 0 or {k} >= {size}:")
        w.line(w.error(ERR_INDEX))
        w.line(f"{k} = i64(0)")
        w.close()
        w.level = saved
        # an axis of extent 1 is read at 0 (the index is still checked above)
        k_comp = ZERO if x.shape[axis] == 1 else (k, level)
        return (yield self._memoized(x, idx[:axis] + (k_comp,) + idx[axis + ind.ndim :]))
