"""NumPy's writing functions on Tracers: `out=`, in-place operators, np.copyto,
np.put_along_axis, ufunc.at. Each computes the new contents functionally and hands them to
jitc.trace.mutation.functional.assign, which versions the written buffer."""

from __future__ import annotations

import numpy as np

from jitc.core.errors import JitcError, ShapeError, UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _dtype_key,
    _shape,
    find_ctx,
    implements,
    is_tracer,
    lift,
    normalize_axis,
)
from jitc.numpy_api.ufuncs import _broadcast_shapes, _loop_dtypes, apply_ufunc
from jitc.trace import lax
from jitc.trace.mutation.functional import assign

_NumpyCastingError = np._core._exceptions._UFuncOutputCastingError


class CastingError(JitcError, _NumpyCastingError):
    """NumPy's UFuncTypeError for an output it will not cast to (int_array *= 1.5), with the
    user's line."""

    def __init__(self, ufunc, from_, to, casting):
        super().__init__(ufunc, casting, from_, to, 0)
        self.at = where()

    def __str__(self):
        return super().__str__() + self.at


def _destination(ctx, out, what):
    """The Tracer to write for `out` (a Tracer, or a NumPy array the function captured)."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise UnsupportedError(f"{what}: out= with {len(out)} arrays{where()}")
        out = out[0]
    if is_tracer(out):
        return out
    if isinstance(out, np.ndarray):
        return ctx.capture(out, write=True)
    raise TypeError(f"{what}: out= must be an array, got {type(out).__name__}{where()}")


def write_out(out, result, casting, what, ufunc=None, mask=True):
    """Write `result` into `out` as NumPy's out= does (broadcasting to out's shape, casting
    under `casting`, only where `mask` is true) and return what NumPy returns: `out`."""
    ctx = find_ctx([result, mask])
    dest = _destination(ctx, out, what)
    if dest.scalar or dest.weak:
        raise TypeError(f"{what}: out= must be an array, not a scalar{where()}")
    value = lift(ctx, result)
    try:
        shape = _broadcast_shapes(value.shape, dest.shape)
    except ValueError:
        shape = None
    if shape != dest.shape:
        raise ShapeError(
            f"{what}: non-broadcastable output operand with shape {dest.shape} "
            f"doesn't match the broadcast shape {value.shape}{where()}"
        )
    if not np.can_cast(value.dtype, dest.dtype, casting):
        if ufunc is not None:
            raise CastingError(ufunc, value.dtype, dest.dtype, casting)
        raise TypeError(
            f"{what}: cannot cast {value.dtype} to {dest.dtype} according to the "
            f"rule {casting!r}{where()}"
        )
    value = lax.broadcast_to(lax.convert(value, dest.dtype), dest.shape)
    if mask is not True:
        cond = lift(ctx, mask)
        if cond.dtype != np.dtype(bool):
            raise TypeError(f"{what}: where= must be a boolean array, got {cond.dtype}{where()}")
        value = lax.select(lax.broadcast_to(cond, dest.shape), value, dest)
    assign(dest, value)
    return out[0] if isinstance(out, tuple) else out


def ufunc_into(ufunc, inputs, out):
    """`out op= y`: NumPy's in-place operator, same_kind casting."""
    from jitc.numpy_api.linalg import matmul

    result = matmul(*inputs) if ufunc is np.matmul else apply_ufunc(ufunc, inputs)
    return write_out(out, result, "same_kind", f"np.{ufunc.__name__}", ufunc)


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):  # noqa: A002 (NumPy's name)
    ctx = find_ctx([dst, src, where])
    source = lift(ctx, src)
    if not is_tracer(src) and not isinstance(src, np.ndarray):
        source = lift(ctx, np.asarray(src))  # a Python scalar is cast by its value's dtype
    write_out(dst, source, casting, "np.copyto", mask=where)


def _flat_indices(ctx, arr_shape, indices, axis):
    """put_along_axis: the flat position in `arr` of every element of the broadcast index."""
    other = tuple(1 if d == axis else n for d, n in enumerate(arr_shape))
    if is_tracer(indices):
        idx = lax.convert(indices, np.dtype(np.int64))
    else:
        idx = lift(ctx, np.asarray(indices, dtype=np.int64))
    if idx.ndim != len(arr_shape):
        raise ValueError(
            f"np.put_along_axis: indices must have as many dimensions as arr "
            f"({len(arr_shape)}), got {idx.ndim}{where()}"
        )
    try:
        shape = np.broadcast_shapes(idx.shape, other)
    except ValueError:
        raise ShapeError(
            f"np.put_along_axis: indices of shape {idx.shape} do not broadcast "
            f"against {arr_shape}{where()}"
        ) from None
    idx = lax.broadcast_to(idx, shape)
    n = arr_shape[axis]
    idx = lax.select(apply_ufunc(np.less, (idx, 0)), apply_ufunc(np.add, (idx, n)), idx)
    strides = np.cumprod((1,) + arr_shape[::-1])[:-1][::-1]
    flat = None
    for d, stride in enumerate(strides):
        term = idx if d == axis else lax.iota(ctx, shape, np.int64, d)
        if stride != 1:
            term = apply_ufunc(np.multiply, (term, int(stride)))
        flat = term if flat is None else apply_ufunc(np.add, (flat, term))
    return lax.reshape(flat, (flat.size,)), shape


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    ctx = find_ctx([arr, indices, values])
    dest = _destination(ctx, arr, "np.put_along_axis")
    if axis is None:
        dest, axis = dest.reshape(-1), 0
    axis = normalize_axis(axis, dest.ndim)
    flat_idx, shape = _flat_indices(ctx, dest.shape, indices, axis)
    value = lax.broadcast_to(lax.convert(lift(ctx, values), dest.dtype), shape)
    flat = dest.reshape(-1)  # a view: the scatter writes through it into arr
    new = lax.emit(
        ctx, "scatter", [flat, flat_idx, lax.reshape(value, (value.size,))], axis=0, mode="set"
    )
    assign(flat, new)


def ufunc_at(ufunc, a, indices, b=None):
    """np.<ufunc>.at(a, indices, b): a[indices] op= b for every index, repeats included."""
    from jitc.trace.indexing import normalized_index

    name = ufunc.__name__
    if ufunc.nin != 2 or b is None:
        raise UnsupportedError(f"np.{name}.at is supported for binary ufuncs with b given{where()}")
    ctx = find_ctx([a, indices, b])
    dest = _destination(ctx, a, f"np.{name}.at")
    if isinstance(indices, tuple) or (
        not is_tracer(indices) and np.asarray(indices).dtype == np.dtype(bool)
    ):
        raise UnsupportedError(
            f"np.{name}.at: only one integer index array (along axis 0) is supported{where()}"
        )
    idx = normalized_index(ctx, indices, dest.shape[0] if dest.ndim else 0, 0)
    loop = _loop_dtypes(ufunc, (_dtype_key(dest), _dtype_key(b)))
    if loop[2] != dest.dtype or loop[1] != loop[2]:
        raise UnsupportedError(
            f"np.{name}.at of {_dtype_key(b)} values into a {dest.dtype} "
            f"array (NumPy casts after every step){where()}"
        )
    shape = idx.shape + dest.shape[1:]
    value = lift(ctx, b, dest.dtype) if not is_tracer(b) else lax.convert(b, dest.dtype)
    try:
        value = lax.broadcast_to(value, shape)
    except ShapeError:
        raise ShapeError(
            f"np.{name}.at: values of shape {_shape(b)} do not broadcast to {shape}{where()}"
        ) from None
    from jitc.numpy_api.ufuncs import _UFUNC_ALIASES

    mode = _UFUNC_ALIASES.get(name, name)
    assign(dest, lax.emit(ctx, "scatter", [dest, idx, value], axis=0, mode=mode))


__all__ = ["write_out", "ufunc_into", "ufunc_at", "copyto", "put_along_axis", "CastingError"]
