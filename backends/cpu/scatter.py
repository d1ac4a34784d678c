"""The scatter kernel: x[..., idx, ...] = u (the last write to a row wins) or
np.<ufunc>.at (every update applied in order), for indices known only at run time.

Indices whose values are constants never get here (fusion/expand.py turns those scatters into
selects that fuse). The kernel views the buffer as (pre, N, post) around the scattered axis
and splits `pre` across threads: each row of `pre` sees its updates in order, so repeats
behave as in NumPy. It writes in place when the buffer plan gives it its operand's buffer.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.lowering import load, lower_elementwise, store

ERROR = ("IndexError", "index out of bounds in integer-array assignment (scatter)")


def scatter_source(mode: str, dtype, copy: bool) -> str:
    """`def BODY(base, idx, upd, out, lo, hi, n)` over rows [lo, hi) of `pre`."""
    if mode == "set":
        update = "upd[p, m, q]"
    else:
        update = store(
            dtype,
            lower_elementwise(
                mode,
                np.dtype(dtype),
                np.dtype(dtype),
                [load(dtype, "out[p, k, q]"), load(dtype, "upd[p, m, q]")],
                {},
            ),
        )
    lines = [
        "def BODY(base, idx, upd, out, lo, hi, n):",
        "    size = base.shape[1]",
        "    for p in range(lo, hi):",
    ]
    if copy:
        lines += [
            "        for k in range(size):",
            "            for q in range(base.shape[2]):",
            "                out[p, k, q] = base[p, k, q]",
        ]
    index = [
        "k = np.int64(idx[m])",
        "if k < 0:",
        "    k += size",
        "if k < 0 or k >= size:",
        "    raise IndexError('scatter index out of bounds')",
    ]
    # one element per index (post of 1: compacting, np.add.at on a vector) without the
    # inner loop, which LLVM does not remove
    lines += [
        "        if base.shape[2] == 1:",
        "            q = 0",
        "            for m in range(idx.shape[0]):",
    ]
    lines += ["                " + line for line in index]
    lines += [f"                out[p, k, q] = {update}", "            continue"]
    lines += ["        for m in range(idx.shape[0]):"]
    lines += ["            " + line for line in index]
    lines += [
        "            for q in range(base.shape[2]):",
        f"                out[p, k, q] = {update}",
    ]
    return "\n".join(lines) + "\n"
