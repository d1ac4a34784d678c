"""The factorizations: np.linalg.eigh, eigvalsh, svd, svdvals and qr through LAPACK (one
`linalg` primitive call each, its results packed: core/linalg_layout.py), and what NumPy
builds on the SVD at the Python level, built the same way here: pinv, matrix_rank, lstsq
and the matrix norms of order 2, -2 and 'nuc'.

Dtypes, shapes and errors are NumPy's: every factorization computes in float64, as
NumPy's _commonType has it, and a float32 input's results are rounded to float32 (so they
are NumPy's bits where the cpu calls NumPy's LAPACK); float16 is a TypeError; shape and
argument errors are raised at trace time, a factorization that does not converge raises
NumPy's LinAlgError when the kernel runs.
"""

from __future__ import annotations

import numpy as np

from jitc.core import linalg_layout
from jitc.core.source import where
from jitc.numpy_api.core import _mark, find_ctx, implements, lift
from jitc.numpy_api.linalg_lapack import LinAlgError, _float_type, _square
from jitc.trace import lax

_RESULTS = np.linalg._linalg  # EighResult, SVDResult, QRResult


def _stacked(a, name: str, ctx=None):
    """`a` lifted and checked to be a stack of matrices (NumPy's _assert_stacked_2d)."""
    a = lift(ctx or find_ctx([a]), a)
    if a.ndim < 2:
        raise LinAlgError(
            f"np.linalg.{name}: argument a: {a.ndim}-dimensional array given. "
            f"Array must be at least two-dimensional{where()}"
        )
    return a


def _in_double(a, name: str):
    """(`a` in float64, the dtype of its results): NumPy factors float32 in float64 too."""
    return lax.convert(a, np.float64), _float_type(name, a)


def factor(kind: str, *operands, dtype=None) -> dict:
    """The kind's results (core/linalg_layout.py parts) by name: one primitive call, its
    packed row sliced apart (and converted to `dtype` where given)."""
    packed = lax.linalg(kind, *operands)
    cores = linalg_layout.core_ndims(kind)
    shapes = [x.shape[x.ndim - c :] for x, c in zip(operands, cores)]
    stack = packed.shape[:-1]
    results = {}
    for name, (at, shape) in linalg_layout.offsets(kind, shapes).items():
        size = int(np.prod(shape, dtype=np.int64))
        part = lax.slice_(
            packed, (0,) * len(stack) + (at,), stack + (at + size,), (1,) * packed.ndim
        )
        results[name] = lax.reshape(part, stack + shape)
        if dtype is not None:
            results[name] = lax.convert(results[name], dtype)
    return results


def _uplo(UPLO, name: str) -> str:  # noqa: N803 - NumPy's name
    uplo = UPLO.upper() if isinstance(UPLO, str) else UPLO
    if uplo not in ("L", "U"):
        raise ValueError(
            f"np.linalg.{name}: UPLO argument must be 'L' or 'U', got {UPLO!r}{where()}"
        )
    return uplo


def _symmetric(a, UPLO, name, values_only):  # noqa: N803
    uplo = _uplo(UPLO, name)
    a, dtype = _in_double(_square(a, name), name)
    return factor(f"{'eigvalsh' if values_only else 'eigh'}_{uplo}", a, dtype=dtype)


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):  # noqa: N803
    parts = _symmetric(a, UPLO, "eigh", False)
    return _RESULTS.EighResult(parts["w"], parts["v"])


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):  # noqa: N803
    return _symmetric(a, UPLO, "eigvalsh", True)["w"]


def _svd(a, full_matrices, compute_uv, name):
    a, dtype = _in_double(_stacked(a, name), name)
    if not compute_uv:
        return factor("svdvals", a, dtype=dtype)["s"]
    parts = factor("svd_full" if full_matrices else "svd_reduced", a, dtype=dtype)
    return _RESULTS.SVDResult(parts["u"], parts["s"], parts["vh"])


def _hermitian_svd(a, compute_uv, name):
    """NumPy's: the eigendecomposition, |eigenvalues| sorted descending, their signs moved
    into Vh."""
    if not compute_uv:
        s = np.abs(eigvalsh(a))
        return np.flip(np.sort(s, axis=-1), axis=-1)
    s, u = eigh(a)
    signs = np.sign(s)
    s = np.abs(s)
    order = np.flip(np.argsort(s, axis=-1, kind="stable"), axis=-1)
    signs = np.take_along_axis(signs, order, axis=-1)
    s = np.take_along_axis(s, order, axis=-1)
    u = np.take_along_axis(u, order[..., None, :], axis=-1)
    vt = np.swapaxes(u * signs[..., None, :], -1, -2)
    return _RESULTS.SVDResult(u, s, vt)


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        return _hermitian_svd(a, compute_uv, "svd")
    return _svd(a, full_matrices, compute_uv, "svd")


@implements(np.linalg.svdvals)
def svdvals(x, /):
    return _svd(x, False, False, "svdvals")


_QR_MODES = ("reduced", "complete", "r", "raw")


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    if mode not in _QR_MODES:
        raise ValueError(
            f"np.linalg.qr: Unrecognized mode {mode!r} (jitc takes {', '.join(_QR_MODES)}){where()}"
        )
    a, dtype = _in_double(_stacked(a, "qr"), "qr")
    parts = factor(f"qr_{mode}", a, dtype=dtype)
    if mode == "r":
        return parts["r"]
    if mode == "raw":
        return parts["h"], parts["tau"]
    return _RESULTS.QRResult(parts["q"], parts["r"])


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """NumPy's: the reduced SVD with singular values at or below rcond * the largest
    dropped."""
    a = _stacked(a, "pinv")
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape[-2:]) * np.finfo(_float_type("pinv", a)).eps
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        raise ValueError(f"np.linalg.pinv: `rtol` and `rcond` can't be both set.{where()}")
    if a.size == 0:
        m, n = a.shape[-2:]
        return np.zeros(a.shape[:-2] + (n, m), _float_type("pinv", a))
    u, s, vt = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = np.asarray(rcond)[..., None] * np.max(s, axis=-1, keepdims=True)
    large = s > cutoff
    s = np.where(large, 1 / np.where(large, s, 1), 0).astype(s.dtype)
    return np.matmul(np.swapaxes(vt, -1, -2), s[..., None] * np.swapaxes(u, -1, -2))


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803
    """NumPy's: how many singular values exceed tol (by default the largest times
    max(m, n) * eps)."""
    ctx = find_ctx([A])
    A = lift(ctx, A)  # noqa: N806
    if A.ndim < 2:
        return _mark(lax.convert(np.any(A != 0), np.int64), True)
    S = svd(A, compute_uv=False, hermitian=hermitian)  # noqa: N806
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * np.finfo(S.dtype).eps
        else:
            rtol = np.asarray(rtol)[..., None]
        tol = np.max(S, axis=-1, keepdims=True) * rtol
    else:
        tol = np.asarray(tol)[..., None]
    return np.count_nonzero(S > tol, axis=-1)


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """The minimum-norm least-squares solution through the SVD (NumPy calls gelsd, which
    solves the same problem through it). Returns NumPy's (x, residuals, rank, s); the
    residuals are empty where m <= n, as NumPy's are. NumPy's are empty too when the rank
    turns out below n, a result shape that depends on the values: jitc returns them."""
    ctx = find_ctx([a, b])
    a, b = lift(ctx, a), lift(ctx, b)
    vector = b.ndim == 1
    if vector:
        b = lax.reshape(b, b.shape + (1,))
    for x, arg in ((a, "a"), (b, "b")):
        if x.ndim != 2:
            raise LinAlgError(
                f"np.linalg.lstsq: argument {arg}: {x.ndim}-dimensional array given. "
                f"Array must be two-dimensional{where()}"
            )
    (m, n), (m2, _) = a.shape, b.shape
    if m != m2:
        raise LinAlgError(
            f"np.linalg.lstsq: Incompatible dimensions: a {a.shape}, b {b.shape}{where()}"
        )
    dtype = _float_type("lstsq", a, b)
    a, b = lax.convert(a, dtype), lax.convert(b, dtype)
    if rcond is None:
        rcond = np.finfo(dtype).eps * max(n, m)
    u, s, vt = _svd(a, False, True, "lstsq")
    large = s > rcond * np.max(s) if min(m, n) else s > 0
    inverse = np.where(large, 1 / np.where(large, s, 1), 0).astype(dtype)
    x = np.swapaxes(vt, 0, 1) @ (inverse[:, None] * (np.swapaxes(u, 0, 1) @ b))
    rank = lax.convert(np.count_nonzero(large), np.int32)
    if m <= n:
        residuals = np.zeros((0,), dtype)
    else:
        r = b - a @ x
        residuals = np.sum(r * r, axis=0)
    if vector:
        x = lax.reshape(x, (n,))
        if m > n:
            residuals = lax.reshape(residuals, (1,))
    return x, residuals, _mark(rank, True), s


def singular_value_norm(x, ord, row, col):  # noqa: A002 - NumPy's name
    """NumPy's _multi_svd_norm: the largest (2), smallest (-2) or the sum ('nuc') of the
    singular values of the matrices on axes (row, col)."""
    s = svdvals(np.moveaxis(x, (row, col), (-2, -1)))
    return {2: np.max, -2: np.min, "nuc": np.sum}[ord](s, axis=-1)
