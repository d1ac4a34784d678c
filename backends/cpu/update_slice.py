"""The region write: x[region] = u for a top-level update_slice, over the region only.

The kernel writes u into the buffer's memory and touches nothing outside the region; the
planner gives it the old version's buffer where that dies at the write (fusion/buffers.py),
else a copy of it first (plan.py). Its rows are the region's leading axes, so threads
split the region. Offsets are written against the buffer's extents: a start nearer the end
of its axis is `extent - k`, so `x[1:-2]` generates the same source for every size of `x`
and a new shape compiles nothing.
"""

from __future__ import annotations

import numpy as np

from jitc.core.ir import Node


def _offset(start: int, extent: int, slot: str) -> str:
    """`start` as a literal from the front of its axis, or from its end (`n - k`)."""
    if start <= extent - start:
        return str(start)
    return f"({slot} - {extent - start})"


def region_source(node: Node, sz) -> tuple[str, int]:
    """(`def BODY(upd, out, lo, hi, n)` over rows [lo, hi), its row count) for node."""
    base, update = node.operands
    start, stride = node.attrs["start"], node.attrs["stride"]
    rank = len(base.shape)
    if rank == 0:
        return "def BODY(upd, out, lo, hi, n):\n    out[()] = upd[()]\n", 1
    outer, last = list(range(rank - 1)), rank - 1
    lines = ["def BODY(upd, out, lo, hi, n):", "    for o in range(lo, hi):"]
    rem = "o"
    for k, d in enumerate(outer):
        after = int(np.prod(update.shape[d + 1 : rank - 1], dtype=np.int64))
        extent = sz(update.shape[d])
        lines.append(
            f"        i{d} = ({rem} // {sz(after)}) % {extent}"
            if k + 1 < len(outer)
            else f"        i{d} = {rem} % {extent}"
        )
    at = [
        f"{_offset(start[d], base.shape[d], sz(base.shape[d]))} + {stride[d]} * i{d}"
        for d in range(rank)
    ]
    if rank == 1:
        lines.append("        i0 = o")
        lines.append(f"        out[{at[0]}] = upd[i0]")
        return "\n".join(lines) + "\n", update.shape[0]
    lines.append(f"        for i{last} in range({sz(update.shape[last])}):")
    index = ", ".join(f"i{d}" for d in range(rank))
    lines.append(f"            out[{', '.join(at)}] = upd[{index}]")
    rows = int(np.prod(update.shape[:-1], dtype=np.int64))
    return "\n".join(lines) + "\n", rows


# The untouched part of the buffer, copied into the result first, unless the caller passed
# the same array as both (a donated argument: trace/mutation/writeback.py).
COPY_UNLESS_SAME = """def BODY(a, out, lo, hi, n):
    if a.ctypes.data == out.ctypes.data:
        return
    a_c = a[lo:hi]
    out_c = out[lo:hi]
    for j in range(hi - lo):
        out_c[j] = a_c[j]
"""
