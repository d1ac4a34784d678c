"""Indexing functions (take, take_along_axis, diagonal, searchsorted, digitize); x[key] is
trace/indexing.py."""

from __future__ import annotations

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _lifted,
    _mark,
    find_ctx,
    implements,
    is_tracer,
    lift,
    normalize_axis,
)
from jitc.trace import lax


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    from jitc.trace.indexing import take_along

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
            raise ValueError(f"when axis=None, `indices` must have a single dimension.{where()}")
        a, axis = lax.reshape(a, (a.size,)), 0
    if idx.dtype.kind not in "iu":
        raise IndexError(f"`indices` must be an integer array{where()}")
    if idx.ndim != a.ndim:
        raise ValueError(f"`indices` and `arr` must have the same number of dimensions{where()}")
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


def _before(x, y):
    """x sorts before y in NumPy's order, where NaN sorts last."""
    return (
        (x < y) | (np.isnan(y) & ~np.isnan(x))
        if x.dtype.kind == "f" or y.dtype.kind == "f"
        else x < y
    )


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """Counts of a's elements before each v (or not after, side='right'): one comparison of
    every pair, fused into one reduction; meant for the small sorted tables (bins, knots)
    searched in array code. `a` must be sorted, as NumPy requires (for an unsorted table
    NumPy's binary search and this count differ)."""
    if sorter is not None:
        raise UnsupportedError(f"np.searchsorted: sorter= is not supported{where()}")
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r}){where()}")
    ctx = find_ctx([a, v])
    a, v = lift(ctx, a), lift(ctx, v)
    if a.ndim != 1:
        raise ValueError(f"object too deep for desired array{where()}")
    dt = np.result_type(a.dtype, v.dtype)
    a, v = lax.convert(a, dt), lax.convert(v, dt)
    table = lax.reshape(a, (1,) * v.ndim + a.shape)
    values = lax.reshape(v, v.shape + (1,))
    counted = _before(table, values) if side == "left" else ~_before(values, table)
    result = np.sum(counted, axis=-1, dtype=np.intp)
    return _mark(result, result.ndim == 0)


@implements(np.digitize)
def digitize(x, bins, right=False):
    if np.ndim(bins) != 1:
        raise ValueError(f"object too deep for desired array{where()}")
    if is_tracer(bins):
        raise UnsupportedError(
            f"np.digitize bins must be a NumPy array (NumPy checks they are monotonic){where()}"
        )
    bins = np.asarray(bins)
    x = _lifted(x)
    if x.dtype.kind == "c" or bins.dtype.kind == "c":
        raise TypeError(f"x may not be complex{where()}")
    deltas = np.diff(bins)
    increasing = bool(np.all(deltas >= 0))
    if not increasing and not np.all(deltas <= 0):
        raise ValueError(f"bins must be monotonically increasing or decreasing{where()}")
    side = "left" if right else "right"
    if increasing:
        return searchsorted(bins, x, side=side)
    return lax.convert(len(bins) - searchsorted(bins[::-1], x, side=side), np.intp)


@implements(np.ix_)
def ix_(*args):
    """NumPy's open mesh: each 1-d index as an array along its own axis, to broadcast."""
    ctx = find_ctx(args)
    out = []
    for k, a in enumerate(args):
        if is_tracer(a) and a.dtype == np.dtype(bool):
            raise UnsupportedError(
                f"np.ix_ of a traced boolean array: its nonzero() count, "
                f"and so the shape, is known only at run time{where()}"
            )
        if not is_tracer(a):
            a = np.asarray(a)
            if a.dtype == np.dtype(bool) and a.ndim == 1:  # NumPy takes its nonzero()
                a = np.nonzero(a)[0]
            if a.size == 0:
                a = a.astype(np.intp)
        x = lift(ctx, a)
        if x.ndim != 1:
            raise ValueError(f"np.ix_: Cross index must be 1 dimensional{where()}")
        shape = (1,) * k + (x.size,) + (1,) * (len(args) - k - 1)
        out.append(lax.reshape(x, shape))
    return tuple(out)
