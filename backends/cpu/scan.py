"""The scan kernel: a running sum, product, max or min along one axis (ufunc.accumulate).

The array is viewed as (pre, N, post) around the scanned axis. Each row of `pre` runs its
N steps in order, each step over the whole `post` extent (contiguous, so LLVM vectorizes
it); rows split across threads. Elements are combined one after the other, as NumPy does,
so float results are NumPy's bit for bit. Step k reads the output of step k - 1 and the
input at k only, so the output may be the input's own buffer.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.lowering import load, lower_elementwise, store

UFUNC_OF_KIND = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}


def scan_source(kind: str, dtype) -> str:
    """`def BODY(a, out, lo, hi, n)` over rows [lo, hi) of `pre`."""
    dtype = np.dtype(dtype)
    step = store(
        dtype,
        lower_elementwise(
            UFUNC_OF_KIND[kind],
            dtype,
            dtype,
            [load(dtype, "out[p, k - 1, q]"), load(dtype, "a[p, k, q]")],
            {},
        ),
    )
    return (
        "\n".join(
            [
                "def BODY(a, out, lo, hi, n):",
                "    for p in range(lo, hi):",
                "        for q in range(a.shape[2]):",
                "            out[p, 0, q] = a[p, 0, q]",
                "        for k in range(1, a.shape[1]):",
                "            for q in range(a.shape[2]):",
                f"                out[p, k, q] = {step}",
            ]
        )
        + "\n"
    )
