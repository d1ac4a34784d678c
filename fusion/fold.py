"""Constant folding: ops whose operands are all constants become constants.

Values come from the primitive's own NumPy reference (jitc.primitives), under
np.errstate(all="ignore"), so a folded value is exactly what the reference backend would
compute at run time. Results above FOLD_MAX_ELEMENTS stay ops: folding would only trade a
cheap fused computation for a large array in memory. An expanding broadcast is never
folded (inside a fusion it is free, and constants should not grow); elementwise ops on
broadcast scalars fold to a broadcast of the folded scalar, whatever the size.
"""

from __future__ import annotations

import numpy as np

from jitc import ops
from jitc.fusion.dce import dce
from jitc.fusion.rewrite import numel, rewrite
from jitc.ir import Graph, Node
from jitc.primitives import PRIMITIVES

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


def _constant(g: Graph, value, like: Node) -> Node:
    return g.add("constant", (), {"value": value}, value.shape, value.dtype, like.loc)


def fold_constants(n, g):
    """op(c1, ..., ck)  ==>  constant(op(c1, ..., ck))   (at most FOLD_MAX_ELEMENTS results)"""
    if n.op in ops.SOURCES or n.op in ("fusion", "get") or not n.operands:
        return None
    if numel(n) > FOLD_MAX_ELEMENTS or any(o.op != "constant" for o in n.operands):
        return None
    if n.op == "broadcast_in_dim" and numel(n) > numel(n.operands[0]):
        return None  # a broadcast is free inside a fusion; never grow a constant
    value = _evaluate(n, [o.attrs["value"] for o in n.operands])
    return None if value is None else _constant(g, value, n)


def _scalar_source(n: Node):
    """The shape-() constant that `n` broadcasts, or None."""
    if n.op == "constant" and n.shape == ():
        return n
    if n.op == "broadcast_in_dim" and n.operands[0].op == "constant" \
            and n.operands[0].shape == ():
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
    return g.add("broadcast_in_dim", [c], {"shape": n.shape, "broadcast_dimensions": ()},
                 n.shape, n.dtype, n.loc)


RULES = (fold_constants, fold_scalar_broadcasts)


def fold(graph: Graph) -> Graph:
    return dce(rewrite(graph, RULES))
