"""The scan kernel on the GPU: a running sum, product, max or min along one axis.

As on the cpu (backends/cpu/scan.py) the array is viewed as (pre, N, post) around the
scanned axis. One thread owns one (pre, post) column and runs its N steps in order, one
element after the other as NumPy does, so float results are NumPy's bit for bit; adjacent
threads own adjacent `post` columns, so their loads coalesce.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.scan import UFUNC_OF_KIND
from jitc.backends.cuda.emitter import ELEMENT, Sizes, Writer
from jitc.backends.cuda.kernel import Kernel, assemble, indent
from jitc.backends.cuda.lowering import load, lower, store
from jitc.core.ir import Node


def scan_kernel(node: Node) -> Kernel:
    """Kernel(x -> out) for a top-level cumulative node."""
    (x,) = node.operands
    axis = node.attrs["axis"]
    pre = int(np.prod(x.shape[:axis], dtype=np.int64))
    post = int(np.prod(x.shape[axis + 1 :], dtype=np.int64))
    w, sz = Writer(), Sizes()
    cols, size, n_post = sz(pre * post), sz(x.shape[axis]), sz(post)
    w.level = ELEMENT
    w.line(f"p = col // {n_post}")
    w.line(f"q = col - p * {n_post}")
    w.line(f"at = p * {size} * {n_post} + q")
    w.line(f"acc = {load(x.dtype, 'a0[at]')}")
    w.line(f"out0[at] = {store(x.dtype, 'acc')}")
    w.open(f"for k in range(1, {size}):")
    w.line(f"at += {n_post}")
    step = lower(
        UFUNC_OF_KIND[node.attrs["kind"]],
        node.dtype,
        node.dtype,
        ["acc", load(x.dtype, "a0[at]")],
        {},
        w,
    )
    w.line(f"acc = {step}")
    w.line(f"out0[at] = {store(x.dtype, 'acc')}")
    w.close()
    lines = [f"for col in range(cuda.grid(1), {cols}, cuda.gridsize(1)):"]
    lines += indent(w.take(ELEMENT))
    name, source = assemble("loop", 1, 1, 0, w.uses_err, len(sz.values), indent(lines))
    return Kernel(
        name,
        "loop",
        source,
        [x.dtype],
        [node.dtype],
        sz.values,
        {"total": pre * post},
        uses_err=w.uses_err,
    )
