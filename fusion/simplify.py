"""Simplification before fusion: CSE, constant folding, algebraic identities, DCE.

Each rule's docstring's first line is the identity it applies. Rules only match in the
rebuilt graph, so they see operands that are already simplified.
"""

from __future__ import annotations

import numpy as np

from jitc import ops
from jitc.fusion.rewrite import dce, rebuild
from jitc.ir import Graph, Node
from jitc.primitives import PRIMITIVES

FOLD_MAX_ELEMENTS = 1024


def _is_scalar_const(n: Node, value=None) -> bool:
    if n.op == "broadcast_in_dim" and n.operands[0].op == "constant":
        n = n.operands[0]
    if n.op != "constant" or n.attrs["value"].size != 1:
        return False
    v = n.attrs["value"].reshape(())
    return value is None or (bool(v == value) and np.signbit(v) == np.signbit(value))


def same_shape_convert(n, g):
    """convert(x: T) -> T  ==>  x"""
    if n.op == "convert" and n.operands[0].dtype == n.dtype:
        return n.operands[0]


def identity_reshape(n, g):
    """reshape(x: S) -> S  ==>  x ;  reshape(reshape(x)) ==> reshape(x)"""
    if n.op != "reshape":
        return None
    x = n.operands[0]
    if x.shape == n.shape:
        return x
    if x.op == "reshape":
        inner = x.operands[0]
        return inner if inner.shape == n.shape else \
            g.add("reshape", [inner], {"new_sizes": n.shape}, n.shape, n.dtype, n.loc)


def transpose_of_transpose(n, g):
    """transpose(transpose(x, p), q)  ==>  transpose(x, p∘q), or x when that is the identity"""
    if n.op != "transpose" or n.operands[0].op != "transpose":
        return None
    inner = n.operands[0]
    p, q = inner.attrs["permutation"], n.attrs["permutation"]
    perm = tuple(p[i] for i in q)
    x = inner.operands[0]
    if perm == tuple(range(len(perm))):
        return x
    return g.add("transpose", [x], {"permutation": perm}, n.shape, n.dtype, n.loc)


def broadcast_of_broadcast(n, g):
    """broadcast(broadcast(x, d1), d2)  ==>  broadcast(x, d2∘d1) ;  identity broadcast ==> x"""
    if n.op != "broadcast_in_dim":
        return None
    x = n.operands[0]
    dims = n.attrs["broadcast_dimensions"]
    if x.shape == n.shape and tuple(dims) == tuple(range(len(dims))):
        return x
    if x.op == "broadcast_in_dim":
        inner = x.operands[0]
        composed = tuple(dims[d] for d in x.attrs["broadcast_dimensions"])
        return g.add("broadcast_in_dim", [inner], {"shape": n.shape,
                                                  "broadcast_dimensions": composed},
                     n.shape, n.dtype, n.loc)


def neutral_elements(n, g):
    """x * 1 ==> x ;  x + (-0.0) ==> x ;  x + 0 ==> x (integers) ;  x - 0 ==> x"""
    if n.op not in ("multiply", "add", "subtract") or n.dtype.kind == "b":
        return None
    a, b = n.operands
    if n.op == "multiply":
        for x, y in ((a, b), (b, a)):
            if _is_scalar_const(y, 1) and x.shape == n.shape:
                return x
        return None
    zero = -0.0 if n.dtype.kind == "f" and n.op == "add" else 0
    candidates = ((a, b), (b, a)) if n.op == "add" else ((a, b),)
    for x, y in candidates:
        if y.dtype.kind == "f" and n.op == "subtract":
            if _is_scalar_const(y, 0.0) and x.shape == n.shape:  # x - (+0.0) == x
                return x
        elif _is_scalar_const(y, zero) and x.shape == n.shape:
            return x


def double_negation(n, g):
    """-(-x) ==> x"""
    if n.op == "negative" and n.operands[0].op == "negative":
        return n.operands[0].operands[0]


def int_self_subtract(n, g):
    """x - x ==> 0 for integers"""
    if n.op == "subtract" and n.dtype.kind == "i" and n.operands[0] is n.operands[1]:
        zero = g.add("constant", (), {"value": np.zeros((), n.dtype)}, (), n.dtype, n.loc)
        return g.add("broadcast_in_dim", [zero], {"shape": n.shape, "broadcast_dimensions": ()},
                     n.shape, n.dtype, n.loc)


def fold_constants(n, g):
    """op(constants...) ==> constant, for small results (evaluated by the NumPy reference)"""
    if n.op in ops.SOURCES or n.op in ("fusion", "get") or not n.operands:
        return None
    if any(o.op != "constant" for o in n.operands) or n.size > FOLD_MAX_ELEMENTS:
        return None
    if n.op == "broadcast_in_dim" and n.operands[0].shape == ():
        return None  # a broadcast scalar is free inside fusions; keep it small
    with np.errstate(all="ignore"):
        try:
            value = PRIMITIVES[n.op].impl(*(o.attrs["value"] for o in n.operands), **n.attrs)
        except (ArithmeticError, ValueError, IndexError):
            return None  # leave it to fail (or not) at run time, as NumPy would
    value = np.ascontiguousarray(np.asarray(value, dtype=n.dtype).reshape(n.shape))
    value.flags.writeable = False
    return g.add("constant", (), {"value": value}, n.shape, n.dtype, n.loc)


RULES = (same_shape_convert, identity_reshape, transpose_of_transpose, broadcast_of_broadcast,
         neutral_elements, double_negation, int_self_subtract, fold_constants)


def _key(n: Node):
    if n.op == "constant":
        v = n.attrs["value"]
        return ("constant", v.dtype.str, v.shape, v.tobytes())
    attrs = tuple(sorted((k, v if not isinstance(v, np.ndarray) else v.tobytes())
                         for k, v in n.attrs.items()))
    return (n.op, tuple(id(o) for o in n.operands), attrs, n.shape, n.dtype.str)


def cse(graph: Graph) -> Graph:
    """Identical ops on identical operands become one node."""
    seen: dict = {}

    def rule(n, g):
        if n.op in ("parameter", "fusion", "get"):
            return None
        k = _key(n)
        if k in seen:
            return seen[k]  # n is now dead; dce drops it
        seen[k] = n
        return None

    return dce(rebuild(graph, [rule]))


def simplify(graph: Graph) -> Graph:
    return dce(rebuild(graph, RULES))


__all__ = ["cse", "simplify", "dce"]
