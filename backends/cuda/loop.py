"""Loop fusions (and one-op elementwise/shape ops) as grid-stride kernels.

Each thread walks flat positions of the iteration shape S in steps of the grid size, derives
the multi-index with runtime divisions, evaluates the body there and writes every output at
the same flat position (outputs are C-contiguous of shape S). Any launch config is correct,
so the driver sizes it at run time (a few blocks under the simulator, many on a GPU).
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cuda.emitter import ELEMENT, BodyEmitter, LayoutError, Sizes, Writer, decompose
from jitc.backends.cuda.kernel import Kernel, assemble, indent
from jitc.backends.cuda.lowering import store
from jitc.backends.cuda.update_slice import region_index
from jitc.core.ir import Graph


def loop_kernel(body: Graph, writes=None, base_shape=None) -> Kernel:
    """writes: output k is stored into the region writes[k] of an output of `base_shape`
    (a region fusion, fusion/region.py)."""
    shapes = {o.shape for o in body.outputs}
    if len(shapes) != 1:
        raise LayoutError(f"loop fusion outputs differ in shape: {shapes}")
    shape = shapes.pop()
    total = int(np.prod(shape, dtype=np.int64))
    w, sz = Writer(), Sizes()
    em = BodyEmitter(body, w, sz, {p: f"a{k}" for k, p in enumerate(body.params)})
    n_total = sz(total)
    w.level = ELEMENT
    idx = decompose(w, "flat", shape, [f"i{d}" for d in range(len(shape))], sz)
    em.flat = (idx, shape, "flat")
    values = [em.value(o, idx)[0] for o in body.outputs]
    for k, (o, v) in enumerate(zip(body.outputs, values)):
        at = "flat"
        if writes is not None:
            r = writes[k]
            at = region_index(base_shape, r.start, r.stride, r.spanned, idx, sz)
        w.line(f"out{k}[{at}] = {store(o.dtype, v)}")
    lines = w.take(0) + [f"for flat in range(cuda.grid(1), {n_total}, cuda.gridsize(1)):"]
    lines += indent(w.take(ELEMENT))
    name, source = assemble(
        "loop", len(body.params), len(body.outputs), 0, w.uses_err, len(sz.values), indent(lines)
    )
    return Kernel(
        name,
        "loop",
        source,
        [p.dtype for p in body.params],
        [o.dtype for o in body.outputs],
        sz.values,
        {"total": total},
        uses_err=w.uses_err,
    )
