"""LAPACK kernels for the factorizing kinds of the `linalg` primitive: syevd (eigh,
eigvalsh), gesdd (svd), geqrf + orgqr (qr), gtsv and gbsv (solve_banded, dgtsv), the
routines NumPy and SciPy call, so eigenvector and singular-vector signs are theirs.
np.linalg's run in NumPy's own LAPACK where NumPy's wheel has one (ILP64, on NumPy's BLAS
threads: NumPy's bits, and no second pool of threads fighting NumPy's), else in SciPy's;
SciPy's banded solvers run in SciPy's (LP64).

Called by address as lapack.py calls getrf (run-time size slots, arguments by reference).
Each matrix is copied into a column-major scratch buffer as NumPy's gufuncs copy it
(element (i, j) at [i + j * ld]), so LAPACK sees the very matrix NumPy hands it, and the
results are copied out row-major into the kind's packed row (core/linalg_layout.py). The
optimal workspace is asked for once per kernel call (lwork = -1) for the stack's shape.
Like lapack.py's kernels, the stack runs on one thread.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from jitc.backends.cpu.blas import I8, I32, _by_reference
from jitc.backends.cpu.lapack import lapack_address, numpy_lapack_address
from jitc.backends.cpu.lowering import TYPE_NAMES
from jitc.core import linalg_layout

I64 = ir.IntType(64)
SVD_FAILED = ("LinAlgError", "SVD did not converge")
EIGH_FAILED = ("LinAlgError", "Eigenvalues did not converge")
BANDED_SINGULAR = ("LinAlgError", "singular matrix")  # SciPy's solve_banded message
FACTOR_ERRORS = (SVD_FAILED, EIGH_FAILED, BANDED_SINGULAR)


def _routine(name: str, spec: str, integer=I32):
    """An intrinsic `name(fn, dtype, *args) -> info` calling the LAPACK routine at address
    `fn` with Fortran arguments by `spec`, one letter each: c a character (an int64 code),
    i an integer, r an address of reals, n an address of integers; info comes last.
    Integers are `integer`: I32 (LP64, SciPy's) or I64 (ILP64, NumPy's)."""
    pointer = {"c": I8, "i": integer, "n": integer}

    def typer(typingctx, fn, dtype, *args):
        element = dtype.instance_type
        sig = types.int64(fn, dtype, *args)

        def codegen(context, builder, signature, values):
            fn, _, *values = values
            real = context.get_data_type(element)
            slot, int32, address = _by_reference(builder, real)
            fnty = ir.FunctionType(
                ir.VoidType(),
                [real.as_pointer() if s == "r" else pointer[s].as_pointer() for s in spec]
                + [integer.as_pointer()],
            )
            passed = [
                slot(I8, builder.trunc(v, I8))
                if s == "c"
                else (int32(v) if integer is I32 else slot(integer, v))
                if s == "i"
                else address(v)
                if s == "r"
                else builder.inttoptr(v, integer.as_pointer())
                for s, v in zip(spec, values)
            ]
            info = slot(integer, ir.Constant(integer, 0))
            builder.call(builder.inttoptr(fn, fnty.as_pointer()), passed + [info])
            value = builder.load(info)
            return value if integer is I64 else builder.sext(value, I64)

        return sig, codegen

    # numba lowers an intrinsic's arguments by its Python signature: spell them out
    names = ", ".join(f"a{k}" for k in range(len(spec)))
    scope = {"typer": typer}
    exec(
        f"def {name}(typingctx, fn, dtype, {names}):\n"
        f"    return typer(typingctx, fn, dtype, {names})",
        scope,
    )
    return intrinsic(scope[name])


# jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork
syevd = _routine("syevd", "ccirirrini")
# jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork
gesdd = _routine("gesdd", "ciirirriririn")
# m, n, a, lda, tau, work, lwork
geqrf = _routine("geqrf", "iirirri")
# m, n, k, a, lda, tau, work, lwork
orgqr = _routine("orgqr", "iiirirri")
# the same, ILP64: NumPy's own LAPACK
syevd64 = _routine("syevd64", "ccirirrini", I64)
gesdd64 = _routine("gesdd64", "ciirirriririn", I64)
geqrf64 = _routine("geqrf64", "iirirri", I64)
orgqr64 = _routine("orgqr64", "iiirirri", I64)
# n, nrhs, dl, d, du, b, ldb
gtsv = _routine("gtsv", "iirrrri")
# n, kl, ku, nrhs, ab, ldab, ipiv, b, ldb
gbsv = _routine("gbsv", "iiiirinri")

ERROR_OF_BASE = {
    "eigh_L": EIGH_FAILED,
    "eigh_U": EIGH_FAILED,
    "eigvalsh_L": EIGH_FAILED,
    "eigvalsh_U": EIGH_FAILED,
    "svd_full": SVD_FAILED,
    "svd_reduced": SVD_FAILED,
    "svdvals": SVD_FAILED,
    "qr_reduced": None,
    "qr_complete": None,
    "qr_r": None,
    "qr_raw": None,
    "gtsv": None,  # SciPy's dgtsv reports a singular system in its info
    "gtsv_solve": BANDED_SINGULAR,
    "gbsv": BANDED_SINGULAR,
}


def factor_error(kind: str):
    return ERROR_OF_BASE[linalg_layout.base(kind)]


def _store(at: str, value: str, rows: str, columns: str = "") -> list:
    """Lines storing a part of the packed row p at offset `at` (an expression in the sizes,
    as core/linalg_layout.py lays the parts out): element [i] (or [i, j]) is `value`."""
    if not columns:
        return [f"        for i in range({rows}):", f"            out[p, {at} + i] = {value}"]
    return [
        f"        for i in range({rows}):",
        f"            for j in range({columns}):",
        f"                out[p, {at} + i * {columns} + j] = {value}",
    ]


def _workspace(t: str, query: str) -> list:
    """Ask for the optimal lwork (`query` runs the routine with lwork -1 into q) and
    allocate `work`."""
    return [
        f"    q = np.zeros(1, {t})",
        f"    {query}",
        f"    work = np.empty(max(int(q[0]), 1), {t})",
    ]


def _column_major(dst: str, rows: str, columns: str) -> list:
    """Matrix p of `a` copied into `dst` column-major (leading dimension `rows`)."""
    return [
        f"        for i in range({rows}):",
        f"            for j in range({columns}):",
        f"                {dst}[i + j * {rows}] = a[p, i, j]",
    ]


def factor_source(kind: str, dtype, sz) -> str:
    """`def BODY(operands..., out, lo, hi, n)` over the stack entries [lo, hi); operands
    (B, core...) and out (B, P), P the kind's packed size. The source depends on the kind
    and the dtype only: sizes and offsets are read from the arrays."""
    dtype = np.dtype(dtype)
    t = TYPE_NAMES[dtype]
    b = linalg_layout.base(kind)
    # np.linalg's own factorizations call NumPy's LAPACK where it can be found: the same
    # routine on the same threads, so the same bits and no second thread pool fighting
    # NumPy's (SciPy's runs on one thread: eigh of 512x512 was 1.3x NumPy's time)
    ilp = b.startswith(("eig", "svd", "qr")) and numpy_lapack_address(dtype, "syevd") is not None

    def address(routine):
        return sz(numpy_lapack_address(dtype, routine) if ilp else lapack_address(dtype, routine))

    ints = Ints("64", "np.int64") if ilp else Ints("", "np.int32")
    if b.startswith("eig"):
        lines = _eigh(kind, b, t, address("syevd"), ints)
    elif b.startswith("svd"):
        lines = _svd(kind, b, t, address("gesdd"), ints)
    elif b.startswith("qr"):
        lines = _qr(kind, b, t, address("geqrf"), address("orgqr"), ints)
    elif b.startswith("gtsv"):
        lines = _gtsv(kind, b, t, address("gtsv"))
    else:
        lines = _gbsv(kind, t, address("gbsv"))
    return "\n".join(lines) + "\n"


class Ints(NamedTuple):
    """The integers of a LAPACK: the intrinsics' suffix ("64": ILP64) and their dtype."""

    suffix: str
    dtype: str


def _eigh(kind, b, t, f, ints) -> list:
    vectors = b.startswith("eigh")
    jobz, uplo = ord("V" if vectors else "N"), ord(b[-1])
    call = (
        f"syevd{ints.suffix}"
        "({f}, {t}, {jobz}, {uplo}, m, z.ctypes.data, max(m, 1), w.ctypes.data, {work}, {iwork})"
    )
    fill = dict(f="f", t=t, jobz=jobz, uplo=uplo)
    lines = [
        "def BODY(a, out, lo, hi, n):",
        "    m = a.shape[1]",
        f"    f = {f}",
        f"    z = np.empty(max(m * m, 1), {t})",
        f"    w = np.empty(max(m, 1), {t})",
        f"    qi = np.zeros(1, {ints.dtype})",
        *_workspace(t, call.format(**fill, work="q.ctypes.data, -1", iwork="qi.ctypes.data, -1")),
        f"    iwork = np.empty(max(qi[0], 1), {ints.dtype})",
        "    for p in range(lo, hi):",
        *_column_major("z", "m", "m"),
        "        if "
        + call.format(
            **fill, work="work.ctypes.data, work.size", iwork="iwork.ctypes.data, iwork.size"
        )
        + " > 0:",
        "            raise ValueError('eigenvalues did not converge')",
        *_store("0", "w[i]", "m"),
    ]
    if vectors:
        lines += _store("m", "z[i + j * m]", "m", "m")
    return lines


def _svd(kind, b, t, f, ints) -> list:
    jobz = {"svd_full": "A", "svd_reduced": "S", "svdvals": "N"}[b]
    # U is m x uc, Vh is vr x n (column-major, leading dimensions m and vr)
    uc, vr = {"A": ("m", "c"), "S": ("k", "k"), "N": ("1", "1")}[jobz]
    call = (
        f"gesdd{ints.suffix}(f, {t}, {ord(jobz)}, m, c, x.ctypes.data, max(m, 1), s.ctypes.data, "
        "u.ctypes.data, max(m, 1), vt.ctypes.data, max(vr, 1), {work}, iwork.ctypes.data)"
    )
    lines = [
        "def BODY(a, out, lo, hi, n):",
        "    m, c = a.shape[1], a.shape[2]",
        "    k = min(m, c)",
        f"    f = {f}",
        f"    uc, vr = {uc}, {vr}",
        f"    x = np.empty(max(m * c, 1), {t})",
        f"    s = np.empty(max(k, 1), {t})",
        f"    u = np.empty(max(m * uc, 1), {t})",
        f"    vt = np.empty(max(vr * c, 1), {t})",
        f"    iwork = np.empty(max(8 * k, 1), {ints.dtype})",
        *_workspace(t, call.format(work="q.ctypes.data, -1")),
        "    for p in range(lo, hi):",
        *_column_major("x", "m", "c"),
        # info -4: a NaN in the matrix (LAPACK checks; NumPy raises on any info but 0)
        f"        if {call.format(work='work.ctypes.data, work.size')} != 0:",
        "            raise ValueError('SVD did not converge')",
        *_store("0" if jobz == "N" else "m * uc", "s[i]", "k"),
    ]
    if jobz != "N":
        lines += _store("0", "u[i + j * m]", "m", "uc")
        lines += _store("m * uc + k", "vt[i + j * vr]", "vr", "c")
    return lines


def _qr(kind, b, t, f, g, ints) -> list:
    # x holds the m x max(n, mc) column-major buffer: geqrf's reflectors in its first n
    # columns, then orgqr's Q in its first mc columns (mc = m for "complete", else k)
    complete = "m" if b == "qr_complete" else "k"
    factor = "geqrf%s(f, {t}, m, c, x.ctypes.data, max(m, 1), tau.ctypes.data, {work})"
    build = "orgqr%s(g, {t}, m, mc, k, x.ctypes.data, max(m, 1), tau.ctypes.data, {work})"
    factor, build = factor % ints.suffix, build % ints.suffix
    lines = [
        "def BODY(a, out, lo, hi, n):",
        "    m, c = a.shape[1], a.shape[2]",
        "    k = min(m, c)",
        f"    mc = {complete}",
        f"    f, g = {f}, {g}",
        f"    x = np.empty(max(m * max(c, mc), 1), {t})",
        f"    tau = np.empty(max(k, 1), {t})",
        *_workspace(t, factor.format(t=t, work="q.ctypes.data, -1")),
    ]
    if b in ("qr_reduced", "qr_complete"):
        lines += [
            "    q[0] = 0",
            "    " + build.format(t=t, work="q.ctypes.data, -1"),
            "    if int(q[0]) > work.size:",
            f"        work = np.empty(int(q[0]), {t})",
        ]
    lines += [
        "    for p in range(lo, hi):",
        *_column_major("x", "m", "c"),
        "        " + factor.format(t=t, work="work.ctypes.data, work.size"),
    ]
    if b == "qr_raw":
        # NumPy's raw h is the factored matrix transposed: h[i, j] is element (j, i)
        lines += _store("0", "x[j + i * m]", "c", "m")
        return lines + _store("c * m", "tau[i]", "k")
    # R: the upper triangle of the first rows (mc of them for complete, else k)
    rows = "k" if b == "qr_r" else "mc"
    lines += _store(
        "0" if b == "qr_r" else "m * mc", f"x[i + j * m] if j >= i else {t}(0)", rows, "c"
    )
    if b == "qr_r":
        return lines
    return (
        lines
        + ["        " + build.format(t=t, work="work.ctypes.data, work.size")]
        + _store("0", "x[i + j * m]", "m", "mc")
    )


def _gtsv(kind, b, t, f) -> list:
    lines = [
        "def BODY(dl, d, du, rhs, out, lo, hi, n):",
        "    m, r = rhs.shape[1], rhs.shape[2]",
        "    e1 = max(m - 1, 0)  # the length of dl and du",
        f"    f = {f}",
        f"    l = np.empty(max(m, 1), {t})",
        f"    e = np.empty(max(m, 1), {t})",
        f"    h = np.empty(max(m, 1), {t})",
        f"    x = np.empty(max(m * r, 1), {t})",
        "    for p in range(lo, hi):",
        "        for i in range(m - 1):",
        "            l[i] = dl[p, i]",
        "            h[i] = du[p, i]",
        "        for i in range(m):",
        "            e[i] = d[p, i]",
        "            for j in range(r):",
        "                x[i + j * m] = rhs[p, i, j]",
        "        info = gtsv(f, "
        f"{t}, m, r, l.ctypes.data, e.ctypes.data, h.ctypes.data, x.ctypes.data, max(m, 1))",
    ]
    if b == "gtsv_solve":
        lines += ["        if info > 0:", "            raise ValueError('singular matrix')"]
    lines += _store("0" if b == "gtsv_solve" else "2 * e1 + m", "x[i + j * m]", "m", "r")
    if b == "gtsv":
        lines += _store("0", "l[i]", "m - 1")
        lines += _store("e1", "e[i]", "m")
        lines += _store("e1 + m", "h[i]", "m - 1")
        lines += _store("2 * e1 + m + m * r", f"{t}(info)", "1")
    return lines


def _gbsv(kind, t, f) -> list:
    lower, upper = linalg_layout.params(kind)
    ld = 2 * lower + upper + 1  # gbsv's band storage: `lower` more rows for the fill-in
    return [
        "def BODY(ab, rhs, out, lo, hi, n):",
        "    m, r = rhs.shape[1], rhs.shape[2]",
        f"    f = {f}",
        f"    band = np.zeros(max({ld} * m, 1), {t})",
        "    piv = np.empty(max(m, 1), np.int32)",
        f"    x = np.empty(max(m * r, 1), {t})",
        "    for p in range(lo, hi):",
        "        band[:] = 0",
        f"        for i in range({lower + upper + 1}):",
        "            for j in range(m):",
        f"                band[{lower} + i + j * {ld}] = ab[p, i, j]",
        "        for i in range(m):",
        "            for j in range(r):",
        "                x[i + j * m] = rhs[p, i, j]",
        f"        if gbsv(f, {t}, m, {lower}, {upper}, r, band.ctypes.data, {ld}, "
        "piv.ctypes.data, x.ctypes.data, max(m, 1)) > 0:",
        "            raise ValueError('singular matrix')",
        *_store("0", "x[i + j * m]", "m", "r"),
    ]
