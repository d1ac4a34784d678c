"""Common subexpression elimination: identical ops on identical operands become one node.

Constants are equal by value (dtype, shape and bytes, so -0.0 != 0.0 and NaNs with the same
bits are one constant). Every primitive is pure, so any two equal keys compute the same value.
"""

from __future__ import annotations

import numpy as np

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.fusion.dce import dce
from jitc.fusion.rewrite import rewrite


def _attr_key(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, np.dtype):
        return v.str
    return v


def node_key(n: Node):
    """What makes two nodes interchangeable (operands compared by identity)."""
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in n.attrs.items()))
    return (n.op, tuple(id(o) for o in n.operands), attrs, n.shape, n.dtype.str)


def cse(graph: Graph) -> Graph:
    """e1 == e2 structurally  ==>  one node"""
    seen: dict = {}

    def same_as_earlier(n, g):
        """op(a, b) ; op(a, b)  ==>  the first one"""
        if n.op in ("parameter", "get") or n.op in ops.NESTED:
            return None
        key = node_key(n)
        first = seen.setdefault(key, n)
        return first if first is not n else None

    return dce(rewrite(graph, [same_as_earlier]))
