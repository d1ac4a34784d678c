"""Arrays the function creates, and NumPy's array constructors applied to traced arrays.

NumPy code preallocates and fills (`out = np.zeros((n, m)); out[:, 0] = x`, `c = np.eye(M);
c[1:, 0] = d[1:]`). np.zeros takes no array argument, so NumPy never asks a Tracer to handle
it, and the Python-level array it would return cannot hold traced values. While a trace runs,
np.zeros, np.ones, np.empty, np.full (and their _like forms), np.eye and np.identity called
by the user's code return a traced array of the same shape, dtype and contents instead: a
fresh buffer on every call of the compiled function, written like any other. So does
np.ndarray(shape) written in the jitted function itself (it is a type, so it is rebound only
in that function's globals: binding numpy.ndarray itself would break pickling and `type(x)
is np.ndarray` in every other thread).

np.asarray(x), np.array(x), np.asanyarray, np.ascontiguousarray and np.asfortranarray on a
traced array do what NumPy's do on an ndarray: the same array (np.array: a copy), converted
to `dtype=`, copied where `copy=True` asks; a list of traced values is stacked. The memory
layout is not traced: np.ascontiguousarray of a traced view is that view, as NumPy's is of
a contiguous one.

The wrappers are bound by trace/rebind.py, which says where they act.
"""

from __future__ import annotations

import types

import numpy as np

from jitc.trace import rebind

_FILLS = {"zeros": 0, "ones": 1, "empty": 0}


def _made_by_user(name, original):
    """np.NAME while tracing: a traced array where the user's code calls it."""

    def create(*args, **kwargs):
        ctx = rebind.current_ctx()
        if ctx is None or not rebind.user_call(create):
            return original(*args, **kwargs)  # another thread, or NumPy's (or jitc's) own
        return _traced(ctx, name, original, args, kwargs)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = original.__doc__
    create.__wrapped__ = original
    return create


def _traced(ctx, name, original, args, kwargs):
    """The traced array np.NAME(*args, **kwargs) would make."""
    from jitc.numpy_api import find_ctx

    sized = not name.endswith("_like")
    if sized and find_ctx(list(args[:1]) + [kwargs.get("shape"), kwargs.get("N")]) is not None:
        from jitc.core.errors import TracerError
        from jitc.core.source import where

        raise TracerError(
            f"np.{name}: its shape is a traced value{where()}, but an array's shape must be "
            "known when jitc compiles: pass the value it comes from as a static argument "
            "(jitc.jit(..., static_argnames=...)), or take the shape of an array argument"
        )
    if find_ctx(list(args) + list(kwargs.values())) is not None:
        return original(*args, **kwargs)  # NumPy hands calls on Tracers to jitc already
    if kwargs.get("like") is not None:
        return original(*args, **kwargs)
    if name in ("eye", "identity"):
        return _fresh(ctx, original(*args, **kwargs))
    return _filled(ctx, name, original, args, kwargs)


def _fresh(ctx, array):
    """A traced array holding NumPy's `array`, a buffer of its own the function may write."""
    from jitc.trace.tracer import Tracer

    return Tracer(ctx, ctx.constant(array).node)


def _filled(ctx, name, original, args, kwargs):
    """np.zeros & co.: a broadcast constant."""
    from jitc.core.dtypes import check_supported
    from jitc.core.source import where
    from jitc.trace import lax

    like = name.endswith("_like")
    params = (
        (("a",) if like else ("shape",)) + (("fill_value",) if "full" in name else ()) + ("dtype",)
    )
    bound = dict(zip(params, args))
    bound.update((k, v) for k, v in kwargs.items() if k in params or k == "shape")
    fill = bound.get("fill_value", _FILLS.get(name.removesuffix("_like"), 0))
    if np.ndim(fill) != 0:
        return original(*args, **kwargs)
    dtype = bound.get("dtype")
    if like:
        source = np.asarray(bound["a"]) if not hasattr(bound["a"], "dtype") else bound["a"]
        dtype = source.dtype if dtype is None else dtype
        shape = bound.get("shape", np.shape(source))
    else:
        shape = bound["shape"]
        if dtype is None:
            dtype = np.asarray(fill).dtype if "full" in name else np.float64
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    dtype = check_supported(dtype, f"np.{name}(...){where()}")
    return lax.full(ctx, shape, np.asarray(fill).astype(dtype), dtype)


MADE_INSIDE = (
    "zeros",
    "ones",
    "empty",
    "full",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "eye",
    "identity",
)
for _name in MADE_INSIDE:
    rebind.rebind(np, _name, lambda original, name=_name: _made_by_user(name, original))


# ---------------------------------------------------------------- np.asarray & co.


def _converting(name, original, copies):
    """np.NAME while tracing: NumPy's own unless its argument holds traced values."""

    def convert(a, *args, **kwargs):
        from jitc.numpy_api import find_ctx

        if (
            rebind.current_ctx() is None or find_ctx([a]) is None or not rebind.user_call(convert)
        ):  # NumPy's own code, or compiled code
            return original(a, *args, **kwargs)
        return _convert(name, a, copies, *args, **kwargs)

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = original.__doc__
    convert.__wrapped__ = original
    return convert


def _convert(
    name,
    a,
    copies,
    dtype=None,
    order=None,
    *,
    copy=None,
    ndmin=0,
    subok=False,
    like=None,
    device=None,
):
    from jitc.core.errors import UnsupportedError
    from jitc.core.source import where
    from jitc.numpy_api import find_ctx, lift
    from jitc.numpy_api.array_api import asarray
    from jitc.numpy_api.shapes import expand_dims

    if like is not None:
        raise UnsupportedError(f"np.{name}(..., like=...) of a traced array{where()}")
    if order not in (None, "K", "A", "C", "F"):
        raise ValueError(
            f"np.{name}: order must be one of 'C', 'F', 'A' or 'K', not {order!r}{where()}"
        )
    t = lift(find_ctx([a]), a)  # a list of traced values: stacked
    fresh = t is not a  # a list made a new array
    t = asarray(
        t, dtype=dtype, device=device, copy=(copies and copy is not False and not fresh) or copy
    )
    if ndmin > t.ndim:
        t = expand_dims(t, tuple(range(ndmin - t.ndim)))
    return t


CONVERTERS = {
    "asarray": False,
    "array": True,
    "asanyarray": False,  # name: copies
    "ascontiguousarray": False,
    "asfortranarray": False,
}
for _name, _copies in CONVERTERS.items():
    rebind.rebind(
        np, _name, lambda original, name=_name, copies=_copies: _converting(name, original, copies)
    )
del _name, _copies


# ---------------------------------------------------------------- np.ndarray(shape)


class _NdarrayType(type):
    """`np.ndarray` in a traced function's globals: isinstance and issubclass ask NumPy's
    ndarray, attributes are its."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, np.ndarray)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, np.ndarray)

    def __getattr__(cls, name):
        return getattr(np.ndarray, name)


class TracedNdarray(metaclass=_NdarrayType):
    """np.ndarray(shape, dtype) in the jitted function: a traced array (its contents are
    undefined in NumPy, zeros here); with a buffer, NumPy's ndarray over it."""

    def __new__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        ctx = rebind.current_ctx()
        if ctx is None or buffer is not None:
            return np.ndarray(shape, dtype, buffer, offset, strides, order)
        return _filled(ctx, "empty", np.empty, (shape, dtype), {})


class _NumpyInTrace(types.ModuleType):
    """The numpy module as the jitted function's globals see it while tracing: NumPy's,
    with `ndarray` rebound (see TracedNdarray)."""

    ndarray = TracedNdarray

    def __getattr__(self, name):
        return getattr(np, name)

    def __dir__(self):
        return dir(np)


NUMPY_IN_TRACE = _NumpyInTrace("numpy", np.__doc__)


def standin(value, names: set):
    """What a global `value` of the jitted function, whose code uses `names`, is while it
    is traced (capture.Capture.function)."""
    if value is np and "ndarray" in names:
        return NUMPY_IN_TRACE
    if value is np.ndarray:
        return TracedNdarray
    return rebind.standin(value)
