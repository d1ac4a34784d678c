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
    """`def BODY(a, out, lo, hi, n)` over rows [lo, hi) of `pre`. A scan along the last
    axis (post of 1) keeps the running value in a register: through memory, each step
    would wait for the store of the one before (4x slower on a 4M-element cumsum)."""
    dtype = np.dtype(dtype)

    def step(previous, current):
        return store(
            dtype,
            lower_elementwise(
                UFUNC_OF_KIND[kind], dtype, dtype, [load(dtype, previous), load(dtype, current)], {}
            ),
        )

    return (
        "\n".join(
            [
                "def BODY(a, out, lo, hi, n):",
                "    for p in range(lo, hi):",
                "        for q in range(a.shape[2]):",
                "            out[p, 0, q] = a[p, 0, q]",
                "        if a.shape[2] == 1:",
                "            running = out[p, 0, 0]",
                "            for k in range(1, a.shape[1]):",
                f"                running = {step('running', 'a[p, k, 0]')}",
                "                out[p, k, 0] = running",
                "            continue",
                "        for k in range(1, a.shape[1]):",
                "            for q in range(a.shape[2]):",
                f"                out[p, k, q] = {step('out[p, k - 1, q]', 'a[p, k, q]')}",
            ]
        )
        + "\n"
    )
