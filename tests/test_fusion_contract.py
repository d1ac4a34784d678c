"""The fusion contract (fusion/contract.py): hand-built fusion bodies, each breaking one rule,
are rejected with a message naming it; the canonical shapes of each kind are accepted."""

import numpy as np
import pytest

from jitc.core.ir import Graph
from jitc.core.primitives import PRIMITIVES
from jitc.fusion.contract import ContractError, check_fusion

F32 = np.dtype(np.float32)


class Body:
    """Build a fusion body op by op (types come from the primitive rules)."""

    def __init__(self, *param_shapes):
        self.g = Graph("fused")
        self.params = [self.g.add_parameter(s, F32) for s in param_shapes]

    def __call__(self, op, *operands, **attrs):
        shape, dtype = PRIMITIVES[op].infer([(o.shape, o.dtype) for o in operands], attrs)
        return self.g.add(op, operands, attrs, shape, dtype)

    def const(self, v):
        return self.g.add("constant", (), {"value": np.array(v, F32)}, (), F32)

    def bcast(self, x, shape, dims):
        return self("broadcast_in_dim", x, shape=shape, broadcast_dimensions=dims)

    def fusion(self, kind, *outputs):
        self.g.outputs = list(outputs)
        top = Graph("top")
        args = [top.add_parameter(p.shape, p.dtype) for p in self.params]
        if len(outputs) == 1:
            (o,) = outputs
            return top.add("fusion", args, {"kind": kind}, o.shape, o.dtype, None, self.g)
        types = tuple((o.shape, o.dtype) for o in outputs)
        return top.add("fusion", args, {"kind": kind}, None, None, None, self.g, types)


def softmax_body():
    b = Body((8, 16))
    (x,) = b.params
    m = b("reduce", x, kind="max", axes=(1,))
    e = b("exp", b("subtract", x, b.bcast(m, (8, 16), (0,))))
    s = b("reduce", e, kind="sum", axes=(1,))
    return b, b("divide", e, b.bcast(s, (8, 16), (0,)))


def test_softmax_is_a_reduction_over_the_last_axis():
    b, out = softmax_body()
    space = check_fusion(b.fusion("reduction", out))
    assert space.shape == (8, 16) and space.reduced == (1,) and space.kept == (0,)


def test_kind_must_match_the_body():
    b, out = softmax_body()
    with pytest.raises(ContractError, match="kind 'loop' fusion contains a reduction"):
        check_fusion(b.fusion("loop", out))
    with pytest.raises(ContractError, match="unknown fusion kind"):
        check_fusion(b.fusion("fancy", out))


def test_expensive_op_through_an_expanding_broadcast_is_rejected():
    b = Body((8, 16), (16,))
    x, v = b.params
    e = b("exp", v)
    out = b("multiply", x, b.bcast(e, (8, 16), (1,)))
    with pytest.raises(ContractError, match="would recompute exp for every element"):
        check_fusion(b.fusion("loop", out))


def test_expensive_op_read_twice_is_rejected_cheap_is_fine():
    for op, ok in (("exp", False), ("negative", True)):
        b = Body((8, 8))
        (x,) = b.params
        y = b(op, x)
        out = b("add", y, b("transpose", y, permutation=(1, 0)))
        f = b.fusion("loop", out)
        if ok:
            check_fusion(f)
        else:
            with pytest.raises(ContractError, match="would compute exp 2 times"):
                check_fusion(f)


def test_row_value_of_expensive_op_is_fine_in_a_reduction():
    b = Body((8, 16))
    (x,) = b.params
    s = b("reduce", b("multiply", x, x), kind="sum", axes=(1,))
    r = b("sqrt", s)  # once per row
    out = b("divide", x, b.bcast(r, (8, 16), (0,)))
    check_fusion(b.fusion("reduction", out))


def test_reduce_result_read_off_its_row_is_rejected():
    b = Body((8, 8))
    (x,) = b.params
    s = b("reduce", x, kind="sum", axes=(1,))
    out = b("add", x, b.bcast(s, (8, 8), (1,)))  # row sums laid along the other axis
    with pytest.raises(ContractError, match="read off its row"):
        check_fusion(b.fusion("reduction", out))


def test_reductions_over_different_axes_are_rejected():
    b = Body((8, 8))
    (x,) = b.params
    s0 = b("reduce", x, kind="sum", axes=(0,))
    s1 = b("reduce", x, kind="sum", axes=(1,))
    with pytest.raises(ContractError, match="reductions over different spaces"):
        check_fusion(b.fusion("multi", s0, s1))


def dot_body(first=True, computed_operand=False):
    b = Body((8, 4), (4, 16), (16,))
    x, w, bias = b.params
    if not first:
        bb = b.bcast(bias, (8, 16), (1,))
    lhs = b("negative", x) if computed_operand else x
    d = b(
        "dot_general",
        lhs,
        w,
        lhs_contracting=(1,),
        rhs_contracting=(0,),
        lhs_batch=(),
        rhs_batch=(),
    )
    if first:
        bb = b.bcast(bias, (8, 16), (1,))
    return b, b("maximum", b("add", d, bb), b.bcast(b.const(0.0), (8, 16), ()))


def test_dot_epilogue():
    b, out = dot_body()
    assert check_fusion(b.fusion("dot", out)).shape == (8, 16)
    b, out = dot_body(first=False)
    with pytest.raises(ContractError, match="not the first op"):
        check_fusion(b.fusion("dot", out))
    b, out = dot_body(computed_operand=True)
    with pytest.raises(ContractError, match="materialized inputs"):
        check_fusion(b.fusion("dot", out))


def test_dot_result_read_through_a_transpose_is_rejected():
    b = Body((8, 8), (8, 8))
    x, w = b.params
    d = b(
        "dot_general", x, w, lhs_contracting=(1,), rhs_contracting=(0,), lhs_batch=(), rhs_batch=()
    )
    out = b("negative", b("transpose", d, permutation=(1, 0)))
    with pytest.raises(ContractError, match="dot result is read through a transpose"):
        check_fusion(b.fusion("dot", out))


def test_loop_outputs_share_one_shape_and_bodies_hold_no_array_constants():
    b = Body((8, 8))
    (x,) = b.params
    with pytest.raises(ContractError, match="different shapes"):
        check_fusion(
            b.fusion("multi", b("negative", x), b("negative", b("reshape", x, new_sizes=(64,))))
        )
    b = Body((8, 8))  # a full and a row output is a fine reduction-type multi fusion
    (x,) = b.params
    check_fusion(b.fusion("multi", b("negative", x), b("reduce", x, kind="sum", axes=(0, 1))))
    b = Body((4,))
    c = b.g.add("constant", (), {"value": np.ones(4, F32)}, (4,), F32)
    with pytest.raises(ContractError, match="array constant"):
        check_fusion(b.fusion("loop", b("add", b.params[0], c)))
