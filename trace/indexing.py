"""x[key] on Tracers: basic slicing (steps, negative steps, None, Ellipsis, ints) as one
slice + reshape, and integer-array indices as one gather, placed where NumPy places it.

Several integer arrays (`X[:, k, i, j]`, im2col) broadcast together and index their axes
jointly: those axes are moved together and merged into one, and the arrays combined into
one linear index into it (`(k * n_i + i) * n_j + j`), so one gather (or scatter) does it."""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.errors import ShapeError, UnsupportedError
from jitc.core.source import where
from jitc.numpy_api import find_ctx, is_tracer, lift
from jitc.trace import lax, window
from jitc.trace.masked import Masked, same_mask
from jitc.trace.mutation.functional import assign, derive_view, refuse_outer_write


def _is_array_index(k) -> bool:
    return is_tracer(k) or isinstance(k, (np.ndarray, list, range))


def _constant_value(k):
    """k's value when it is known now (an array, a list, an array made in the function)."""
    if is_tracer(k):
        return k.node.attrs["value"] if k.node.op == "constant" else None
    return np.asarray(k) if isinstance(k, (np.ndarray, list)) else None


def _constant_mask(k) -> bool:
    value = _constant_value(k)
    return value is not None and value.dtype == np.dtype(bool) and value.ndim >= 1


def _masks_as_arrays(key, shape):
    """A constant boolean mask in a key is its nonzero() integer arrays (NumPy's own rule),
    one per axis it covers, once its shape is checked against those axes."""
    out, dim = [], 0
    for k in key:
        if _constant_mask(k):
            mask = _constant_value(k)
            for d, m in enumerate(mask.shape):
                if shape[dim + d] != m:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis "
                        f"{dim + d}; size of axis is {shape[dim + d]} but size of "
                        f"corresponding boolean axis is {m}{where()}"
                    )
            out.extend(np.nonzero(mask))
            dim += mask.ndim
        else:
            out.append(k)
            dim += k is not None
    return out


def _expand(key, shape):
    """Replace Ellipsis by full slices and constant masks by integer arrays; check the
    index count."""
    ndim = len(shape)
    key = key if isinstance(key, tuple) else (key,)
    # a list holding traced values (a list argument is a container of traced scalars) is an
    # integer array, as NumPy makes a list index one
    key = tuple(
        lift(find_ctx([k]), k) if isinstance(k, list) and find_ctx([k]) is not None else k
        for k in key
    )
    consumed = sum(
        _constant_value(k).ndim if _constant_mask(k) else 1
        for k in key
        if k is not None and k is not Ellipsis
    )
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"an index can only have a single ellipsis ('...'){where()}")
    if consumed > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but "
            f"{consumed} were indexed{where()}"
        )
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(k)
    if not any(k is Ellipsis for k in key):
        out.extend([slice(None)] * (ndim - consumed))
    return _masks_as_arrays(out, shape)


class _Index:
    """A key split as NumPy applies it: a basic part (slice + reshape of x) and the integer
    arrays, gathered along `axis` of that part once merged (see merged). `front`: NumPy moves
    the gathered dims to the front (advanced indices separated by a slice or None)."""

    def __init__(self, x, key):
        # NumPy gives a scalar for a 0-d result, but a 0-d array when the key has an Ellipsis.
        self.has_ellipsis = any(k is Ellipsis for k in (key if isinstance(key, tuple) else (key,)))
        key = _expand(key, x.shape)
        start, limit, stride = [], [], []
        out_shape = []  # after slicing: None -> 1, int -> dropped, array -> kept as an axis
        array_pos = []  # (position in out_shape, index, position in key)
        int_pos = []  # positions of the dims indexed by ints (for NumPy's placement rule)
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
                    raise IndexError(
                        f"only integers, slices, ellipsis, None and integer "
                        f"arrays are valid indices, got {type(k).__name__}"
                        f"{where()}"
                    ) from None
                if not -n <= i < n:
                    raise IndexError(
                        f"index {i} is out of bounds for axis {dim} with size {n}{where()}"
                    )
                i %= n
                start.append(i), limit.append(i + 1), stride.append(1)
                int_pos.append(item)
            dim += 1
        self.basic = derive_view(x, lax.reshape(lax.slice_(x, start, limit, stride), out_shape))
        self.axis = self.idx = None
        self.front = False
        self.arrays = [(pos, k) for pos, k, _ in array_pos]
        if array_pos:
            self.axis, self.idx, _ = array_pos[0]
            items = sorted(int_pos + [item for _, _, item in array_pos])
            self.front = items != list(range(items[0], items[-1] + 1)) and self.axis != 0

    def merged(self, y):
        """(y with the integer-indexed axes together at self.axis and merged into one, the
        one index into it, the transpose that moved them, y's shape after it). One array:
        y and its index as they are."""
        ctx = y.ctx
        if len(self.arrays) == 1:
            idx = normalized_index(ctx, self.idx, y.shape[self.axis], self.axis)
            return y, idx, None, y.shape
        axes = [pos for pos, _ in self.arrays]
        first = axes[0]
        rest = [d for d in range(y.ndim) if d not in axes]
        perm = [d for d in rest if d < first] + axes + [d for d in rest if d > first]
        moved = lax.transpose(y, perm)
        sizes = [y.shape[a] for a in axes]
        merged_shape = moved.shape[:first] + (_prod(sizes),) + moved.shape[first + len(axes) :]
        return (
            lax.reshape(moved, merged_shape),
            _linear_index(ctx, self.arrays, sizes),
            perm,
            moved.shape,
        )

    def front_perm(self, ndim, nidx):
        """The transpose taking the gathered dims (at self.axis) to the front."""
        axis = self.axis
        return list(range(axis, axis + nidx)) + [
            d for d in range(ndim) if not axis <= d < axis + nidx
        ]


def getitem(x, key):
    if _is_mask(x, key):
        return Masked(x.copy(), _full_mask(x, key), rows=lift(x.ctx, key))
    if window.has_traced_slice(key):
        whole, axis, bounds, reverse = window.split(_expand(key, x.shape), x.shape, _is_array_index)
        return window.read(getitem(x, whole), axis, bounds, reverse)
    if isinstance(key, Masked) and key.values.ndim == 1 and key.values.dtype.kind in "iu":
        # x[idx[a:b]]: the selected indices gather; those outside the selection read x[0]
        return key.like(getitem(x, _inside(key)))
    if _sized_indices(key):  # x[np.nonzero(x)], A[rows, cols]
        keys = [k.front() for k in key]
        first = keys[0]
        if any(k.values.ndim != 1 or not same_mask(k.mask.node, first.mask.node) for k in keys):
            raise UnsupportedError(
                f"indexing with several index arrays of run-time size{where()}: they must "
                "be 1-d and come from one computation (np.nonzero's arrays)"
            )
        out = getitem(x, tuple(_inside(k) for k in keys))
        return Masked(
            out,
            lax.broadcast_in_dim(first.mask, out.shape, (0,)),
            "sized",
            first.window,
            label=first.label,
        )
    ix = _Index(x, key)
    y = ix.basic
    if ix.idx is None:
        if y.ndim == 0 and not ix.has_ellipsis:
            return _view(y, True)  # a NumPy scalar: a copy, never a view
        if y.scalar:  # s[...] of a NumPy scalar: a 0-d array
            return _view(y, False)
        return y
    if len(ix.arrays) == 1:
        out = take_along(y, ix.idx, ix.axis)
    else:
        merged, idx, _, _ = ix.merged(y)
        out = lax.gather(merged, idx, ix.axis)
    if ix.front:
        out = lax.transpose(out, ix.front_perm(out.ndim, out.ndim - y.ndim + len(ix.arrays)))
    return _view(out, out.ndim == 0 and not ix.has_ellipsis)


def _inside(key: Masked):
    """A sized (or windowed) index array with the positions outside it reading index 0."""
    zero = lax.full(key.values.ctx, key.values.shape, 0, key.values.dtype)
    return lax.select(key.mask, key.values, zero)


def _sized_indices(key) -> bool:
    return (
        isinstance(key, tuple)
        and bool(key)
        and all(isinstance(k, Masked) and k.values.dtype.kind in "iu" for k in key)
    )


def _is_mask(x, key) -> bool:
    """A boolean array indexing the leading dims of x (x[mask], x[x > 0])."""
    if is_tracer(key):
        return key.dtype == np.dtype(bool)
    if isinstance(key, np.ndarray) and key.dtype == np.dtype(bool):
        return key.ndim > 1 or key.ndim == 0
    return False


def setitem(x, key, value):
    """x[key] = value, NumPy's way: value is cast (unsafely) and broadcast to x[key]; with
    an integer array the last write to a position wins."""
    ctx = x.ctx
    if x.scalar or x.weak:
        raise TypeError(f"a NumPy scalar does not support item assignment{where()}")
    refuse_outer_write(x)
    if _is_mask(x, key):
        return _set_masked(x, key, value)
    if window.has_traced_slice(key):
        whole, axis, bounds, reverse = window.split(_expand(key, x.shape), x.shape, _is_array_index)
        dest = _Index(x, whole).basic
        target = window.read(dest, axis, bounds)
        if isinstance(value, Masked) and value.window is not None:  # y[c:d] of equal extent
            value = target.aligned(value.reversed() if reverse else value)
        return _set_masked(dest, target.mask, value)
    ix = _Index(x, key)
    dest = ix.basic
    v = lift(ctx, value)
    if ix.idx is None:
        assign(dest, _fit(v, dest.shape, dest.dtype))
        return
    merged, idx, perm, moved_shape = ix.merged(dest)
    gathered = list(merged.shape[: ix.axis]) + list(idx.shape) + list(merged.shape[ix.axis + 1 :])
    if ix.front:
        front = ix.front_perm(len(gathered), idx.ndim)
        moved = _fit(v, [gathered[p] for p in front], dest.dtype)
        v = lax.transpose(moved, tuple(int(i) for i in np.argsort(front)))
    else:
        v = _fit(v, gathered, dest.dtype)
    new = lax.emit(ctx, "scatter", [merged, idx, v], axis=ix.axis, mode="set")
    if perm is not None:  # back to dest's layout
        new = lax.transpose(lax.reshape(new, moved_shape), tuple(int(i) for i in np.argsort(perm)))
    assign(dest, new)


def _fit(v, shape, dtype):
    """A value assigned into x[key]: cast as NumPy's setitem casts, broadcast to the slot."""
    shape = tuple(shape)
    v = lax.convert(v, dtype)
    while v.ndim > len(shape) and v.shape[0] == 1:  # NumPy drops leading unit dims
        v = lax.reshape(v, v.shape[1:])
    try:
        return lax.broadcast_to(v, shape)
    except ShapeError:
        raise ValueError(
            f"could not broadcast input array from shape {v.shape} into shape {shape}{where()}"
        ) from None


def _full_mask(x, mask):
    """A boolean index on x's leading dims, broadcast to x's shape."""
    m = lift(x.ctx, mask)
    if m.shape != x.shape[: m.ndim]:
        raise IndexError(
            f"boolean index of shape {m.shape} does not match the indexed "
            f"array of shape {x.shape}{where()}"
        )
    return lax.broadcast_in_dim(m, x.shape, tuple(range(m.ndim)))


def _set_masked(x, mask, value):
    """x[mask] = value: a select where the mask holds (the value a scalar, one value per
    trailing slot of the masked rows, or x[mask] computed on through the same mask)."""
    ctx = x.ctx
    full = _full_mask(x, mask)
    if isinstance(value, Masked):
        if not same_mask(value.mask.node, full.node):
            raise UnsupportedError(
                f"x[mask1] = y[mask2] needs the masks to be the same computation{where()}"
            )
        assign(x, lax.select(full, lax.convert(value.values, x.dtype), x))
        return
    m = lift(ctx, mask)
    v = lift(ctx, value)
    rest = x.shape[m.ndim :]
    per_row = bool(rest) and v.shape[v.ndim - len(rest) :] == rest and v.size == _prod(rest)
    if v.size != 1 and not per_row:
        raise UnsupportedError(
            f"x[mask] = v with v of shape {v.shape}: the number of selected elements is known "
            f"only at run time{where()}; assign a scalar, or write np.where(mask, new, x)"
        )
    v = lax.reshape(v, rest if per_row else ())
    new = lax.select(full, lax.broadcast_to(lax.convert(v, x.dtype), x.shape), x)
    assign(x, new)


def _linear_index(ctx, arrays, sizes):
    """Integer arrays indexing axes of `sizes` (NumPy broadcasts them together) as one index
    into those axes merged, row-major. A traced index out of its own axis's range makes the
    linear index out of range too, so the gather's (or scatter's) run-time check refuses it
    rather than reading a neighbouring row."""
    idxs = [normalized_index(ctx, k, n, pos) for (pos, k), n in zip(arrays, sizes)]
    try:
        shape = np.broadcast_shapes(*(i.shape for i in idxs))
    except ValueError:
        raise IndexError(
            f"shape mismatch: indexing arrays could not be broadcast together "
            f"with shapes {' '.join(str(i.shape) for i in idxs)}{where()}"
        ) from None
    total = _prod(sizes)
    linear = bad = None
    for i, n in zip(idxs, sizes):
        i = lax.broadcast_to(i, shape)
        if not _is_constant(i):  # gather counts a negative entry from the end of its axis
            wrapped = i + (i < 0) * n
            out = (wrapped < 0) | (wrapped >= n)
            bad = out if bad is None else bad | out
            i = wrapped
        linear = i if linear is None else linear * n + i
    if bad is not None:
        linear = lax.select(bad, lax.full(ctx, shape, total, np.int64), linear)
    return linear


def _is_constant(t) -> bool:
    return t.node.op == "constant" or (
        t.node.op == "broadcast_in_dim" and t.node.operands[0].op == "constant"
    )


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def normalized_index(ctx, idx, n, axis):
    """An integer index array as an int64 Tracer, negative entries counted from the end
    (checked against `n` now when it is known)."""
    if is_tracer(idx):  # gather and scatter count negative entries from the end
        if idx.dtype.kind not in "iu":
            raise IndexError(
                f"arrays used as indices must be of integer type, got {idx.dtype}{where()}"
            )
        if idx.dtype == np.dtype(np.uint64):  # beyond int64: out of bounds, not negative
            top = np.iinfo(np.int64).max
            idx = lax.select(idx > top, lax.full(ctx, idx.shape, top, idx.dtype), idx)
        return lax.convert(idx, np.dtype(np.int64)) if idx.dtype.kind == "u" else idx
    value = np.asarray(idx)
    if value.dtype == np.dtype(bool):
        value = np.nonzero(value)[0]
    if value.size == 0:
        value = value.astype(np.int64)
    if value.dtype.kind not in "iu":
        raise IndexError(
            f"arrays used as indices must be of integer type, got {value.dtype}{where()}"
        )
    if value.size and (value.min() < -n or value.max() >= n):
        bad = value[(value < -n) | (value >= n)].ravel()[0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}{where()}")
    return ctx.constant(np.where(value < 0, value + n, value).astype(np.int64))


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
                "use np.where(mask, x, 0) (or a reduction over it) instead"
            )
        return lax.gather(x, normalized_index(ctx, idx, n, axis), axis)
    value = np.asarray(idx)
    if value.dtype == np.dtype(bool) and (value.ndim != 1 or value.shape[0] != n):
        raise UnsupportedError(
            f"boolean mask indexing is only supported with a constant "
            f"1-d mask matching the axis{where()}"
        )
    return lax.gather(x, normalized_index(ctx, idx, n, axis), axis)
