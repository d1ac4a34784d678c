"""np.linalg's Array API functions (matmul, tensordot, vecdot, outer, trace, diagonal,
cross, vector_norm, matrix_norm) and matrix_power: NumPy's own definitions in terms of the
main namespace, with their argument checks, traced into jitc's implementations of those."""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.source import where
from jitc.numpy_api.core import _lifted, implements, normalize_axes
from jitc.numpy_api.indexing import diagonal as _diagonal
from jitc.numpy_api.linalg import cross as _cross
from jitc.numpy_api.linalg import matmul as _matmul
from jitc.numpy_api.linalg import norm as _norm
from jitc.numpy_api.linalg import outer as _outer
from jitc.numpy_api.linalg import tensordot as _tensordot
from jitc.numpy_api.linalg import trace as _trace
from jitc.numpy_api.linalg import vecdot as _vecdot


@implements(np.linalg.matmul)
def matmul(x1, x2, /):
    return _matmul(x1, x2)


@implements(np.linalg.tensordot)
def tensordot(x1, x2, /, *, axes=2):
    return _tensordot(x1, x2, axes=axes)


@implements(np.linalg.vecdot)
def vecdot(x1, x2, /, *, axis=-1):
    return _vecdot(x1, x2, axis=axis)


@implements(np.linalg.outer)
def outer(x1, x2, /):
    x1, x2 = _lifted(x1), _lifted(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            f"np.linalg.outer: Input arrays must be one-dimensional, but they "
            f"are x1.ndim={x1.ndim} and x2.ndim={x2.ndim}{where()}"
        )
    return _outer(x1, x2)


@implements(np.linalg.trace)
def trace(x, /, *, offset=0, dtype=None):
    return _trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


@implements(np.linalg.diagonal)
def diagonal(x, /, *, offset=0):
    return _diagonal(x, offset=offset, axis1=-2, axis2=-1)


@implements(np.linalg.cross)
def cross(x1, x2, /, *, axis=-1):
    x1, x2 = _lifted(x1), _lifted(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"np.linalg.cross: Both input arrays must be (arrays of) "
            f"3-dimensional vectors, but they are {x1.shape[axis]} and "
            f"{x2.shape[axis]} dimensional instead.{where()}"
        )
    return _cross(x1, x2, axis=axis)


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002 - NumPy's name
    """NumPy's: the axes moved to the front and merged into one, np.linalg.norm over it."""
    x = _lifted(x)
    shape = x.shape
    if axis is None:
        flat, along = np.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = normalize_axes(axis, x.ndim)
        rest = tuple(i for i in range(x.ndim) if i not in axes)
        merged = int(np.prod([shape[i] for i in axes], dtype=np.int64))
        flat = np.reshape(np.transpose(x, axes + rest), (merged, *[shape[i] for i in rest]))
        along = 0
    else:
        flat, along = x, operator.index(axis)
    result = _norm(flat, ord=ord, axis=along)
    if keepdims:
        kept = normalize_axes(tuple(range(len(shape))) if axis is None else axis, len(shape))
        result = np.reshape(result, tuple(1 if i in kept else n for i, n in enumerate(shape)))
    return result


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002 - NumPy's name
    return _norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """NumPy's square-and-multiply, the same products in the same order (so the same
    rounding); a negative power inverts first (jitc's LAPACK inv)."""
    a = _lifted(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"np.linalg.matrix_power: exponent must be an integer{where()}") from None
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(
            f"np.linalg.matrix_power: Last 2 dimensions of the "
            f"array must be square, got {a.shape}{where()}"
        )
    if n == 0:
        return np.zeros_like(a) + np.eye(a.shape[-2], dtype=a.dtype)  # fresh, a's dtype
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n <= 3:
        return (a, _matmul(a, a), _matmul(_matmul(a, a), a))[n - 1]
    z = result = None
    while n > 0:
        z = a if z is None else _matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _matmul(result, z)
    return result
