"""Dense linear algebra through LAPACK: np.linalg.solve, inv, cholesky, det and slogdet, as
one `linalg` primitive (kind solve / inv / cholesky / cholesky_upper / slogdet) on stacks of
square matrices (..., n, n).

Dtypes as NumPy's linalg: float32 stays float32, everything else (integers, bools, a
float32 beside a float64) computes in float64. Shape errors are NumPy's LinAlgError at trace
time; a singular matrix (solve, inv) or one that is not positive definite (cholesky) is
found by LAPACK at run time, and the kernel raises NumPy's LinAlgError then.
"""

from __future__ import annotations

import numpy as np

from jitc.core.errors import ShapeError
from jitc.core.source import where
from jitc.numpy_api.core import _mark, find_ctx, implements, lift
from jitc.trace import lax

LinAlgError = np.linalg.LinAlgError


def _float_type(name: str, *xs) -> np.dtype:
    """NumPy's linalg _commonType: float32 only when every operand is float32; float16 is
    NumPy's TypeError (LAPACK has no half precision)."""
    if any(x.dtype == np.float16 for x in xs):
        raise TypeError(f"np.linalg.{name}: array type float16 is unsupported in linalg{where()}")
    return np.dtype(np.float32 if all(x.dtype == np.float32 for x in xs) else np.float64)


def _square(a, name: str, ctx=None):
    """`a` lifted, checked to be a stack of square matrices (NumPy's messages, naming the
    function and the argument) and in its linalg dtype."""
    a = lift(ctx or find_ctx([a]), a)
    if a.ndim < 2:
        raise LinAlgError(
            f"np.linalg.{name}: argument a: {a.ndim}-dimensional array given. "
            f"Array must be at least two-dimensional{where()}"
        )
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(
            f"np.linalg.{name}: argument a of shape {a.shape}: Last 2 "
            f"dimensions of the array must be square{where()}"
        )
    return a


@implements(np.linalg.solve)
def solve(a, b):
    """NumPy 2's rule: a 1-d b is one vector (broadcast against a's stack), any other b a
    stack of (n, k) matrices whose stack dims broadcast with a's."""
    ctx = find_ctx([a, b])
    a, b = _square(a, "solve", ctx), lift(ctx, b)
    dtype = _float_type("solve", a, b)
    a, b = lax.convert(a, dtype), lax.convert(b, dtype)
    n = a.shape[-1]
    vector = b.ndim == 1
    if b.ndim == 0 or b.shape[-1 if vector else -2] != n:
        raise ShapeError(
            f"np.linalg.solve: argument b of shape {b.shape} does not fit a of "
            f"shape {a.shape}: b must be ({n},) or (..., {n}, k){where()}"
        )
    if vector:
        b = lax.reshape(b, (n, 1))
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"np.linalg.solve: the stack dims of a {a.shape} and b {b.shape} do "
            f"not broadcast{where()}"
        ) from None
    a = lax.broadcast_to(a, batch + a.shape[-2:])
    b = lax.broadcast_to(b, batch + b.shape[-2:])
    x = lax.linalg("solve", a, b)
    return lax.reshape(x, batch + (n,)) if vector else x


def _one(a, name, kind):
    a = _square(a, name)
    return lax.linalg(kind, lax.convert(a, _float_type(name, a)))


@implements(np.linalg.inv)
def inv(a):
    return _one(a, "inv", "inv")


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    """The lower factor L (a = L @ L.T, from a's lower triangle), or with upper=True the
    upper U (a = U.T @ U, from a's upper triangle); zeros in the other triangle."""
    return _one(a, "cholesky", "cholesky_upper" if upper else "cholesky")


def _slogdet(a, name):
    """(sign, log|det|) of each matrix: LU's diagonal and its pivots' sign."""
    pair = _one(a, name, "slogdet")
    batch = pair.shape[:-1]
    sign, logdet = (
        lax.reshape(
            lax.slice_(pair, (0,) * len(batch) + (k,), batch + (k + 1,), (1,) * pair.ndim), batch
        )
        for k in (0, 1)
    )
    return sign, logdet


@implements(np.linalg.slogdet)
def slogdet(a):
    sign, logdet = _slogdet(a, "slogdet")
    return np.linalg._linalg.SlogdetResult(
        _mark(sign, sign.ndim == 0), _mark(logdet, logdet.ndim == 0)
    )


@implements(np.linalg.det)
def det(a):
    """sign * exp(log|det|), as NumPy computes it: exactly 0.0 for a singular matrix."""
    sign, logdet = _slogdet(a, "det")
    d = lax.emit(sign.ctx, "multiply", [sign, lax.emit(sign.ctx, "exp", [logdet])])
    return _mark(d, d.ndim == 0)
