"""LAPACK kernels for the `linalg` primitive: SciPy's Fortran getrf/getrs/potrf, called
through their addresses as blas.py calls gemm (run-time size slots, so cached kernels stay
valid in a new process; arguments by reference; LP64 ints).

A row-major matrix A is, read column-major, A^T. So: getrf factors A^T; solve runs getrs
with trans "T" (A^T^T X = B, B and X column-major: b is transposed in and out), inv runs
getrs with "N" against the identity (X = A^-T column-major, which row-major is A^-1),
cholesky runs potrf "U" on A^T (its upper triangle is A's lower one; the factor U read
row-major is L) and zeroes the other triangle, slogdet reads LU's diagonal and the pivots.
LAPACK overwrites what it is given: every call works on the kernel's own copy.

The stack runs on one thread, a matrix at a time: numba's threads calling SciPy's OpenBLAS
at once were slower than one thread on the 2-core machine (det of 1000 8x8: 1.3 ms on two
threads, 0.7 ms on one; of 200 64x64: 6.3 ms against 5.2 ms).
"""

from __future__ import annotations

import ctypes
import functools
import os

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from jitc.backends.cpu.blas import I8, I32, _by_reference, blas_address
from jitc.backends.cpu.lowering import TYPE_NAMES

SINGULAR = ("LinAlgError", "Singular matrix")
NOT_POSITIVE_DEFINITE = ("LinAlgError", "Matrix is not positive definite")
ERROR_OF_KIND = {
    "solve": SINGULAR,
    "inv": SINGULAR,
    "cholesky": NOT_POSITIVE_DEFINITE,
    "cholesky_upper": NOT_POSITIVE_DEFINITE,
    "slogdet": None,
}


def lapack_address(dtype, routine: str) -> int:
    """Address of SciPy's s<routine> (float32) or d<routine> (float64), e.g. "getrf"."""
    return blas_address(dtype, routine, "lapack")


@functools.cache
def _numpys_openblas():
    """NumPy's own OpenBLAS (the scipy-openblas64 of NumPy's wheels: ILP64, symbols
    scipy_<routine>_64_), or None where NumPy links another LAPACK."""
    from threadpoolctl import ThreadpoolController

    for lib in ThreadpoolController().lib_controllers:
        if lib.internal_api == "openblas" and "numpy.libs" in os.path.dirname(lib.filepath):
            return ctypes.CDLL(lib.filepath)
    return None


def numpy_lapack_address(dtype, routine: str) -> int | None:
    """Address of NumPy's own s<routine>/d<routine> (ILP64), or None: the very routine
    np.linalg calls, on NumPy's BLAS threads, where SciPy's runs on one (blas.py)."""
    lib = _numpys_openblas()
    prefix = {"f": "s", "d": "d"}[np.dtype(dtype).char]
    found = getattr(lib, f"scipy_{prefix}{routine}_64_", None) if lib is not None else None
    return None if found is None else ctypes.cast(found, ctypes.c_void_p).value


def _info(builder, call):
    """Run `call(info_ptr)` and return LAPACK's info as an int64."""
    info = cgutils.alloca_once(builder, I32)
    builder.store(ir.Constant(I32, 0), info)
    call(info)
    return builder.sext(builder.load(info), ir.IntType(64))


@intrinsic
def getrf(typingctx, fn, dtype, n, a, ipiv):
    """LU of the n x n column-major matrix at `a` (lda n) in place, pivots (int32) at
    `ipiv`; returns info (> 0: U is exactly singular)."""
    element = dtype.instance_type
    sig = types.int64(fn, dtype, n, a, ipiv)

    def codegen(context, builder, signature, args):
        fn, _, n, a, ipiv = args
        real = context.get_data_type(element)
        _, int32, address = _by_reference(builder, real)
        fnty = ir.FunctionType(
            ir.VoidType(), [I32.as_pointer()] * 2 + [real.as_pointer()] + [I32.as_pointer()] * 3
        )
        lda = int32(builder.select(builder.icmp_signed(">", n, n.type(1)), n, n.type(1)))
        return _info(
            builder,
            lambda info: builder.call(
                builder.inttoptr(fn, fnty.as_pointer()),
                [
                    int32(n),
                    int32(n),
                    address(a),
                    lda,
                    builder.inttoptr(ipiv, I32.as_pointer()),
                    info,
                ],
            ),
        )

    return sig, codegen


@intrinsic
def getrs(typingctx, fn, dtype, trans, n, nrhs, a, ipiv, b):
    """Solve op(A) X = B in place of the column-major n x nrhs B at `b` (ldb n), A the
    getrf factors at `a`; trans is ord("N") or ord("T")."""
    element = dtype.instance_type
    sig = types.int64(fn, dtype, trans, n, nrhs, a, ipiv, b)

    def codegen(context, builder, signature, args):
        fn, _, trans, n, nrhs, a, ipiv, b = args
        real = context.get_data_type(element)
        slot, int32, address = _by_reference(builder, real)
        fnty = ir.FunctionType(
            ir.VoidType(),
            [I8.as_pointer()]
            + [I32.as_pointer()] * 2
            + [
                real.as_pointer(),
                I32.as_pointer(),
                I32.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
                I32.as_pointer(),
            ],
        )
        ld = builder.select(builder.icmp_signed(">", n, n.type(1)), n, n.type(1))
        return _info(
            builder,
            lambda info: builder.call(
                builder.inttoptr(fn, fnty.as_pointer()),
                [
                    slot(I8, builder.trunc(trans, I8)),
                    int32(n),
                    int32(nrhs),
                    address(a),
                    int32(ld),
                    builder.inttoptr(ipiv, I32.as_pointer()),
                    address(b),
                    int32(ld),
                    info,
                ],
            ),
        )

    return sig, codegen


@intrinsic
def potrf(typingctx, fn, dtype, uplo, n, a):
    """Cholesky factor of the column-major n x n matrix at `a` in place, from its `uplo`
    (ord("U") or ord("L")) triangle; returns info (> 0: not positive definite)."""
    element = dtype.instance_type
    sig = types.int64(fn, dtype, uplo, n, a)

    def codegen(context, builder, signature, args):
        fn, _, uplo, n, a = args
        real = context.get_data_type(element)
        slot, int32, address = _by_reference(builder, real)
        fnty = ir.FunctionType(
            ir.VoidType(),
            [
                I8.as_pointer(),
                I32.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
                I32.as_pointer(),
            ],
        )
        lda = builder.select(builder.icmp_signed(">", n, n.type(1)), n, n.type(1))
        return _info(
            builder,
            lambda info: builder.call(
                builder.inttoptr(fn, fnty.as_pointer()),
                [slot(I8, builder.trunc(uplo, I8)), int32(n), address(a), int32(lda), info],
            ),
        )

    return sig, codegen


def _copy(dst: str) -> list:
    """Matrix p of `a` into `dst` (indexed by i, j): LAPACK's own copy to overwrite."""
    return [
        "        for i in range(m):",
        "            for j in range(m):",
        f"                {dst} = a[p, i, j]",
    ]


def lapack_source(kind: str, dtype, sz) -> str:
    """`def BODY(a, [b,] out, lo, hi, n)` over matrices [lo, hi) of the stack: a (B, m, m),
    b and out (B, m, k) for solve, out (B, m, m) or (B, 2) (sign, log|det|) otherwise."""
    dtype = np.dtype(dtype)
    t = TYPE_NAMES[dtype]
    # scratch: LU factors and pivots of one matrix at a time; the kernel's error (driver.py
    # ERRORS, the kind's in ERROR_OF_KIND) is what the driver raises, whatever is raised here
    lu_kind = not kind.startswith("cholesky")
    head = (
        [
            "    m = a.shape[1]",
            "    piv = np.empty(max(m, 1), np.int32)",
            f"    lu = np.empty((m, m), {t})",
            f"    f = {sz(lapack_address(dtype, 'getrf'))}",
        ]
        if lu_kind
        else []
    )
    if kind in ("solve", "inv"):
        head.append(f"    s = {sz(lapack_address(dtype, 'getrs'))}")
    factor = [
        *_copy("lu[i, j]"),
        f"        if getrf(f, {t}, m, lu.ctypes.data, piv.ctypes.data) > 0:",
        "            raise ValueError('singular')",
    ]
    if kind == "solve":
        lines = [
            "def BODY(a, b, out, lo, hi, n):",
            *head,
            "    k = b.shape[2]",
            f"    x = np.empty((k, m), {t})",
            "    for p in range(lo, hi):",
            *factor,
            "        for i in range(m):",
            "            for c in range(k):",
            "                x[c, i] = b[p, i, c]",
            f"        getrs(s, {t}, {ord('T')}, m, k, lu.ctypes.data, piv.ctypes.data, "
            "x.ctypes.data)",
            "        for i in range(m):",
            "            for c in range(k):",
            "                out[p, i, c] = x[c, i]",
        ]
    elif kind == "inv":
        lines = [
            "def BODY(a, out, lo, hi, n):",
            *head,
            "    for p in range(lo, hi):",
            *factor,
            "        for i in range(m):",
            "            for j in range(m):",
            f"                out[p, i, j] = {t}(1) if i == j else {t}(0)",
            f"        getrs(s, {t}, {ord('N')}, m, m, lu.ctypes.data, piv.ctypes.data, "
            f"out.ctypes.data + p * m * m * {dtype.itemsize})",
        ]
    elif kind in ("cholesky", "cholesky_upper"):
        # potrf "U" on A^T reads A's lower triangle; "L" reads its upper one
        uplo, zero = ("U", "range(i + 1, m)") if kind == "cholesky" else ("L", "range(i)")
        lines = [
            "def BODY(a, out, lo, hi, n):",
            "    m = a.shape[1]",
            f"    f = {sz(lapack_address(dtype, 'potrf'))}",
            "    for p in range(lo, hi):",
            *_copy("out[p, i, j]"),
            f"        if potrf(f, {t}, {ord(uplo)}, m, out.ctypes.data + p * m * m * "
            f"{dtype.itemsize}) > 0:",
            "            raise ValueError('not positive definite')",
            "        for i in range(m):",
            f"            for j in {zero}:",
            f"                out[p, i, j] = {t}(0)",
        ]
    else:  # slogdet (the primitive's rule refuses any other kind)
        lines = [
            "def BODY(a, out, lo, hi, n):",
            *head,
            "    for p in range(lo, hi):",
            *_copy("lu[i, j]"),
            f"        sign, logdet = {t}(1), {t}(0)",
            f"        if getrf(f, {t}, m, lu.ctypes.data, piv.ctypes.data) > 0:",
            f"            sign, logdet = {t}(0), {t}(-np.inf)",
            "        else:",
            "            for i in range(m):",
            "                d = lu[i, i]",
            "                if piv[i] != i + 1:",
            "                    sign = -sign",
            "                if d < 0:",
            "                    sign, d = -sign, -d",
            f"                logdet += {t}(math.log(d))",
            "        out[p, 0] = sign",
            "        out[p, 1] = logdet",
        ]
    return "\n".join(lines) + "\n"
