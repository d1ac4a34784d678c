"""dot_general kernels over 3-d views of the operands: BLAS (numba's np.dot) for large float
products, generated loops for small or integer ones, and a column-split loop for
matrix-vector shapes (batch-1 inference).

Each operand's dims fall into three groups (lhs: batch B, free M, contracting K; rhs: B, K,
free N). When every group is a run of consecutive dims in storage, the operand's buffer *is*
a 3-d array with the groups in storage order (a free reshape): `lhs` viewed as "BMK", "MBK",
"BKM", ... . `view_orders` finds those orders; an operand without one is copied into order
first (by the planner). The output is always the "BMN" view of a C-contiguous result.

Kernel signature: `def NAME(a, b, out, lo, hi, n)` over the 3-d views. Rows [lo, hi) are the
B*M output rows, except in column mode where they are the N output columns: a matrix-vector
product has too few rows to split, and each thread's slice of a weight matrix then stays in
its own core's cache from call to call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitc.backends.cpu.lowering import TYPE_NAMES
from jitc.ir import Node
from jitc.primitives import dot_free_dims

# Multiply-adds above which a float product goes to BLAS when it has enough rows.
BLAS_MIN_FLOPS = 1 << 18
BLAS_MIN_ROWS = 16
# At most this many output rows, and at least this many multiply-adds: split the columns.
COLUMN_MAX_ROWS = 4
COLUMN_MIN_FLOPS = 1 << 15


@dataclass(frozen=True)
class DotShape:
    B: int
    M: int
    K: int
    N: int
    lhs: str  # storage order of the lhs groups, a permutation of "BMK"
    rhs: str  # a permutation of "BKN"
    mode: str  # "blas", "loops" or "columns"

    def view(self, side: str) -> tuple:
        """The 3-d shape of an operand ("lhs", "rhs") or of the output ("out")."""
        order = {"lhs": self.lhs, "rhs": self.rhs, "out": "BMN"}[side]
        return tuple(getattr(self, g) for g in order)

    @property
    def rows(self) -> int:
        return self.N if self.mode == "columns" else self.B * self.M

    @property
    def work(self) -> int:
        return self.B * self.M * self.K * self.N


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


def dot_shape(node: Node, lhs_order: str, rhs_order: str, blas: bool = True) -> DotShape:
    l, r = node.operands
    a = node.attrs
    lb, lc = a["lhs_batch"], a["lhs_contracting"]
    rb, rc = a["rhs_batch"], a["rhs_contracting"]
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)
    B, M = _prod(l.shape[d] for d in lb), _prod(l.shape[d] for d in lf)
    K, N = _prod(l.shape[d] for d in lc), _prod(r.shape[d] for d in rf)
    flops = B * M * K * N
    if (blas and node.dtype.kind == "f" and flops >= BLAS_MIN_FLOPS and M >= BLAS_MIN_ROWS
            and lhs_order == "BMK" and rhs_order in ("BKN", "BNK")):
        mode = "blas"
    elif B * M <= COLUMN_MAX_ROWS and flops >= COLUMN_MIN_FLOPS and rhs_order.endswith("N"):
        mode = "columns"
    else:
        mode = "loops"
    return DotShape(B, M, K, N, lhs_order, rhs_order, mode)


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

    def fma(acc, x, y):
        return f"({acc} or ({x} and {y}))" if is_bool else f"{t}({acc} + {x} * {y})"

    lines = [f"def {name}(a, b, out, lo, hi, n):"]
    if ds.mode == "blas":
        rhs = "b[bi]" if ds.rhs == "BKN" else "b[bi].T"  # .T: BLAS reads it transposed
        lines += [
            f"    for bi in range(lo // {M}, (hi + {M} - 1) // {M}):",
            f"        m0 = max(lo - bi * {M}, 0)",
            f"        m1 = min(hi - bi * {M}, {M})",
            f"        np.dot(a[bi, m0:m1], {rhs}, out[bi, m0:m1])",
        ]
    elif ds.mode == "columns":  # rows are columns: each thread owns out[..., lo:hi]
        lines += [
            f"    for bi in range({B}):",
            f"        for mi in range({M}):",
            "            o = out[bi, mi, lo:hi]",
            "            for j in range(hi - lo):",
            f"                o[j] = {zero}",
            f"            for ki in range({K}):",
            f"                av = {a_('bi', 'mi', 'ki')}",
            f"                w = b[{_at(ds.rhs.lower(), b='bi', k='ki', n='lo:hi')}]",
            "                for j in range(hi - lo):",
            f"                    o[j] = {fma('o[j]', 'av', 'w[j]')}",
        ]
    elif ds.rhs.endswith("N"):  # rows of b are contiguous: accumulate a row of out
        lines += [
            "    for r in range(lo, hi):",
            f"        bi = r // {M}",
            f"        mi = r % {M}",
            "        o = out[bi, mi]",
            f"        for ni in range({N}):",
            f"            o[ni] = {zero}",
            f"        for ki in range({K}):",
            f"            av = {a_('bi', 'mi', 'ki')}",
            f"            for ni in range({N}):",
            f"                o[ni] = {fma('o[ni]', 'av', b_('bi', 'ki', 'ni'))}",
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
