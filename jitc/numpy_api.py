"""NumPy functions on Tracers, decomposed into primitives (jitc's jax.numpy).

Dtypes follow NumPy 2 exactly by asking NumPy itself: `ufunc.resolve_dtypes` gives a ufunc's
loop dtypes (Python scalars stay weak, NEP 50), and small probes on empty arrays give the
accumulator dtypes of reductions. FUNCTIONS maps each supported NumPy function to its
implementation; anything else raises UnsupportedError (never a silent NumPy fallback).
"""

from __future__ import annotations

import builtins
import functools
import operator

import numpy as np

from jitc import lax, ops
from jitc.dtypes import SUPPORTED, check_supported
from jitc.errors import JitcError, ShapeError, UnsupportedError
from jitc.source import where

FUNCTIONS: dict = {}


def implements(*funcs):
    def register(impl):
        for f in funcs:
            FUNCTIONS[f] = impl
        return impl

    return register


# ----------------------------------------------------------------------------- values


_TRACER = None


def _tracer_type():
    global _TRACER
    if _TRACER is None:  # trace.py imports this module: resolve the class on first use
        from jitc.trace import Tracer

        _TRACER = Tracer
    return _TRACER


def is_tracer(x) -> bool:
    return isinstance(x, _TRACER or _tracer_type())


def find_ctx(values):
    for v in values:
        if is_tracer(v):
            return v.ctx
        if isinstance(v, (list, tuple)):
            ctx = find_ctx(v)
            if ctx is not None:
                return ctx
    return None


def _is_pyscalar(x) -> bool:
    """A Python int/float (weakly typed, NEP 50); np.float64 subclasses float but is strong."""
    return type(x) in (int, float)


def lift(ctx, x, dtype=None):
    """Any array-like as a Tracer in `ctx` (NumPy values become constants)."""
    Tracer = _tracer_type()
    if isinstance(x, Tracer):
        if x.ctx is not ctx:
            raise JitcError(f"a traced value from another jitc trace was used here{where()}")
        return x if dtype is None else lax.convert(x, dtype)
    if isinstance(x, complex) or (isinstance(x, np.generic) and np.iscomplexobj(x)):
        raise UnsupportedError(f"complex values are not supported by jitc{where()}")
    if _is_pyscalar(x):
        value = np.array(x, dtype=dtype) if dtype is not None else np.asarray(x)
        t = ctx.constant(value)
        return Tracer(ctx, t.node, weak=dtype is None, scalar=True)
    if isinstance(x, (list, tuple)) and find_ctx(x) is not None:
        return stack([lift(ctx, v) for v in x], 0) if dtype is None else \
            lax.convert(stack([lift(ctx, v) for v in x], 0), dtype)
    if isinstance(x, np.ndarray) and (x.dtype in SUPPORTED or dtype is None):
        t = ctx.constant(x)  # captured (read from the array on every call) or baked
        return t if dtype is None else lax.convert(t, np.dtype(dtype))
    if isinstance(x, (bool, np.generic, list, tuple, np.ndarray)):  # in a computed dtype
        value = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
        t = ctx.constant(value)
        t.scalar = isinstance(x, np.generic)
        return t
    raise TypeError(f"cannot use a {type(x).__name__} as an array inside a jitc function"
                    f"{where()}")


def _dtype_key(x):
    """What NumPy's type resolution sees: a dtype, or the Python type of a weak scalar."""
    if is_tracer(x):
        if x.weak:
            return {"b": x.dtype, "i": int, "f": float}[x.dtype.kind]
        return x.dtype
    if _is_pyscalar(x):
        return type(x)
    if isinstance(x, bool):
        return np.dtype(bool)
    return np.asarray(x).dtype


def _probe_value(key):
    # `key in (float, int)` would be wrong: np.dtype("int64") == int is True.
    if key is float or key is int:
        return key(0)
    return np.zeros(1, key)


def result_type(*values):
    """np.result_type with Python scalars kept weak."""
    return _result_type(tuple(_dtype_key(v) for v in values))


@functools.cache
def _result_type(keys):
    return np.result_type(*(_probe_value(k) for k in keys))


def _shape(x):
    if is_tracer(x):
        return x.node.shape
    return () if _is_pyscalar(x) else np.shape(x)


def _mark(t, scalar):
    """`t` flagged as a NumPy scalar result or not; a new Tracer, since lax may return an
    operand itself (a no-op reshape) and flipping the operand's flag would change it too."""
    return _tracer_type()(t.ctx, t.node, weak=t.weak, scalar=scalar)


# ----------------------------------------------------------------------------- ufuncs

_UFUNC_ALIASES = {"fabs": "absolute", "degrees": "rad2deg", "radians": "deg2rad",
                  "float_power": "power", "true_divide": "divide"}
_IDENTITY_UFUNCS = {"positive", "conjugate"}
_REDUCE_METHODS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                   "logical_and": "all", "logical_or": "any"}


@functools.cache
def _resolve(ufunc, keys):
    return ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)


def ufunc_dispatch(ufunc, method, inputs, kwargs):
    from jitc import numpy_writes

    name = ufunc.__name__
    out = kwargs.pop("out", None)
    if method == "at":
        _reject_kwargs(f"np.{name}.at", kwargs)
        return numpy_writes.ufunc_at(ufunc, *inputs)
    if method == "reduce" and name in _REDUCE_METHODS:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        dtype = kwargs.pop("dtype", None)
        _reject_kwargs(f"np.{name}.reduce", kwargs)
        result = _REDUCERS[_REDUCE_METHODS[name]](inputs[0], axis, dtype=dtype,
                                                  keepdims=keepdims)
        return result if out is None else numpy_writes.write_out(
            out, result, "unsafe", f"np.{name}.reduce")
    if method != "__call__":
        raise UnsupportedError(f"np.{name}.{method} is not supported by jitc{where()}")
    mask = kwargs.pop("where", True)
    if mask is not True and out is None:
        raise UnsupportedError(f"np.{name}: where= without out= leaves the other elements "
                               f"uninitialized; pass out={where()}")
    if name == "matmul":
        _reject_kwargs("np.matmul", kwargs)
        result = matmul(*inputs)
    else:
        dtype = kwargs.pop("dtype", None)
        _reject_kwargs(f"np.{name}", kwargs)
        if dtype is not None:
            inputs = [lift(find_ctx(inputs), x, check_supported(dtype, f"np.{name} dtype="))
                      for x in inputs]
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
        return matmul(*inputs)
    if ufunc in _PYTHON_INT_ARITHMETIC and all(map(_is_python_value, inputs)):
        inputs = tuple(map(_bool_as_python_int, inputs))  # True + True == 2 in Python
    base, exponent = (inputs + (None,))[:2]
    if ufunc is np.power and is_tracer(base) and base.scalar:
        return apply_ufunc(ufunc, inputs, weak_result=True, sqrt_fast_path=False)
    if (ufunc is np.power and type(exponent) is int and exponent == 2 and is_tracer(base)
            and base.dtype == np.dtype(bool) and not base.scalar):
        return apply_ufunc(np.square, (base,))  # NumPy's x ** 2 fast path: int8 for bools
    return apply_ufunc(ufunc, inputs, weak_result=True)


# Python operators that treat a bool as the int 0/1 (NumPy's bool loops would not).
_PYTHON_INT_ARITHMETIC = frozenset({
    np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder,
    np.power, np.negative, np.positive, np.absolute, np.invert,
})


def _is_python_value(x) -> bool:
    """A Python scalar, concrete or traced (a Python scalar argument)."""
    return type(x) in (bool, int, float) or (is_tracer(x) and x.weak)


def _bool_as_python_int(x):
    if type(x) is bool:
        return int(x)
    if is_tracer(x) and x.dtype.kind == "b":
        return _tracer_type()(x.ctx, lax.convert(x, np.dtype(np.int64)).node, weak=True,
                              scalar=True)
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
    if half in loop[: ufunc.nin] and half not in loop[ufunc.nin:]:
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
    try:
        loop = _loop_dtypes(ufunc, keys)
    except TypeError as e:
        raise TypeError(f"np.{name}: {e}{where()}") from None
    except UnsupportedError as e:
        raise UnsupportedError(f"{e}{where()}") from None
    shapes = [_shape(x) for x in inputs]
    try:
        shape = _broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"np.{name}: operands could not be broadcast together with shapes "
            f"{' '.join(str(s) for s in shapes)}{where()}"
        ) from None
    operands = []
    for x, dt in zip(inputs, loop[: ufunc.nin]):
        t = lift(ctx, x, dt) if not is_tracer(x) else lax.convert(x, dt)
        operands.append(lax.broadcast_to(t, shape))
    if prim in _IDENTITY_UFUNCS:
        out = operands[0]
    elif (name == "power" and sqrt_fast_path and loop[0].kind == "f"
          and _is_static_half(inputs[1])):
        # NumPy's float power loop computes x ** 0.5 with a scalar (stride-0) exponent as
        # sqrt(x): nan at -inf and -0.0 at -0.0, where pow gives inf and 0.0. A NumPy
        # scalar base (scalar math, `s ** 0.5`) uses pow.
        out = lax.emit(ctx, "sqrt", operands[:1])
    else:
        out = lax.emit(ctx, prim, operands)
    out = lax.convert(out, loop[ufunc.nin])
    weak = weak_result and all(_is_pyscalar(x) or (is_tracer(x) and x.weak) for x in inputs)
    return _TRACER(ctx, out.node, weak=weak, scalar=(len(shape) == 0))


@functools.lru_cache(maxsize=4096)
def _broadcast_shapes(*shapes):
    return np.broadcast_shapes(*shapes)


# ----------------------------------------------------------------------------- reductions


def normalize_axis(axis, ndim, what="axis"):
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {axis!r}{where()}") from None
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(
            f"axis {a} is out of bounds for array of dimension {ndim}{where()}")
    return a % ndim if ndim else 0


def normalize_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis'{where()}")
    return tuple(sorted(out))


def _keepdims(t, axes, keepdims, in_shape):
    if keepdims:
        t = lax.reshape(t, [1 if i in axes else n for i, n in enumerate(in_shape)])
    return _mark(t, t.ndim == 0)


@functools.cache
def _accumulator(func, dtype):
    """The dtype NumPy's np.sum/np.prod accumulate in (int32 -> int64, bool -> int64)."""
    return func(np.zeros(1, dtype)).dtype


def _reduce(x, kind, axis, dtype, keepdims):
    ctx = find_ctx([x])
    x = lift(ctx, x)
    axes = normalize_axes(axis, x.ndim)
    x = lax.convert(x, dtype)
    return _keepdims(lax.reduce(x, kind, axes), axes, keepdims, x.shape)


def _check_where_initial(name, initial=None, where_=True, out=None):
    if initial is not None or where_ is not True or out is not None:
        raise UnsupportedError(f"np.{name}: initial=/where=/out= are not supported{where()}")


def _into_out(impl):
    """A reduction that also takes out=: the result is written into it (NumPy casts
    unsafely there) and `out` itself is returned."""

    @functools.wraps(impl)
    def reduction(*args, out=None, **kwargs):
        result = impl(*args, **kwargs)
        if out is None:
            return result
        from jitc.numpy_writes import write_out

        return write_out(out, result, "unsafe", f"np.{impl.__name__.rstrip('_')}")

    return reduction


@implements(np.sum)
@_into_out
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    _check_where_initial("sum", initial, where, out)
    a = lift(find_ctx([a]), a)
    dtype = check_supported(dtype or _accumulator(np.sum, a.dtype), "np.sum dtype=")
    return _reduce(a, "sum", axis, dtype, keepdims)


@implements(np.prod)
@_into_out
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("prod", initial, where, out)
    a = lift(find_ctx([a]), a)
    dtype = check_supported(dtype or _accumulator(np.prod, a.dtype), "np.prod dtype=")
    return _reduce(a, "prod", axis, dtype, keepdims)


@implements(np.max, np.amax)
@_into_out
def amax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("max", initial, where, out)
    a = lift(find_ctx([a]), a)
    return _reduce(a, "max", axis, a.dtype, keepdims)


@implements(np.min, np.amin)
@_into_out
def amin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    _check_where_initial("min", initial, where, out)
    a = lift(find_ctx([a]), a)
    return _reduce(a, "min", axis, a.dtype, keepdims)


def _truth(a):
    return a if a.dtype == np.dtype(bool) else apply_ufunc(np.not_equal, (a, 0))


@implements(np.any)
@_into_out
def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("any", None, where, out)
    a = _truth(lift(find_ctx([a]), a))
    return _reduce(a, "or", axis, np.dtype(bool), keepdims)


@implements(np.all)
@_into_out
def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("all", None, where, out)
    a = _truth(lift(find_ctx([a]), a))
    return _reduce(a, "and", axis, np.dtype(bool), keepdims)


def _mean_dtype(a, dtype):
    if dtype is not None:
        return check_supported(dtype, "np.mean dtype=")
    return np.dtype(np.float64) if a.dtype.kind in "biu" else a.dtype


@implements(np.mean)
@_into_out
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _check_where_initial("mean", None, where, out)
    a = lift(find_ctx([a]), a)
    axes = normalize_axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    total = _reduce(a, "sum", axes, _mean_dtype(a, dtype), keepdims)
    return _mark(apply_ufunc(np.divide, (total, lift(a.ctx, count, total.dtype))), total.scalar)


@implements(np.var)
@_into_out
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    _check_where_initial("var", None, where, out)
    if mean is not None or correction is not None:
        raise UnsupportedError(f"np.var: mean=/correction= are not supported{where()}")
    a = lift(find_ctx([a]), a)
    axes = normalize_axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    acc = _mean_dtype(a, dtype)
    centre = apply_ufunc(np.divide, (_reduce(a, "sum", axes, acc, True),
                                     lift(a.ctx, count, acc)))
    dev = apply_ufunc(np.subtract, (a, centre))
    sq = apply_ufunc(np.multiply, (dev, dev))
    total = _reduce(sq, "sum", axes, sq.dtype if dtype is None else acc, keepdims)
    denom = lift(a.ctx, max(count - ddof, 0), total.dtype)
    return _mark(apply_ufunc(np.divide, (total, denom)), total.scalar)


@implements(np.std)
@_into_out
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _mark(apply_ufunc(np.sqrt, (v,)), v.scalar)


def _arg_reduce(name, a, axis, keepdims):
    a = lift(find_ctx([a]), a)
    if axis is None:
        flat = lax.reshape(a, (a.size,))
        out = lax.emit(a.ctx, name, [flat], axis=0)
        if keepdims:
            out = lax.reshape(out, (1,) * a.ndim)
        return _mark(out, out.ndim == 0)
    ax = normalize_axis(axis, a.ndim)
    out = lax.emit(a.ctx, name, [a], axis=ax)
    return _keepdims(out, (ax,), keepdims, a.shape)


@implements(np.argmax)
@_into_out
def argmax(a, axis=None, out=None, *, keepdims=False):
    _check_where_initial("argmax", out=out)
    return _arg_reduce("argmax", a, axis, keepdims)


@implements(np.argmin)
@_into_out
def argmin(a, axis=None, out=None, *, keepdims=False):
    _check_where_initial("argmin", out=out)
    return _arg_reduce("argmin", a, axis, keepdims)


_REDUCERS = {
    "sum": lambda a, axis, dtype, keepdims: sum(a, axis, dtype, keepdims=keepdims),
    "prod": lambda a, axis, dtype, keepdims: prod(a, axis, dtype, keepdims=keepdims),
    "max": lambda a, axis, dtype, keepdims: amax(a, axis, keepdims=keepdims),
    "min": lambda a, axis, dtype, keepdims: amin(a, axis, keepdims=keepdims),
    "all": lambda a, axis, dtype, keepdims: all_(a, axis, keepdims=keepdims),
    "any": lambda a, axis, dtype, keepdims: any_(a, axis, keepdims=keepdims),
}


# ----------------------------------------------------------------------------- shapes


def _lifted(a):
    return lift(find_ctx([a]), a)


def _view(impl):
    """A function NumPy answers with a view of its first argument: the result shares that
    argument's buffer, so writes through either are seen by both (jitc/mutation.py)."""

    @functools.wraps(impl)
    def view(a, *args, **kwargs):
        from jitc.mutation import derive_view

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
            raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}"
                             f"{where()}")
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
                raise ValueError(f"cannot select an axis to squeeze out which has size not "
                                 f"equal to one (axis {i} of {a.shape}){where()}")
    return lax.reshape(a, [n for i, n in enumerate(a.shape) if i not in axes])


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    a = _lifted(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        np.broadcast_shapes(a.shape, shape)
    except ValueError:
        raise ShapeError(f"np.broadcast_to: cannot broadcast {a.shape} to {shape}{where()}") \
            from None
    out = _mark(lax.broadcast_to(a, shape), False)
    out.buffer().readonly = True  # NumPy's broadcast view cannot be written
    return out


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
        if x.ndim != xs[0].ndim or any(p != q for i, (p, q) in enumerate(zip(x.shape,
                                                                            xs[0].shape))
                                       if i != ax):
            raise ShapeError(f"np.concatenate: all the input array dimensions except for the "
                             f"concatenation axis must match: {xs[0].shape} vs {x.shape}"
                             f"{where()}")
    return lax.concatenate([lax.convert(x, dt) for x in xs], ax)


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    ctx = find_ctx(arrays)
    xs = [lift(ctx, a) for a in arrays]
    if not xs:
        raise ValueError(f"need at least one array to stack{where()}")
    if any(x.shape != xs[0].shape for x in xs):
        raise ShapeError(f"np.stack: all input arrays must have the same shape, got "
                         f"{[x.shape for x in xs]}{where()}")
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
        bounds = [0] + [builtins.min(max(int(i) if i >= 0 else n + int(i), 0), n)
                        for i in indices_or_sections] + [n]
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


# ----------------------------------------------------------------------------- elementwise helpers


@implements(np.where)
def where_(condition, x=None, y=None):
    if x is None and y is None:
        raise UnsupportedError(
            f"np.where(cond) with one argument has a data-dependent shape; jitc supports "
            f"np.where(cond, x, y){where()}")
    ctx = find_ctx([condition, x, y])
    cond = _truth(lift(ctx, condition))
    dt = result_type(x, y)
    check_supported(dt, "np.where result")
    shapes = [_shape(v) for v in (condition, x, y)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(f"np.where: operands could not be broadcast together with shapes "
                         f"{' '.join(map(str, shapes))}{where()}") from None
    t, f = (lax.broadcast_to(lift(ctx, v, dt) if not is_tracer(v) else lax.convert(v, dt),
                             shape) for v in (x, y))
    return lax.select(lax.broadcast_to(cond, shape), t, f)


@implements(np.clip)
def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
         max=np._NoValue, **kwargs):
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    _reject_kwargs("np.clip", kwargs)
    if lo is None and hi is None:
        raise ValueError(f"np.clip: one of max or min must be given{where()}")
    result = a
    if lo is not None:
        result = apply_ufunc(np.maximum, (result, lo))
    if hi is not None:
        result = apply_ufunc(np.minimum, (result, hi))
    result = result if is_tracer(result) else _lifted(result)
    if _no_out(out):
        return result
    from jitc.numpy_writes import write_out

    return write_out(out, result, "same_kind", "np.clip")


@implements(np.round, np.around)
def round_(a, decimals=0, out=None):
    if decimals != 0 or out is not None:
        raise UnsupportedError(f"np.round: only decimals=0 is supported{where()}")
    a = _lifted(a)
    if a.dtype.kind == "i":
        return _mark(a, a.scalar)
    return apply_ufunc(np.rint, (a,))  # bool: float16, as NumPy


def astype(a, dtype):
    a = _lifted(a)
    dtype = check_supported(dtype, "astype target")
    t = lax.convert(a, dtype)
    from jitc.trace import Tracer

    return Tracer(a.ctx, t.node, scalar=a.scalar)


@implements(np.copy)
def copy(a, order="K", subok=False):
    return _mark(_lifted(a), False)  # np.copy of a NumPy scalar is a 0-d array


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
        raise UnsupportedError(f"np.{'tril' if lower else 'triu'} of a {m.ndim}-d array"
                               f"{where()}")
    mask = lax.broadcast_to(_tri_mask(m.ctx, m.shape[-2], m.shape[-1], int(k), lower), m.shape)
    return lax.select(mask, m, lax.full(m.ctx, m.shape, 0, m.dtype))


@implements(np.tril)
def tril(m, k=0):
    return _tri(m, k, True)


@implements(np.triu)
def triu(m, k=0):
    return _tri(m, k, False)


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    from jitc.indexing import take_along

    if out is not None or mode != "raise":
        raise UnsupportedError(f"np.take: out=/mode= are not supported{where()}")
    a = _lifted(a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    out = take_along(a, indices, normalize_axis(axis, a.ndim))
    return _mark(out, out.ndim == 0)


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


# ----------------------------------------------------------------------------- products


def _promote_pair(a, b, what):
    ctx = find_ctx([a, b])
    a, b = lift(ctx, a), lift(ctx, b)
    dt = check_supported(result_type(a, b), f"{what} result")
    return lax.convert(a, dt), lax.convert(b, dt)


@implements(np.matmul)
def matmul(a, b):
    a, b = _promote_pair(a, b, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: Input operand {0 if a.ndim == 0 else 1} does not have "
                         f"enough dimensions{where()}")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = lax.reshape(a, (1,) + a.shape)
    if squeeze_b:
        b = lax.reshape(b, b.shape + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-2]} "
                         f"(dim {b.ndim - 2}){where()}")
    if b.ndim == 2:  # one GEMM over all leading dims of a
        out = lax.dot_general(a, b, (a.ndim - 1,), (0,))
    else:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ShapeError(f"matmul: batch dims of {a.shape} and {b.shape} do not broadcast"
                             f"{where()}") from None
        nb = len(batch)
        a = lax.broadcast_to(a, batch + a.shape[-2:])
        b = lax.broadcast_to(b, batch + b.shape[-2:])
        out = lax.dot_general(a, b, (nb + 1,), (nb,), tuple(range(nb)), tuple(range(nb)))
    shape = list(out.shape)
    if squeeze_b:
        shape.pop(-1)
    if squeeze_a:
        shape.pop(-2 if not squeeze_b else -1)
    out = lax.reshape(out, shape)
    return _mark(out, out.ndim == 0)


@implements(np.dot)
def dot(a, b, out=None):
    if out is not None:
        raise UnsupportedError(f"np.dot: out= is not supported{where()}")
    a, b = _promote_pair(a, b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return apply_ufunc(np.multiply, (a, b))
    rc = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[rc]:
        raise ShapeError(f"dot: shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} "
                         f"(dim {a.ndim - 1}) != {b.shape[rc]} (dim {rc}){where()}")
    out = lax.dot_general(a, b, (a.ndim - 1,), (rc,))
    return _mark(out, out.ndim == 0)


@implements(np.vdot)
def vdot(a, b):
    return dot(ravel(a), ravel(b))


@implements(np.inner)
def inner(a, b):
    a, b = _promote_pair(a, b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return apply_ufunc(np.multiply, (a, b))
    out = lax.dot_general(a, b, (a.ndim - 1,), (b.ndim - 1,))
    return _mark(out, out.ndim == 0)


@implements(np.outer)
def outer(a, b, out=None):
    a, b = ravel(a), ravel(b)
    return apply_ufunc(np.multiply, (lax.reshape(a, (a.size, 1)), lax.reshape(b, (1, b.size))))


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    a, b = _promote_pair(a, b, "tensordot")
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        la, lb = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        la, lb = axes
        la = [la] if isinstance(la, (int, np.integer)) else list(la)
        lb = [lb] if isinstance(lb, (int, np.integer)) else list(lb)
    la = [normalize_axis(x, a.ndim) for x in la]
    lb = [normalize_axis(x, b.ndim) for x in lb]
    if len(la) != len(lb) or any(a.shape[i] != b.shape[j] for i, j in zip(la, lb)):
        raise ShapeError(f"tensordot: shape-mismatch for sum ({a.shape} axes {la}, "
                         f"{b.shape} axes {lb}){where()}")
    return _mark(lax.dot_general(a, b, la, lb), False)  # NumPy: an array even when 0-d


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, **kwargs):
    from jitc.einsum import einsum as _einsum

    if out is not None or kwargs or dtype is not None:
        raise UnsupportedError(f"np.einsum: out=/dtype=/{list(kwargs)} are not supported"
                               f"{where()}")
    return _einsum(*operands)
