"""Complex numbers: np.real, np.imag, np.angle (and x.real/x.imag), and the list of NumPy
functions jitc computes on complex values as NumPy does. Any other function given a complex
argument is refused by name (`refuse_complex`), never computed with real-number rules
(np.var would square instead of |.|^2, np.max would not order lexicographically)."""

from __future__ import annotations

import numpy as np

from jitc.core import ops
from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import _lifted, _mark, implements, is_tracer
from jitc.numpy_api.ufuncs import apply_ufunc
from jitc.trace import lax


@implements(np.real)
def real(val):
    x = _lifted(val)
    return _mark(lax.real(x), x.scalar)


@implements(np.imag)
def imag(val):
    x = _lifted(val)
    return _mark(lax.imag(x), x.scalar)


@implements(np.angle)
def angle(z, deg=False):
    """NumPy's definition: arctan2(imag, real) (real input: imag is 0), in degrees times
    180/pi."""
    x = _lifted(z)
    if x.dtype.kind not in "cf":
        x = apply_ufunc(np.multiply, (x, 1.0))  # NumPy's asanyarray(z) * 1.0 first
    a = apply_ufunc(np.arctan2, (lax.imag(x), lax.real(x)))
    if deg:
        a = apply_ufunc(np.multiply, (a, 180 / np.pi))
    return _mark(a, x.scalar)


def _shape_functions():
    """NumPy functions that only move, copy or select elements: exact on any dtype."""
    names = (
        "reshape",
        "transpose",
        "swapaxes",
        "moveaxis",
        "expand_dims",
        "squeeze",
        "broadcast_to",
        "ravel",
        "concatenate",
        "stack",
        "hstack",
        "vstack",
        "split",
        "array_split",
        "unstack",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "copy",
        "take",
        "zeros_like",
        "ones_like",
        "full_like",
        "empty_like",
        "flip",
        "fliplr",
        "flipud",
        "roll",
        "tile",
        "repeat",
        "diagonal",
        "shape",
        "ndim",
        "size",
        "result_type",
        "astype",
        "iscomplexobj",
        "isrealobj",
    )
    return {getattr(np, n) for n in names if hasattr(np, n)}


# Functions whose implementation raises NumPy's own error for complex values (np.digitize:
# TypeError "x may not be complex"): not refused here, so the user sees NumPy's error.
OWN_ERRORS = frozenset({np.digitize})
FUNCTIONS = _shape_functions() | {
    np.real,
    np.imag,
    np.angle,
    np.where,
    np.sum,
    np.prod,
    np.mean,
    np.trace,
    np.dot,
    np.matmul,
    np.linalg.vecdot,
    np.nonzero,
    np.flatnonzero,
    np.argwhere,
    np.extract,
    np.compress,
}
# np.fft's transforms (fft.py; rfft and ihfft raise NumPy's TypeError for complex input) and
# shifts (rolls)
FUNCTIONS |= {getattr(np.fft, name) for name in np.fft.__all__}


def _as_dtype(v):
    """`v` as a dtype where it names one (np.complex64, complex, np.dtype(...)), else None."""
    if isinstance(v, np.dtype):
        return v
    if isinstance(v, type) and (issubclass(v, np.generic) or v in (bool, int, float, complex)):
        return np.dtype(v)
    return None


def _complex_dtype(values):
    """The first complex dtype among `values` (tracers, arrays, scalars, dtypes as dtype=
    names them, one level of lists), or None."""
    for v in values:
        if isinstance(v, (list, tuple)):
            found = _complex_dtype(v)
            if found is not None:
                return found
            continue
        dtype = (
            v.dtype
            if is_tracer(v) or isinstance(v, (np.ndarray, np.generic))
            else (np.dtype(complex) if isinstance(v, complex) else _as_dtype(v))
        )
        if dtype is not None and np.dtype(dtype).kind == "c":
            return np.dtype(dtype)
    return None


def refuse_complex(what: str, values) -> None:
    """UnsupportedError naming `what` (np.var, ndarray.max) when a complex value is among
    `values`: a function jitc does not compute on complex numbers."""
    dtype = _complex_dtype(values)
    if dtype is not None:
        raise UnsupportedError(
            f"{what} on {dtype} is not supported by jitc{where()}: jitc "
            f"computes {ops.COMPLEX_COMPUTED}"
        )
