"""Random graphs of 1-30 ops (elementwise, broadcast, reduce, dot, reshape, transpose, slice,
scalar constants): the optimized graph computes what the traced one does.

For every generated graph: the verifier and the fusion contract accept the graph after every
pass (optimize(verify=True)); the reference backend gives the same values for the fused and
the unfused graph (NumPy tolerance); and the fused graph run inside its buffer plan gives
exactly the fused values.
"""

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from jitc.backends.reference.interpreter import evaluate
from jitc.core.errors import ShapeError
from jitc.core.ir import Graph
from jitc.core.primitives import PRIMITIVES
from jitc.fusion import optimize, plan_buffers
from jitc.fusion.stats import graph_stats
from tests.test_fusion_buffers import run_with_plan

SHAPES = [(4, 6), (6,), (4, 1), (1, 6), (3, 4, 6), (), (6, 4), (2, 3)]
UNARY = ["negative", "exp", "tanh", "absolute", "sqrt", "sin", "floor", "square", "log1p"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide"]
KINDS = [
    "unary",
    "binary",
    "binary",
    "broadcast",
    "reduce",
    "dot",
    "reshape",
    "transpose",
    "scalar",
    "slice",
    "select",
]


def _add(g, op, operands, attrs=None):
    attrs = attrs or {}
    shape, dtype = PRIMITIVES[op].infer([(o.shape, o.dtype) for o in operands], attrs)
    return g.add(op, operands, attrs, shape, dtype)


def _broadcast_to(g, x, shape):
    if x.shape == shape:
        return x
    dims = tuple(range(len(shape) - x.ndim, len(shape)))
    return _add(g, "broadcast_in_dim", [x], {"shape": shape, "broadcast_dimensions": dims})


def _scalar(g, value, dtype, shape):
    c = g.add("constant", (), {"value": np.array(value, dtype)}, (), dtype)
    return _broadcast_to(g, c, shape)


def _factorizations(size):
    return [(size,), (1, size)] + [(a, size // a) for a in range(2, size) if size % a == 0]


def build(data, dtype=np.float32) -> Graph:
    g = Graph("random")
    pool = [
        g.add_parameter(s, dtype)
        for s in data.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3), "params")
    ]
    n_ops = data.draw(st.integers(1, 30), "ops")
    pick = lambda: data.draw(st.sampled_from(pool))  # noqa: E731
    for _ in range(n_ops):
        kind = data.draw(st.sampled_from(KINDS))
        x = pick()
        try:
            if kind == "unary":
                y = _add(g, data.draw(st.sampled_from(UNARY)), [x])
            elif kind in ("binary", "select"):
                z = pick()
                shape = np.broadcast_shapes(x.shape, z.shape)
                a, b = _broadcast_to(g, x, shape), _broadcast_to(g, z, shape)
                if kind == "select":
                    p = _add(g, "greater", [a, b])
                    y = _add(g, "select", [p, a, _add(g, "negative", [b])])
                else:
                    y = _add(g, data.draw(st.sampled_from(BINARY)), [a, b])
            elif kind == "broadcast":
                lead = data.draw(st.sampled_from([(), (2,), (3, 1)]))
                shape = lead + tuple(5 if d == 1 else d for d in x.shape)
                y = _broadcast_to(g, x, shape) if shape != x.shape else x
            elif kind == "reduce":
                if x.ndim == 0:
                    continue
                axes = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=1, unique=True))
                y = _add(
                    g,
                    "reduce",
                    [x],
                    {
                        "kind": data.draw(st.sampled_from(["sum", "max", "min"])),
                        "axes": tuple(sorted(axes)),
                    },
                )
            elif kind == "dot":
                pairs = [
                    (a, b)
                    for a in pool
                    for b in pool
                    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]
                ]
                if not pairs:
                    continue
                a, b = data.draw(st.sampled_from(pairs))
                y = _add(
                    g,
                    "dot_general",
                    [a, b],
                    {
                        "lhs_contracting": (1,),
                        "rhs_contracting": (0,),
                        "lhs_batch": (),
                        "rhs_batch": (),
                    },
                )
            elif kind == "reshape":
                if x.ndim == 0:
                    continue
                new = data.draw(st.sampled_from(_factorizations(x.size)))
                y = _add(g, "reshape", [x], {"new_sizes": new})
            elif kind == "transpose":
                if x.ndim < 2:
                    continue
                perm = tuple(data.draw(st.permutations(range(x.ndim))))
                y = _add(g, "transpose", [x], {"permutation": perm})
            elif kind == "scalar":
                v = data.draw(st.sampled_from([1.0, 0.0, -0.0, 2.0, 0.5]))
                op = data.draw(st.sampled_from(["add", "multiply", "subtract", "power"]))
                y = _add(g, op, [x, _scalar(g, v, x.dtype, x.shape)])
            else:  # slice
                if x.ndim == 0 or max(x.shape) < 2:
                    continue
                d = next(i for i, s in enumerate(x.shape) if s >= 2)
                start = [0] * x.ndim
                stride = [1] * x.ndim
                start[d] = data.draw(st.integers(0, 1))
                stride[d] = data.draw(st.integers(1, 2))
                y = _add(
                    g,
                    "slice",
                    [x],
                    {"start": tuple(start), "limit": x.shape, "stride": tuple(stride)},
                )
        except (ShapeError, ValueError):
            continue
        pool.append(y)
    computed = [n for n in pool if n.op != "parameter"] or pool
    extra = data.draw(st.lists(st.sampled_from(computed), max_size=2))
    g.outputs = [computed[-1]] + extra
    return g


def _close(got, want):
    want = np.asarray(want)
    finite = np.abs(want[np.isfinite(want)])
    scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * (1.0 + scale), equal_nan=True)


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_fused_graph_computes_what_the_traced_graph_computes(data):
    g = build(data)
    note(str(g))
    fused = optimize(g, verify=True)  # verifier + contract after every pass
    note(str(fused))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), "seed"))
    args = [rng.standard_normal(p.shape).astype(p.dtype) for p in g.params]
    want = evaluate(g, args)
    got = evaluate(fused, args)
    assert len(got) == len(want)
    for w, x in zip(want, got):
        assert w.shape == x.shape and w.dtype == x.dtype
        _close(x, w)
    for w, x in zip(got, run_with_plan(fused, plan_buffers(fused), args)):
        np.testing.assert_array_equal(x, w)
    stats = graph_stats(fused)
    assert stats["kernels"] <= g.count_ops() + stats["library_calls"]
