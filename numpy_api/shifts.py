"""Shifting and padding: np.roll, np.pad, np.diff, as slices and joins that fuse.

The index arithmetic is NumPy's own: along one axis, np.roll and np.pad of `np.arange(n)`
give the source position of every output position, for any shift or width (a reflection
wider than the array included). Those positions are cut into runs that step by +1, -1 or 0,
and each run is one slice (or a broadcast edge), so the result is a concatenate of slices,
which loop kernels write cell by cell, never a gather.
"""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _lifted,
    _mark,
    implements,
    is_tracer,
    lift,
    normalize_axes,
    normalize_axis,
)
from jitc.numpy_api.shapes import concatenate
from jitc.numpy_api.ufuncs import apply_ufunc
from jitc.trace import lax


def _static_int(value, what):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{what}: {type(value).__name__!r} object cannot be interpreted as an integer{where()}"
        ) from None


def _traced(x) -> bool:
    """Is `x`, or anything in it (nested tuples and lists), a traced value?"""
    if isinstance(x, (tuple, list)):
        return any(_traced(v) for v in x)
    return is_tracer(x)


def _runs(positions):
    """(start, step, count) runs covering `positions`, each step in (-1, 0, 1)."""
    runs, i = [], 0
    while i < len(positions):
        j = i + 1
        step = int(positions[j] - positions[i]) if j < len(positions) else 1
        if step not in (-1, 0, 1):
            step = 1
        else:
            while j < len(positions) and positions[j] - positions[j - 1] == step:
                j += 1
        runs.append((int(positions[i]), step, j - i))
        i = j
    return runs


def _take_positions(a, positions, axis):
    """a with `axis` replaced by a[..., positions, ...] (static positions), as slices."""
    if len(positions) == a.shape[axis] and np.array_equal(positions, np.arange(len(positions))):
        return a
    pieces = []
    for start, step, count in _runs(positions):
        key = [slice(None)] * a.ndim
        if step == 0:
            key[axis] = slice(start, start + 1)
            piece = a[tuple(key)]
            shape = list(piece.shape)
            shape[axis] = count
            pieces.append(lax.broadcast_to(piece, tuple(shape)))
            continue
        stop = start + step * count
        key[axis] = slice(start, None if stop < 0 else stop, step)
        pieces.append(a[tuple(key)])
    return lax.concatenate(pieces, axis)


@implements(np.roll)
def roll(a, shift, axis=None):
    a = _lifted(a)
    if axis is None:
        flat = lax.reshape(a, (a.size,))
        rolled = roll(flat, shift, 0)
        return _mark(lax.reshape(rolled, a.shape), False)
    if _traced(shift):
        raise UnsupportedError(
            f"np.roll shift must be Python ints (a traced shift would give "
            f"a data-dependent layout){where()}"
        )
    shifts, axes = np.broadcast_arrays(
        np.asarray(shift, dtype=object), np.asarray(axis, dtype=object)
    )
    total = {}
    for s, ax in zip(shifts.ravel(), axes.ravel()):
        ax = normalize_axis(_static_int(ax, "np.roll axis"), a.ndim)
        total[ax] = total.get(ax, 0) + int(s)  # NumPy truncates a float shift
    out = a
    for ax, s in total.items():
        n = a.shape[ax]
        if n:
            out = _take_positions(out, np.roll(np.arange(n), s), ax)
    return _mark(out, False)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    a = _lifted(array)
    if callable(mode) or mode not in _PAD_MODES:
        raise UnsupportedError(
            f"np.pad mode={mode!r} is not supported by jitc (supported: "
            f"{', '.join(_PAD_MODES)}){where()}"
        )
    allowed = {
        "constant": {"constant_values"},
        "reflect": {"reflect_type"},
        "symmetric": {"reflect_type"},
    }.get(mode, set())
    unexpected = set(kwargs) - allowed
    if unexpected:
        raise ValueError(
            f"unsupported keyword arguments for mode {mode!r}: {sorted(unexpected)}{where()}"
        )
    if kwargs.get("reflect_type", "even") != "even":
        raise UnsupportedError(
            f"np.pad reflect_type={kwargs['reflect_type']!r} is not "
            f"supported by jitc (only 'even'){where()}"
        )
    widths = _pairs(pad_width, a.ndim, "pad_width", as_index=True)
    if mode == "constant":
        values = kwargs.get("constant_values", 0)
        if _traced(values):
            raise UnsupportedError(
                f"np.pad constant_values must be numbers, not traced values{where()}"
            )
        values = _pairs(values, a.ndim, "constant_values")
    out = a
    for ax, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = out.shape[ax]
        if mode == "constant":
            out = _pad_constant(out, ax, before, after, values[ax])
            continue
        if n == 0:
            raise ValueError(
                f"can't extend empty axis {ax} using modes other than 'constant' "
                f"or 'empty'{where()}"
            )
        positions = np.pad(np.arange(n), (before, after), mode=mode)
        out = _take_positions(out, positions, ax)
    return _mark(out, False)


def _pad_constant(a, axis, before, after, values):
    pieces = []
    for width, value in ((before, values[0]), (after, values[1])):
        shape = list(a.shape)
        shape[axis] = width
        with np.errstate(all="ignore"):  # NumPy assigns the value: an unsafe cast
            fill = np.asarray(value).astype(a.dtype)
        pieces.append(lax.full(a.ctx, tuple(shape), fill, a.dtype) if width else None)
    return lax.concatenate([p for p in (pieces[0], a, pieces[1]) if p is not None], axis)


def _pairs(x, ndim, what, as_index=False):
    """NumPy's np.pad broadcast of a width or value to one (before, after) pair per axis."""
    arr = np.asarray(x, dtype=object if not as_index else None)
    if as_index:
        if arr.dtype.kind not in "iu" and arr.size:
            raise TypeError(f"`pad_width` must be of integral type.{where()}")
        if arr.size and arr.min() < 0:
            raise ValueError(f"index can't contain negative values{where()}")
    try:
        pairs = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(
            f"np.pad: {what} of shape {arr.shape} cannot be broadcast to ({ndim}, 2){where()}"
        ) from None
    return [(int(p[0]), int(p[1])) if as_index else (p[0], p[1]) for p in pairs]


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    a = _lifted(a)
    n = _static_int(n, "np.diff n")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}{where()}")
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional{where()}")
    axis = normalize_axis(axis, a.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = lift(a.ctx, extra)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = lax.broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
    op = np.not_equal if a.dtype == np.dtype(bool) else np.subtract
    for _ in range(n):
        m = a.shape[axis]
        hi = [slice(None)] * a.ndim
        lo = [slice(None)] * a.ndim
        hi[axis], lo[axis] = slice(1, None), slice(None, max(m - 1, 0))
        a = apply_ufunc(op, (a[tuple(hi)], a[tuple(lo)]))
    return _mark(a, False)


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's second-order differences, interior and edges joined along each axis."""
    f = _lifted(f)
    axes = tuple(range(f.ndim)) if axis is None else normalize_axes(axis, f.ndim)
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in 'axis'{where()}")
    if edge_order not in (1, 2):
        raise ValueError(f"'edge_order' greater than 2 not supported{where()}")
    if len(varargs) not in (0, 1, len(axes)):
        raise TypeError(f"invalid number of arguments{where()}")
    spacings = [varargs[0] if varargs else 1.0] * len(axes) if len(varargs) < 2 else varargs
    if f.dtype.kind in "iu":
        f = lax.convert(f, np.float64)
    outs = []
    for ax, dx in zip(axes, spacings):
        if f.shape[ax] < edge_order + 1:
            raise ValueError(
                f"Shape of array too small to calculate a numerical gradient, "
                f"at least (edge_order + 1) elements are required.{where()}"
            )
        outs.append(_gradient_along(f, ax, _spacing(dx, f.shape[ax]), edge_order))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _spacing(dx, n):
    """A scalar spacing, or the (dx1, dx2) coefficient arrays of constant coordinates."""
    ndim = dx.ndim if _traced(dx) else np.ndim(dx)
    if ndim == 0:
        return dx
    if ndim != 1:
        raise ValueError(f"distances must be either scalars or 1d{where()}")
    if _traced(dx):
        raise UnsupportedError(
            f"np.gradient coordinates must be NumPy arrays, not traced values{where()}"
        )
    x = np.asarray(dx)
    if len(x) != n:
        raise ValueError(
            f"when 1d, distances must match the length of the corresponding dimension{where()}"
        )
    if x.dtype.kind in "iu":
        x = x.astype(np.float64)
    diffx = np.diff(x)
    return diffx[0] if (diffx == diffx[0]).all() else diffx


def _gradient_along(f, axis, dx, edge_order):
    def at(s):
        key = [slice(None)] * f.ndim
        key[axis] = s
        return f[tuple(key)]

    def along(coeff):  # a constant per position along `axis`, shaped to broadcast
        shape = [1] * f.ndim
        shape[axis] = -1
        return np.reshape(coeff, shape)

    if np.ndim(dx) == 0:
        interior = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx)
        if edge_order == 1:
            first = (at(slice(1, 2)) - at(slice(0, 1))) / dx
            last = (at(slice(-1, None)) - at(slice(-2, -1))) / dx
        else:
            first = (
                (-1.5 / dx) * at(slice(0, 1))
                + (2.0 / dx) * at(slice(1, 2))
                + (-0.5 / dx) * at(slice(2, 3))
            )
            last = (
                (0.5 / dx) * at(slice(-3, -2))
                + (-2.0 / dx) * at(slice(-2, -1))
                + (1.5 / dx) * at(slice(-1, None))
            )
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        a = along(-dx2 / (dx1 * (dx1 + dx2)))
        b = along((dx2 - dx1) / (dx1 * dx2))
        c = along(dx1 / (dx2 * (dx1 + dx2)))
        interior = a * at(slice(None, -2)) + b * at(slice(1, -1)) + c * at(slice(2, None))
        if edge_order == 1:
            first = (at(slice(1, 2)) - at(slice(0, 1))) / dx[0]
            last = (at(slice(-1, None)) - at(slice(-2, -1))) / dx[-1]
        else:
            d1, d2 = dx[0], dx[1]
            first = (
                (-(2.0 * d1 + d2) / (d1 * (d1 + d2))) * at(slice(0, 1))
                + ((d1 + d2) / (d1 * d2)) * at(slice(1, 2))
                + (-d1 / (d2 * (d1 + d2))) * at(slice(2, 3))
            )
            d1, d2 = dx[-2], dx[-1]
            last = (
                (d2 / (d1 * (d1 + d2))) * at(slice(-3, -2))
                + (-(d2 + d1) / (d1 * d2)) * at(slice(-2, -1))
                + ((2.0 * d2 + d1) / (d2 * (d1 + d2))) * at(slice(-1, None))
            )
    # NumPy writes each piece into an array of f's dtype
    return concatenate([first, interior, last], axis=axis, dtype=f.dtype)


def _fft_shift(x, axes, sign):
    x = _lifted(x)
    axes = tuple(range(x.ndim)) if axes is None else axes
    if isinstance(axes, (int, np.integer)):
        return roll(x, sign * (x.shape[axes] // 2), axes)
    return roll(x, [sign * (x.shape[ax] // 2) for ax in axes], axes)


@implements(np.fft.fftshift)
def fftshift(x, axes=None):
    """NumPy's: np.roll by half of each axis (no transform, so no FFT kernel needed)."""
    return _fft_shift(x, axes, 1)


@implements(np.fft.ifftshift)
def ifftshift(x, axes=None):
    return _fft_shift(x, axes, -1)
