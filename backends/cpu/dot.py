"""dot_general kernels: BLAS (numba's np.dot) for large float shapes, loops for small or
integer ones. Both bring the operands to (batch, rows, contract) x (batch, contract, cols)."""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.lowering import TYPE_NAMES
from jitc.ir import Node
from jitc.primitives import dot_free_dims

# Below this many multiply-adds, generated loops beat a BLAS call's fixed cost.
BLAS_MIN_FLOPS = 1 << 15
# Above this many multiply-adds (and with enough rows), row blocks run on numba's threads.
PARALLEL_MIN_FLOPS = 1 << 22
PARALLEL_MIN_ROWS = 8


def is_parallel(node: Node) -> bool:
    l, _ = node.operands
    a = node.attrs
    lf = dot_free_dims(l.ndim, a["lhs_contracting"], a["lhs_batch"])
    flops = _prod(node.shape) * _prod(l.shape[d] for d in a["lhs_contracting"])
    return (node.dtype.kind == "f" and flops >= PARALLEL_MIN_FLOPS
            and _prod(l.shape[d] for d in lf) >= PARALLEL_MIN_ROWS)


def _prod(xs):
    return int(np.prod(list(xs), dtype=np.int64))


def dot_lines(node: Node, lhs: str, rhs: str, out: str, sz, blas: bool = True) -> list[str]:
    """Statements computing `out` (C-contiguous, node.shape) = dot_general(lhs, rhs).

    blas=False always emits the loop path (AOT objects have no BLAS to call)."""
    l, r = node.operands
    a = node.attrs
    lb, rb = list(a["lhs_batch"]), list(a["rhs_batch"])
    lc, rc = list(a["lhs_contracting"]), list(a["rhs_contracting"])
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)
    B, M = _prod(l.shape[d] for d in lb), _prod(l.shape[d] for d in lf)
    K, N = _prod(l.shape[d] for d in lc), _prod(r.shape[d] for d in rf)
    use_blas = blas and node.dtype.kind == "f" and B * M * N * K >= BLAS_MIN_FLOPS and M * N * K > 0
    rows = M if B * M * N * K >= PARALLEL_MIN_FLOPS else 0
    B, M, K, N = sz(B), sz(M), sz(K), sz(N)
    lines = []

    def arrange(name, perm, shape, ndim):
        shape = f"({', '.join(shape)})"
        if perm == list(range(ndim)):
            return f"np.ascontiguousarray({name}).reshape({shape})"
        return f"np.ascontiguousarray({name}.transpose({tuple(perm)})).reshape({shape})"

    lines.append(f"a3 = {arrange(lhs, lb + lf + lc, (B, M, K), l.ndim)}")
    lines.append(f"b3 = {arrange(rhs, rb + rc + rf, (B, K, N), r.ndim)}")
    lines.append(f"o3 = {out}.reshape(({B}, {M}, {N}))")
    if use_blas and rows >= PARALLEL_MIN_ROWS:  # row blocks across numba's threads
        lines += [
            f"chunks = min({M}, 16)",
            "for c in prange(chunks):",
            f"    lo = c * {M} // chunks",
            f"    hi = (c + 1) * {M} // chunks",
            f"    for bi in range({B}):",
            "        np.dot(a3[bi, lo:hi], b3[bi], o3[bi, lo:hi])",
        ]
        return lines
    if use_blas:
        lines.append(f"for bi in range({B}):")
        lines.append("    np.dot(a3[bi], b3[bi], o3[bi])")
        return lines
    t = TYPE_NAMES[node.dtype]
    zero = "False" if node.dtype.kind == "b" else f"{t}(0)"
    lines += [
        f"for bi in range({B}):",
        f"    for mi in range({M}):",
        f"        for ni in range({N}):",
        f"            o3[bi, mi, ni] = {zero}",
        f"        for ki in range({K}):",
        "            av = a3[bi, mi, ki]",
        f"            for ni in range({N}):",
    ]
    if node.dtype.kind == "b":
        lines.append("                o3[bi, mi, ni] = o3[bi, mi, ni] or (av and b3[bi, ki, ni])")
    else:
        lines.append(f"                o3[bi, mi, ni] = {t}(o3[bi, mi, ni] + av * b3[bi, ki, ni])")
    return lines

