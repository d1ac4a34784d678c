"""Reduction fusions as row kernels: LANES threads of a block share a row, SUBS rows per block.

The iteration shape S splits into kept axes K (a *row* is one index over K) and reduced axes R.
A block of LANES x SUBS threads walks rows in grid-stride steps; the lanes of a row stride over
R. Per row, passes follow the fusion contract's stages: pass s accumulates the reduces of
stage s (per-lane partials, then a shared-memory tree over the lanes: no warp shuffles, so the
simulator runs the same code), and the last pass writes full-shaped outputs; the row's
elementwise consumers run in the same kernel (softmax, layernorm: one kernel). Row values are
hoisted out of the element loop by the emitter's levels. A full-shaped expensive value read in
several passes (softmax's exp) is kept in a per-lane scratch row in global memory, written and
read back by the same thread, never recomputed.

LANES is a power of two chosen at launch from the row length (1 lane per row for short rows,
up to 256); threads beyond the last row compute a copy of it and write nothing, so every thread
reaches every barrier. Which thread index runs along the lanes is fixed per kernel so that a
warp reads consecutive addresses: threadIdx.x walks the lanes when R holds the innermost axis
(rows are contiguous), and walks the rows when a kept axis is innermost (sum over axis 0).
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.emitter import (
    ELEMENT,
    ROW,
    ZERO,
    BodyEmitter,
    LayoutError,
    Sizes,
    Writer,
    decompose,
    offset,
)
from jitc.backends.cuda.kernel import DTYPE_NAME, Kernel, assemble, indent
from jitc.backends.cuda.lowering import HALF, cast, literal, store, value_dtype
from jitc.core import ops
from jitc.core.ir import Graph, Node

MAX_THREADS = 256  # threads per block of a reduction kernel (the shared tree's size)
# Elements a lane adds to a float sum in the sum's dtype before the block's total joins the
# lane's float64 partial: a lane's sequential float32 sum of 2**24 / 256 elements erred
# ~1e-3; blocks of 32 err ~3e-7, at one float64 add per 32 elements.
BLOCK = 32
EMPTY = "i64(9223372036854775807)"  # the index of an argmax partial that saw no element

_INIT = {
    ("sum", "f"): 0,
    ("sum", "i"): 0,
    ("prod", "f"): 1,
    ("prod", "i"): 1,
    ("sum", "u"): 0,
    ("prod", "u"): 1,
    ("max", "f"): -np.inf,
    ("min", "f"): np.inf,
    ("and", "b"): True,
    ("or", "b"): False,
    ("sum", "b"): False,
    ("prod", "b"): True,
    ("max", "b"): False,
    ("min", "b"): True,
}


def init(kind, dtype) -> str:
    dtype = np.dtype(dtype)
    if (kind, dtype.kind) in _INIT:
        return literal(_INIT[(kind, dtype.kind)], dtype)
    info = np.iinfo(dtype)
    return literal(info.min if kind == "max" else info.max, dtype)


def combine(kind, a, b, dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "b" and kind in ("sum", "max", "or"):
        return f"({a} | {b})"
    if dtype.kind == "b" and kind in ("prod", "min", "and"):
        return f"({a} & {b})"
    if kind == "sum":
        return cast(f"{a} + {b}", dtype)
    if kind == "prod":
        return cast(f"{a} * {b}", dtype)
    if kind == "max":
        return f"({a} if ({a} >= {b} or {a} != {a}) else {b})"
    if kind == "min":
        return f"({a} if ({a} <= {b} or {a} != {a}) else {b})"
    raise LayoutError(f"unknown reduce kind {kind!r}")


def blocked(r: Node) -> bool:
    """Is `r` a float sum (summed in blocks, its partials and tree in float64)?"""
    return r.op == "reduce" and r.attrs["kind"] == "sum" and r.dtype.kind == "f" and not in_order(r)


def in_order(r: Node) -> bool:
    """Is `r` a float16 sum or product? The tracer makes one only where NumPy rounds every add
    (product) to float16, one element after the other in C order of the reduced axes
    (lax.reduce): so its row runs on one lane, unblocked."""
    return r.op == "reduce" and r.attrs["kind"] in ("sum", "prod") and r.dtype == HALF


def partial_dtype(r: Node):
    """The dtype of a reduction's per-lane partials and shared tree."""
    return np.dtype(np.float64) if blocked(r) else r.operands[0].dtype


def _total(r: Node, partial: str) -> str:
    """A reduction's result from its combined partial (float sums: rounded to its dtype)."""
    return cast(partial, r.dtype) if blocked(r) else partial


def reduced_axes(r: Node) -> tuple:
    return tuple(r.attrs["axes"]) if r.op == "reduce" else (r.attrs["axis"],)


def stages(body: Graph) -> dict:
    """stage[r] for each reduction: 1 + the latest stage it depends on."""
    stage, depends = {}, {}
    for n in body.nodes:
        s = max((depends[o] for o in n.operands), default=-1)
        if n.op in ops.REDUCTIONS:
            stage[n] = depends[n] = s + 1
        else:
            depends[n] = s
    return stage


def needs_scratch(body: Graph, shape, stage_of, final) -> list:
    """Expensive full-shaped values read in more than one pass."""
    readers: dict = {}
    seen: set = set()
    roots = [(o, s) for r, s in stage_of.items() for o in r.operands]
    roots += [(out, final) for out in body.outputs if out.shape == shape]
    stack = roots[::-1]
    while stack:  # depth first, operands in order (an explicit stack: chains are deep)
        n, s = stack.pop()
        if (n, s) in seen or n.op in ops.REDUCTIONS:
            continue
        seen.add((n, s))
        if n.shape == shape and n.op in ops.EXPENSIVE:
            readers.setdefault(n, set()).add(s)
        stack += [(o, s) for o in reversed(n.operands)]
    return [n for n, s in readers.items() if len(s) > 1]


class RowKernel:
    def __init__(self, body: Graph):
        self.body = body
        self.reduces = [n for n in body.nodes if n.op in ops.REDUCTIONS]
        spaces = {(r.operands[0].shape, reduced_axes(r)) for r in self.reduces}
        if len(spaces) != 1:
            raise LayoutError(f"reductions over different spaces: {spaces}")
        self.shape, self.axes = spaces.pop()
        self.kept = tuple(d for d in range(len(self.shape)) if d not in self.axes)
        self.rows_shape = tuple(self.shape[d] for d in self.kept)
        self.inner_shape = tuple(self.shape[d] for d in self.axes)
        self.rows = int(np.prod(self.rows_shape, dtype=np.int64))
        self.rlen = int(np.prod(self.inner_shape, dtype=np.int64))
        inner = [d for d in range(len(self.shape)) if self.shape[d] != 1]
        self.lanes_on_x = not inner or inner[-1] in self.axes
        self.w, self.sz = Writer(), Sizes()
        self.em = BodyEmitter(
            body, self.w, self.sz, {p: f"a{k}" for k, p in enumerate(body.params)}
        )
        self.names = [f"i{d}" for d in range(len(self.shape))]

    def generate(self) -> Kernel:
        w, sz, em, body = self.w, self.sz, self.em, self.body
        n_rows = sz(self.rows)
        stage_of = stages(body)
        final = max(stage_of.values()) + 1
        scratch = needs_scratch(body, self.shape, stage_of, final)
        self.scratch = {n: f"sc{k}" for k, n in enumerate(scratch)}
        self.ready: set = set()
        em.hooks = (self._read_scratch, self._write_scratch)

        w.level = ROW
        row_idx = decompose(w, "row", self.rows_shape, [self.names[d] for d in self.kept], sz)
        decomp_rows = w.take(ROW)
        w.level = ELEMENT
        inner_idx = decompose(w, "j", self.inner_shape, [self.names[d] for d in self.axes], sz)
        self.decomp_inner = w.take(ELEMENT)
        full = [None] * len(self.shape)
        for d, c in zip(self.kept, row_idx):
            full[d] = c
        for d, c in zip(self.axes, inner_idx):
            full[d] = c
        self.index = tuple(full)
        for r in self.reduces:
            em.bound_index[r] = row_idx
        shared = []
        for k, r in enumerate(self.reduces):
            shared.append(
                f"sh{k} = cuda.shared.array({MAX_THREADS}, {DTYPE_NAME[partial_dtype(r)]})"
            )
            if r.op != "reduce":
                shared.append(f"shi{k} = cuda.shared.array({MAX_THREADS}, i64)")

        loop = ["row = row0 + sub", f"live = row < {n_rows}", f"row = min(row, {n_rows} - 1)"]
        loop += decomp_rows
        for s in range(final):
            loop += self._pass([r for r in self.reduces if stage_of[r] == s])
        loop += self._final_pass()

        lane, sub = ("x", "y") if self.lanes_on_x else ("y", "x")
        lines = (
            w.take(0)
            + shared
            + [
                f"lane = cuda.threadIdx.{lane}",
                f"sub = cuda.threadIdx.{sub}",
                f"LANES = cuda.blockDim.{lane}",
                f"SUBS = cuda.blockDim.{sub}",
                # this thread's place in the shared trees, its partner's distance per lane, and
                # the place of lane 0 of its row
                "me = sub * LANES + lane" if self.lanes_on_x else "me = lane * SUBS + sub",
                "pstride = 1" if self.lanes_on_x else "pstride = SUBS",
                "first = sub * LANES" if self.lanes_on_x else "first = sub",
                "slot = cuda.blockIdx.x * SUBS + sub",
                "nslots = cuda.gridDim.x * SUBS",
                f"for row0 in range(cuda.blockIdx.x * SUBS, {n_rows}, cuda.gridDim.x * SUBS):",
            ]
            + indent(loop)
        )
        name, source = assemble(
            "reduction",
            len(body.params),
            len(body.outputs),
            len(scratch),
            w.uses_err,
            len(sz.values),
            indent(lines),
        )
        return Kernel(
            name,
            "reduction",
            source,
            [p.dtype for p in body.params],
            [o.dtype for o in body.outputs],
            sz.values,
            {
                "rows": self.rows,
                "rlen": self.rlen,
                "lanes_on_x": self.lanes_on_x,
                "one_lane": any(map(in_order, self.reduces)),
            },
            scratch=[value_dtype(n.dtype) for n in scratch],
            uses_err=w.uses_err,
        )

    # -- scratch rows, one per thread slot, so the same thread reads what it wrote; laid out
    # so that a warp's accesses are consecutive
    def _scratch_at(self, n):
        if self.lanes_on_x:
            return f"{self.scratch[n]}[slot * {self.sz(self.rlen)} + j]"
        return f"{self.scratch[n]}[j * nslots + slot]"

    def _read_scratch(self, n, idx):
        if n in self.scratch and n in self.ready and idx == self.index:
            saved, self.w.level = self.w.level, ELEMENT
            var = self.w.tmp("v")
            self.w.line(f"{var} = {self._scratch_at(n)}")
            self.w.level = saved
            return var, ELEMENT
        return None

    def _write_scratch(self, n, idx, value):
        if n in self.scratch and n not in self.ready and idx == self.index:
            saved, self.w.level = self.w.level, ELEMENT
            self.w.line(f"{self._scratch_at(n)} = {value[0]}")
            self.w.level = saved
            self._written.add(n)

    # -- passes
    def _element_loop(self, inner: list[str], blocks: tuple = ()) -> list[str]:
        """The lane's loop over the row; with float sums (`blocks`: their indices), in
        blocks of BLOCK elements per lane, each block's total added into a float64 partial."""
        rlen = self.sz(self.rlen)
        if not blocks:
            return [f"for j in range(lane, {rlen}, LANES):"] + indent(self.decomp_inner + inner)
        span = f"LANES * {BLOCK}"
        block = (
            [f"blk{k} = {init('sum', self.reduces[k].dtype)}" for k in blocks]
            + [f"for j in range(jb + lane, min(jb + {span}, {rlen}), LANES):"]
            + indent(self.decomp_inner + inner)
            + [f"acc{k} = acc{k} + f64(blk{k})" for k in blocks]
        )
        return [f"for jb in range(0, {rlen}, {span}):"] + indent(block)

    def _pass(self, ready: list) -> list[str]:
        w, em = self.w, self.em
        em.forget(ELEMENT)
        self._written: set = set()
        w.level = ELEMENT
        accs = []
        for r in ready:
            k = self.reduces.index(r)
            v, _ = em.value(r.operands[0], self.index)
            if blocked(r):
                w.line(f"blk{k} = {combine('sum', f'blk{k}', v, r.dtype)}")
                accs.append(f"acc{k} = {init('sum', np.float64)}")
            elif r.op == "reduce":
                w.line(f"acc{k} = {combine(r.attrs['kind'], f'acc{k}', v, r.dtype)}")
                accs.append(f"acc{k} = {init(r.attrs['kind'], r.dtype)}")
            else:
                cmp = ">" if r.op == "argmax" else "<"
                w.open(
                    f"if acci{k} == {EMPTY} or ({v} != {v} and acc{k} == acc{k}) or "
                    f"(acc{k} == acc{k} and {v} {cmp} acc{k}):"
                )
                w.line(f"acc{k} = {v}")
                w.line(f"acci{k} = j")
                w.close()
                kind = "max" if r.op == "argmax" else "min"
                accs += [f"acc{k} = {init(kind, r.operands[0].dtype)}", f"acci{k} = {EMPTY}"]
        inner = w.take(ELEMENT)
        blocks = tuple(self.reduces.index(r) for r in ready if blocked(r))
        lines = w.take(ROW) + accs + self._element_loop(inner, blocks) + self._tree(ready)
        self.ready |= self._written
        return lines

    def _tree(self, ready: list) -> list[str]:
        """Combine the lanes' partials in shared memory; every lane gets the row's result."""
        store, comb, result, single = [], [], [], []
        for r in ready:
            k = self.reduces.index(r)
            if r.op == "reduce":
                both = combine(r.attrs["kind"], f"x{k}", f"y{k}", partial_dtype(r))
                store.append(f"sh{k}[me] = acc{k}")
                comb += [
                    f"x{k} = sh{k}[me]",
                    f"y{k} = sh{k}[me + h * pstride]",
                    f"sh{k}[me] = {both}",
                ]
                # a float sum's float64 total is rounded once, to its dtype
                result.append(f"red{k} = {_total(r, f'sh{k}[first]')}")
                single.append(f"red{k} = {_total(r, f'acc{k}')}")
            else:
                cmp = ">" if r.op == "argmax" else "<"
                store += [f"sh{k}[me] = acc{k}", f"shi{k}[me] = acci{k}"]
                comb += [
                    f"xv{k} = sh{k}[me]",
                    f"xi{k} = shi{k}[me]",
                    f"yv{k} = sh{k}[me + h * pstride]",
                    f"yi{k} = shi{k}[me + h * pstride]",
                    f"if yi{k} != {EMPTY} and (xi{k} == {EMPTY} or "
                    f"(yv{k} != yv{k} and (xv{k} == xv{k} or yi{k} < xi{k})) or "
                    f"(xv{k} == xv{k} and yv{k} == yv{k} and (yv{k} {cmp} xv{k} or "
                    f"(yv{k} == xv{k} and yi{k} < xi{k})))):",
                    f"    sh{k}[me] = yv{k}",
                    f"    shi{k}[me] = yi{k}",
                ]
                result.append(f"red{k} = shi{k}[first]")
                single.append(f"red{k} = acci{k}")
            self.em.bound[r] = (f"red{k}", ROW)
        tree = (
            store
            + ["cuda.syncthreads()", "h = LANES // 2", "while h > 0:", "    if lane < h:"]
            + indent(comb, 2)
            + ["    cuda.syncthreads()", "    h = h // 2"]
            + result
            + ["cuda.syncthreads()"]
        )
        return ["if LANES > 1:"] + indent(tree) + ["else:"] + indent(single)

    def _final_pass(self) -> list[str]:
        w, em, body = self.w, self.em, self.body
        em.forget(ELEMENT)
        self._written = set()
        keep = tuple(1 if d in self.axes else s for d, s in enumerate(self.shape))
        full, rows = [], []
        for k, o in enumerate(body.outputs):
            if o.shape == self.shape:
                full.append(k)
            elif o.shape in (self.rows_shape, keep):
                rows.append(k)
            else:
                raise LayoutError(
                    f"output {o.type_str()} fits neither the iteration shape "
                    f"{self.shape} nor its rows"
                )
        lines = []
        if full:
            w.level = ELEMENT
            off, _ = offset(self.index, self.shape, self.sz)
            values = [(k, em.value(body.outputs[k], self.index)[0]) for k in full]
            w.open("if live:")
            for k, v in values:
                w.line(f"out{k}[{off}] = {store(body.outputs[k].dtype, v)}")
            w.close()
            inner = w.take(ELEMENT)
            lines += w.take(ROW) + self._element_loop(inner)
        if rows:
            w.level = ROW
            row_index = self.em.bound_index[self.reduces[0]]
            values = []
            for k in rows:
                o = body.outputs[k]
                idx = (
                    row_index
                    if o.shape == self.rows_shape
                    else tuple(
                        ZERO if d in self.axes else self.index[d] for d in range(len(self.shape))
                    )
                )
                values.append((k, em.value(o, idx)[0]))
            lines += w.take(ROW) + ["if live and lane == 0:"]
            lines += indent([f"out{k}[row] = {store(body.outputs[k].dtype, v)}" for k, v in values])
        return lines


def reduction_kernel(body: Graph) -> Kernel:
    return RowKernel(body).generate()
