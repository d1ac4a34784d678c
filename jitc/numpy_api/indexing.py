"""Indexing functions (np.take, np.take_along_axis, np.diagonal); x[key] itself is
jitc/indexing.py."""

from __future__ import annotations

import numpy as np

from jitc import lax
from jitc.errors import UnsupportedError
from jitc.numpy_api.core import _lifted, _mark, implements, normalize_axis
from jitc.source import where


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    from jitc.indexing import take_along

    if out is not None:
        raise UnsupportedError(f"np.take: out= is not supported{where()}")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap'{where()}")
    a = _lifted(a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if mode != "raise" and n == 0:
        raise IndexError(f"cannot do a non-empty take from an empty axes.{where()}")
    if mode == "wrap":  # NumPy: indices taken modulo the axis length
        indices = np.mod(indices, n)
    elif mode == "clip":  # NumPy: negative indices clip to 0, not counted from the end
        indices = np.clip(indices, 0, n - 1)
    out = take_along(a, indices, axis)
    return _mark(out, out.ndim == 0)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    a = _lifted(arr)
    idx = _lifted(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"when axis=None, `indices` must have a single dimension."
                             f"{where()}")
        a, axis = lax.reshape(a, (a.size,)), 0
    if idx.dtype.kind not in "iu":
        raise IndexError(f"`indices` must be an integer array{where()}")
    if idx.ndim != a.ndim:
        raise ValueError(f"`indices` and `arr` must have the same number of dimensions"
                         f"{where()}")
    axis = normalize_axis(axis, a.ndim)
    key = []
    for d in range(a.ndim):  # an arange on every other axis, shaped to broadcast
        if d == axis:
            key.append(idx)
        else:
            shape = [1] * a.ndim
            shape[d] = a.shape[d]
            key.append(np.arange(a.shape[d]).reshape(shape))
    return _mark(a[tuple(key)], False)


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    a = _lifted(a)
    if a.ndim < 2:
        raise ValueError(f"diag requires an array of at least two dimensions{where()}")
    axis1, axis2 = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    if axis1 == axis2:
        raise ValueError(f"axis1 and axis2 cannot be the same{where()}")
    rest = [d for d in range(a.ndim) if d not in (axis1, axis2)]
    moved = lax.transpose(a, rest + [axis1, axis2])
    rows, cols = moved.shape[-2:]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = np.arange(length) + max(-offset, 0)
    out = moved[..., i, i + offset]
    out.buffer().readonly = True  # NumPy's diagonal is a read-only view
    return _mark(out, False)
