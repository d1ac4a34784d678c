"""np.cov and np.corrcoef: NumPy's algorithm (numpy/lib/_function_base_impl.py) on traced
arrays, step for step, so the dtypes, the squeezed shapes and the rounding are NumPy's.

Weights (fweights=, aweights=) must be known when tracing (Python sequences of numbers):
NumPy checks their values (integers, not negative) before it computes, and the
normalization is a number made of them. Traced weights (arguments, captured arrays) are
refused by name.
"""

from __future__ import annotations

import warnings

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import _lifted, implements, is_tracer


def _matrix(x, dtype, rowvar: bool, name: str, arg: str):
    """`x` as NumPy's array(x, ndmin=2, dtype=dtype): variables on rows."""
    x = _lifted(x)
    if x.ndim > 2:
        raise ValueError(f"{name}: argument {arg}: {arg} has more than 2 dimensions{where()}")
    ndim = x.ndim
    x = x.astype(dtype).reshape((1,) * (2 - ndim) + x.shape)
    return x.T if not rowvar and (ndim != 1 if arg == "m" else x.shape[0] != 1) else x


def _weights(fweights, aweights, samples: int):
    """NumPy's checks of the weights and their product (None without weights), as NumPy
    arrays of float64."""
    w = None
    for arg, v in (("fweights", fweights), ("aweights", aweights)):
        if v is None:
            continue
        if is_tracer(v):
            raise UnsupportedError(
                f"np.cov: argument {arg} must be known when tracing (NumPy checks its "
                f"values before computing; pass a list), not a traced array{where()}"
            )
        v = np.asarray(v, dtype=float)
        if arg == "fweights" and not np.all(v == np.around(v)):
            raise TypeError(f"np.cov: argument fweights: fweights must be integer{where()}")
        if v.ndim > 1:
            raise RuntimeError(
                f"np.cov: argument {arg}: cannot handle multidimensional {arg}{where()}"
            )
        if v.shape[0] != samples:
            raise RuntimeError(
                f"np.cov: argument {arg}: incompatible numbers of samples and {arg}{where()}"
            )
        if np.any(v < 0):
            raise ValueError(f"np.cov: argument {arg}: {arg} cannot be negative{where()}")
        w = v if w is None else w * v
    return w


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if ddof is not None and ddof != int(ddof):
        raise ValueError(f"np.cov: argument ddof: ddof must be integer{where()}")
    m = _lifted(m)
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64, *([] if y is None else [_lifted(y).dtype]))
    X = _matrix(m, dtype, rowvar, "np.cov", "m")
    if X.shape[0] == 0:
        return X[:, :0].astype(np.float64)  # NumPy's np.array([]).reshape(0, 0)
    if y is not None:
        X = np.concatenate((X, _matrix(y, dtype, rowvar, "np.cov", "y")), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = _weights(fweights, aweights, X.shape[1])
    if w is None:
        avg, fact = np.mean(X, axis=1), X.shape[1] - ddof
    else:
        avg, w_sum = np.average(X, axis=1, weights=w), w.sum()
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * np.asarray(aweights, dtype=float)) / w_sum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    X = X - avg[:, None]
    X_T = X.T if w is None else (X * w).T
    c = np.dot(X, X_T.conj())
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, fact)
    c = (c * scale).astype(c.dtype)  # NumPy's c *= 1 / fact, in c's dtype
    return np.squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:  # one variable: NaN where its variance is NaN, inf or 0, else 1
        return c / c
    stddev = np.sqrt(np.diagonal(c).real)
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    return np.clip(c, -1, 1)
