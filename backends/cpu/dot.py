"""dot_general kernels: BLAS (numba's np.dot) for large float shapes, loops for small or
integer ones. Both bring the operands to (batch, rows, contract) x (batch, contract, cols)."""

from __future__ import annotations

import numpy as np
from jitc.backends.cpu.lowering import TYPE_NAMES

from jitc.ir import Node
from jitc.primitives import dot_free_dims

# Below this many multiply-adds, generated loops beat a BLAS call's fixed cost.
BLAS_MIN_FLOPS = 1 << 15


def _prod(xs):
    return int(np.prod(list(xs), dtype=np.int64))


def dot_lines(node: Node, lhs: str, rhs: str, out: str) -> list[str]:
    """Statements computing `out` (C-contiguous, node.shape) = dot_general(lhs, rhs)."""
    l, r = node.operands
    a = node.attrs
    lb, rb = list(a["lhs_batch"]), list(a["rhs_batch"])
    lc, rc = list(a["lhs_contracting"]), list(a["rhs_contracting"])
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)
    B, M = _prod(l.shape[d] for d in lb), _prod(l.shape[d] for d in lf)
    K, N = _prod(l.shape[d] for d in lc), _prod(r.shape[d] for d in rf)
    lines = []

    def arrange(name, perm, shape, ndim):
        if perm == list(range(ndim)):
            return f"np.ascontiguousarray({name}).reshape({shape})"
        return f"np.ascontiguousarray({name}.transpose({tuple(perm)})).reshape({shape})"

    lines.append(f"a3 = {arrange(lhs, lb + lf + lc, (B, M, K), l.ndim)}")
    lines.append(f"b3 = {arrange(rhs, rb + rc + rf, (B, K, N), r.ndim)}")
    lines.append(f"o3 = {out}.reshape({(B, M, N)})")
    use_blas = node.dtype.kind == "f" and B * M * N * K >= BLAS_MIN_FLOPS and M * N * K > 0
    if use_blas:
        lines.append(f"for bi in range({B}):")
        lines.append("    np.dot(a3[bi], b3[bi], o3[bi])")
        return lines
    t = TYPE_NAMES[node.dtype]
    zero = "False" if node.dtype.kind == "b" else f"{t}(0)"
    lines += [
        f"for bi in range({B}):",
        f"    for m in range({M}):",
        f"        for n in range({N}):",
        f"            o3[bi, m, n] = {zero}",
        f"        for k in range({K}):",
        "            av = a3[bi, m, k]",
        f"            for n in range({N}):",
    ]
    if node.dtype.kind == "b":
        lines.append("                o3[bi, m, n] = o3[bi, m, n] or (av and b3[bi, k, n])")
    else:
        lines.append(f"                o3[bi, m, n] = {t}(o3[bi, m, n] + av * b3[bi, k, n])")
    return lines


def uses_blas(node: Node) -> bool:
    l, r = node.operands
    flops = _prod(node.shape) * _prod(l.shape[d] for d in node.attrs["lhs_contracting"])
    return node.dtype.kind == "f" and flops >= BLAS_MIN_FLOPS
