"""The region write on the GPU: x[region] = u for a top-level update_slice.

Every value has its own buffer here; where the old version is a temporary nothing reads
after the write, the write takes over its buffer and only the region kernel runs, a thread
per element of the region (program.py); otherwise the buffer is first copied into the
result by a copy kernel. Offsets near the end of an axis are written against its extent (as
on the cpu: backends/cpu/update_slice.py).
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.emitter import ELEMENT, Sizes, Writer, decompose, strides
from jitc.backends.cuda.kernel import Kernel, assemble, indent
from jitc.core.ir import Node


def copy_kernel(node: Node) -> Kernel:
    """Kernel(base -> out): the buffer as it was, element by element."""
    sz = Sizes()
    total = sz(node.size)
    lines = [f"for i in range(cuda.grid(1), {total}, cuda.gridsize(1)):", "    out0[i] = a0[i]"]
    name, source = assemble("loop", 1, 1, 0, False, len(sz.values), indent(lines))
    return Kernel(name, "loop", source, [node.dtype], [node.dtype], sz.values, {"total": node.size})


def region_index(shape, start, stride, spanned, comps, sz) -> str:
    """The flat index into an array of `shape` of the region element whose index along the
    `spanned` axes is `comps` (the other axes sit at their start)."""
    at_axis = dict(zip(spanned, comps))
    terms = []
    for d, s in enumerate(strides(shape)):
        first = start[d] if start[d] <= shape[d] - start[d] else None
        at = str(first) if first is not None else f"({sz(shape[d])} - {shape[d] - start[d]})"
        if d in at_axis:
            at = f"({at} + {stride[d]} * {at_axis[d][0]})"
        terms.append(f"{at} * {sz(s)}")
    return " + ".join(terms) or "0"


def region_kernel(node: Node) -> Kernel:
    """Kernel(upd -> out): the region of out written with upd, nothing else touched."""
    base, update = node.operands
    w, sz = Writer(), Sizes()
    w.level = ELEMENT
    comps = decompose(w, "j", update.shape, [f"i{d}" for d in range(base.ndim)], sz)
    at = region_index(
        base.shape, node.attrs["start"], node.attrs["stride"], range(base.ndim), comps, sz
    )
    w.line(f"out0[{at}] = a0[j]")
    total = sz(update.size)
    lines = [f"for j in range(cuda.grid(1), {total}, cuda.gridsize(1)):"]
    lines += indent(w.take(ELEMENT))
    name, source = assemble("loop", 1, 1, 0, False, len(sz.values), indent(lines))
    return Kernel(
        name, "loop", source, [update.dtype], [node.dtype], sz.values, {"total": update.size}
    )


def update_slice_kernels(node: Node) -> list[Kernel]:
    """The copy, then the region write (none for an empty region)."""
    if np.prod(node.operands[1].shape, dtype=np.int64) == 0:
        return [copy_kernel(node)]
    return [copy_kernel(node), region_kernel(node)]
