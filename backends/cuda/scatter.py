"""The scatter kernel on the GPU: x[..., idx, ...] = u (the last write to a row wins) or
np.<ufunc>.at (every update applied in order), for indices known only at run time.

As on the cpu (backends/cpu/scatter.py) the buffer is viewed as (pre, N, post) around the
scattered axis. One thread owns one (pre, post) column: it copies the column of the base
into the result, then applies the updates to it in order, so repeated indices behave as in
NumPy with no atomics and no ordering between threads.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.emitter import ELEMENT, Sizes, Writer, index_position
from jitc.backends.cuda.kernel import Kernel, assemble, indent
from jitc.backends.cuda.lowering import ERR_SCATTER, load, lower, store
from jitc.core.ir import Node


def scatter_kernel(node: Node) -> Kernel:
    """Kernel(base, idx, upd -> out) for a top-level scatter node."""
    base, idx, upd = node.operands
    axis, mode = node.attrs["axis"], node.attrs["mode"]
    pre = int(np.prod(base.shape[:axis], dtype=np.int64))
    post = int(np.prod(base.shape[axis + 1 :], dtype=np.int64))
    w, sz = Writer(), Sizes()
    cols, size, n_post, m = sz(pre * post), sz(base.shape[axis]), sz(post), sz(idx.size)
    w.level = ELEMENT
    w.line(f"p = col // {n_post}")
    w.line(f"q = col - p * {n_post}")
    w.open(f"for k in range({size}):")
    w.line(f"out0[(p * {size} + k) * {n_post} + q] = a0[(p * {size} + k) * {n_post} + q]")
    w.close()
    w.open(f"for j in range({m}):")
    index_position("k", "a1[j]", idx.dtype, size, w)
    w.open(f"if k < 0 or k >= {size}:")
    w.line(w.error(ERR_SCATTER))
    w.line("break")
    w.close()
    w.line(f"at = (p * {size} + k) * {n_post} + q")
    w.line(f"u = a2[(p * {m} + j) * {n_post} + q]")
    if mode == "set":
        w.line("out0[at] = u")
    else:
        t = node.dtype
        step = lower(mode, t, t, [load(t, "out0[at]"), load(t, "u")], {}, w)
        w.line(f"out0[at] = {store(t, step)}")
    w.close()
    lines = [f"for col in range(cuda.grid(1), {cols}, cuda.gridsize(1)):"]
    lines += indent(w.take(ELEMENT))
    name, source = assemble("loop", 3, 1, 0, w.uses_err, len(sz.values), indent(lines))
    return Kernel(
        name,
        "loop",
        source,
        [base.dtype, idx.dtype, upd.dtype],
        [node.dtype],
        sz.values,
        {"total": pre * post},
        uses_err=w.uses_err,
    )
