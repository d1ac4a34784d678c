"""Constant folding: ops whose operands are all constants become constants.

Values come from the primitive's own NumPy reference (jitc.core.primitives), under
np.errstate(all="ignore"), so a folded value is exactly what the reference backend would
compute at run time. Results above FOLD_MAX_ELEMENTS stay ops: folding would only trade a
cheap fused computation for a large array in memory. An expanding broadcast is never
folded (inside a fusion it is free, and constants should not grow); elementwise ops on
broadcast scalars fold to a broadcast of the folded scalar, whatever the size.
"""

from __future__ import annotations

import numpy as np

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.core.primitives import PRIMITIVES
from jitc.fusion.dce import dce
from jitc.fusion.rewrite import numel, rewrite

FOLD_MAX_ELEMENTS = 1024


def _evaluate(n: Node, values):
    with np.errstate(all="ignore"):
        try:
            value = PRIMITIVES[n.op].impl(*values, **n.attrs)
        except (ArithmeticError, ValueError, IndexError):
            return None  # leave it to happen (or not) at run time, as NumPy would
    value = np.asarray(value).astype(n.dtype, order="C").reshape(n.shape)  # a C-order copy
    value.flags.writeable = False
    return value


def _known(n: Node) -> bool:
    """A value known at compile time: a constant, an iota, or a broadcast of one."""
    if n.op == "broadcast_in_dim":
        return _known(n.operands[0])
    return n.op in ("constant", "iota")


def _value(n: Node):
    if n.op == "constant":
        return n.attrs["value"]
    return PRIMITIVES[n.op].impl(*map(_value, n.operands), **n.attrs)


def _constant(g: Graph, value, like: Node) -> Node:
    return g.add("constant", (), {"value": value}, value.shape, value.dtype, like.loc)


def fold_constants(n, g):
    """op(c1, ..., ck)  ==>  constant(op(c1, ..., ck))   (at most FOLD_MAX_ELEMENTS results;
    the c's constants, iotas or broadcasts of them: np.tril's mask)"""
    if n.op in ops.SOURCES or n.op == "get" or n.op in ops.NESTED or not n.operands:
        return None
    if numel(n) > FOLD_MAX_ELEMENTS or not all(map(_known, n.operands)):
        return None
    if n.op == "broadcast_in_dim" and numel(n) > numel(n.operands[0]):
        return None  # a broadcast is free inside a fusion; never grow a constant
    # An iota or a broadcast alone stays (free inside a fusion); an op on them folds.
    value = _evaluate(n, [_value(o) for o in n.operands])
    return None if value is None else _constant(g, value, n)


def _scalar_source(n: Node):
    """The shape-() constant that `n` broadcasts, or None."""
    if n.op == "constant" and n.shape == ():
        return n
    if n.op == "broadcast_in_dim" and n.operands[0].op == "constant" and n.operands[0].shape == ():
        return n.operands[0]
    return None


def fold_scalar_broadcasts(n, g):
    """op(broadcast(c1), ..., broadcast(ck))  ==>  broadcast(constant(op(c1, ..., ck)))"""
    if n.op not in ops.ELEMENTWISE or n.shape == () or not n.operands:
        return None
    scalars = [_scalar_source(o) for o in n.operands]
    if any(s is None for s in scalars):
        return None
    probe = Node(-1, n.op, scalars, n.attrs, (), n.dtype)
    value = _evaluate(probe, [s.attrs["value"] for s in scalars])
    if value is None:
        return None
    c = _constant(g, value, n)
    return g.add(
        "broadcast_in_dim",
        [c],
        {"shape": n.shape, "broadcast_dimensions": ()},
        n.shape,
        n.dtype,
        n.loc,
    )


def fold_boolean_select(n, g):
    """select(p, broadcast(true), broadcast(false))  ==>  p   (np.tril(np.ones(.., bool)))"""
    if n.op != "select" or n.dtype != np.dtype(bool) or n.operands[0].shape != n.shape:
        return None
    t, f = (_scalar_source(o) for o in n.operands[1:])
    if t is None or f is None or not t.attrs["value"] or f.attrs["value"]:
        return None
    return n.operands[0]


RULES = (fold_constants, fold_scalar_broadcasts, fold_boolean_select)


def fold(graph: Graph) -> Graph:
    return dce(rewrite(graph, RULES))
