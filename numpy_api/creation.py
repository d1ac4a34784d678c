"""Arrays made from other arrays: the *_like family and np.tril/np.triu."""

from __future__ import annotations

import numpy as np

from jitc.core.dtypes import check_supported
from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import _lifted, implements, is_tracer
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
