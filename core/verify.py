"""The verifier: every node's type agrees with its primitive's rule; operands come first."""

from __future__ import annotations

import numpy as np

from jitc.core.dtypes import type_str
from jitc.core.errors import ShapeError, VerifyError
from jitc.core.ir import Graph, Node
from jitc.core.primitives import PRIMITIVES, WHILE_STOPS


def _context(graph: Graph, node: Node) -> str:
    """The lines of the printed graph around `node`, to show what is wrong where."""
    lines = str(graph).splitlines()
    name = f"  %{graph.nodes.index(node)} = " if node in graph.nodes else None
    index = next((i for i, ln in enumerate(lines) if name and ln.startswith(name)), 0)
    lo, hi = max(0, index - 3), min(len(lines), index + 4)
    return "\n".join(("--> " if i == index else "    ") + lines[i] for i in range(lo, hi))


def _types(operands):
    return [(o.shape, o.dtype) for o in operands]


def verify(graph: Graph) -> Graph:
    """Raise VerifyError with the IR around the first bad node; return the graph if valid."""
    seen: set[Node] = set()
    for i, p in enumerate(graph.params):
        if p.attrs.get("index") != i:
            raise VerifyError(f"parameter {p} has index {p.attrs.get('index')}, expected {i}")
    for node in graph.nodes:

        def bad(msg, node=node):
            raise VerifyError(f"{msg}\n{_context(graph, node)}")

        if node.op not in PRIMITIVES:
            bad(f"unknown op {node.op!r}")
        prim = PRIMITIVES[node.op]
        for o in node.operands:
            if o not in seen:
                bad(f"operand {o} used before it is defined (or not in this graph)")
            if o.tuple_types is not None and node.op != "get":
                bad(f"{node.op} reads the tuple {o} directly; use get")
        if prim.n_operands is not None and len(node.operands) != prim.n_operands:
            bad(f"{node.op} takes {prim.n_operands} operands, got {len(node.operands)}")
        missing = set(prim.attrs) - set(node.attrs)
        if missing or set(node.attrs) - set(prim.attrs):
            bad(f"{node.op} attributes {sorted(node.attrs)} != {sorted(prim.attrs)}")
        if node.op == "fusion":
            _verify_fusion(node, bad)
        elif node.op == "while":
            _verify_while(node, bad)
        elif node.op == "get":
            (tup,) = node.operands
            idx = node.attrs["index"]
            if tup.tuple_types is None or not 0 <= idx < len(tup.tuple_types):
                bad(f"get index {idx} does not name an element of {tup.type_str()}")
            if (node.shape, node.dtype) != tup.tuple_types[idx]:
                bad(f"get result {node.type_str()} != element {idx} of {tup.type_str()}")
        elif node.op != "parameter":
            try:
                shape, dtype = prim.infer(_types(node.operands), node.attrs)
            except ShapeError as e:
                bad(str(e))
            if tuple(shape) != node.shape or np.dtype(dtype) != node.dtype:
                bad(
                    f"{node.op} result is {node.type_str()}, its rule gives "
                    f"{type_str(shape, dtype)}"
                )
        seen.add(node)
    for o in graph.outputs:
        if o not in seen:
            raise VerifyError(f"output {o} is not a node of graph {graph.name}")
    return graph


def _verify_fusion(node: Node, bad):
    sub = node.subgraph
    if sub is None:
        bad("fusion without a nested graph")
    verify(sub)
    if _types(sub.params) != _types(node.operands):
        bad("fusion operands do not match its nested parameters")
    out_types = tuple((o.shape, o.dtype) for o in sub.outputs)
    if node.tuple_types is not None:
        if tuple(node.tuple_types) != out_types:
            bad("fusion tuple type does not match its nested outputs")
    elif len(out_types) != 1 or out_types[0] != (node.shape, node.dtype):
        bad("fusion type does not match its nested output")


def _verify_while(node: Node, bad):
    """while(flag, carried..., invariants...): its step maps (carried, invariants) to
    (carried, the next flag), types unchanged."""
    step = node.subgraph
    if step is None:
        bad("while without a step graph")
    verify(step)
    if node.attrs["stops"] not in WHILE_STOPS:
        bad(f"while stops={node.attrs['stops']!r}, not one of {WHILE_STOPS}")
    k = node.attrs["carried"]
    flag, carried = node.operands[0], node.operands[1 : 1 + k]
    if (flag.shape, flag.dtype) != ((), np.dtype(bool)) or len(carried) != k:
        bad("while takes a bool flag, then its carried values")
    if _types(step.params) != _types(node.operands[1:]):
        bad("while operands do not match its step's parameters")
    if _types(step.outputs) != _types(carried) + [((), np.dtype(bool))]:
        bad("while step outputs are not its carried values and a bool flag")
    if tuple(node.tuple_types or ()) != tuple(_types(carried)):
        bad("while tuple type is not its carried values' types")
