"""np.convolve and np.correlate of 1-d arrays: shifted slices of the longer array times the
shorter one's elements, summed, so the whole thing is one fused loop kernel.

NumPy's rules: convolve swaps its arguments so the longer comes first and correlates with
the other reversed; correlate computes the longer against the shorter and reverses the
result when the shorter came first. A kernel of more than UNROLL_MAX taps becomes a window
gather and a matrix-vector product instead of that many slices. NumPy adds each output's
products with its dtype's dot (BLAS for floats), so float sums may differ from NumPy's in
the last bits, as any two dot products do.
"""

from __future__ import annotations

import numpy as np

from jitc.core.source import where
from jitc.numpy_api.core import find_ctx, implements, lift
from jitc.trace import lax

UNROLL_MAX = 64
MODES = ("valid", "same", "full")


def _operands(a, v, what):
    ctx = find_ctx([a, v])
    a, v = lift(ctx, a), lift(ctx, v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{what}: object too deep for desired array (1-d arrays only){where()}")
    if a.size == 0:
        raise ValueError(f"{what}: a cannot be empty{where()}")
    if v.size == 0:
        raise ValueError(f"{what}: v cannot be empty{where()}")
    dtype = np.result_type(a.dtype, v.dtype)
    return lax.convert(a, dtype), lax.convert(v, dtype)


def _correlate_long(a, v, mode, what):
    """sum_j a[k - left + j] * v[j] for len(a) >= len(v), zeros outside a."""
    if mode not in MODES:
        raise ValueError(f"{what}: mode must be one of {', '.join(MODES)} (got {mode!r}){where()}")
    n, m = a.shape[0], v.shape[0]
    left, length = {"valid": (0, n - m + 1), "same": (m // 2, n), "full": (m - 1, n + m - 1)}[mode]
    right = length - left + m - 1 - n
    parts = [lax.full(a.ctx, (left,), 0, a.dtype)] if left else []
    parts.append(a)
    if right > 0:
        parts.append(lax.full(a.ctx, (right,), 0, a.dtype))
    padded = lax.concatenate(parts, 0)
    if m > UNROLL_MAX:
        windows = padded[np.arange(length)[:, None] + np.arange(m)[None, :]]
        return windows @ v
    total = padded[0:length] * v[0]
    for j in range(1, m):
        total = total + padded[j : j + length] * v[j]
    return total


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    a, v = _operands(a, v, "np.correlate")
    if a.shape[0] >= v.shape[0]:
        return _correlate_long(a, v, mode, "np.correlate")
    return _correlate_long(v, a, mode, "np.correlate")[::-1]


@implements(np.convolve)
def convolve(a, v, mode="full"):
    a, v = _operands(a, v, "np.convolve")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    return _correlate_long(a, v[::-1], mode, "np.convolve")
