"""Ufuncs and operators on Tracers, with NumPy's loop dtypes (`ufunc.resolve_dtypes`), and the
elementwise functions built on them: np.where, np.clip, np.round, astype, np.copy."""

from __future__ import annotations

import functools
import operator
import sys
import warnings

import numpy as np

from jitc.core import ops
from jitc.core.dtypes import check_supported
from jitc.core.errors import ShapeError, UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _dtype_key,
    _is_pyscalar,
    _lifted,
    _mark,
    _shape,
    _tracer_type,
    find_ctx,
    implements,
    is_tracer,
    lift,
    result_type,
)
from jitc.trace import lax

_UFUNC_ALIASES = {
    "fabs": "absolute",
    "degrees": "rad2deg",
    "radians": "deg2rad",
    "float_power": "power",
    "true_divide": "divide",
}
_IDENTITY_UFUNCS = {"positive", "conjugate"}
# Ufuncs with NumPy's complex loops in jitc (np.conj is np.conjugate); others are refused
# on complex values by name.
COMPLEX_UFUNCS = frozenset(
    {
        "add",
        "subtract",
        "multiply",
        "divide",
        "true_divide",
        "negative",
        "positive",
        "square",
        "absolute",
        "conjugate",
        "exp",
        "log",
        "sqrt",
        "equal",
        "not_equal",
        "isnan",
        "isinf",
        "isfinite",
        "matmul",
        "sign",
        "reciprocal",
        "float_power",
        *ops.COMPLEX_LIBM,
    }
)
_REDUCE_METHODS = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}


@functools.cache
def _resolve(ufunc, keys):
    return ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)


def ufunc_dispatch(ufunc, method, inputs, kwargs):
    from jitc.numpy_api import writes as numpy_writes
    from jitc.numpy_api.linalg import matmul
    from jitc.numpy_api.reductions import _REDUCERS
    from jitc.numpy_api.special import apply_special, scipy_ufunc

    name = ufunc.__name__
    label = scipy_ufunc(ufunc)
    if label:
        if method != "__call__" or kwargs:
            raise UnsupportedError(
                f"{label}: .{method} and keyword arguments "
                f"({', '.join(kwargs)}) are not supported by jitc{where()}"
            )
        return apply_special(ufunc, inputs)
    out = kwargs.pop("out", None)
    if method == "at":
        _reject_kwargs(f"np.{name}.at", kwargs)
        return numpy_writes.ufunc_at(ufunc, *inputs)
    if method == "reduce" and name in _REDUCE_METHODS:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        dtype = kwargs.pop("dtype", None)
        _reject_kwargs(f"np.{name}.reduce", kwargs)
        result = _REDUCERS[_REDUCE_METHODS[name]](inputs[0], axis, dtype=dtype, keepdims=keepdims)
        return (
            result
            if out is None
            else numpy_writes.write_out(out, result, "unsafe", f"np.{name}.reduce")
        )
    if method == "accumulate":
        from jitc.numpy_api.scans import accumulate

        axis = kwargs.pop("axis", 0)
        dtype = kwargs.pop("dtype", None)
        _reject_kwargs(f"np.{name}.accumulate", kwargs)
        result = accumulate(ufunc, inputs[0], axis, dtype)
        return (
            result
            if _no_out(out)
            else numpy_writes.write_out(out, result, "unsafe", f"np.{name}.accumulate")
        )
    if method == "outer":  # NumPy refuses a unary ufunc before it gets here
        a, b = inputs  # every pair: a's axes, then b's
        return ufunc(np.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b, out=out, **kwargs)
    if method != "__call__":
        raise UnsupportedError(f"np.{name}.{method} is not supported by jitc{where()}")
    mask = kwargs.pop("where", True)
    if mask is not True and out is None:
        raise UnsupportedError(
            f"np.{name}: where= without out= leaves the other elements "
            f"uninitialized; pass out={where()}"
        )
    if name == "matmul":
        _reject_kwargs("np.matmul", kwargs)
        result = matmul(*inputs)
    elif name == "vecdot":
        from jitc.numpy_api.linalg import vecdot

        axis = kwargs.pop("axis", -1)
        _reject_kwargs("np.vecdot", kwargs)
        result = vecdot(*inputs, axis=axis)
    else:
        dtype = kwargs.pop("dtype", None)
        _reject_kwargs(f"np.{name}", kwargs)
        if dtype is not None:
            inputs = [
                lift(find_ctx(inputs), x, check_supported(dtype, f"np.{name} dtype="))
                for x in inputs
            ]
        result = apply_ufunc(ufunc, inputs)
    if _no_out(out):
        return result
    return numpy_writes.write_out(out, result, "same_kind", f"np.{name}", ufunc, mask)


def _no_out(out) -> bool:
    """out= absent: None, or NumPy's normalized (None,)."""
    return out is None or (isinstance(out, tuple) and all(o is None for o in out))


def _reject_kwargs(what, kwargs):
    for k, v in kwargs.items():
        if k == "out" and _no_out(v) or (k in ("casting",) and v == "same_kind"):
            continue
        raise UnsupportedError(f"{what}: argument {k}= is not supported by jitc{where()}")


def apply_operator(ufunc, inputs):
    """A Python operator (x + y, -x, x @ y): on Python scalars the result stays weak.

    np.add(s, 1) on a Python scalar gives a (strong) NumPy scalar; s + 1 gives a Python one.
    """
    if ufunc is np.matmul:
        from jitc.numpy_api.linalg import matmul

        return matmul(*inputs)
    if ufunc in _PYTHON_INT_ARITHMETIC and all(map(_is_python_value, inputs)):
        inputs = tuple(map(_bool_as_python_int, inputs))  # True + True == 2 in Python
    base, exponent = (inputs + (None,))[:2]
    if ufunc is np.power and is_tracer(base) and base.scalar:
        return apply_ufunc(ufunc, inputs, weak_result=True, sqrt_fast_path=False)
    if (
        ufunc is np.power
        and type(exponent) is int
        and exponent == 2
        and is_tracer(base)
        and base.dtype == np.dtype(bool)
        and not base.scalar
    ):
        return apply_ufunc(np.square, (base,))  # NumPy's x ** 2 fast path: int8 for bools
    complex_array = is_tracer(base) and base.dtype.kind == "c" and not base.scalar
    if ufunc is np.power and complex_array and type(exponent) in (int, float):
        # NumPy's fast paths for an array ** a Python scalar: x ** 2 is np.square, x ** -1
        # np.reciprocal, x ** 0.5 np.sqrt (on real arrays the power loop's values agree)
        fast = {(int, 2): np.square, (int, -1): np.reciprocal, (float, 0.5): np.sqrt}
        op = fast.get((type(exponent), exponent))
        if op is not None:
            return apply_ufunc(op, (base,))
    return apply_ufunc(ufunc, inputs, weak_result=True)


# Python operators that treat a bool as the int 0/1 (NumPy's bool loops would not).
_PYTHON_INT_ARITHMETIC = frozenset(
    {
        np.add,
        np.subtract,
        np.multiply,
        np.true_divide,
        np.floor_divide,
        np.remainder,
        np.power,
        np.negative,
        np.positive,
        np.absolute,
        np.invert,
    }
)


def _is_python_value(x) -> bool:
    """A Python scalar, concrete or traced (a Python scalar argument)."""
    return type(x) in (bool, int, float) or (is_tracer(x) and x.weak)


def _bool_as_python_int(x):
    if type(x) is bool:
        return int(x)
    if is_tracer(x) and x.dtype.kind == "b":
        return _tracer_type()(
            x.ctx, lax.convert(x, np.dtype(np.int64)).node, weak=True, scalar=True
        )
    return x


def _is_static_half(x) -> bool:
    """x is a concrete scalar 0.5 (NumPy's power loop takes sqrt for such an exponent)."""
    if is_tracer(x) or isinstance(x, (list, tuple)):
        return False
    return np.ndim(x) == 0 and np.asarray(x).dtype.kind in "fiu" and float(np.asarray(x)) == 0.5


@functools.cache
def _loop_dtypes(ufunc, keys):
    """NumPy's loop for `keys`, checked to be in jitc's dtypes; a float16 inner loop on bool
    inputs (np.signbit) runs in float32 when the result is not float16 (exact: bools are
    0 and 1)."""
    loop = _resolve(ufunc, keys)
    half = np.dtype(np.float16)
    if half in loop[: ufunc.nin] and half not in loop[ufunc.nin :]:
        loop = tuple(np.dtype(np.float32) if d == half else d for d in loop)
    for d in loop:
        check_supported(d, f"np.{ufunc.__name__} on {', '.join(str(k) for k in keys)}")
    return loop


def apply_ufunc(ufunc, inputs, weak_result=False, sqrt_fast_path=True):
    name = ufunc.__name__
    prim = _UFUNC_ALIASES.get(name, name)
    if prim not in ops.ELEMENTWISE and prim not in _IDENTITY_UFUNCS:
        raise UnsupportedError(f"np.{name} is not supported by jitc{where()}")
    ctx = find_ctx(inputs)
    keys = tuple(_dtype_key(x) for x in inputs)
    if all(k is int or k is float or k is complex for k in keys):
        # Python scalars only (traced arguments, a loop's index): Python's own types, whose
        # NumPy dtypes are int64, float64 and complex128 (NumPy would find no loop for
        # `int < int` and take object)
        keys = tuple(np.dtype(k) for k in keys)
    try:
        loop = _loop_dtypes(ufunc, keys)
    except TypeError as e:
        raise TypeError(f"np.{name}: {e}{where()}") from None
    except UnsupportedError as e:
        raise UnsupportedError(f"{e}{where()}") from None
    if any(d.kind == "c" for d in loop) and name not in COMPLEX_UFUNCS:
        from jitc.numpy_api.complex import refuse_complex

        refuse_complex(f"np.{name}", [np.zeros(0, d) for d in loop])
    shapes = [_shape(x) for x in inputs]
    try:
        shape = _broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"np.{name}: operands could not be broadcast together with shapes "
            f"{' '.join(str(s) for s in shapes)}{where()}"
        ) from None
    if prim in ops.COMPARE:
        exact = _integer_compare(ctx, prim, inputs, loop, shape)
        if exact is not None:
            return _tracer_type()(ctx, exact.node, scalar=(len(shape) == 0))
    operands = []
    for x, dt in zip(inputs, loop[: ufunc.nin]):
        t = lift(ctx, x, dt) if not is_tracer(x) else lax.convert(x, dt)
        operands.append(lax.broadcast_to(t, shape))
    if name == "conjugate":
        out = lax.conjugate(operands[0])
    elif prim in _IDENTITY_UFUNCS:
        out = operands[0]
    elif name == "power" and sqrt_fast_path and loop[0].kind == "f" and _is_static_half(inputs[1]):
        # NumPy's float power loop computes x ** 0.5 with a scalar (stride-0) exponent as
        # sqrt(x): nan at -inf and -0.0 at -0.0, where pow gives inf and 0.0. A NumPy
        # scalar base (scalar math, `s ** 0.5`) uses pow.
        out = lax.emit(ctx, "sqrt", operands[:1])
    else:
        out = lax.emit(ctx, prim, operands)
    out = lax.convert(out, loop[ufunc.nin])
    weak = weak_result and all(_is_pyscalar(x) or (is_tracer(x) and x.weak) for x in inputs)
    return _tracer_type()(ctx, out.node, weak=weak, scalar=(len(shape) == 0))


_PY_COMPARE = {
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
}


def _integer_compare(ctx, prim, inputs, loop, shape):
    """A comparison of integers NumPy 2 computes exactly where its loop dtype cannot hold
    both sides, or None for the ordinary loop: uint64 against int64 (a loop of its own in
    NumPy), a Python int out of the array's range (`x_uint8 < -1`: no element is), and a
    Python int argument against an array (its value is not narrowed to the array's dtype,
    as arithmetic would)."""
    a, b = inputs
    da, db = (x.dtype if is_tracer(x) else None for x in inputs)
    py = _PY_COMPARE[prim]
    for v, other, flip in ((a, db, False), (b, da, True)):
        if type(v) is int and other is not None and other.kind in "iu" and not is_tracer(v):
            info = np.iinfo(other)
            if not info.min <= v <= info.max:  # every element compares as 0 does
                return lax.full(ctx, shape, py(v, 0) if not flip else py(0, v), np.dtype(bool))
    if not (is_tracer(a) and is_tracer(b)) or da.kind not in "iu" or db.kind not in "iu":
        return None
    u64 = np.dtype(np.uint64)
    if loop[0] != loop[1] or (a.weak != b.weak and u64 in (da, db)):
        # one side uint64, the other int64 (or a Python int argument): a negative signed
        # side orders below every unsigned value; otherwise both compare as uint64
        signed_left = da != u64
        s, u = (a, b) if signed_left else (b, a)
        s = lax.broadcast_to(lax.convert(s, np.dtype(np.int64)), shape)
        u = lax.broadcast_to(u, shape)
        neg = lax.emit(ctx, "less", [s, lax.full(ctx, shape, 0, np.dtype(np.int64))])
        su = lax.convert(s, u64)
        same = lax.emit(ctx, prim, [su, u] if signed_left else [u, su])
        when_neg = py(-1, 0) if signed_left else py(0, -1)
        return lax.select(neg, lax.full(ctx, shape, when_neg, np.dtype(bool)), same)
    if a.weak != b.weak:  # a Python int argument against a narrower array: in int64
        wide = np.dtype(np.int64)
        return lax.emit(ctx, prim, [lax.broadcast_to(lax.convert(x, wide), shape) for x in inputs])
    return None


@functools.lru_cache(maxsize=4096)
def _broadcast_shapes(*shapes):
    return np.broadcast_shapes(*shapes)


@implements(np.where)
def where_(condition, x=None, y=None):
    if x is None and y is None:  # np.nonzero(condition): of run-time size
        from jitc.numpy_api.data_sized import nonzero

        return nonzero(condition, "np.where's result")
    ctx = find_ctx([condition, x, y])
    cond = _truth(lift(ctx, condition))
    dt = result_type(x, y)
    check_supported(dt, "np.where result")
    shapes = [_shape(v) for v in (condition, x, y)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"np.where: operands could not be broadcast together with shapes "
            f"{' '.join(map(str, shapes))}{where()}"
        ) from None
    t, f = (
        lax.broadcast_to(lift(ctx, v, dt) if not is_tracer(v) else lax.convert(v, dt), shape)
        for v in (x, y)
    )
    return lax.select(lax.broadcast_to(cond, shape), t, f)


@implements(np.clip)
def clip(
    a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue, **kwargs
):
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    _reject_kwargs("np.clip", kwargs)
    result = copy(a) if lo is None and hi is None else a  # a copy (NumPy 2.1+, Array API)
    if lo is not None:
        result = apply_ufunc(np.maximum, (result, lo))
    if hi is not None:
        result = apply_ufunc(np.minimum, (result, hi))
    result = result if is_tracer(result) else _lifted(result)
    if _no_out(out):
        return result
    from jitc.numpy_api.writes import write_out

    return write_out(out, result, "same_kind", "np.clip")


@implements(np.round, np.around)
def round_(a, decimals=0, out=None):
    if decimals != 0 or out is not None:
        raise UnsupportedError(f"np.round: only decimals=0 is supported{where()}")
    a = _lifted(a)
    if a.dtype.kind in "iu":
        return _mark(a, a.scalar)
    return apply_ufunc(np.rint, (a,))  # bool: float16, as NumPy


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel that points at the user's frame (the first outside jitc
    and NumPy)."""
    from jitc.core.source import INTERNAL

    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(INTERNAL):
        frame, level = frame.f_back, level + 1
    return level


def astype(a, dtype):
    a = _lifted(a)
    dtype = check_supported(dtype, "astype target")
    if a.dtype.kind == "c" and dtype.kind not in "cb":  # to bool: z != 0, no warning
        # NumPy's cast keeps the real part and warns (at trace time here, once per trace)
        warnings.warn(
            "Casting complex values to real discards the imaginary part",
            np.exceptions.ComplexWarning,
            stacklevel=_user_stacklevel(),
        )
        a = lax.real(a)
    t = lax.convert(a, dtype)
    from jitc.trace.tracer import Tracer

    return Tracer(a.ctx, t.node, scalar=a.scalar)


if hasattr(np, "astype"):  # NumPy >= 2.1, the Array API's astype

    @implements(np.astype)
    def astype_function(x, dtype, /, *, copy=True, device=None):
        if device not in (None, "cpu"):
            raise UnsupportedError(f"np.astype: device={device!r} is not supported{where()}")
        return astype(x, dtype)


@implements(np.copy)
def copy(a, order="K", subok=False):
    return _mark(_lifted(a), False)  # np.copy of a NumPy scalar is a 0-d array


def _truth(a):
    return a if a.dtype == np.dtype(bool) else apply_ufunc(np.not_equal, (a, 0))


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's test: |a - b| <= atol + rtol * |b| where b is finite, a == b otherwise."""
    ctx = find_ctx([a, b])
    x, y = lift(ctx, a), lift(ctx, b)
    y = lax.convert(y, np.result_type(_dtype_key(y), 1.0))
    close = (np.abs(x - y) <= atol + rtol * np.abs(y)) & np.isfinite(y) | (x == y)
    if equal_nan:
        close = close | (np.isnan(x) & np.isnan(y))
    return _mark(close, close.ndim == 0)


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _lifted(x)
    if x.dtype.kind != "f":
        return x
    info = np.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = np.where(np.isnan(x), nan, x)
    out = np.where(np.isinf(x) & (x > 0), posinf, out)
    out = lax.convert(np.where(np.isinf(x) & (x < 0), neginf, out), x.dtype)
    return _mark(out, x.scalar)
