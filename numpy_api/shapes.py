"""Shape functions: views (reshape, transpose, squeeze, split...) and joins (concatenate,
stack), plus np.shape/ndim/size/result_type."""

from __future__ import annotations

import builtins
import functools
import operator

import numpy as np

from jitc.core.dtypes import check_supported
from jitc.core.errors import ShapeError, UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _lifted,
    _mark,
    _shape,
    _tracer_type,
    find_ctx,
    implements,
    is_tracer,
    lift,
    normalize_axes,
    normalize_axis,
    result_type,
)
from jitc.trace import lax


def _view(impl):
    """A function NumPy answers with a view of its first argument: the result shares that
    argument's buffer, so writes through either are seen by both (trace/mutation/functional.py)."""

    @functools.wraps(impl)
    def view(a, *args, **kwargs):
        from jitc.trace.mutation.functional import derive_view

        src = _lifted(a)
        result = impl(src, *args, **kwargs)
        if isinstance(result, list):
            return [derive_view(src, r) for r in result]
        return derive_view(src, result)

    return view


@implements(np.reshape)
@_view
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    a = _lifted(a)
    if order != "C":
        raise UnsupportedError(f"reshape with order={order!r} is not supported{where()}")
    shape = newshape if shape is None else shape
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(operator.index(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"can only specify one unknown dimension{where()}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or a.size % known:
            raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}{where()}")
        shape = tuple(a.size // known if d == -1 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}{where()}")
    return lax.reshape(a, shape)


@implements(np.ravel)
def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


@implements(np.transpose)
@_view
def transpose(a, axes=None):
    a = _lifted(a)
    if axes is None:
        perm = tuple(reversed(range(a.ndim)))
    else:
        perm = tuple(normalize_axis(x, a.ndim) for x in axes)
        if len(perm) != a.ndim or len(set(perm)) != a.ndim:
            raise ValueError(f"axes {tuple(axes)} don't match array of {a.ndim} dims{where()}")
    return lax.transpose(a, perm)


@implements(np.swapaxes)
@_view
def swapaxes(a, axis1, axis2):
    a = _lifted(a)
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


@implements(np.moveaxis)
@_view
def moveaxis(a, source, destination):
    a = _lifted(a)
    as_list = lambda v: list(v) if isinstance(v, (list, tuple)) else [v]  # noqa: E731
    src = [normalize_axis(s, a.ndim) for s in as_list(source)]
    dst = [normalize_axis(d, a.ndim) for d in as_list(destination)]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source and destination must have the same length{where()}")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


@implements(np.matrix_transpose, np.linalg.matrix_transpose)
@_view
def matrix_transpose(x, /):
    x = _lifted(x)
    if x.ndim < 2:
        raise ValueError(
            f"matrix_transpose: Input array must be at least 2-dimensional, but "
            f"it is {x.ndim}{where()}"
        )
    return lax.transpose(x, list(range(x.ndim - 2)) + [x.ndim - 1, x.ndim - 2])


@implements(np.unstack)
def unstack(x, /, *, axis=0):
    """The slices along `axis`, each a view of x (NumPy: tuple(np.moveaxis(x, axis, 0)))."""
    x = _lifted(x)
    if x.ndim == 0:
        raise ValueError(f"np.unstack: Input array must be at least 1-d.{where()}")
    moved = moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


@implements(np.expand_dims)
@_view
def expand_dims(a, axis):
    a = _lifted(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    axes = sorted(normalize_axis(x, ndim) for x in axes)
    shape = list(a.shape)
    for x in axes:
        shape.insert(x, 1)
    return lax.reshape(a, shape)


@implements(np.squeeze)
@_view
def squeeze(a, axis=None):
    a = _lifted(a)
    if axis is None:
        axes = [i for i, n in enumerate(a.shape) if n == 1]
    else:
        axes = normalize_axes(axis, a.ndim)
        for i in axes:
            if a.shape[i] != 1:
                raise ValueError(
                    f"cannot select an axis to squeeze out which has size not "
                    f"equal to one (axis {i} of {a.shape}){where()}"
                )
    return lax.reshape(a, [n for i, n in enumerate(a.shape) if i not in axes])


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    a = _lifted(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        np.broadcast_shapes(a.shape, shape)
    except ValueError:
        raise ShapeError(
            f"np.broadcast_to: cannot broadcast {a.shape} to {shape}{where()}"
        ) from None
    out = _mark(lax.broadcast_to(a, shape), False)
    out.buffer().readonly = True  # NumPy's broadcast view cannot be written
    return out


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    """Each argument broadcast to their common shape: the argument itself where it has that
    shape already, else a broadcast view (read-only here; NumPy lets it be written with a
    FutureWarning, a write jitc refuses as it does for np.broadcast_to)."""
    ctx = find_ctx(args)
    xs = [_strong(lift(ctx, a)) for a in args]
    try:
        shape = np.broadcast_shapes(*(x.shape for x in xs))
    except ValueError:
        raise ShapeError(
            f"np.broadcast_arrays: shape mismatch: objects cannot be broadcast "
            f"to a single shape: {[x.shape for x in xs]}{where()}"
        ) from None
    return tuple(x if x.shape == shape else broadcast_to(x, shape) for x in xs)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's own construction: each input raveled onto its axis (the first two swapped
    for indexing='xy'), then broadcast together unless sparse, copied where copy."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"np.meshgrid: Valid values for `indexing` are 'xy' and 'ij'.{where()}")
    ctx = find_ctx(xi)
    ndim = len(xi)
    shapes = [[1] * ndim for _ in xi]
    for i, s in enumerate(shapes):
        s[i] = -1
    if indexing == "xy" and ndim > 1:
        shapes[0][:2], shapes[1][:2] = [1, -1], [-1, 1]
    out = tuple(reshape(_strong(lift(ctx, x)), s) for x, s in zip(xi, shapes))
    if not sparse:
        out = broadcast_arrays(*out)
    return tuple(_mark(x, False) for x in out) if copy else out


def _strong(x):
    """An argument as NumPy's np.asarray sees it: a scalar (Python's or NumPy's) becomes a
    0-d array of its dtype, no longer weak; an array stays itself."""
    return (
        x if not (x.weak or x.scalar) else _tracer_type()(x.ctx, x.node, weak=False, scalar=False)
    )


@implements(np.atleast_1d)
def atleast_1d(*arys):
    out = [reshape(a, (1,)) if _lifted(a).ndim == 0 else _lifted(a) for a in arys]
    return out[0] if len(out) == 1 else out


@implements(np.atleast_2d)
def atleast_2d(*arys):
    out = []
    for a in arys:
        a = _lifted(a)
        out.append(lax.reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is not None:
        raise UnsupportedError(f"np.concatenate: out= is not supported{where()}")
    ctx = find_ctx(arrays)
    xs = [lift(ctx, a) for a in arrays]
    if not xs:
        raise ValueError(f"need at least one array to concatenate{where()}")
    if axis is None:
        xs = [lax.reshape(x, (x.size,)) for x in xs]
        axis = 0
    if any(x.ndim == 0 for x in xs):
        raise ValueError(f"zero-dimensional arrays cannot be concatenated{where()}")
    dt = check_supported(dtype, "np.concatenate dtype=") if dtype else result_type(*xs)
    ax = normalize_axis(axis, xs[0].ndim)
    for x in xs[1:]:
        if x.ndim != xs[0].ndim or any(
            p != q for i, (p, q) in enumerate(zip(x.shape, xs[0].shape)) if i != ax
        ):
            raise ShapeError(
                f"np.concatenate: all the input array dimensions except for the "
                f"concatenation axis must match: {xs[0].shape} vs {x.shape}"
                f"{where()}"
            )
    return lax.concatenate([lax.convert(x, dt) for x in xs], ax)


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    ctx = find_ctx(arrays)
    xs = [lift(ctx, a) for a in arrays]
    if not xs:
        raise ValueError(f"need at least one array to stack{where()}")
    if any(x.shape != xs[0].shape for x in xs):
        raise ShapeError(
            f"np.stack: all input arrays must have the same shape, got "
            f"{[x.shape for x in xs]}{where()}"
        )
    ax = normalize_axis(axis, xs[0].ndim + 1)
    return concatenate([expand_dims(x, ax) for x in xs], ax, dtype=dtype)


@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    xs = atleast_1d(*tup)
    xs = xs if isinstance(xs, list) else [xs]
    return concatenate(xs, 0 if xs[0].ndim == 1 else 1, dtype=dtype)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    xs = atleast_2d(*tup)
    xs = xs if isinstance(xs, list) else [xs]
    return concatenate(xs, 0, dtype=dtype)


def _split(ary, indices_or_sections, axis, equal):
    a = _lifted(ary)
    ax = normalize_axis(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"number sections must be larger than 0{where()}")
        if equal and n % sections:
            raise ValueError(f"array split does not result in an equal division{where()}")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        bounds = (
            [0]
            + [
                builtins.min(max(int(i) if i >= 0 else n + int(i), 0), n)
                for i in indices_or_sections
            ]
            + [n]
        )
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        hi = max(lo, hi)
        start = [0] * a.ndim
        limit = list(a.shape)
        start[ax], limit[ax] = lo, hi
        out.append(lax.slice_(a, start, limit, [1] * a.ndim))
    return out


@implements(np.split)
@_view
def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, equal=True)


@implements(np.array_split)
@_view
def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, equal=False)


@implements(np.shape)
def shape(a):
    return _shape(a)


@implements(np.ndim)
def ndim(a):
    return len(_shape(a))


@implements(np.size)
def size(a, axis=None):
    s = _shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


@implements(np.result_type)
def result_type_(*arrays_and_dtypes):
    return result_type(*arrays_and_dtypes)


@implements(np.flip)
def flip(m, axis=None):
    m = _lifted(m)
    axes = range(m.ndim) if axis is None else normalize_axes(axis, m.ndim)
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(m.ndim))]


@implements(np.fliplr)
def fliplr(m):
    m = _lifted(m)
    if m.ndim < 2:
        raise ValueError(f"Input must be >= 2-d.{where()}")
    return flip(m, 1)


@implements(np.flipud)
def flipud(m):
    m = _lifted(m)
    if m.ndim < 1:
        raise ValueError(f"Input must be >= 1-d.{where()}")
    return flip(m, 0)


@implements(np.tile)
def tile(A, reps):
    a = _lifted(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    if any(not isinstance(r, (int, np.integer)) for r in reps):
        raise UnsupportedError(f"np.tile reps must be Python ints{where()}")
    ndim = max(a.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    a = lax.reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    # a broadcast along a new axis before each one, merged with it: reps copies of the axis
    shape = [s for r, n in zip(reps, a.shape) for s in (r, n)]
    expanded = lax.reshape(a, [s for n in a.shape for s in (1, n)])
    tiled = lax.broadcast_to(expanded, shape)
    return _mark(lax.reshape(tiled, [r * n for r, n in zip(reps, a.shape)]), False)


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    a = _lifted(a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    axis = normalize_axis(axis, a.ndim)
    counts = np.asarray(repeats) if not is_tracer(repeats) else None
    if counts is None or counts.dtype.kind not in "iu":
        raise UnsupportedError(
            f"np.repeat repeats must be Python ints (a traced count "
            f"gives a data-dependent shape){where()}"
        )
    if counts.ndim == 0:  # each element `repeats` times: broadcast along a new axis, merge
        n = int(counts)
        if n < 0:
            raise ValueError(f"repeats may not contain negative values.{where()}")
        shape = a.shape[: axis + 1] + (n,) + a.shape[axis + 1 :]
        wide = lax.broadcast_in_dim(a, shape, [d for d in range(a.ndim + 1) if d != axis + 1])
        merged = a.shape[:axis] + (a.shape[axis] * n,) + a.shape[axis + 1 :]
        return _mark(lax.reshape(wide, merged), False)
    if counts.shape != (a.shape[axis],):
        raise ValueError(
            f"operands could not be broadcast together with shape "
            f"({a.shape[axis]},) ({counts.size},){where()}"
        )
    if counts.min(initial=0) < 0:
        raise ValueError(f"repeats may not contain negative values.{where()}")
    key = [slice(None)] * a.ndim
    key[axis] = np.repeat(np.arange(a.shape[axis]), counts)
    return _mark(a[tuple(key)], False)
