"""Reductions (sum, prod, max, min, any, all, mean, var, std, argmax, argmin) with NumPy's
accumulator dtypes, keepdims and out=."""

from __future__ import annotations

import functools

import numpy as np

from jitc import lax
from jitc.dtypes import check_supported
from jitc.errors import UnsupportedError
from jitc.numpy_api.core import _mark, find_ctx, implements, lift, normalize_axes, normalize_axis
from jitc.numpy_api.ufuncs import _truth, apply_ufunc
from jitc.source import where


def _keepdims(t, axes, keepdims, in_shape):
    if keepdims:
        t = lax.reshape(t, [1 if i in axes else n for i, n in enumerate(in_shape)])
    return _mark(t, t.ndim == 0)


@functools.cache
def _accumulator(func, dtype):
    """The dtype NumPy's np.sum/np.prod accumulate in (int32 -> int64, bool -> int64)."""
    return func(np.zeros(1, dtype)).dtype


def _reduce(x, kind, axis, dtype, keepdims):
    ctx = find_ctx([x])
    x = lift(ctx, x)
    axes = normalize_axes(axis, x.ndim)
    x = lax.convert(x, dtype)
    return _keepdims(lax.reduce(x, kind, axes), axes, keepdims, x.shape)


def _check_where_initial(name, initial=None, where_=True, out=None):
    if initial is not None or where_ is not True or out is not None:
        raise UnsupportedError(f"np.{name}: initial=/where=/out= are not supported{where()}")


def _into_out(impl):
    """A reduction that also takes out=: the result is written into it (NumPy casts
    unsafely there) and `out` itself is returned."""

    @functools.wraps(impl)
    def reduction(*args, out=None, **kwargs):
        result = impl(*args, **kwargs)
        if out is None:
            return result
        from jitc.numpy_api.writes import write_out

        return write_out(out, result, "unsafe", f"np.{impl.__name__.rstrip('_')}")

    return reduction


@implements(np.sum)
@_into_out
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    _check_where_initial("sum", initial, where, out)
    a = lift(find_ctx([a]), a)
    dtype = check_supported(dtype or _accumulator(np.sum, a.dtype), "np.sum dtype=")
    return _reduce(a, "sum", axis, dtype, keepdims)


@implements(np.prod)
@_into_out
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("prod", initial, where, out)
    a = lift(find_ctx([a]), a)
    dtype = check_supported(dtype or _accumulator(np.prod, a.dtype), "np.prod dtype=")
    return _reduce(a, "prod", axis, dtype, keepdims)


@implements(np.max, np.amax)
@_into_out
def amax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("max", initial, where, out)
    a = lift(find_ctx([a]), a)
    return _reduce(a, "max", axis, a.dtype, keepdims)


@implements(np.min, np.amin)
@_into_out
def amin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("min", initial, where, out)
    a = lift(find_ctx([a]), a)
    return _reduce(a, "min", axis, a.dtype, keepdims)


@implements(np.any)
@_into_out
def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("any", None, where, out)
    a = _truth(lift(find_ctx([a]), a))
    return _reduce(a, "or", axis, np.dtype(bool), keepdims)


@implements(np.all)
@_into_out
def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("all", None, where, out)
    a = _truth(lift(find_ctx([a]), a))
    return _reduce(a, "and", axis, np.dtype(bool), keepdims)


def _mean_dtype(a, dtype):
    if dtype is not None:
        return check_supported(dtype, "np.mean dtype=")
    return np.dtype(np.float64) if a.dtype.kind in "biu" else a.dtype


@implements(np.mean)
@_into_out
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("mean", None, where, out)
    a = lift(find_ctx([a]), a)
    axes = normalize_axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    total = _reduce(a, "sum", axes, _mean_dtype(a, dtype), keepdims)
    return _mark(apply_ufunc(np.divide, (total, lift(a.ctx, count, total.dtype))), total.scalar)


@implements(np.var)
@_into_out
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    _check_where_initial("var", None, where, out)
    if mean is not None or correction is not None:
        raise UnsupportedError(f"np.var: mean=/correction= are not supported{where()}")
    a = lift(find_ctx([a]), a)
    axes = normalize_axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    acc = _mean_dtype(a, dtype)
    centre = apply_ufunc(np.divide, (_reduce(a, "sum", axes, acc, True),
                                     lift(a.ctx, count, acc)))
    dev = apply_ufunc(np.subtract, (a, centre))
    sq = apply_ufunc(np.multiply, (dev, dev))
    total = _reduce(sq, "sum", axes, sq.dtype if dtype is None else acc, keepdims)
    denom = lift(a.ctx, max(count - ddof, 0), total.dtype)
    return _mark(apply_ufunc(np.divide, (total, denom)), total.scalar)


@implements(np.std)
@_into_out
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _mark(apply_ufunc(np.sqrt, (v,)), v.scalar)


def _arg_reduce(name, a, axis, keepdims):
    a = lift(find_ctx([a]), a)
    if axis is None:
        flat = lax.reshape(a, (a.size,))
        out = lax.emit(a.ctx, name, [flat], axis=0)
        if keepdims:
            out = lax.reshape(out, (1,) * a.ndim)
        return _mark(out, out.ndim == 0)
    ax = normalize_axis(axis, a.ndim)
    out = lax.emit(a.ctx, name, [a], axis=ax)
    return _keepdims(out, (ax,), keepdims, a.shape)


@implements(np.argmax)
@_into_out
def argmax(a, axis=None, out=None, *, keepdims=False):
    _check_where_initial("argmax", out=out)
    return _arg_reduce("argmax", a, axis, keepdims)


@implements(np.argmin)
@_into_out
def argmin(a, axis=None, out=None, *, keepdims=False):
    _check_where_initial("argmin", out=out)
    return _arg_reduce("argmin", a, axis, keepdims)


_REDUCERS = {
    "sum": lambda a, axis, dtype, keepdims: sum(a, axis, dtype, keepdims=keepdims),
    "prod": lambda a, axis, dtype, keepdims: prod(a, axis, dtype, keepdims=keepdims),
    "max": lambda a, axis, dtype, keepdims: amax(a, axis, keepdims=keepdims),
    "min": lambda a, axis, dtype, keepdims: amin(a, axis, keepdims=keepdims),
    "all": lambda a, axis, dtype, keepdims: all_(a, axis, keepdims=keepdims),
    "any": lambda a, axis, dtype, keepdims: any_(a, axis, keepdims=keepdims),
}
