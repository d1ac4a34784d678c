"""dot_general kernels over 3-d views of the operands: BLAS gemm (blas.py) for large float
products, generated loops for small or integer ones.

Each operand's dims fall into three groups (lhs: batch B, free M, contracting K; rhs: B, K,
free N). When every group is a run of consecutive dims in storage, the operand's buffer *is*
a 3-d array with the groups in storage order (a free reshape): `lhs` viewed as "BMK", "MBK",
"BKM", ... . `view_orders` finds those orders; an operand without one is copied into order
first (by the planner). The output is always the "BMN" view of a C-contiguous result.

Kernel signature: `def NAME(a, b, out, lo, hi, n)` over the 3-d views; [lo, hi) ranges
over the B*M output rows, or over the N output columns for a BLAS product with few rows, or
over the depth chunks of a row times a matrix (out then holds one partial row per chunk,
which the planner sums).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from jitc.backends.cpu.blas import blas_address, gemv_address
from jitc.backends.cpu.launcher import CHUNKS_PER_THREAD, PARALLEL_MIN_WORK
from jitc.backends.cpu.lowering import TYPE_NAMES
from jitc.core.ir import Node
from jitc.core.primitives import dot_free_dims

# Multiply-adds above which a float product goes to BLAS.
BLAS_MIN_FLOPS = 1 << 18
# A BLAS product splits its columns across threads, not its rows, when it has few rows or
# at least as many columns as rows: each thread then packs and reads only its part of b
# (SciPy's BLAS runs single-threaded inside jitc), which made the 64-row layers of a
# GPT-2 block 15-25% faster and reads a matrix-vector product's matrix once. The epilogue
# of such a product runs as its own launch, over rows.
COLUMNS_BELOW_ROWS = 8
UNROLL = 4  # rows of b per pass over an output row in the loop kernels
# A row times a matrix whose rows are contiguous (`x @ W` at batch 1) splits its depth:
# each task is a gemv over a contiguous block of at least this many rows of W, into its own
# partial row, and the planner sums the partial rows in order. Split by columns, each thread
# read part of every row of W: on an AMD EPYC, half the columns of a [512,1024] float32 W
# took as long as all of them (30 us, one thread), half its rows 16 us. Blocks of 64 rows
# let TBB's late-waking worker take a share of the blocks (up to CHUNKS_PER_THREAD per
# thread): in one process, alternating, W2 at batch 1 took 43-44 us in 8 blocks, 51-53 us
# in 2 or 4, 58 us split by columns (NumPy 53 us, a noisy hour).
DEPTH_MIN_ROWS = 64


@dataclass(frozen=True)
class DotShape:
    B: int
    M: int
    K: int
    N: int
    lhs: str  # storage order of the lhs groups, a permutation of "BMK"
    rhs: str  # a permutation of "BKN"
    mode: str  # "blas" or "loops"
    split: str = "rows"  # what [lo, hi) ranges over: output rows, (BLAS) columns or depth
    chunks: int = 1  # depth chunks of a "depth" split, each its own partial output row

    def view(self, side: str) -> tuple:
        """The 3-d shape of an operand ("lhs", "rhs") or of the output ("out"; for a depth
        split, the partial rows)."""
        if side == "out" and self.split == "depth":
            return (self.chunks, self.M, self.N)
        order = {"lhs": self.lhs, "rhs": self.rhs, "out": "BMN"}[side]
        return tuple(getattr(self, g) for g in order)

    def strides(self, side: str) -> dict:
        """Element strides of an operand's groups in its C-contiguous view."""
        order, shape = {"lhs": self.lhs, "rhs": self.rhs}[side], self.view(side)
        return {g: int(np.prod(shape[i + 1 :], dtype=np.int64)) for i, g in enumerate(order)}

    @property
    def rows(self) -> int:
        return {"columns": self.N, "depth": self.chunks}.get(self.split, self.B * self.M)

    @property
    def work(self) -> int:
        return self.B * self.M * self.K * self.N

    @property
    def matrix_vector(self) -> bool:
        """One row or one column: BLAS computes it with gemv."""
        return self.M == 1 or self.N == 1


def _prod(xs) -> int:
    return int(np.prod(list(xs), dtype=np.int64))


def _order(groups: dict) -> str | None:
    """Storage order of the dim groups {name: dims}, or None if a group is not a run of
    consecutive ascending dims. Empty groups (size 1) go first."""
    placed = []
    for name, dims in groups.items():
        if dims and list(dims) != list(range(dims[0], dims[0] + len(dims))):
            return None
        placed.append((dims[0] if dims else -1, name))
    return "".join(name for _, name in sorted(placed))


def view_orders(node: Node) -> tuple[str | None, str | None]:
    """(lhs order, rhs order) of a dot_general's operands; None where no view exists."""
    l, r = node.operands
    a = node.attrs
    pairs = sorted(zip(a["lhs_contracting"], a["rhs_contracting"]))
    lc, rc = [p[0] for p in pairs], [p[1] for p in pairs]
    lb, rb = list(a["lhs_batch"]), list(a["rhs_batch"])
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)
    return (_order({"B": lb, "M": lf, "K": lc}), _order({"B": rb, "K": rc, "N": rf}))


def standard_permutations(node: Node) -> tuple[list, list]:
    """Dim orders that bring each operand into "BMK" / "BKN" order (a transpose), with the
    contracting pairs in the order view_orders pairs them."""
    l, r = node.operands
    a = node.attrs
    pairs = sorted(zip(a["lhs_contracting"], a["rhs_contracting"]))
    lc, rc = [p[0] for p in pairs], [p[1] for p in pairs]
    lb, rb = list(a["lhs_batch"]), list(a["rhs_batch"])
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)
    return lb + lf + lc, rb + rc + rf


def dot_shape(
    node: Node, lhs_order: str, rhs_order: str, blas: bool = True, threads: int | None = None
) -> DotShape:
    """How a dot_general's kernel computes it; `threads`: numba's (for the depth split)."""
    l, r = node.operands
    a = node.attrs
    lb, lc = a["lhs_batch"], a["lhs_contracting"]
    rb, rc = a["rhs_batch"], a["rhs_contracting"]
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)
    B, M = _prod(l.shape[d] for d in lb), _prod(l.shape[d] for d in lf)
    K, N = _prod(l.shape[d] for d in lc), _prod(r.shape[d] for d in rf)
    flops = B * M * K * N
    if not (
        blas
        and node.dtype.kind in "fc"
        and flops >= BLAS_MIN_FLOPS
        and not lhs_order.endswith("B")
        and not rhs_order.endswith("B")
    ):
        return DotShape(B, M, K, N, lhs_order, rhs_order, "loops")
    threads = numba.config.NUMBA_NUM_THREADS if threads is None else threads
    if (
        B * M == 1
        and N > 1
        and rhs_order.endswith("N")
        and threads > 1
        and K >= threads * DEPTH_MIN_ROWS
        and flops >= PARALLEL_MIN_WORK
    ):
        chunks = min(K // DEPTH_MIN_ROWS, CHUNKS_PER_THREAD * threads)
        return DotShape(B, M, K, N, lhs_order, rhs_order, "blas", "depth", chunks)
    split = "columns" if B * M < COLUMNS_BELOW_ROWS or N >= B * M else "rows"
    return DotShape(B, M, K, N, lhs_order, rhs_order, "blas", split)


def _at(order: str, **index) -> str:
    return ", ".join(index[g] for g in order)


def dot_source(name: str, node: Node, ds: DotShape, sz) -> str:
    """The kernel computing out (the "BMN" view) = dot_general over the operand views."""
    B, M, K, N = (sz(v) for v in (ds.B, ds.M, ds.K, ds.N))
    t = TYPE_NAMES[node.dtype]
    is_bool = node.dtype.kind == "b"
    zero = "False" if is_bool else f"{t}(0)"

    def a_(bi, mi, ki):
        return f"a[{_at(ds.lhs.lower(), b=bi, m=mi, k=ki)}]"

    def b_(bi, ki, ni):
        return f"b[{_at(ds.rhs.lower(), b=bi, k=ki, n=ni)}]"

    def fma(acc, x, y):  # reassociable, so an inner product's sum runs in vector lanes
        if is_bool:
            return f"({acc} or ({x} and {y}))"
        if node.dtype.kind == "f":
            return f"reassoc_add({acc}, {t}({x} * {y}))"
        return f"{t}({acc} + {x} * {y})"

    lines = [f"def {name}(a, b, out, lo, hi, n):"]
    if ds.mode == "blas":
        # out[bi, m0:m1, n0:n1] = a[bi, m0:m1] @ b[bi, :, n0:n1] is, column-major,
        # out^T = b^T a^T over sub-blocks named by pointers, strides and leading
        # dimensions (any operand view whose last group is not the batch); one row is a
        # matrix-vector product
        isz = node.dtype.itemsize
        sa, sb = ds.strides("lhs"), ds.strides("rhs")
        if sb["N"] == 1 or ds.N == 1:  # b^T is column-major: b's columns are contiguous
            trans_b, ldb = ord("N"), max(sb["K"], ds.N, 1)
            gemv_shape = "n1 - n0, " + K
        else:  # b's rows are contiguous: b^T is b transposed
            trans_b, ldb = ord("T"), max(sb["N"], ds.K, 1)
            gemv_shape = K + ", n1 - n0"
        if sa["K"] == 1 or ds.K == 1:
            trans_a, lda, incx = ord("N"), max(sa["M"], ds.K, 1), 1
            # one column of b: out^T = b^T a^T is a row times the column-major K x M a^T
            rows_gemv = ord("T"), K + ", m1 - m0"
        else:
            trans_a, lda, incx = ord("T"), max(sa["K"], ds.M, 1), sa["K"]
            rows_gemv = ord("N"), "m1 - m0, " + K
        if ds.split == "depth":  # b's rows k0:k1 times a's into partial row c (a gemv)
            lines += [
                f"    v = {sz(gemv_address(node.dtype, True))}",
                "    pa, pb, po = a.ctypes.data, b.ctypes.data, out.ctypes.data",
                "    for c in range(lo, hi):",
                f"        k0 = c * {K} // {ds.chunks}",
                f"        k1 = (c + 1) * {K} // {ds.chunks}",
                f"        pbc = pb + k0 * {sz(sb['K'])} * {isz}",
                f"        pac = pa + k0 * {sz(sa['K'])} * {isz}",
                f"        poc = po + c * {N} * {isz}",
                f"        gemv(v, {t}, {trans_b}, {N}, k1 - k0, pbc, {sz(ldb)}, pac,",
                f"             {sz(incx)}, poc)",
            ]
            return "\n".join(lines) + "\n"
        if ds.split == "columns":
            lines += [f"    for bi in range({B}):", "        m0, m1, n0, n1 = 0, " + M + ", lo, hi"]
        else:
            lines += [
                f"    for bi in range(lo // {M}, (hi + {M} - 1) // {M}):",
                f"        m0 = max(lo - bi * {M}, 0)",
                f"        m1 = min(hi - bi * {M}, {M})",
                f"        n0, n1 = 0, {N}",
            ]
        lines = (
            lines[:1]
            + [
                f"    g = {sz(blas_address(node.dtype, 'gemm'))}",
                f"    v = {sz(gemv_address(node.dtype, ds.matrix_vector))}",
                "    pa, pb, po = a.ctypes.data, b.ctypes.data, out.ctypes.data",
            ]
            + lines[1:]
            + [
                f"        pbb = pb + (bi * {sz(sb['B'])} + n0 * {sz(sb['N'])}) * {isz}",
                f"        pab = pa + (bi * {sz(sa['B'])} + m0 * {sz(sa['M'])}) * {isz}",
                f"        pob = po + ((bi * {M} + m0) * {N} + n0) * {isz}",
                "        if m1 - m0 == 1:",
                f"            gemv(v, {t}, {trans_b}, {gemv_shape}, pbb, {sz(ldb)}, pab,"
                f" {sz(incx)}, pob)",
                "        elif n1 - n0 == 1:",
                f"            gemv(v, {t}, {rows_gemv[0]}, {rows_gemv[1]}, pab, {sz(lda)}, pbb,"
                f" {sz(max(sb['K'], 1))}, pob)",
                "        else:",
                f"            gemm(g, {t}, {trans_b}, {trans_a}, n1 - n0, m1 - m0, {K}, pbb,",
                f"                 {sz(ldb)}, pab, {sz(lda)}, pob, {N})",
            ]
        )
    elif ds.rhs.endswith("N"):
        # rows of b are contiguous: accumulate into a row of out, UNROLL rows of b at a time
        # (one pass over the output row per UNROLL products instead of one per product)
        lines += [
            "    for r in range(lo, hi):",
            f"        bi = r // {M}",
            f"        mi = r % {M}",
            "        o = out[bi, mi]",
        ]
        pad = " " * 8
        lines += [f"{pad}for j in range(o.shape[0]):", f"{pad}    o[j] = {zero}"]
        if is_bool:
            lines += [
                f"{pad}for ki in range({K}):",
                f"{pad}    av = {a_('bi', 'mi', 'ki')}",
                f"{pad}    w = b[{_at(ds.rhs.lower(), b='bi', k='ki', n=':')}]",
                f"{pad}    for j in range(o.shape[0]):",
                f"{pad}        o[j] = {fma('o[j]', 'av', 'w[j]')}",
            ]
        else:
            u = range(UNROLL)
            lines += [f"{pad}for k0 in range(0, {K} - {UNROLL - 1}, {UNROLL}):"]
            lines += [f"{pad}    av{q} = {a_('bi', 'mi', f'k0 + {q}')}" for q in u]
            lines += [
                f"{pad}    w{q} = b[{_at(ds.rhs.lower(), b='bi', k=f'k0 + {q}', n=':')}]" for q in u
            ]
            total = " + ".join(f"av{q} * w{q}[j]" for q in u)
            lines += [
                f"{pad}    for j in range(o.shape[0]):",
                f"{pad}        o[j] = {t}(o[j] + {total})",
                f"{pad}for ki in range({K} - {K} % {UNROLL}, {K}):",
                f"{pad}    av = {a_('bi', 'mi', 'ki')}",
                f"{pad}    w = b[{_at(ds.rhs.lower(), b='bi', k='ki', n=':')}]",
                f"{pad}    for j in range(o.shape[0]):",
                f"{pad}        o[j] = {fma('o[j]', 'av', 'w[j]')}",
            ]
    else:  # b stored as (.., N, K): one inner product per output element
        lines += [
            "    for r in range(lo, hi):",
            f"        bi = r // {M}",
            f"        mi = r % {M}",
            f"        for ni in range({N}):",
            f"            acc = {zero}",
            f"            for ki in range({K}):",
            f"                acc = {fma('acc', a_('bi', 'mi', 'ki'), b_('bi', 'ki', 'ni'))}",
            "            out[bi, mi, ni] = acc",
        ]
    return "\n".join(lines) + "\n"
