"""Algebraic simplification: identities that hold bit for bit under IEEE 754 and NumPy.

Each rule is `rule(node, g) -> Node | None` (see fusion/rewrite.py); its docstring's first
line is the formula. Identities that are only true for real numbers are not here:
`x + 0.0` is not `x` (for x = -0.0 it gives +0.0), but `x + (-0.0)` is; `x - x` is 0 only for
integers (NaN - NaN is NaN).
"""

from __future__ import annotations

import numpy as np

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.core.primitives import dot_free_dims
from jitc.fusion.dce import dce
from jitc.fusion.rewrite import numel, rewrite


def _scalar_value(n: Node):
    """The value of a one-element constant (possibly broadcast), else None."""
    if n.op == "broadcast_in_dim":
        n = n.operands[0]
    if n.op != "constant" or n.attrs["value"].size != 1:
        return None
    return n.attrs["value"].reshape(())


def _is(n: Node, value) -> bool:
    """n is the constant `value`, bit for bit in sign (so -0.0 and 0.0 differ)."""
    v = _scalar_value(n)
    if v is None or v.dtype.kind in "bc":  # complex: no rule below holds (see multiply_by_one)
        return False
    with np.errstate(all="ignore"):
        return bool(v == value) and bool(np.signbit(v)) == bool(np.signbit(value))


def _same_type(a: Node, b: Node) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _squeezed(shape):
    return tuple(d for d in shape if d != 1)


# ----------------------------------------------------------------------------- arithmetic


def multiply_by_one(n, g):
    """x * 1  ==>  x   (and 1 * x)

    Not for complex: NumPy's product of inf*1j and 1+0j is nan+infj (inf * 0 in its real
    part); _is never matches a complex constant."""
    if n.op != "multiply" or n.dtype.kind == "b":
        return None
    a, b = n.operands
    if _is(b, 1) and _same_type(a, n):
        return a
    if _is(a, 1) and _same_type(b, n):
        return b


def add_zero(n, g):
    """x + (-0.0)  ==>  x  for floats;  x + 0  ==>  x  for integers   (either side)"""
    if n.op != "add" or n.dtype.kind not in "iuf":
        return None
    zero = -0.0 if n.dtype.kind == "f" else 0
    a, b = n.operands
    if _is(b, zero) and _same_type(a, n):
        return a
    if _is(a, zero) and _same_type(b, n):
        return b


def subtract_zero(n, g):
    """x - (+0.0)  ==>  x  for floats;  x - 0  ==>  x  for integers"""
    if n.op != "subtract" or n.dtype.kind not in "iuf":
        return None
    a, b = n.operands
    if _is(b, 0.0 if n.dtype.kind == "f" else 0) and _same_type(a, n):
        return a


def divide_by_one(n, g):
    """x / 1  ==>  x   (floats)"""
    if (
        n.op == "divide"
        and n.dtype.kind == "f"
        and _is(n.operands[1], 1)
        and _same_type(n.operands[0], n)
    ):
        return n.operands[0]


def divide_by_power_of_two(n, g):
    """x / 2**k  ==>  x * 2**-k   (floats, where 2**-k is exact: both round x / 2**k once)"""
    if n.op != "divide" or n.dtype.kind != "f":
        return None
    c = _scalar_value(n.operands[1])
    if c is None or c.dtype != n.dtype or not np.isfinite(c) or c == 0:
        return None
    mantissa, _ = np.frexp(c)
    with np.errstate(over="ignore"):
        inverse = np.reciprocal(c)
    if abs(mantissa) != 0.5 or not np.isfinite(inverse) or inverse * c != 1:
        return None
    k = g.add("constant", (), {"value": np.asarray(inverse, n.dtype)}, (), n.dtype, n.loc)
    k = g.add(
        "broadcast_in_dim",
        [k],
        {"shape": n.shape, "broadcast_dimensions": ()},
        n.shape,
        n.dtype,
        n.loc,
    )
    return g.add("multiply", [n.operands[0], k], {}, n.shape, n.dtype, n.loc)


def integer_self_subtract(n, g):
    """x - x  ==>  0   (integers only: NaN - NaN is NaN, inf - inf is NaN)"""
    if n.op == "subtract" and n.dtype.kind in "iu" and n.operands[0] is n.operands[1]:
        zero = g.add("constant", (), {"value": np.zeros((), n.dtype)}, (), n.dtype, n.loc)
        return g.add(
            "broadcast_in_dim",
            [zero],
            {"shape": n.shape, "broadcast_dimensions": ()},
            n.shape,
            n.dtype,
            n.loc,
        )


def double_negation(n, g):
    """-(-x)  ==>  x"""
    if n.op == "negative" and n.operands[0].op == "negative":
        return n.operands[0].operands[0]


def double_not(n, g):
    """not(not(x))  ==>  x  (x bool) ;  ~~x  ==>  x  (bool or integer x)"""
    if n.op in ("logical_not", "invert") and n.operands[0].op == n.op:
        x = n.operands[0].operands[0]
        if x.dtype == n.dtype:
            return x


def power_of_one_or_two(n, g):
    """x ** 1  ==>  x ;  x ** 2  ==>  x * x   (exact: NumPy squares for ** 2 as well)"""
    if n.op != "power" or n.dtype.kind not in "iuf":
        return None
    x, e = n.operands
    if _is(e, 1) and _same_type(x, n):
        return x
    if _is(e, 2):
        return g.add("multiply", [x, x], {}, n.shape, n.dtype, n.loc)


def select_same(n, g):
    """select(p, x, x)  ==>  x"""
    if n.op == "select" and n.operands[1] is n.operands[2]:
        return n.operands[1]


# ----------------------------------------------------------------------------- shapes


def convert_to_same_dtype(n, g):
    """convert(x: T) -> T  ==>  x"""
    if n.op == "convert" and n.operands[0].dtype == n.dtype:
        return n.operands[0]


def reshape_to_same_shape(n, g):
    """reshape(x: S) -> S  ==>  x"""
    if n.op == "reshape" and n.operands[0].shape == n.shape:
        return n.operands[0]


def reshape_of_reshape(n, g):
    """reshape(reshape(x))  ==>  reshape(x)"""
    if n.op == "reshape" and n.operands[0].op == "reshape":
        x = n.operands[0].operands[0]
        return g.add("reshape", [x], {"new_sizes": n.shape}, n.shape, n.dtype, n.loc)


def identity_transpose(n, g):
    """transpose(x, (0, 1, ..., k))  ==>  x"""
    if n.op == "transpose" and tuple(n.attrs["permutation"]) == tuple(range(n.ndim)):
        return n.operands[0]


def transpose_of_transpose(n, g):
    """transpose(transpose(x, p), q)  ==>  transpose(x, p∘q)"""
    if n.op != "transpose" or n.operands[0].op != "transpose":
        return None
    inner = n.operands[0]
    p, q = inner.attrs["permutation"], n.attrs["permutation"]
    perm = tuple(p[i] for i in q)
    return g.add("transpose", [inner.operands[0]], {"permutation": perm}, n.shape, n.dtype, n.loc)


def unit_transpose_is_reshape(n, g):
    """transpose(x) that only moves size-1 dims  ==>  reshape(x)"""
    if n.op != "transpose":
        return None
    x = n.operands[0]
    moved = [p for p in n.attrs["permutation"] if x.shape[p] != 1]
    if moved == sorted(moved) and tuple(n.attrs["permutation"]) != tuple(range(n.ndim)):
        return g.add("reshape", [x], {"new_sizes": n.shape}, n.shape, n.dtype, n.loc)


def identity_broadcast(n, g):
    """broadcast_in_dim(x: S) -> S with dims (0, ..., k)  ==>  x"""
    if n.op == "broadcast_in_dim" and n.operands[0].shape == n.shape:
        return n.operands[0]


def broadcast_of_broadcast(n, g):
    """broadcast(broadcast(x, d1), d2)  ==>  broadcast(x, d2∘d1)"""
    if n.op != "broadcast_in_dim" or n.operands[0].op != "broadcast_in_dim":
        return None
    inner = n.operands[0]
    dims = n.attrs["broadcast_dimensions"]
    composed = tuple(dims[d] for d in inner.attrs["broadcast_dimensions"])
    return g.add(
        "broadcast_in_dim",
        [inner.operands[0]],
        {"shape": n.shape, "broadcast_dimensions": composed},
        n.shape,
        n.dtype,
        n.loc,
    )


def unit_broadcast_is_reshape(n, g):
    """broadcast_in_dim(x) that only adds size-1 dims  ==>  reshape(x)"""
    if (
        n.op == "broadcast_in_dim"
        and numel(n.operands[0]) == numel(n)
        and n.ndim > 0
        and n.operands[0].shape != n.shape
    ):
        return g.add("reshape", [n.operands[0]], {"new_sizes": n.shape}, n.shape, n.dtype, n.loc)


def broadcast_of_unit_reshape(n, g):
    """broadcast(reshape(x)) where the reshape only adds/drops size-1 dims  ==>  broadcast(x)"""
    if n.op != "broadcast_in_dim" or n.operands[0].op != "reshape":
        return None
    r = n.operands[0]
    x = r.operands[0]
    if _squeezed(x.shape) != _squeezed(r.shape):
        return None
    dims = n.attrs["broadcast_dimensions"]
    kept = [d for d, s in zip(dims, r.shape) if s != 1]  # result dims of r's non-unit dims
    it = iter(kept)
    new_dims = []
    for s in x.shape:
        if s != 1:
            new_dims.append(next(it))
        else:
            new_dims.append(None)
    # size-1 dims of x go to any unused result dim, keeping the dims increasing
    out, used = [], set(kept)
    for k, d in enumerate(new_dims):
        if d is None:
            lo = out[-1] + 1 if out else 0
            hi = next((e for e in new_dims[k + 1 :] if e is not None), n.ndim)
            free = [e for e in range(lo, hi) if e not in used]
            if not free:
                return None
            d = free[0]
            used.add(d)
        out.append(d)
    return g.add(
        "broadcast_in_dim",
        [x],
        {"shape": n.shape, "broadcast_dimensions": tuple(out)},
        n.shape,
        n.dtype,
        n.loc,
    )


def full_slice(n, g):
    """x[0:n:1, ...] over every whole axis  ==>  x"""
    if (
        n.op == "slice"
        and n.shape == n.operands[0].shape
        and all(s == 0 for s in n.attrs["start"])
        and all(st == 1 for st in n.attrs["stride"])
    ):
        return n.operands[0]


def reduce_over_unit_axes(n, g):
    """reduce(x, axes) where every reduced axis has size 1  ==>  reshape(x)

    Not for float or complex sums: NumPy may add the identity +0.0, and -0.0 + 0.0 is +0.0;
    nor complex products (the identity times inf*1j is nan+infj)."""
    if n.op != "reduce" or n.dtype != n.operands[0].dtype:
        return None
    if n.attrs["kind"] == "sum" and n.dtype.kind in "fc" or n.dtype.kind == "c":
        return None
    x = n.operands[0]
    if all(x.shape[a] == 1 for a in n.attrs["axes"]):
        return g.add("reshape", [x], {"new_sizes": n.shape}, n.shape, n.dtype, n.loc)


def dot_of_transpose(n, g):
    """dot_general(transpose(a), b)  ==>  dot_general(a, b) with the dims renamed (either side)"""
    if n.op != "dot_general":
        return None
    a = dict(n.attrs)
    for side, (c, b) in (
        ("lhs", ("lhs_contracting", "lhs_batch")),
        ("rhs", ("rhs_contracting", "rhs_batch")),
    ):
        k = 0 if side == "lhs" else 1
        t = n.operands[k]
        if t.op != "transpose":
            continue
        perm = t.attrs["permutation"]
        free = dot_free_dims(t.ndim, a[c], a[b])
        mapped = [perm[d] for d in free]
        if mapped != sorted(mapped):
            continue  # the result's free dims would come out in another order
        attrs = dict(a)
        attrs[c] = tuple(perm[d] for d in a[c])
        attrs[b] = tuple(perm[d] for d in a[b])
        operands = list(n.operands)
        operands[k] = t.operands[0]
        return g.add("dot_general", operands, attrs, n.shape, n.dtype, n.loc)


RULES = (
    multiply_by_one,
    add_zero,
    subtract_zero,
    divide_by_one,
    divide_by_power_of_two,
    integer_self_subtract,
    double_negation,
    double_not,
    power_of_one_or_two,
    select_same,
    convert_to_same_dtype,
    reshape_to_same_shape,
    reshape_of_reshape,
    identity_transpose,
    transpose_of_transpose,
    unit_transpose_is_reshape,
    identity_broadcast,
    broadcast_of_broadcast,
    unit_broadcast_is_reshape,
    broadcast_of_unit_reshape,
    full_slice,
    reduce_over_unit_axes,
    dot_of_transpose,
)

assert all(r.__doc__ for r in RULES)
assert not (set(r.__name__ for r in RULES) & ops.ALL)


def algebra(graph: Graph) -> Graph:
    return dce(rewrite(graph, RULES))
