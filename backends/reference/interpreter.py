"""Evaluate a graph op by op with each primitive's NumPy reference implementation."""

from __future__ import annotations

import sys
import time

import numpy as np

from jitc.backends import Executable
from jitc.core import failures
from jitc.core.ir import Graph
from jitc.core.primitives import PRIMITIVES

SWITCH_S = 2e-4  # GIL switch interval while a budgeted loop runs (CPython's default: 5 ms)


class OutOfTime(Exception):
    """A loop was still running at the call's deadline (ReferenceExecutable.loop_budget)."""


def evaluate(graph: Graph, args, deadline: float | None = None) -> list[np.ndarray]:
    """Run `graph` on NumPy arrays; fusion nodes run their nested graphs. A loop raises
    OutOfTime if it starts a step after `deadline` (time.perf_counter's clock)."""
    env = {}
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            if node.op == "parameter":
                value = np.asarray(args[node.attrs["index"]])
            elif node.op == "constant":
                value = node.attrs["value"]
            elif node.op == "fusion":
                value = evaluate(node.subgraph, [env[o] for o in node.operands], deadline)
                if node.tuple_types is None:
                    value = value[0]
            elif node.op == "while":
                value = _loop(node, [env[o] for o in node.operands], deadline)
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


def _loop(node, operands, deadline) -> list:
    """A while node's carried values once its flag is false."""
    k = node.attrs["carried"]
    flag, carried, invariants = operands[0], operands[1 : 1 + k], operands[1 + k :]
    while bool(flag):
        if deadline is not None and time.perf_counter() > deadline:
            raise OutOfTime()
        *carried, flag = evaluate(node.subgraph, carried + invariants, deadline)
    return carried


class ReferenceExecutable(Executable):
    """The graph evaluated op by op with NumPy. `loop_budget`: seconds a call may run before
    a loop step it would start raises OutOfTime (the tiered runtime's reference tier: a
    loop of scalar steps runs op by op in Python, 1000x slower than compiled), or None."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.loop_budget = None

    def __call__(self, *arrays):
        budget = self.loop_budget
        if budget is None:
            outs = evaluate(self.graph, arrays)
        else:
            switch = sys.getswitchinterval()
            sys.setswitchinterval(min(switch, SWITCH_S))
            try:
                outs = evaluate(self.graph, arrays, time.perf_counter() + budget)
            finally:
                sys.setswitchinterval(switch)
        return [np.array(o, copy=True) for o in outs]

    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        return graph_stats(self.graph)
