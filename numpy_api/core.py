"""Tracer detection, lifting Python values into a trace, and NumPy 2's dtype rules (asked of
NumPy itself: probes on empty arrays, so Python scalars stay weak as in NEP 50)."""

from __future__ import annotations

import functools
import operator

import numpy as np

from jitc.core.dtypes import SUPPORTED
from jitc.core.source import where
from jitc.trace import lax

FUNCTIONS: dict = {}  # each supported NumPy function -> its implementation on Tracers


def implements(*funcs):
    def register(impl):
        for f in funcs:
            FUNCTIONS[f] = impl
        return impl

    return register


_TRACER = None


def _tracer_type():
    global _TRACER
    if _TRACER is None:  # trace.py imports this module: resolve the class on first use
        from jitc.trace.tracer import Tracer

        _TRACER = Tracer
    return _TRACER


def is_tracer(x) -> bool:
    return isinstance(x, _TRACER or _tracer_type())


def find_ctx(values):
    """The trace the values' Tracers belong to: the innermost, where a loop body's trace
    reads values of the traces around it (trace/control.py)."""
    found = None
    for v in values:
        ctx = v.ctx if is_tracer(v) else find_ctx(v) if isinstance(v, (list, tuple)) else None
        if ctx is not None and (found is None or ctx.depth > found.depth):
            found = ctx
    return found


def _is_pyscalar(x) -> bool:
    """A Python int/float/complex (weakly typed, NEP 50); np.float64 subclasses float but is
    strong."""
    return type(x) in (int, float, complex)


def lift(ctx, x, dtype=None):
    """Any array-like as a Tracer in `ctx` (NumPy values become constants)."""
    Tracer = _tracer_type()
    if isinstance(x, Tracer):
        x = ctx.imported(x)
        return x if dtype is None else lax.convert(x, dtype)
    if _is_pyscalar(x):
        try:
            value = np.array(x, dtype=dtype) if dtype is not None else np.asarray(x)
        except OverflowError as e:  # NumPy 2: x_uint8 + 256, x_int32 + 2**40
            raise OverflowError(f"{e}{where()}") from None
        t = ctx.constant(value)
        return Tracer(ctx, t.node, weak=dtype is None, scalar=True)
    if isinstance(x, (list, tuple)) and find_ctx(x) is not None:
        from jitc.numpy_api.shapes import stack

        return (
            stack([lift(ctx, v) for v in x], 0)
            if dtype is None
            else lax.convert(stack([lift(ctx, v) for v in x], 0), dtype)
        )
    if isinstance(x, np.ndarray) and (x.dtype in SUPPORTED or dtype is None):
        t = ctx.constant(x)  # captured (read from the array on every call) or baked
        return t if dtype is None else lax.convert(t, np.dtype(dtype))
    if isinstance(x, (bool, np.generic, list, tuple, np.ndarray)):  # in a computed dtype
        value = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
        t = ctx.constant(value)
        t.scalar = isinstance(x, np.generic)
        return t
    raise TypeError(f"cannot use a {type(x).__name__} as an array inside a jitc function{where()}")


def _dtype_key(x):
    """What NumPy's type resolution sees: a dtype, or the Python type of a weak scalar."""
    if is_tracer(x):
        if x.weak:
            return {"b": x.dtype, "i": int, "f": float, "c": complex}[x.dtype.kind]
        return x.dtype
    if _is_pyscalar(x):
        return type(x)
    if isinstance(x, (type, np.dtype, str)):  # np.result_type(x, np.float32)
        return np.dtype(x)
    if isinstance(x, bool):
        return np.dtype(bool)
    return np.asarray(x).dtype


def _probe_value(key):
    # `key in (float, int)` would be wrong: np.dtype("int64") == int is True.
    if key is float or key is int or key is complex:
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


def normalize_axis(axis, ndim, what="axis"):
    """`axis` in [0, ndim); `what` names the argument in the errors ("axisa", "np.fft.fft:
    argument axes")."""
    try:
        a = operator.index(axis)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {axis!r}{where()}") from None
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(
            f"{'' if what == 'axis' else what + ': '}axis {a} is out of bounds for array of "
            f"dimension {ndim}{where()}"
        )
    return a % ndim if ndim else 0


def normalize_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis'{where()}")
    return tuple(sorted(out))


def _lifted(a):
    return lift(find_ctx([a]), a)


def checked(value, failing):
    """`value` (a real array), unchanged, in a graph that fails at run time where the traced
    bool `failing` holds: a lookup at index `failing` in a one-entry table of ones, which
    `value` is multiplied by (x * 1 is x, bit for bit), so the lookup stays live. The
    failure is a gather's, which core/failures.py reports as the error NumPy raises for
    the NumPy call being traced (its _OVERRIDES)."""
    from jitc.numpy_api.indexing import take

    table = lax.full(value.ctx, (1,), 1, value.dtype)
    one = take(table, lax.reshape(lax.convert(failing, np.dtype(np.intp)), (1,)))
    return value * lax.reshape(one, ())
