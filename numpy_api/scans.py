"""Running sums, products and extrema: np.cumsum, np.cumprod, np.cumulative_sum,
np.cumulative_prod and ufunc.accumulate, as one `cumulative` primitive along one axis.

NumPy adds one element after the other (no pairwise summation in a scan), and so do
jitc's kernels, so float results are NumPy's bit for bit. Dtypes as NumPy: np.cumsum
and ufunc.accumulate accumulate small integers and bools in int64 like np.sum (NumPy itself
is asked, once per dtype).
"""

from __future__ import annotations

import numpy as np

from jitc.core.dtypes import check_supported
from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import find_ctx, implements, lift, normalize_axis
from jitc.numpy_api.reductions import _accumulator, _into_out
from jitc.trace import lax

# ufunc name -> the scan kind that ufunc.accumulate runs
ACCUMULATE_KINDS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}


def _scan(a, kind, axis, dtype, what):
    """`kind` running along `axis` (None: over the flattened array) in `dtype`."""
    a = lift(find_ctx([a]), a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    axis = normalize_axis(axis, a.ndim)
    try:
        dtype = check_supported(dtype, f"{what} dtype=")
    except UnsupportedError as e:
        raise UnsupportedError(f"{e}{where()}") from None
    a = lax.convert(a, dtype)
    return lax.cumulative(a, kind, axis)


@implements(np.cumsum)
@_into_out
def cumsum(a, axis=None, dtype=None, out=None):
    a = lift(find_ctx([a]), a)
    return _scan(a, "sum", axis, dtype or _accumulator(np.cumsum, a.dtype), "np.cumsum")


@implements(np.cumprod)
@_into_out
def cumprod(a, axis=None, dtype=None, out=None):
    a = lift(find_ctx([a]), a)
    return _scan(a, "prod", axis, dtype or _accumulator(np.cumprod, a.dtype), "np.cumprod")


def _cumulative(name, kind, func):
    """np.cumulative_sum / np.cumulative_prod (the Array API's): axis required above 1-d,
    include_initial puts the identity first."""

    def cumulative(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        x = lift(find_ctx([x]), x)
        if axis is None and x.ndim != 1:
            raise ValueError(f"np.{name}: axis= is required for a {x.ndim}-d array{where()}")
        result = _scan(x, kind, axis, dtype or _accumulator(func, x.dtype), f"np.{name}")
        if include_initial:
            axis = normalize_axis(axis or 0, result.ndim)
            shape = result.shape[:axis] + (1,) + result.shape[axis + 1 :]
            identity = lax.full(result.ctx, shape, 0 if kind == "sum" else 1, result.dtype)
            result = lax.concatenate([identity, result], axis)
        if out is None:
            return result
        from jitc.numpy_api.writes import write_out

        return write_out(out, result, "unsafe", f"np.{name}")

    cumulative.__name__ = name
    return cumulative


if hasattr(np, "cumulative_sum"):  # NumPy >= 2.1
    implements(np.cumulative_sum)(_cumulative("cumulative_sum", "sum", np.cumsum))
    implements(np.cumulative_prod)(_cumulative("cumulative_prod", "prod", np.cumprod))


def accumulate(ufunc, a, axis=0, dtype=None):
    """ufunc.accumulate for add, multiply, maximum and minimum, in NumPy's dtype for it
    (or `dtype`)."""
    name = ufunc.__name__
    if name not in ACCUMULATE_KINDS:
        raise UnsupportedError(
            f"np.{name}.accumulate is not supported by jitc (supported: "
            f"{', '.join(f'np.{n}.accumulate' for n in ACCUMULATE_KINDS)})"
            f"{where()}"
        )
    a = lift(find_ctx([a]), a)
    if a.ndim == 0:
        raise TypeError(f"np.{name}.accumulate: cannot accumulate on a scalar{where()}")
    dtype = dtype or _accumulator(ufunc.accumulate, a.dtype)
    return _scan(a, ACCUMULATE_KINDS[name], axis, dtype, f"np.{name}.accumulate")
