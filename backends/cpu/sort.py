"""The sort kernel: a stable sort (values, or argsort's indices) of each row along one axis.

The array is viewed as (pre, N, post) around the sorted axis; a row is one (pre, post)
pair, and rows split across threads. Each row is copied into a scratch row (its values, or
the indices 0..N-1 for argsort, compared by the values they point at), insertion-sorted in
runs of RUN, then merged bottom-up between two scratch rows, and written out last: so the
output may be the input's own buffer (the caller's array in `x.sort()`). NumPy's order:
NaN after every number, ties (and -0.0 beside 0.0) in input order.

Scratch rows: allocated once per call of the body under the JIT, kernel arguments from
the temp arena under AOT (no allocator there).
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.lowering import TYPE_NAMES

RUN = 16  # insertion-sorted run length before merging


def less(x: str, y: str, dtype) -> str:
    """x < y in NumPy's sort order: a NaN is larger than every number."""
    if np.dtype(dtype).kind == "f":
        return f"(({x}) < ({y}) or (({y}) != ({y}) and ({x}) == ({x})))"
    return f"({x}) < ({y})"


def sort_source(dtype, indices: bool, scratch_args: bool) -> str:
    """`def BODY(a, out, [s0, s1,] lo, hi, n)` over rows [lo, hi) of pre * post."""
    dtype = np.dtype(dtype)
    elem = "np.int64" if indices else TYPE_NAMES[dtype]

    def key(v):
        return f"a[p, {v}, q]" if indices else v

    head = "def BODY(a, out, s0, s1, lo, hi, n):" if scratch_args else \
        "def BODY(a, out, lo, hi, n):"
    lines = [head, "    m = a.shape[1]", "    post = a.shape[2]"]
    if not scratch_args:
        lines += [f"    s0 = np.empty(m, {elem})", f"    s1 = np.empty(m, {elem})"]
    lines += [
        "    for r in range(lo, hi):",
        "        p = r // post",
        "        q = r - p * post",
        "        for k in range(m):",
        "            s0[k] = k" if indices else "            s0[k] = a[p, k, q]",
        f"        for start in range(0, m, {RUN}):",
        f"            end = min(start + {RUN}, m)",
        "            for i in range(start + 1, end):",
        "                v = s0[i]",
        f"                kv = {key('v')}",
        "                j = i - 1",
        f"                while j >= start and {less('kv', key('s0[j]'), dtype)}:",
        "                    s0[j + 1] = s0[j]",
        "                    j -= 1",
        "                s0[j + 1] = v",
        "        src = s0",
        "        dst = s1",
        f"        width = {RUN}",
        "        while width < m:",
        "            for start in range(0, m, 2 * width):",
        "                mid = min(start + width, m)",
        "                end = min(start + 2 * width, m)",
        "                i = start",
        "                j = mid",
        "                k = start",
        "                while i < mid and j < end:",
        f"                    if {less(key('src[j]'), key('src[i]'), dtype)}:",
        "                        dst[k] = src[j]",
        "                        j += 1",
        "                    else:",
        "                        dst[k] = src[i]",
        "                        i += 1",
        "                    k += 1",
        "                while i < mid:",
        "                    dst[k] = src[i]",
        "                    i += 1",
        "                    k += 1",
        "                while j < end:",
        "                    dst[k] = src[j]",
        "                    j += 1",
        "                    k += 1",
        "            src, dst = dst, src",
        "            width *= 2",
        "        for k in range(m):",
        "            out[p, k, q] = src[k]",
    ]
    return "\n".join(lines) + "\n"
