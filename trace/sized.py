"""Values whose size depends on the data: x[mask], np.nonzero, np.unique, and what is
computed from them.

Such a value is its elements at the front of an array of the static bound (the most it can
hold) and a traced count: a Masked window [0:count) along axis 0 (trace/masked.py), so
elementwise math and reductions run over the bound with the rest masked out, and a returned
one reaches the caller cut to its count (stages.SizedResult). Compacting is a running count
and a scatter: the element at i goes to the slot numbered by how many were kept before it.
"""

from __future__ import annotations

import numpy as np

from jitc.core.source import calling
from jitc.trace import lax
from jitc.trace.masked import Masked

_INT = np.dtype(np.int64)
# what an index past a sized value's count fails as (core/failures.py's _OVERRIDES)
RUN_TIME_INDEX = "x[i] of run-time size"


def compact(values, keep, axis: int = 0):
    """(padded, count): the slices of `values` along `axis` where the 1-d bool `keep`
    holds, in order, at the front of an array one longer than values along `axis` (its
    last slot takes the slices not kept; zeros after the kept ones), and how many there
    are (a 0-d int64). The running count is int32 where it fits: half the memory traffic
    of the pass that dominates."""
    ctx = values.ctx
    n = values.shape[axis]
    if n == 0:
        return values, ctx.constant(np.array(0, _INT))
    index = np.dtype(np.int32) if n < 2**31 - 1 else _INT
    ends = lax.cumulative(lax.convert(keep, index), "sum", 0)  # kept up to and with i
    count = lax.convert(lax.reshape(lax.slice_(ends, [n - 1], [n], [1]), ()), _INT)
    slot = lax.select(keep, ends - 1, lax.full(ctx, (n,), n, index))
    shape = list(values.shape)
    shape[axis] = n + 1
    zeros = lax.full(ctx, shape, 0, values.dtype)
    return lax.emit(ctx, "scatter", [zeros, slot, values], axis=axis, mode="set"), count


def front(values, count, label: str) -> Masked:
    """`values`' first `count` rows as a value of run-time size; `label` names it in errors
    ("np.nonzero's result")."""
    rows = lax.iota(values.ctx, values.shape, _INT, 0)
    return Masked(values, rows < count, "sized", (0, 0, count), label=label)


def shifted(values, start):
    """`values` moved `start` rows toward the front along axis 0 (row p holds row
    p + start; rows past the end repeat the last, outside any window)."""
    n = values.shape[0]
    return np.take(values, np.clip(np.arange(n) + start, 0, max(n - 1, 0)), axis=0)


def selected(x, keep, label: str) -> Masked:
    """The rows of `x` (its first axis) where the 1-d bool `keep` holds."""
    return front(*compact(x, keep), label)


def filled(m: Masked):
    """The values of a front window with the positions past its count holding what sorts
    after every element: NaN for floats (NaN sorts last, and counts as no element's
    equal), the largest value for integers."""
    dtype = m.values.dtype
    if dtype.kind in "fc":
        fill = np.nan
    elif dtype.kind == "b":
        fill = True
    else:
        fill = np.iinfo(dtype).max
    return lax.select(m.mask, m.values, lax.full(m.values.ctx, m.values.shape, fill, dtype))


def count_of(m: Masked):
    return m.window[2] - m.window[1]


def reduced(m: Masked, name: str, empty_fails: bool):
    """np.<name> (max, min, prod, argmax, argmin) of a 1-d front window; `empty_fails`:
    NumPy raises ValueError for an empty one, at run time here (core/failures.py)."""
    from jitc.numpy_api.core import checked

    dtype = m.values.dtype
    with calling(f"np.{name}"):
        low = name in ("max", "argmax")
        if name == "prod":
            fill = 1
        elif dtype.kind in "fc":
            fill = -np.inf if low else np.inf
        elif dtype.kind == "b":
            fill = not low
        else:
            fill = np.iinfo(dtype).min if low else np.iinfo(dtype).max
        padded = lax.select(m.mask, m.values, lax.full(m.values.ctx, m.values.shape, fill, dtype))
        result = getattr(np, name)(padded)
        if not empty_fails:
            return result
        empty = count_of(m) == 0
        if result.dtype.kind == "b":  # checked multiplies by one: through int8 and back
            return lax.convert(checked(lax.convert(result, np.int8), empty), result.dtype)
        return checked(result, empty)


def _one_d(m: Masked, what: str, axis=None):
    """Refuse `what` of a sized value but along its run-time axis of a 1-d one."""
    if m.values.ndim != 1 or axis not in (None, 0, -1):
        raise m._refused(f"{what} of more than 1-d elements, or along a given axis,")


def sort(m: Masked, axis=-1, kind=None, order=None, *, stable=None):
    _one_d(m, "np.sort", axis)
    return m.like(np.sort(filled(m), kind=kind, order=order, stable=stable))


def argsort(m: Masked, axis=-1, kind=None, order=None, *, stable=None):
    _one_d(m, "np.argsort", axis)
    return m.like(np.argsort(filled(m), kind=kind, order=order, stable=stable))


def _running(name, identity):
    def run(m: Masked, axis=None, dtype=None, out=None):
        _one_d(m, f"np.{name}", axis)
        if out is not None:
            raise m._refused(f"np.{name}(out=)")
        zero = lax.full(m.values.ctx, m.values.shape, identity, m.values.dtype)
        return m.like(getattr(np, name)(lax.select(m.mask, m.values, zero), dtype=dtype))

    return run


def _reduction(name, empty_fails=True):
    def reduce(m: Masked, axis=None, out=None, keepdims=False, **kwargs):
        _one_d(m, f"np.{name}", axis)
        if out is not None or keepdims or kwargs:
            raise m._refused(f"np.{name} with out=, keepdims= or {sorted(kwargs)}")
        return reduced(m, name, empty_fails)

    return reduce


# NumPy functions of a sized value (trace/masked.py dispatches them here)
FUNCTIONS = {
    "sort": sort,
    "argsort": argsort,
    "cumsum": _running("cumsum", 0),
    "cumprod": _running("cumprod", 1),
    "max": _reduction("max"),
    "amax": _reduction("max"),
    "min": _reduction("min"),
    "amin": _reduction("min"),
    "argmax": _reduction("argmax"),
    "argmin": _reduction("argmin"),
    "prod": _reduction("prod", empty_fails=False),
}


def getitem(m: Masked, key):
    """m[key] for an integer (a row; out of the run-time range: IndexError at run time) or
    a slice of static bounds and step 1 (a sized value again), then the rest of the key."""
    from jitc.numpy_api import is_tracer

    rest = ()
    if isinstance(key, tuple) and key:
        key, rest = key[0], key[1:]
    count, n = count_of(m), m.values.shape[0]
    if isinstance(key, (int, np.integer)) or (is_tracer(key) and key.ndim == 0):
        if not isinstance(key, (int, np.integer)) and key.dtype.kind not in "iu":
            raise m._refused(f"indexing with a {key.dtype} scalar")
        with calling(RUN_TIME_INDEX):
            index = np.where(key < 0, key + count, key)
            index = np.where((index >= 0) & (index < count), index, n)  # past n: IndexError
            row = np.take(m.values, index, axis=0)
        return row[rest] if rest else row
    if isinstance(key, slice) and all(
        b is None or isinstance(b, (int, np.integer)) for b in (key.start, key.stop, key.step)
    ):
        if key.step not in (None, 1):
            raise m._refused("a slice with a step")
        start = _bound(key.start, count, 0)
        stop = np.maximum(_bound(key.stop, count, count), start)
        return front(shifted(m.values, start)[(slice(None), *rest)], stop - start, m.label)
    raise m._refused("indexing with this key")


def _bound(b, count, default):
    """A static slice bound on a run-time extent: from the end if negative, clipped."""
    if b is None:
        return default
    return np.clip(count + b if b < 0 else np.minimum(b, count), 0, count)
