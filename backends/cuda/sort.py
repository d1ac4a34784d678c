"""The sort kernel on the GPU: a stable sort (values, or argsort's indices) along one axis.

As on the cpu (backends/cpu/sort.py) the array is viewed as (pre, N, post) around the
sorted axis, with the same algorithm and order (NaN last, ties in input order). One thread
owns one (pre, post) row: it copies the row (or the indices 0..N-1) into the output,
insertion-sorts runs, then merges bottom-up between the output and a scratch array of the
output's size, at the row's own places in both; adjacent threads own adjacent `post`
columns, so their loads coalesce. The input is read before the thread writes its row, so a
values sort may overwrite its operand.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.sort import RUN, less
from jitc.backends.cuda.emitter import Sizes
from jitc.backends.cuda.kernel import Kernel, assemble, indent
from jitc.backends.cuda.lowering import load
from jitc.core.ir import Node


def sort_kernel(node: Node) -> Kernel:
    """Kernel(x -> out, scratch) for a top-level sort or argsort node."""
    (x,) = node.operands
    axis = node.attrs["axis"]
    indices = node.op == "argsort"
    pre = int(np.prod(x.shape[:axis], dtype=np.int64))
    post = int(np.prod(x.shape[axis + 1 :], dtype=np.int64))
    sz = Sizes()
    rows, m, n_post = sz(pre * post), sz(x.shape[axis]), sz(post)

    def at(k):
        return f"base + ({k}) * {n_post}"

    def key(v):  # float16 keys compare as float32 values
        return load(x.dtype, f"a0[{at(v)}]" if indices else v)

    cmp = x.dtype
    earlier = key(f"out0[{at('j')}]")
    right, left = key(f"src[{at('j')}]"), key(f"src[{at('i')}]")
    body = [
        f"p = row // {n_post}",
        f"base = p * {m} * {n_post} + (row - p * {n_post})",
        f"for k in range({m}):",
        f"    out0[{at('k')}] = k" if indices else f"    out0[{at('k')}] = a0[{at('k')}]",
        f"for start in range(0, {m}, {RUN}):",
        f"    end = min(start + {RUN}, {m})",
        "    for i in range(start + 1, end):",
        f"        v = out0[{at('i')}]",
        f"        kv = {key('v')}",
        "        j = i - 1",
        f"        while j >= start and {less('kv', earlier, cmp)}:",
        f"            out0[{at('j + 1')}] = out0[{at('j')}]",
        "            j -= 1",
        f"        out0[{at('j + 1')}] = v",
        "src = out0",
        "dst = sc0",
        "in_out = True",
        f"width = {RUN}",
        f"while width < {m}:",
        f"    for start in range(0, {m}, 2 * width):",
        f"        mid = min(start + width, {m})",
        f"        end = min(start + 2 * width, {m})",
        "        i = start",
        "        j = mid",
        "        k = start",
        "        while i < mid or j < end:",
        f"            if i == mid or (j < end and {less(right, left, cmp)}):",
        f"                dst[{at('k')}] = src[{at('j')}]",
        "                j += 1",
        "            else:",
        f"                dst[{at('k')}] = src[{at('i')}]",
        "                i += 1",
        "            k += 1",
        "    src, dst = dst, src",
        "    in_out = not in_out",
        "    width *= 2",
        "if not in_out:",
        f"    for k in range({m}):",
        f"        out0[{at('k')}] = sc0[{at('k')}]",
    ]
    lines = [f"for row in range(cuda.grid(1), {rows}, cuda.gridsize(1)):"] + indent(body)
    name, source = assemble("loop", 1, 1, 1, False, len(sz.values), indent(lines))
    return Kernel(
        name,
        "loop",
        source,
        [x.dtype],
        [node.dtype],
        sz.values,
        {"total": pre * post, "scratch": node.size},
        scratch=[node.dtype],
    )
