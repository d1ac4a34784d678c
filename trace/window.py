"""x[a:b] with a traced bound: a window whose extent is known only at run time.

Loops index with their loop index (`A[i, :j]`, `y[:k]`, `data[ptr[i]:ptr[i + 1]]`). The
window is the whole axis and a mask of the positions a:b holds, as NumPy's slice bounds
give them (a negative bound counts from the end, both are clipped to the axis): a Masked
(trace/masked.py), so reductions, dots, elementwise math with scalars and with windows of
the same bounds, and assignment through the same bounds compute without the extent. The
work is the whole axis's, not the window's.
"""

from __future__ import annotations

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api import is_tracer
from jitc.trace import ranges
from jitc.trace.masked import Masked


def _traced(k) -> bool:
    return isinstance(k, slice) and any(is_tracer(b) for b in (k.start, k.stop, k.step))


def has_traced_slice(key) -> bool:
    return any(_traced(k) for k in (key if isinstance(key, tuple) else (key,)))


def split(items: list, shape: tuple, is_array_index):
    """(the expanded key `items` with its traced slice made whole, that axis's position in
    the result, (a, b): the window's bounds in it, and whether the slice reverses it)."""
    traced = [p for p, k in enumerate(items) if _traced(k)]
    if len(traced) > 1:
        raise UnsupportedError(
            f"an index with two slices of traced bounds{where()}: one axis at a time can "
            "have a run-time extent"
        )
    if any(is_array_index(k) and not (is_tracer(k) and k.ndim == 0) for k in items):
        raise UnsupportedError(
            f"a slice with traced bounds and an integer-array index together{where()}"
        )
    (p,) = traced
    k = items[p]
    if k.step is not None and (is_tracer(k.step) or k.step not in (1, -1)):
        raise UnsupportedError(
            f"a slice with traced bounds and a step other than 1 or -1{where()}: write "
            "x[a:b] and step through it with a loop"
        )
    dim = sum(1 for q in items[:p] if q is not None)
    axis = sum(1 for q in items[:p] if q is None or isinstance(q, slice))
    n = shape[dim]
    whole = tuple(items[:p]) + (slice(None),) + tuple(items[p + 1 :])
    if k.step == -1:  # x[s:e:-1]: x[e + 1:s + 1] reversed, NumPy's bounds for a step of -1
        first = _bound(k.start, n, n - 1, (-1, n - 1))
        stop = -1 if k.stop is None else _bound(k.stop, n, None, (-1, n - 1))
        return whole, axis, (stop + 1, first + 1), True
    return whole, axis, (_bound(k.start, n, 0, (0, n)), _bound(k.stop, n, n, (0, n))), False


def _bound(b, n: int, default, clip: tuple):
    """A slice bound as NumPy takes it: from the end if negative, then clipped to `clip`.
    A traced bound that its loop's range keeps inside the axis stays as it is (`k + 1`):
    windows compare extents by such bounds (trace/ranges.py)."""
    if b is None:
        return default
    if not is_tracer(b):
        step = 1 if clip[0] == 0 else -1
        return slice(b, None, step).indices(n)[0]
    if b.dtype.kind not in "iu" or b.ndim != 0:
        raise TypeError(
            f"slice indices must be integers or None or have an __index__ method, not a "
            f"{b.dtype} array of shape {b.shape}{where()}"
        )
    lo, hi = ranges.interval(b)
    if lo is not None and hi is not None:
        if max(0, clip[0]) <= lo and hi <= clip[1]:
            return b
        if -n <= lo and hi <= -1:
            return b + n
    return np.clip(np.where(b < 0, b + n, b), *clip)


def mask(y, axis: int, bounds) -> object:
    """The positions of y (the whole axis) inside the window, as a bool array like y."""
    a, b = bounds
    n = y.shape[axis]
    positions = np.arange(n).reshape([n if d == axis else 1 for d in range(y.ndim)])
    return np.broadcast_to((positions >= a) & (positions < b), y.shape)


def read(y, axis: int, bounds, reverse: bool = False) -> Masked:
    window = Masked(y.copy(), mask(y, axis, bounds), "window", (axis, *bounds))
    return window.reversed() if reverse else window
