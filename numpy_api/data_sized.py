"""Functions whose result's size depends on the values: np.nonzero, flatnonzero, argwhere,
where(cond), extract, compress, and np.unique with its Array API forms.

Each result is a value of run-time size (trace/sized.py): its elements at the front of the
static bound (the input's size) and their count, computed by a running count and a scatter;
the caller gets arrays of exactly NumPy's size. The unique family sorts stably (so
return_index gives each value's first occurrence, as NumPy's) and marks where a sorted value
differs from the one before it; NaNs are one value with equal_nan=True (np.unique's
default) and each its own without (the Array API's unique_* functions).
"""

from __future__ import annotations

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import find_ctx, implements, lift, normalize_axis
from jitc.trace import lax, sized
from jitc.trace.masked import Masked

_INT = np.dtype(np.int64)


def _array(a):
    return a if isinstance(a, Masked) else lift(find_ctx([a]), a)


def _positions(keep, label):
    """The positions where the 1-d bool `keep` holds, as a sized value (compacted as int32
    where they fit, half the scatter's traffic, then widened to NumPy's intp)."""
    n = keep.shape[0]
    narrow = np.dtype(np.int32) if n < 2**31 else _INT
    found = sized.selected(lax.iota(keep.ctx, (n,), narrow, 0), keep, label)
    return found.like(lax.convert(found.values, _INT))


def _flat_keep(a):
    """Which elements are nonzero, as a 1-d bool: of a traced array flattened, or of a 1-d
    sized value with its tail masked out."""
    if isinstance(a, Masked):
        if a.values.ndim != 1:
            raise a._refused("np.nonzero of more than 1-d elements")
        return a.mask & (a.values != 0)
    return np.reshape(a, (a.size,)) != 0


@implements(np.nonzero)
def nonzero(a, label="np.nonzero's result"):
    a = _array(a)
    if a.ndim == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
            f"instead.{where()}"
        )
    flat = _positions(_flat_keep(a), label)
    shape = (a.values.shape[0],) if isinstance(a, Masked) else a.shape
    if len(shape) == 1:
        return (flat,)
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    return tuple(flat.like((flat.values // int(s)) % n) for s, n in zip(strides, shape))


@implements(np.flatnonzero)
def flatnonzero(a):
    a = _array(a)
    return _positions(_flat_keep(a), "np.flatnonzero's result")


@implements(np.argwhere)
def argwhere(a):
    a = _array(a)
    if not isinstance(a, Masked) and a.ndim == 0:  # one row of no columns, or none
        keep = np.reshape(a != 0, (1,))
        count = lax.convert(keep, _INT)[0]
        return sized.front(lax.full(a.ctx, (1, 0), 0, _INT), count, "np.argwhere's result")
    columns = nonzero(a)
    table = np.stack([c.values for c in columns], axis=1)
    return sized.front(table, sized.count_of(columns[0]), "np.argwhere's result")


@implements(np.extract)
def extract(condition, arr):
    arr = _array(arr)
    if isinstance(arr, Masked):
        raise arr._refused("np.extract from")
    # x[sized index] (trace/indexing.py); a position past arr's size: IndexError at run time
    return np.reshape(arr, (arr.size,))[flatnonzero(condition)]


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    if out is not None:
        raise UnsupportedError(f"np.compress(out=): its size is known only at run time{where()}")
    cond = lift(find_ctx([condition, a]), condition)
    a = lift(cond.ctx, a)
    if cond.ndim != 1:
        raise ValueError(f"np.compress: condition must be a 1-d array{where()}")
    if axis is None:
        a, axis = np.reshape(a, (a.size,)), 0
    axis = normalize_axis(axis, a.ndim)
    n = a.shape[axis]
    if cond.shape[0] > n:
        raise IndexError(
            f"np.compress: condition has {cond.shape[0]} entries, more than axis {axis}'s "
            f"{n} (NumPy raises IndexError where one of the extra ones holds){where()}"
        )
    keep = cond != 0
    if cond.shape[0] < n:  # NumPy treats the missing entries as False
        keep = np.concatenate([keep, np.zeros(n - cond.shape[0], bool)])
    moved = np.moveaxis(a, axis, 0)
    picked = sized.selected(moved, keep, "np.compress's result")
    if axis == 0:
        return picked
    back = np.moveaxis(picked.values, 0, axis)
    mask = np.moveaxis(picked.mask, 0, axis)
    return Masked(back, mask, "sized", (axis, 0, sized.count_of(picked)), label=picked.label)


# ----------------------------------------------------------------------------- unique


def _sorted(a, equal_nan: bool, permuted: bool):
    """(sorted values, the permutation that sorts them (stable; None unless `permuted`),
    whether each starts a new value, how many elements there are): of a traced array
    flattened, or of a 1-d sized value (its tail sorts after its elements: trace/sized.py's
    filled). A sort alone is faster than an argsort and a gather."""
    if isinstance(a, Masked):
        if a.values.ndim != 1:
            raise a._refused("np.unique of more than 1-d elements")
        flat, total = sized.filled(a), sized.count_of(a)
    else:
        flat, total = np.reshape(a, (a.size,)), a.size
    n = flat.shape[0]
    if permuted:
        order = np.argsort(flat, kind="stable")
        values = np.take(flat, order)
    else:
        order, values = None, np.sort(flat)
    new = values[1:] != values[:-1]
    if equal_nan and values.dtype.kind in "fc":  # NaNs sort last: they are one value
        nan = np.isnan(values)
        new = new & ~(nan[1:] & nan[:-1])
    new = np.concatenate([np.ones(1, bool), new])
    if isinstance(a, Masked):
        new = new & (lax.iota(flat.ctx, (n,), _INT, 0) < total)
    return values, order, new, total


def _unique(ar, index, inverse, counts, equal_nan, what):
    """(unique values, then the first index, inverse and counts that were asked for)."""
    a = _array(ar)
    if not isinstance(a, Masked) and a.size == 0:  # NumPy's own empty results
        empty = np.unique(np.empty(a.shape, a.dtype), index, inverse, counts, equal_nan=equal_nan)
        if isinstance(empty, tuple):
            return tuple(a.ctx.constant(e) for e in empty)
        return a.ctx.constant(empty)
    values, order, new, total = _sorted(a, equal_nan, index or inverse)
    unique = sized.selected(values, new, what)
    out = [unique]
    if index:
        out.append(unique.like(sized.compact(order, new)[0]))
    if inverse:
        group = np.cumsum(new.astype(_INT)) - 1
        n = order.shape[0]
        zeros = lax.full(group.ctx, (n,), 0, _INT)
        scattered = lax.emit(group.ctx, "scatter", [zeros, order, group], axis=0, mode="set")
        out.append(a.like(scattered) if isinstance(a, Masked) else np.reshape(scattered, a.shape))
    if counts:
        starts = sized.compact(lax.iota(values.ctx, (values.shape[0],), _INT, 0), new)[0]
        k = lax.iota(values.ctx, starts.shape, _INT, 0)
        following = np.take(starts, np.minimum(k + 1, starts.shape[0] - 1))
        ends = np.where(k + 1 < sized.count_of(unique), following, total)
        out.append(unique.like(ends - starts))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.unique)
def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,
):
    if axis is not None:
        raise UnsupportedError(
            f"np.unique(axis={axis!r}): unique rows or columns are not supported by jitc; "
            f"np.unique of the flattened values is{where()}"
        )
    what = "np.unique's result"
    return _unique(ar, return_index, return_inverse, return_counts, bool(equal_nan), what)


_RESULTS = {  # NumPy's namedtuples: UniqueAllResult, ...
    name: type(getattr(np, name)(np.zeros(1)))
    for name in ("unique_all", "unique_counts", "unique_inverse")
}


@implements(np.unique_values)
def unique_values(x):
    return _unique(x, False, False, False, False, "np.unique_values's result")


@implements(np.unique_counts)
def unique_counts(x):
    what = "np.unique_counts's result"
    return _RESULTS["unique_counts"](*_unique(x, False, False, True, False, what))


@implements(np.unique_inverse)
def unique_inverse(x):
    what = "np.unique_inverse's result"
    return _RESULTS["unique_inverse"](*_unique(x, False, True, False, False, what))


@implements(np.unique_all)
def unique_all(x):
    return _RESULTS["unique_all"](*_unique(x, True, True, True, False, "np.unique_all's result"))


# The functions above on a value that is itself of run-time size (trace/masked.py)
ON_SIZED = {
    "nonzero": nonzero,
    "flatnonzero": flatnonzero,
    "argwhere": argwhere,
    "unique": unique,
    "unique_values": unique_values,
    "unique_counts": unique_counts,
    "unique_inverse": unique_inverse,
    "unique_all": unique_all,
}
