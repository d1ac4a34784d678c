"""Reductions (sum, prod, max, min, any, all, mean, var, std, argmax, argmin) with NumPy's
accumulator dtypes, keepdims and out=."""

from __future__ import annotations

import functools

import numpy as np

from jitc.core.dtypes import check_supported
from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.core.source import where as _where  # for functions whose where= argument hides it
from jitc.numpy_api.core import _mark, find_ctx, implements, lift, normalize_axes, normalize_axis
from jitc.numpy_api.ufuncs import _truth, apply_ufunc
from jitc.trace import lax


def _keepdims(t, axes, keepdims, in_shape):
    if keepdims:
        t = lax.reshape(t, [1 if i in axes else n for i, n in enumerate(in_shape)])
    return _mark(t, t.ndim == 0)


@functools.cache
def _accumulator(func, dtype):
    """The dtype NumPy's reduction or scan `func` (np.sum, np.cumsum, np.add.accumulate...)
    accumulates in (int32 -> int64, bool -> int64), asked of NumPy once per dtype."""
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
    # NumPy's _mean: a float16 array's mean sums and divides in float32, then rounds
    half = dtype is None and a.dtype == np.float16
    total = _reduce(
        a, "sum", axes, np.dtype(np.float32) if half else _mean_dtype(a, dtype), keepdims
    )
    result = apply_ufunc(np.divide, (total, lift(a.ctx, count, total.dtype)))
    return _mark(lax.convert(result, a.dtype) if half else result, total.scalar)


@implements(np.var)
@_into_out
def var(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=None,
    correction=None,
):
    _check_where_initial("var", None, where, out)
    if correction is not None:  # the Array API's name for ddof
        if ddof != 0:
            raise ValueError(
                f"np.var: ddof and correction can't be provided simultaneously.{_where()}"
            )
        ddof = correction
    a = lift(find_ctx([a]), a)
    axes = normalize_axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    acc = _mean_dtype(a, dtype)
    centre = (
        apply_ufunc(np.divide, (_reduce(a, "sum", axes, acc, True), lift(a.ctx, count, acc)))
        if mean is None
        else mean
    )
    dev = apply_ufunc(np.subtract, (a, centre))
    sq = apply_ufunc(np.multiply, (dev, dev))
    total = _reduce(sq, "sum", axes, sq.dtype if dtype is None else acc, keepdims)
    denom = lift(a.ctx, max(count - ddof, 0), total.dtype)
    return _mark(apply_ufunc(np.divide, (total, denom)), total.scalar)


@implements(np.std)
@_into_out
def std(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=None,
    correction=None,
):
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


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    if out is not None:
        raise UnsupportedError(f"np.ptp: out= is not supported{where()}")
    return np.subtract(
        np.max(a, axis=axis, keepdims=keepdims), np.min(a, axis=axis, keepdims=keepdims)
    )


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    counts = np.sum(lift(find_ctx([a]), a) != 0, axis=axis, dtype=np.intp, keepdims=keepdims)
    return counts


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if returned:
        raise UnsupportedError(f"np.average: returned=True is not supported{where()}")
    if weights is None:
        return np.mean(a, axis=axis, keepdims=keepdims)
    ctx = find_ctx([a, weights])
    a, w = lift(ctx, a), lift(ctx, weights)
    if a.shape != w.shape:
        if axis is None:
            raise TypeError(f"Axis must be specified when shapes of a and weights differ.{where()}")
        if w.ndim != 1 or not isinstance(axis, (int, np.integer)):
            raise UnsupportedError(
                f"np.average: weights of shape {w.shape} with axis={axis} "
                f"are not supported{where()}"
            )
        ax = normalize_axis(axis, a.ndim)
        if w.shape[0] != a.shape[ax]:
            raise ValueError(
                f"Shape of weights must be consistent with shape of a along "
                f"specified axis.{where()}"
            )
        w = lax.broadcast_in_dim(w, a.shape, (ax,))
    dtype = np.result_type(a.dtype, w.dtype, np.float64 if a.dtype.kind in "iub" else a.dtype)
    total = np.sum(w, axis=axis, dtype=dtype, keepdims=keepdims)
    return np.sum(np.multiply(a, w, dtype=dtype), axis=axis, keepdims=keepdims) / total


def _nan_replaced(a, value):
    a = lift(find_ctx([a]), a)
    if a.dtype.kind != "f":
        return a
    return np.where(np.isnan(a), value, a)


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("nansum", initial, where, out)
    return np.sum(_nan_replaced(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("nanprod", initial, where, out)
    return np.prod(_nan_replaced(a, 1), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("nanmax", initial, where, out)
    return _nan_extreme(np.max, -np.inf, a, axis, keepdims)


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("nanmin", initial, where, out)
    return _nan_extreme(np.min, np.inf, a, axis, keepdims)


def _nan_extreme(reduce, neutral, a, axis, keepdims):
    """max/min skipping NaNs; an all-NaN slice gives NaN (NumPy also warns, at run time,
    which jitc cannot)."""
    a = lift(find_ctx([a]), a)
    if a.dtype.kind != "f":
        return reduce(a, axis=axis, keepdims=keepdims)
    best = reduce(_nan_replaced(a, neutral), axis=axis, keepdims=keepdims)
    result = np.where(np.all(np.isnan(a), axis=axis, keepdims=keepdims), np.nan, best)
    return _mark(result, result.ndim == 0)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("nanmean", None, where, out)
    a = lift(find_ctx([a]), a)
    if a.dtype.kind != "f":
        return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    count = np.sum(~np.isnan(a), axis=axis, dtype=np.intp, keepdims=keepdims)
    total = np.sum(_nan_replaced(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)
    return np.divide(total, count, dtype=total.dtype)
