"""Arrays made from other arrays: the *_like family, np.tril/np.triu, and
np.linspace/np.logspace with traced bounds (a static number of samples)."""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.dtypes import check_supported
from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _lifted,
    checked,
    find_ctx,
    implements,
    is_tracer,
    lift,
    result_type,
)
from jitc.numpy_api.ufuncs import apply_ufunc
from jitc.trace import lax


def _like(a, fill, dtype, shape):
    a = _lifted(a)
    dt = check_supported(dtype or a.dtype, "dtype=")
    shape = a.shape if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    return lax.full(a.ctx, shape, fill, dt)


@implements(np.zeros_like, np.empty_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(a, 0, dtype, shape)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(a, 1, dtype, shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if is_tracer(fill_value):
        t = _like(a, 0, dtype or _lifted(a).dtype, shape)
        return lax.broadcast_to(lax.convert(fill_value, t.dtype), t.shape)
    return _like(a, fill_value, dtype, shape)


def _tri_mask(ctx, rows, cols, k, lower):
    i = lax.iota(ctx, (rows, cols), np.int64, 0)
    j = lax.iota(ctx, (rows, cols), np.int64, 1)
    if lower:  # keep j <= i + k
        return apply_ufunc(np.less_equal, (j, apply_ufunc(np.add, (i, k))))
    return apply_ufunc(np.greater_equal, (j, apply_ufunc(np.add, (i, k))))


def _tri(m, k, lower):
    m = _lifted(m)
    if m.ndim < 2:
        raise UnsupportedError(f"np.{'tril' if lower else 'triu'} of a {m.ndim}-d array{where()}")
    mask = lax.broadcast_to(_tri_mask(m.ctx, m.shape[-2], m.shape[-1], int(k), lower), m.shape)
    return lax.select(mask, m, lax.full(m.ctx, m.shape, 0, m.dtype))


@implements(np.tril)
def tril(m, k=0):
    return _tri(m, k, True)


@implements(np.triu)
def triu(m, k=0):
    return _tri(m, k, False)


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """NumPy's steps (numpy/_core/function_base.py) one for one, so each value rounds as
    NumPy's does; its `any(step == 0)` branch (denormal steps) is a select."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"np.linspace: number of samples, {num}, must be non-negative{where()}")
    div = num - 1 if endpoint else num
    ctx = find_ctx([start, stop])
    start, stop = lift(ctx, start), lift(ctx, stop)
    dt = result_type(start, stop, 1.0)  # inexact: ints give float64
    delta = np.subtract(stop, start, dtype=dt)
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / div
        y = np.where(np.any(step == 0), y / div * delta, y * step)
    else:  # no step: 0 samples, or 1 with the endpoint
        step = np.nan
        y = y * delta
    y = (y + start).astype(dt)  # NumPy adds in place, into y's dtype
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None and np.issubdtype(dtype, np.integer):
        y = np.floor(y)
    y = y if dtype is None else y.astype(dtype)
    return (y, step) if retstep else y


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop); an array base broadcast against the bounds first, as
    NumPy's is (a scalar base stays weakly typed: float32 bounds give float32)."""
    if not isinstance(base, (float, int)) and np.ndim(base):
        ndmax = len(np.broadcast_shapes(*(np.shape(v) for v in (start, stop, base))))
        start, stop, base = (_at_least(v, ndmax) for v in (start, stop, base))
        base = np.expand_dims(base, axis)
    y = np.power(base, linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return y if dtype is None else y.astype(dtype)


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's steps: the bounds rotated onto the positive reals (by their sign), logspace
    between their log10s, the endpoints set to the bounds exactly, rotated back. A zero
    bound is NumPy's ValueError, raised by the kernel at run time."""
    ctx = find_ctx([start, stop])
    start, stop = lift(ctx, start), lift(ctx, stop)
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.zeros((), dtype))
    zero = np.any(start == 0) | np.any(stop == 0)
    start, stop = checked(start.astype(dt), zero), stop.astype(dt)
    sign = np.sign(start)
    start, stop = start / sign, stop / sign
    result = logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint, dtype=dt)
    if num > 0:
        result[0] = start
        if num > 1 and endpoint:
            result[-1] = stop
    result = result * sign
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return result if dtype is None else result.astype(dtype)


def _at_least(v, ndim):
    """`v` with leading axes of 1 up to `ndim` (np.array(v, ndmin=ndim))."""
    shape = np.shape(v)
    return np.reshape(v, (1,) * (ndim - len(shape)) + shape) if len(shape) < ndim else v
