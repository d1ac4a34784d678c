"""x[key] on Tracers: basic slicing (steps, negative steps, None, Ellipsis, ints) as one
slice + reshape, and one integer-array index as a gather, placed where NumPy places it."""

from __future__ import annotations

import operator

import numpy as np

from jitc import lax
from jitc.errors import UnsupportedError
from jitc.numpy_api import find_ctx, is_tracer, lift
from jitc.source import where


def _is_array_index(k) -> bool:
    return is_tracer(k) or isinstance(k, (np.ndarray, list, range))


def _expand(key, ndim):
    """Replace Ellipsis by full slices; check the index count."""
    key = key if isinstance(key, tuple) else (key,)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"an index can only have a single ellipsis ('...'){where()}")
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{consumed} were indexed{where()}")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(k)
    if not any(k is Ellipsis for k in key):
        out.extend([slice(None)] * (ndim - consumed))
    return out


def getitem(x, key):
    # NumPy gives a scalar for a 0-d result, but a 0-d array when the key has an Ellipsis.
    has_ellipsis = any(k is Ellipsis for k in (key if isinstance(key, tuple) else (key,)))
    key = _expand(key, x.ndim)
    start, limit, stride = [], [], []
    out_shape = []  # after slicing: None -> 1, int -> dropped, array -> kept as an axis
    array_pos = []  # (position in out_shape, index)
    int_pos = []  # positions of the original dims indexed by ints (for NumPy's placement rule)
    dim = 0
    for item, k in enumerate(key):
        if k is None:
            out_shape.append(1)
            continue
        n = x.shape[dim]
        if isinstance(k, slice):
            s, e, st = k.indices(n)
            if not len(range(s, e, st)):  # empty: x[:0], x[5:2], x[::-1] of a 0-length axis
                s, e, st = 0, 0, 1
            start.append(s), limit.append(e if e >= 0 or st > 0 else -1), stride.append(st)
            out_shape.append(len(range(s, e, st)))
        elif _is_array_index(k):
            start.append(0), limit.append(n), stride.append(1)
            array_pos.append((len(out_shape), k, item))
            out_shape.append(n)
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise IndexError(f"only integers, slices, ellipsis, None and integer arrays "
                                 f"are valid indices, got {type(k).__name__}{where()}") from None
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}"
                                 f"{where()}")
            i %= n
            start.append(i), limit.append(i + 1), stride.append(1)
            int_pos.append(item)
        dim += 1
    y = lax.slice_(x, start, limit, stride)
    y = lax.reshape(y, out_shape)
    if not array_pos:
        return _view(y, y.ndim == 0 and not has_ellipsis)
    if len(array_pos) > 1:
        raise UnsupportedError(f"indexing with more than one integer array is not supported"
                               f"{where()}")
    axis, idx, item = array_pos[0]
    out = take_along(y, idx, axis)
    # NumPy: ints count as advanced indices too; when advanced indices are not adjacent,
    # the gathered dims move to the front.
    items = sorted(int_pos + [item])
    if items != list(range(items[0], items[-1] + 1)) and axis != 0:
        nidx = out.ndim - y.ndim + 1
        perm = list(range(axis, axis + nidx)) + [d for d in range(out.ndim)
                                                 if not axis <= d < axis + nidx]
        out = lax.transpose(out, perm)
    return _view(out, out.ndim == 0 and not has_ellipsis)


def _view(t, scalar):
    """A new Tracer on t's node (lax returns `x` itself for no-op slices: never mutate it)."""
    return type(t)(t.ctx, t.node, scalar=scalar)


def take_along(x, idx, axis):
    """x gathered with an integer index array along `axis` (NumPy's x[..., idx, ...])."""
    ctx = find_ctx([x])
    n = x.shape[axis]
    if is_tracer(idx):
        if idx.dtype == np.dtype(bool):
            raise UnsupportedError(
                f"indexing with a traced boolean mask has a data-dependent shape{where()}; "
                "use np.where(mask, x, 0) (or a reduction over it) instead")
        if idx.dtype.kind != "i":
            raise IndexError(f"arrays used as indices must be of integer type, got "
                             f"{idx.dtype}{where()}")
        return lax.gather(x, idx, axis)
    value = np.asarray(idx)
    if value.dtype == np.dtype(bool):
        if value.ndim != 1 or value.shape[0] != n:
            raise UnsupportedError(f"boolean mask indexing is only supported with a constant "
                                   f"1-d mask matching the axis{where()}")
        value = np.nonzero(value)[0]
    if value.size == 0:
        value = value.astype(np.int64)
    if value.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type, got {value.dtype}"
                         f"{where()}")
    if value.size and (value.min() < -n or value.max() >= n):
        bad = value[(value < -n) | (value >= n)].ravel()[0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}"
                         f"{where()}")
    value = np.where(value < 0, value + n, value).astype(np.int64)
    return lax.gather(x, lift(ctx, value), axis)
