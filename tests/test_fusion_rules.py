"""Simplification rules: each checked for structure (what it removes) and for numbers (bit for
bit against the unsimplified graph, on inputs with -0.0, NaN, inf and integer extremes).

On failure the graph before and after simplification is printed.
"""

import numpy as np
import pytest

import jitc
from jitc.backends.reference.interpreter import evaluate
from jitc.core.ir import Graph
from jitc.fusion import SIMPLIFY, algebra
from jitc.fusion import fold as fold_module
from jitc.fusion.cse import cse
from jitc.fusion.fold import FOLD_MAX_ELEMENTS, fold
from jitc.fusion.pipeline import run_passes

SPECIAL_F = np.array(
    [0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 3.0, -1e-30, 7.0, 1e30, -8.0], np.float32
)
SPECIAL_I = np.array([0, 1, -1, 7, 2**31 - 1, -(2**31), 3, -3, 100, -100, 5, 2], np.int32)


def _values(shape, dtype, seed):
    base = SPECIAL_F if np.dtype(dtype).kind == "f" else SPECIAL_I
    rng = np.random.default_rng(seed)
    return rng.choice(base, size=shape).astype(dtype)


def simplified(fn, *specs):
    """(traced graph, simplified graph); asserts bit-identical results on special values."""
    lowered = jitc.jit(fn, backend="reference").lower(*map(jitc.spec, specs))
    before = lowered.graph
    after = run_passes(before, SIMPLIFY, verify=True)
    for seed in range(3):
        args = [_values(p.shape, p.dtype, seed + k) for k, p in enumerate(before.params)]
        want, got = evaluate(before, args), evaluate(after, args)
        for w, g in zip(want, got):
            same = (
                w.dtype == g.dtype
                and w.shape == g.shape
                and np.array_equal(w, g, equal_nan=w.dtype.kind == "f")
            )
            if same and w.dtype.kind == "f":
                same = np.array_equal(np.signbit(w), np.signbit(g))
            assert same, f"results differ\nbefore:\n{before}\nafter:\n{after}\n{w}\n{g}"
    return before, after


def ops_of(graph):
    return [n.op for n in graph.nodes if n.op not in ("parameter",)]


def assert_ops(graph, expected):
    assert ops_of(graph) == expected, f"expected {expected}, got:\n{graph}"


def test_multiply_by_one_and_divide_by_one():
    _, g = simplified(lambda x: (x * 1.0) / 1.0 * np.float32(1), "f32[12]")
    assert_ops(g, [])


def test_divide_by_an_exact_power_of_two_is_a_multiply():
    """Bit for bit, subnormal quotients included (x / 2**k and x * 2**-k round the same
    value once); not where the reciprocal is inexact or overflows."""
    _, g = simplified(lambda x: x / 4.0 + x / np.float32(2.0**-127), "f32[12]")  # subnormal
    assert ops_of(g).count("divide") == 0
    tiny = np.array([1e-45, 3e-45, -1e-38, 1.5, np.inf, np.nan], np.float32)
    f = jitc.jit(lambda x: x / 8.0, backend="reference")
    np.testing.assert_array_equal(f(tiny), tiny / 8.0)
    for not_exact in (3.0, np.float32(2.0**-130)):  # 1 / 2**-130 overflows float32
        _, g = simplified(lambda x, c=not_exact: x / c, "f32[12]")
        assert "divide" in ops_of(g), not_exact


def test_x_plus_zero_is_not_identity_for_floats_but_minus_zero_is():
    _, g = simplified(lambda x: x + 0.0, "f32[12]")
    assert "add" in ops_of(g)  # -0.0 + 0.0 == +0.0
    _, g = simplified(lambda x: x + np.float32(-0.0), "f32[12]")
    assert_ops(g, [])
    _, g = simplified(lambda x: x - 0.0, "f32[12]")
    assert_ops(g, [])
    _, g = simplified(lambda x: x - np.float32(-0.0), "f32[12]")
    assert "subtract" in ops_of(g)  # -0.0 - (-0.0) == +0.0
    _, g = simplified(lambda x: (x + 0) - 0, "i32[12]")
    assert_ops(g, [])


def test_x_minus_x_is_zero_only_for_integers():
    _, g = simplified(lambda x: x - x, "i32[12]")
    assert "subtract" not in ops_of(g)
    _, g = simplified(lambda x: x - x, "f32[12]")
    assert "subtract" in ops_of(g)  # nan - nan, inf - inf


def test_double_negation_and_double_not():
    _, g = simplified(lambda x: np.negative(-x), "f32[12]")
    assert_ops(g, [])
    _, g = simplified(lambda x: np.negative(-x), "i32[12]")
    assert_ops(g, [])
    _, g = simplified(lambda x: ~~(x > 0), "f32[12]")
    assert_ops(g, ["constant", "broadcast_in_dim", "greater"])


def test_power_two_becomes_multiply():
    _, g = simplified(lambda x: x**2 + x**1, "f32[12]")
    assert "power" not in ops_of(g) and "multiply" in ops_of(g)


def test_transpose_of_transpose_and_identity():
    _, g = simplified(lambda x: x.T.T + x.transpose(1, 2, 0).transpose(2, 0, 1), "f32[2,3,4]")
    assert "transpose" not in ops_of(g)
    # (a view of an argument is returned as NumPy's view of the caller's array: negate it so
    # the chain is computed)
    _, g = simplified(lambda x: -x.transpose(2, 0, 1).transpose(2, 0, 1), "f32[2,3,4]")
    assert ops_of(g) == ["transpose", "negative"]


def test_reshape_chains_collapse():
    _, g = simplified(lambda x: -x.reshape(6, 4).reshape(24).reshape(4, 6), "f32[2,3,4]")
    assert_ops(g, ["reshape", "negative"])
    _, g = simplified(lambda x: -x.reshape(2, 12).reshape(2, 3, 4), "f32[2,3,4]")
    assert_ops(g, ["negative"])


def test_convert_to_same_dtype_and_broadcast_of_broadcast():
    _, g = simplified(lambda x: x.astype(np.float32), "f32[3]")
    assert_ops(g, [])
    _, g = simplified(lambda x: np.broadcast_to(np.broadcast_to(x, (3, 4)), (2, 3, 4)), "f32[4]")
    assert_ops(g, ["broadcast_in_dim"])


def test_dot_absorbs_a_transposed_operand():
    _, g = simplified(lambda a, b: a @ b.T, "f32[4,5]", "f32[3,5]")
    assert_ops(g, ["dot_general"])
    dot = g.nodes[-1]
    assert dot.attrs["rhs_contracting"] == (1,)


def test_reduce_over_size_one_axes_is_a_reshape():
    _, g = simplified(lambda x: x.max(axis=1), "f32[4,1,3]")
    assert_ops(g, ["reshape"])
    _, g = simplified(lambda x: x.sum(axis=1), "i64[4,1,3]")
    assert_ops(g, ["reshape"])
    _, g = simplified(lambda x: x.sum(axis=1), "f32[4,1,3]")
    assert "reduce" in ops_of(g)  # NumPy gives 0.0 + -0.0 == +0.0


def test_cse_merges_equal_constants_by_value_only():
    g = Graph("c")
    x = g.add_parameter((3,), np.float32)
    outs = []
    for v in (1.0, 1.0, -0.0, 0.0):
        c = g.add("constant", (), {"value": np.array(v, np.float32)}, (), np.float32)
        b = g.add(
            "broadcast_in_dim", [c], {"shape": (3,), "broadcast_dimensions": ()}, (3,), np.float32
        )
        outs.append(g.add("add", [x, b], {}, (3,), np.float32))
    g.outputs = outs
    out = cse(g.copy())
    assert ops_of(out).count("constant") == 3  # 1.0 once; -0.0 and 0.0 stay apart
    assert out.outputs[0] is out.outputs[1] and out.outputs[2] is not out.outputs[3]


def _const(g, value):
    value = np.asarray(value)
    return g.add("constant", (), {"value": value}, value.shape, value.dtype)


def test_constant_folding_is_bounded_and_quiet():
    g = Graph("f")
    x = g.add_parameter((), np.float32)
    small = _const(g, np.arange(8, dtype=np.float32))
    e = g.add("exp", [small], {}, (8,), np.float32)
    s = g.add("reduce", [e], {"kind": "sum", "axes": (0,)}, (), np.float32)
    big = _const(g, np.arange(FOLD_MAX_ELEMENTS + 1, dtype=np.float32))
    big2 = g.add("add", [big, big], {}, big.shape, np.float32)
    one, zero = _const(g, np.float32(1)), _const(g, np.float32(0))
    inf = g.add("divide", [one, zero], {}, (), np.float32)
    total = g.add("add", [g.add("add", [x, s], {}, (), np.float32), inf], {}, (), np.float32)
    g.outputs = [total, big2]
    with np.errstate(all="raise"):  # folding must not warn or raise
        out = fold(g.copy())
    assert ops_of(out) == ["constant", "constant", "add", "constant", "add", "add"], str(out)
    values = [n.attrs["value"] for n in out.nodes if n.op == "constant"]
    assert values[0] == np.exp(np.arange(8, dtype=np.float32)).sum() and np.isinf(values[2])
    arg = np.float32(0.5)
    for a, b in zip(evaluate(g, [arg]), evaluate(out, [arg])):
        np.testing.assert_array_equal(a, b)


def test_scalar_broadcasts_fold_whatever_their_size():
    g = Graph("s")
    x = g.add_parameter((64, 64), np.float32)
    consts = []
    for v in (2.0, 3.0):
        c = g.add("constant", (), {"value": np.array(v, np.float32)}, (), np.float32)
        consts.append(
            g.add(
                "broadcast_in_dim",
                [c],
                {"shape": (64, 64), "broadcast_dimensions": ()},
                (64, 64),
                np.float32,
            )
        )
    m = g.add("multiply", consts, {}, (64, 64), np.float32)
    g.outputs = [g.add("add", [x, m], {}, (64, 64), np.float32)]
    out = fold(g.copy())
    (c,) = [n for n in out.nodes if n.op == "constant"]
    assert c.attrs["value"] == 6.0 and "multiply" not in ops_of(out)


def test_every_rule_documents_its_formula():
    for rule in algebra.RULES + fold_module.RULES:
        first = rule.__doc__.strip().splitlines()[0]
        assert "==>" in first, rule.__name__


@pytest.mark.parametrize("dtype", ["f32", "f64", "i32", "i64"])
def test_simplify_keeps_results_on_a_mixed_program(dtype):
    def f(x, y):
        a = (x * 1 + y * 1) - np.negative(-y)
        b = (a.T.T * 2).reshape(-1).reshape(3, 4)
        return b.sum(axis=0), np.maximum(b, a) - a

    simplified(f, f"{dtype}[3,4]", f"{dtype}[3,4]")
