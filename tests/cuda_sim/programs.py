"""Programs that reach every primitive the cuda backend lowers, per dtype.

Shared by the simulator tests (values against NumPy) and tests/test_cuda_backend.py (the same
kernels compiled to PTX and assembled, without a GPU): the simulator never type-checks
numba-cuda code, so a lowering is only proven for the GPU once NVVM has compiled it.
"""

import numpy as np

from jitc.core import ops
from jitc.core.ir import Graph

DTYPES = (
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
)

_FLOATS = [0.0, -0.0, 1.5, -2.5, 3.0, 1e-3, 100.0, np.inf, -np.inf, np.nan, 0.5, -1.0]
SPECIAL = {  # each: 0, 1, the limits, and a shift count just inside the width (slot 10)
    np.float16: _FLOATS,
    np.float32: _FLOATS,
    np.float64: _FLOATS,
    np.int8: [0, 1, -1, 7, -7, 3, 127, -128, 2, -3, 7, 5],
    np.int16: [0, 1, -1, 7, -7, 3, 2**15 - 1, -(2**15), 2, -3, 15, 5],
    np.int32: [0, 1, -1, 7, -7, 3, 2**31 - 1, -(2**31), 2, -3, 31, 5],
    np.int64: [0, 1, -1, 7, -7, 3, 2**63 - 1, -(2**63), 2, -3, 63, 5],
    np.uint8: [0, 1, 255, 7, 200, 3, 254, 128, 2, 9, 7, 5],
    np.uint16: [0, 1, 2**16 - 1, 7, 40000, 3, 2**16 - 2, 2**15, 2, 9, 15, 5],
    np.uint32: [0, 1, 2**32 - 1, 7, 3 * 10**9, 3, 2**32 - 2, 2**31, 2, 9, 31, 5],
    np.uint64: [0, 1, 2**64 - 1, 7, 2**63 + 5, 3, 2**64 - 2, 2**63, 2, 9, 63, 5],
    np.bool_: [True, False, True, True, False, False, True, False, True, False, True, False],
}


def special_inputs(dtype):
    a = np.array(SPECIAL[dtype], dtype=dtype)
    return a, np.roll(a, 3)


def elementwise_graph(dtype) -> tuple[Graph, list[str]]:
    """One graph applying every elementwise primitive NumPy has a `dtype` loop for, converts
    to every dtype, and select; the output names say which op each output is."""
    dtype = np.dtype(dtype)
    g = Graph(f"every_op_{dtype.name}")
    a = g.add_parameter((12,), dtype)
    b = g.add_parameter((12,), dtype)
    names = []
    for op in sorted(ops.UNARY | ops.PREDICATES | ops.BINARY | ops.COMPARE):
        n = 1 if op in ops.UNARY | ops.PREDICATES else 2
        try:
            loop = getattr(np, op).resolve_dtypes((dtype,) * n + (None,))
        except TypeError:
            continue
        if loop[:n] != (dtype,) * n:
            continue
        if op == "power" and dtype.kind == "i":
            continue  # NumPy raises for the negative exponents among the inputs
        if op == "nextafter" and dtype == np.float16:
            continue  # refused by the cuda backend (test_sim_backend)
        g.outputs.append(g.add(op, [a, b][:n], {}, (12,), loop[n]))
        names.append(op)
    for target in DTYPES:
        g.outputs.append(g.add("convert", [a], {"dtype": np.dtype(target)}, (12,), target))
        names.append(f"convert to {np.dtype(target).name}")
    pred = g.add("not_equal", [a, b], {}, (12,), np.bool_)
    g.outputs.append(g.add("select", [pred, a, b], {}, (12,), dtype))
    names.append("select")
    return g, names


def one_loop_fusion(body: Graph) -> Graph:
    """A function whose only kernel is `body` as a loop fusion with several outputs."""
    top = Graph(body.name)
    params = [top.add_parameter(p.shape, p.dtype) for p in body.params]
    fused = top.add(
        "fusion",
        params,
        {"kind": "loop"},
        None,
        None,
        subgraph=body,
        tuple_types=tuple((o.shape, o.dtype) for o in body.outputs),
    )
    top.outputs = [
        top.add("get", [fused], {"index": k}, o.shape, o.dtype) for k, o in enumerate(body.outputs)
    ]
    return top


def structure(x, y, ids, w):
    """Every shape op, reduction and product on one dtype (traced by jitc, run by NumPy)."""
    out = [
        x.T[::-1, 1:],
        np.concatenate([x, y[:2]], axis=0),
        x[ids],
        np.take(x, ids, axis=1),
        x.reshape(4, 3)[::2],
        np.broadcast_to(x[:, :1], (3, 4)),
        np.arange(4) + x,
        x.max(axis=1),
        x.min(axis=0, keepdims=True),
        np.argmax(x, axis=1),
        np.argmin(x, axis=0),
        x @ w,
        (x @ w)[:, :1] @ x[:1],
        np.concatenate([x, y, x]) @ w,
    ]
    if x.dtype == np.bool_:
        out += [x.any(axis=1), x.all(axis=0)]
    else:
        out += [x.sum(axis=1), x.prod(axis=0), x.astype(np.float32) * 0.5]
    return tuple(out)


def structure_inputs(dtype, rng):
    """Arguments for `structure` (values small enough that sums and products stay exact)."""

    def make(*shape):
        if np.dtype(dtype) == np.bool_:
            return rng.random(shape) < 0.5
        return rng.integers(-3, 4, shape).astype(dtype)

    return make(3, 4), make(3, 4), np.array([2, 0, -1, 1]), make(4, 10)
