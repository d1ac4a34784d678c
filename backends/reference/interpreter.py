"""Evaluate a graph op by op with each primitive's NumPy reference implementation."""

from __future__ import annotations

import numpy as np

from jitc.backends import Executable
from jitc.core import failures
from jitc.core.ir import Graph
from jitc.core.primitives import PRIMITIVES


def evaluate(graph: Graph, args) -> list[np.ndarray]:
    """Run `graph` on NumPy arrays; fusion nodes run their nested graphs."""
    env = {}
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            if node.op == "parameter":
                value = np.asarray(args[node.attrs["index"]])
            elif node.op == "constant":
                value = node.attrs["value"]
            elif node.op == "fusion":
                value = evaluate(node.subgraph, [env[o] for o in node.operands])
                if node.tuple_types is None:
                    value = value[0]
            elif node.op == "while":
                value = _loop(node, [env[o] for o in node.operands])
            elif node.op == "get":
                value = env[node.operands[0]][node.attrs["index"]]
            else:
                impl = PRIMITIVES[node.op].impl
                try:
                    value = np.asarray(impl(*(env[o] for o in node.operands), **node.attrs))
                except (IndexError, ValueError, np.linalg.LinAlgError) as e:
                    raise failures.at_node(node, e) from None
                if value.dtype != node.dtype:  # e.g. np.sign on bool inputs
                    value = value.astype(node.dtype)
            env[node] = value
    return [env[o] for o in graph.outputs]


def _loop(node, operands) -> list:
    """A while node's carried values once its flag is false."""
    k = node.attrs["carried"]
    flag, carried, invariants = operands[0], operands[1 : 1 + k], operands[1 + k :]
    while bool(flag):
        *carried, flag = evaluate(node.subgraph, carried + invariants)
    return carried


class ReferenceExecutable(Executable):
    """The graph evaluated op by op with NumPy."""

    def __init__(self, graph: Graph):
        self.graph = graph

    def __call__(self, *arrays):
        outs = evaluate(self.graph, arrays)
        return [np.array(o, copy=True) for o in outs]

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.graph)
