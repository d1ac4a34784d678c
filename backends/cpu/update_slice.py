"""The region write: x[region] = u for a top-level update_slice, over the region only.

The kernel writes u into the buffer's memory and touches nothing outside the region; the
planner gives it the old version's buffer where that dies at the write (fusion/buffers.py),
else a copy of it first (plan.py). Its rows are the region's leading axes, so threads
split the region. Offsets are written against the buffer's extents: a start nearer the end
of its axis is `extent - k`, so `x[1:-2]` generates the same source for every size of `x`
and a new shape compiles nothing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jitc.core.ir import Node


def _offset(start: int, extent: int, slot: str) -> str:
    """`start` as a literal from the front of its axis, or from its end (`n - k`)."""
    if start <= extent - start:
        return str(start)
    return f"({slot} - {extent - start})"


def region_source(node: Node, sz) -> tuple[str, int]:
    """(`def BODY(upd, out, lo, hi, n)` over rows [lo, hi), its row count) for node: the
    rows are the region's first axis of more than one element, loops nest over the others
    (an axis of one element is its start: no loop). The innermost loop copies between two
    1-d views taken once per row, indexed by the loop's own variable, so numba drops its
    negative-index wraparound and LLVM vectorizes the copy."""
    base, update = node.operands
    start, stride = node.attrs["start"], node.attrs["stride"]
    rank = len(base.shape)
    if not rank:
        return "def BODY(upd, out, lo, hi, n):\n    out[()] = upd[()]\n", 1
    origin = [_offset(start[d], base.shape[d], sz(base.shape[d])) for d in range(rank)]
    looped = [d for d in range(rank) if update.shape[d] > 1]
    if not looped:  # one element
        at = ", ".join(origin)
        return (
            f"def BODY(upd, out, lo, hi, n):\n    out[{at}] = upd[{', '.join(['0'] * rank)}]\n",
            1,
        )
    lines = ["def BODY(upd, out, lo, hi, n):"]
    last = looped[-1]
    outer = looped[:-1]
    depth = 1
    for k, d in enumerate(outer):
        bounds = "lo, hi" if k == 0 else sz(update.shape[d])
        lines.append("    " * depth + f"for i{d} in range({bounds}):")
        depth += 1
    src, dst = [], []
    for d in range(rank):
        if d == last:
            src.append(":")
            dst.append(f"{origin[d]}::{stride[d]}")
        elif d in outer:
            src.append(f"i{d}")
            dst.append(f"{origin[d]} + {stride[d]} * i{d}")
        else:
            src.append("0")
            dst.append(origin[d])
    pad = "    " * depth
    lines += [
        pad + f"src = upd[{', '.join(src)}]",
        pad + f"dst = out[{', '.join(dst)}]",
        pad
        + (
            "for j in range(lo, hi):" if not outer else f"for j in range({sz(update.shape[last])}):"
        ),
        pad + "    dst[j] = src[j]",
    ]
    rows = update.shape[looped[0]]
    return "\n".join(lines) + "\n", rows


def region_view(write, shape, sz) -> str:
    """The index of the view of an array of `shape` that a region fusion stores a value into
    (fusion/region.py): start and stride along the axes its loop spans, the start alone on
    the others (its axes of one element). Starts are run-time values (slots), so another
    shape, or another slab of the same shape, generates the same source."""
    parts = []
    for d in range(len(shape)):
        at = sz(write.start[d])
        parts.append(f"{at}::{write.stride[d]}" if d in write.spanned else at)
    return ", ".join(parts)


def shared_view(writes, shape, sz) -> tuple[str, list] | None:
    """(the index of one view of an array of `shape` holding every write's region, the
    index each write's values take in it: a loop axis number or a literal) where the writes
    differ only at literal positions along their axes of one element (the slabs
    A[..., ip, kr]); else None."""
    first = writes[0]
    places = []
    for w in writes:
        if w.spanned != first.spanned:
            return None
        place = []
        for d, extent in enumerate(shape):
            if d in w.spanned:
                if (w.start[d], w.stride[d]) != (first.start[d], first.stride[d]):
                    return None
                place.append(w.spanned.index(d))
            else:
                at = _offset(w.start[d], extent, sz(extent))
                if not at.isdigit():
                    return None
                place.append(at)
        places.append(tuple(place))
    view = ", ".join(
        f"{sz(first.start[d])}::{first.stride[d]}" if d in first.spanned else ":"
        for d in range(len(shape))
    )
    return view, places


class Packed(NamedTuple):
    """Rows of a region holding every write's elements side by side in one run of memory:
    along the loop's last axis, write k's element v of a row is `row[v * step + offsets[k]]`,
    the row being `base[heads]` flat from element `start * block` on."""

    heads: tuple  # per base axis before the last spanned one: (start slot, stride)
    start: str  # the last spanned axis's start (a slot)
    block: int  # elements of the trailing axes below the last spanned one
    step: int  # elements between neighbours along the last spanned axis
    offsets: tuple  # per write, its place in the block


def packed_view(writes, shape, sz) -> Packed | None:
    """The writes as packed rows (Packed) where they span the same leading axes and fill,
    one element each, every place of the base's trailing axes below them (the slabs
    A[1:-2, 2:-2, :, ip, kr] of A[n, n, nz, 2, 2], four writes over the 2 x 2 block): the
    stores of one element of each then sit at literal offsets from each other, and LLVM
    vectorizes them as one interleaved store (4x). The trailing extents become literals of
    the source, but they are the number of writes, a part of the kernel's structure: the
    leading extents stay run-time values."""
    first = writes[0]
    spanned = first.spanned
    if not spanned or any(w.spanned != spanned for w in writes):
        return None
    last = spanned[-1]
    if tuple(spanned) != tuple(range(last + 1)) or first.stride[last] < 1:
        return None
    if any(w.start[: last + 1] != first.start[: last + 1] for w in writes):
        return None
    if any(w.stride[: last + 1] != first.stride[: last + 1] for w in writes):
        return None
    trailing = tuple(shape[last + 1 :])
    if not trailing:
        return None
    block = int(np.prod(trailing, dtype=np.int64))
    offsets = tuple(int(np.ravel_multi_index(w.start[last + 1 :], trailing)) for w in writes)
    if sorted(offsets) != list(range(block)):
        return None
    heads = tuple((sz(first.start[d]), first.stride[d]) for d in range(last))
    return Packed(heads, sz(first.start[last]), block, first.stride[last] * block, offsets)


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
