"""dot_general as shared-memory tiled kernels, the elementwise epilogue applied per output.

Operands are read in place (flat, C order): an element (batch b, row m, contraction k) of the
lhs is found by splitting b, m and k over the lhs's batch, free and contracting dims, so a
transposed operand (q @ k.T) costs no copy. Two shapes of kernel, chosen by the row count M:

- tile (M > 8): a block of 8 x 8 threads computes a 32 x 32 output tile, each thread a 4 x 4
  register tile strided by 8 (conflict-free shared reads, coalesced stores); 32 x 16 and
  16 x 32 slices of the operands are staged in shared memory per step of 16 along K.
- skinny (M <= 8, batch-1 inference): a block of T <= 64 threads (T chosen at launch)
  computes T columns for MB = 1, 2, 4 or 8 rows; MB x 64 slices of the lhs are staged in
  shared memory and each thread streams its rhs column (coalesced across the block), reusing
  it for all MB rows.

The epilogue (bias, activation, scale, residual) is evaluated on each accumulator before the
single store, so the pre-activation is never written.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.emitter import ELEMENT, BodyEmitter, Sizes, Writer, decompose, strides
from jitc.backends.cuda.kernel import DTYPE_NAME, Kernel, assemble, indent
from jitc.backends.cuda.lowering import cast, literal, load, store
from jitc.core.ir import Graph, Node
from jitc.core.primitives import dot_free_dims

TILE_THREADS, TILE_REG, TILE_K = 8, 4, 16  # 8x8 threads, 4x4 outputs each: 32x32 tiles
TILE = TILE_THREADS * TILE_REG
SKINNY_THREADS = SKINNY_K = 64  # threads at most (one column each); K step
SKINNY_MAX_ROWS = 8


def _prod(xs) -> int:
    return int(np.prod(list(xs), dtype=np.int64))


class DotLayout:
    """The (batch, rows, contraction, columns) view of a dot_general's operands."""

    def __init__(self, dot: Node):
        self.dot = dot
        lhs, rhs = dot.operands
        a = dot.attrs
        self.lb, self.rb = list(a["lhs_batch"]), list(a["rhs_batch"])
        self.lc, self.rc = list(a["lhs_contracting"]), list(a["rhs_contracting"])
        self.lf = dot_free_dims(lhs.ndim, self.lc, self.lb)
        self.rf = dot_free_dims(rhs.ndim, self.rc, self.rb)
        self.B = _prod(lhs.shape[d] for d in self.lb)
        self.M = _prod(lhs.shape[d] for d in self.lf)
        self.K = _prod(lhs.shape[d] for d in self.lc)
        self.N = _prod(rhs.shape[d] for d in self.rf)

    @property
    def skinny_rows(self) -> int:
        """MB for the skinny kernel (a power of two >= M), or 0 for the tile kernel."""
        if self.M > SKINNY_MAX_ROWS:
            return 0
        mb = 1
        while mb < self.M:
            mb *= 2
        return mb


def _group_offset(w: Writer, var: str, dims, shape, sz: Sizes) -> list[str]:
    """Offset terms of position `var` of a group of `dims` (in that order) of a C-order array."""
    st = strides(shape)
    dims = [d for d in dims if shape[d] != 1]
    if not dims:
        return []
    if all(
        a < b and all(shape[x] == 1 for x in range(a + 1, b)) for a, b in zip(dims, dims[1:])
    ):  # adjacent in memory: one stride for the group
        s = st[dims[-1]]
        return [var if s == 1 else f"{var} * {sz(s)}"]
    names = [w.tmp("g") for _ in dims]
    comps = decompose(w, var, [shape[d] for d in dims], names, sz)
    return [c if st[d] == 1 else f"{c} * {sz(st[d])}" for (c, _), d in zip(comps, dims)]


def _load(w: Writer, arr: str, node: Node, groups, sz: Sizes) -> str:
    """Lines computing the flat offset of element (groups: (var, dims)...) of `node`."""
    terms = []
    for var, dims in groups:
        terms += _group_offset(w, var, dims, node.shape, sz)
    return load(node.dtype, f"{arr}[{' + '.join(terms) or '0'}]")


def _mac(acc: str, a: str, b: str, dtype) -> str:
    if np.dtype(dtype).kind == "b":
        return f"{acc} = {acc} | ({a} & {b})"
    return f"{acc} = {cast(f'{acc} + {a} * {b}', dtype)}"


class DotKernel:
    """The kernel for a body whose first op is the dot and whose other ops are elementwise."""

    def __init__(self, body: Graph, dot: Node):
        self.body, self.dot = body, dot
        self.lay = DotLayout(dot)
        self.w, self.sz = Writer(), Sizes()
        self.arrays = {p: f"a{k}" for k, p in enumerate(body.params)}
        self.em = BodyEmitter(body, self.w, self.sz, self.arrays)
        self.t = DTYPE_NAME[np.dtype(dot.dtype)]
        self.zero = literal(0, dot.dtype)

    def _store(self, acc: str) -> list[str]:
        """The epilogue at output (b, m, n) with the dot's value `acc`, and the stores."""
        w, lay, sz, dot = self.w, self.lay, self.sz, self.dot
        lhs, rhs = dot.operands
        w.level = ELEMENT
        w.line(f"d = {acc}")
        comps = []
        for var, shape in (
            ("b", [lhs.shape[d] for d in lay.lb]),
            ("m", [lhs.shape[d] for d in lay.lf]),
            ("n", [rhs.shape[d] for d in lay.rf]),
        ):
            names = [w.tmp("s") for _ in shape]
            comps += list(decompose(w, var, shape, names, sz))
        idx = tuple(comps)
        self.em.bound[dot] = ("d", ELEMENT)
        self.em.bound_index[dot] = idx
        self.em.forget(ELEMENT)
        values = [self.em.value(o, idx)[0] for o in self.body.outputs]
        flat = f"(b * {sz(lay.M)} + m) * {sz(lay.N)} + n"
        for k, (o, v) in enumerate(zip(self.body.outputs, values)):
            w.line(f"out{k}[{flat}] = {store(o.dtype, v)}")
        return w.take(ELEMENT)

    def _lhs(self, m: str, k: str) -> list[str]:
        w, lay = self.w, self.lay
        w.level = ELEMENT
        read = _load(
            w,
            self.arrays[self.dot.operands[0]],
            self.dot.operands[0],
            [("b", lay.lb), (m, lay.lf), (k, lay.lc)],
            self.sz,
        )
        return w.take(ELEMENT), read

    def _rhs(self, k: str, n: str):
        w, lay = self.w, self.lay
        w.level = ELEMENT
        read = _load(
            w,
            self.arrays[self.dot.operands[1]],
            self.dot.operands[1],
            [("b", lay.rb), (k, lay.rc), (n, lay.rf)],
            self.sz,
        )
        return w.take(ELEMENT), read

    def generate(self) -> Kernel:
        mb = self.lay.skinny_rows
        lines = self._skinny(mb) if mb else self._tile()
        kind = "dot_skinny" if mb else "dot_tile"
        body = self.body
        lines = self.w.take(0) + lines
        name, source = assemble(
            kind,
            len(body.params),
            len(body.outputs),
            0,
            self.w.uses_err,
            len(self.sz.values),
            indent(lines),
        )
        lay = self.lay
        return Kernel(
            name,
            kind,
            source,
            [p.dtype for p in body.params],
            [o.dtype for o in body.outputs],
            self.sz.values,
            {"B": lay.B, "M": lay.M, "N": lay.N, "rows_per_block": mb},
        )

    def _tile(self) -> list[str]:
        sz, lay, t, zero = self.sz, self.lay, self.t, self.zero
        T, R, BK = TILE_THREADS, TILE_REG, TILE_K
        M, N, K = sz(lay.M), sz(lay.N), sz(lay.K)
        lhs_lines, lhs_read = self._lhs("m", "kk")
        rhs_lines, rhs_read = self._rhs("kk", "n")
        store = self._store("acc[r, c]")
        return (
            [
                f"sa = cuda.shared.array(({TILE}, {BK}), {t})",
                f"sb = cuda.shared.array(({BK}, {TILE}), {t})",
                f"acc = cuda.local.array(({R}, {R}), {t})",
                "tx = cuda.threadIdx.x",
                "ty = cuda.threadIdx.y",
                f"tid = ty * {T} + tx",
                f"nb = cuda.blockIdx.x * {TILE}",
                f"mb = cuda.blockIdx.y * {TILE}",
                "b = cuda.blockIdx.z",
                f"for r in range({R}):",
                f"    for c in range({R}):",
                f"        acc[r, c] = {zero}",
                f"for k0 in range(0, {K}, {BK}):",
                f"    for e in range({TILE * BK // (T * T)}):",
                f"        lin = tid + e * {T * T}",
                f"        ra = lin // {BK}",
                f"        ca = lin % {BK}",
                "        m = mb + ra",
                "        kk = k0 + ca",
                f"        if m < {M} and kk < {K}:",
            ]
            + indent(lhs_lines + [f"sa[ra, ca] = {lhs_read}"], 3)
            + [
                "        else:",
                f"            sa[ra, ca] = {zero}",
                f"        rb = lin // {TILE}",
                f"        cb = lin % {TILE}",
                "        kk = k0 + rb",
                "        n = nb + cb",
                f"        if kk < {K} and n < {N}:",
            ]
            + indent(rhs_lines + [f"sb[rb, cb] = {rhs_read}"], 3)
            + [
                "        else:",
                f"            sb[rb, cb] = {zero}",
                "    cuda.syncthreads()",
                f"    for q in range({BK}):",
                f"        for r in range({R}):",
                f"            av = sa[ty + r * {T}, q]",
                f"            for c in range({R}):",
                "                "
                + _mac("acc[r, c]", "av", f"sb[q, tx + c * {T}]", self.dot.dtype),
                "    cuda.syncthreads()",
                f"for r in range({R}):",
                f"    m = mb + ty + r * {T}",
                f"    for c in range({R}):",
                f"        n = nb + tx + c * {T}",
                f"        if m < {M} and n < {N}:",
            ]
            + indent(store, 3)
        )

    def _skinny(self, mb: int) -> list[str]:
        sz, lay, t, zero = self.sz, self.lay, self.t, self.zero
        M, N, K = sz(lay.M), sz(lay.N), sz(lay.K)
        lhs_lines, lhs_read = self._lhs("m", "kk")
        rhs_lines, rhs_read = self._rhs("kq", "n")
        store = self._store("acc[r]")
        return (
            [
                f"sa = cuda.shared.array(({mb}, {SKINNY_K}), {t})",
                f"acc = cuda.local.array({mb}, {t})",
                "tx = cuda.threadIdx.x",
                "T = cuda.blockDim.x",
                "n = cuda.blockIdx.x * T + tx",
                f"mb = cuda.blockIdx.y * {mb}",
                "b = cuda.blockIdx.z",
                f"for r in range({mb}):",
                f"    acc[r] = {zero}",
                f"for k0 in range(0, {K}, {SKINNY_K}):",
                f"    for r in range({mb}):",
                "        m = mb + r",
                f"        for c in range(tx, {SKINNY_K}, T):",
                "            kk = k0 + c",
                f"            if m < {M} and kk < {K}:",
            ]
            + indent(lhs_lines + [f"sa[r, c] = {lhs_read}"], 4)
            + [
                "            else:",
                f"                sa[r, c] = {zero}",
                "    cuda.syncthreads()",
                f"    if n < {N}:",
                f"        for q in range(min({SKINNY_K}, {K} - k0)):",
                "            kq = k0 + q",
            ]
            + indent(rhs_lines + [f"bv = {rhs_read}"], 3)
            + [
                f"            for r in range({mb}):",
                f"                {_mac('acc[r]', 'sa[r, q]', 'bv', self.dot.dtype)}",
                "    cuda.syncthreads()",
                f"if n < {N}:",
                f"    for r in range({mb}):",
                "        m = mb + r",
                f"        if m < {M}:",
            ]
            + indent(store, 3)
        )


def dot_kernel(body: Graph) -> Kernel:
    """The kernel of a dot body: its first op is the dot, the rest an elementwise epilogue."""
    (dot,) = [n for n in body.nodes if n.op == "dot_general"]
    return DotKernel(body, dot).generate()
