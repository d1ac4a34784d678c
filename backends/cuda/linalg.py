"""The `linalg` kernels on the GPU: one thread per matrix of the stack.

There is no LAPACK to call from a kernel, so each thread runs the textbook algorithms on its
own matrix: LU with partial pivoting (the row of largest magnitude, as getrf), carried
through the right-hand sides and back-substituted (solve; inv against the identity), or
read for the determinant's sign and log (slogdet); Cholesky-Banachiewicz for cholesky.
As with LAPACK, a matrix is singular when a pivot is exactly zero, and not positive
definite when a diagonal term is not > 0; the thread stores the error code and the call
raises NumPy's LinAlgError. The LU works on a scratch copy (B x n x n); the caller's
arrays are only read.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.emitter import Sizes
from jitc.backends.cuda.kernel import Kernel, assemble, indent
from jitc.backends.cuda.lowering import ERR_NOT_POSITIVE_DEFINITE, ERR_SINGULAR
from jitc.core import linalg_layout, ops
from jitc.core.errors import UnsupportedError
from jitc.core.ir import Node
from jitc.core.source import where


def _lu(m: str, k: str | None) -> list[str]:
    """Eliminate below the diagonal of sc0 (row-major, at A) with partial pivoting, the
    same row operations on out0's k columns (at X) when k is given; `singular` is set."""
    rhs_swap = (
        [
            f"        for j in range({k}):",
            f"            t = out0[X + c * {k} + j]",
            f"            out0[X + c * {k} + j] = out0[X + r * {k} + j]",
            f"            out0[X + r * {k} + j] = t",
        ]
        if k
        else []
    )
    rhs_sub = (
        [
            f"        for j in range({k}):",
            f"            out0[X + i * {k} + j] -= l * out0[X + c * {k} + j]",
        ]
        if k
        else []
    )
    return [
        "singular = False",
        "sign = 1",
        f"for c in range({m}):",
        "    r = c",
        f"    best = abs(sc0[A + c * {m} + c])",
        f"    for i in range(c + 1, {m}):",
        f"        v = abs(sc0[A + i * {m} + c])",
        "        if v > best:",
        "            r = i",
        "            best = v",
        "    if best == 0:",
        "        singular = True",
        "        break",
        "    if r != c:",
        "        sign = -sign",
        f"        for j in range({m}):",
        f"            t = sc0[A + c * {m} + j]",
        f"            sc0[A + c * {m} + j] = sc0[A + r * {m} + j]",
        f"            sc0[A + r * {m} + j] = t",
        *rhs_swap,
        f"    d = sc0[A + c * {m} + c]",
        f"    for i in range(c + 1, {m}):",
        f"        l = sc0[A + i * {m} + c] / d",
        f"        for j in range(c + 1, {m}):",
        f"            sc0[A + i * {m} + j] -= l * sc0[A + c * {m} + j]",
        *rhs_sub,
    ]


def _back_substitute(m: str, k: str) -> list[str]:
    return [
        f"for i in range({m} - 1, -1, -1):",
        f"    d = sc0[A + i * {m} + i]",
        f"    for j in range({k}):",
        f"        s = out0[X + i * {k} + j]",
        f"        for q in range(i + 1, {m}):",
        f"            s -= sc0[A + i * {m} + q] * out0[X + q * {k} + j]",
        f"        out0[X + i * {k} + j] = s / d",
    ]


def linalg_kernel(node: Node) -> Kernel:
    """Kernel(a [, b] -> out) for a top-level linalg node."""
    kind, dtype = node.attrs["kind"], np.dtype(node.dtype)
    if linalg_layout.is_packed(kind):
        raise UnsupportedError(
            f"{ops.LINALG_KINDS[linalg_layout.base(kind)]} is not supported on the cuda "
            f"backend (a factorization has no per-thread kernel here; use the cpu backend)"
            f"{where(node.loc)}"
        )
    a = node.operands[0]
    m_value = a.shape[-1]
    batch_value = int(np.prod(a.shape[:-2], dtype=np.int64))
    sz = Sizes()
    batch, m = sz(batch_value), sz(m_value)
    cast = "f32" if dtype == np.float32 else "f64"
    suffix = "f" if dtype == np.float32 else ""
    body = ["A = p * " + m + " * " + m]
    scratch = kind != "cholesky" and kind != "cholesky_upper"
    if scratch:
        body += [f"for e in range({m} * {m}):", "    sc0[A + e] = a0[A + e]"]
    if kind in ("solve", "inv"):
        k = sz(node.shape[-1]) if kind == "solve" else m
        body += [f"X = p * {m} * {k}"]
        if kind == "solve":
            body += [f"for e in range({m} * {k}):", "    out0[X + e] = a1[X + e]"]
        else:
            body += [
                f"for i in range({m}):",
                f"    for j in range({m}):",
                f"        out0[X + i * {m} + j] = {cast}(1) if i == j else {cast}(0)",
            ]
        body += _lu(m, k)
        body += ["if singular:", f"    err[0] = {ERR_SINGULAR}", "    continue"]
        body += _back_substitute(m, k)
    elif kind == "slogdet":
        body += _lu(m, None)
        body += [
            f"logdet = {cast}(0)",
            "if singular:",
            f"    out0[2 * p] = {cast}(0)",
            "    out0[2 * p + 1] = -INF",
            "    continue",
            f"for i in range({m}):",
            f"    d = sc0[A + i * {m} + i]",
            "    if d < 0:",
            "        sign = -sign",
            "        d = -d",
            f"    logdet += nv.log{suffix}(d)",
            f"out0[2 * p] = {cast}(sign)",
            "out0[2 * p + 1] = logdet",
        ]
    else:
        # L[i, j] lives (and a is read) at i * m + j; the upper factor is L transposed
        def at(i, j):
            return f"A + {i} * {m} + {j}" if kind == "cholesky" else f"A + {j} * {m} + {i}"

        body += [
            "ok = True",
            f"for i in range({m}):",
            "    for j in range(i + 1):",
            f"        s = a0[{at('i', 'j')}]",
            "        for q in range(j):",
            f"            s -= out0[{at('i', 'q')}] * out0[{at('j', 'q')}]",
            "        if i == j:",
            "            if not s > 0:",
            "                ok = False",
            "                break",
            f"            out0[{at('i', 'i')}] = nv.sqrt{suffix}(s)",
            "        else:",
            f"            out0[{at('i', 'j')}] = s / out0[{at('j', 'j')}]",
            "    if not ok:",
            f"        err[0] = {ERR_NOT_POSITIVE_DEFINITE}",
            "        break",
            f"    for j in range(i + 1, {m}):",
            f"        out0[{at('i', 'j')}] = {cast}(0)",
        ]
    lines = [f"for p in range(cuda.grid(1), {batch}, cuda.gridsize(1)):"] + indent(body)
    n_inputs = 2 if kind == "solve" else 1
    name, source = assemble(
        "matrix", n_inputs, 1, int(scratch), kind != "slogdet", len(sz.values), indent(lines)
    )
    return Kernel(
        name,
        "matrix",
        source,
        [o.dtype for o in node.operands],
        [node.dtype],
        sz.values,
        {"total": batch_value, "scratch": batch_value * m_value**2},
        scratch=[dtype] if scratch else [],
        uses_err=kind != "slogdet",
    )
