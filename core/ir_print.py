"""Graphs as text, HLO-like: one op per line, typed values, attributes and source lines
(ir_text.py reads it back). Apart from the parser so that ir.py prints graphs without
importing what builds them."""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

import numpy as np

from jitc.core.dtypes import SHORT_NAMES
from jitc.core.primitives import ARRAY, DTYPE, INTS, PRIMITIVES

if TYPE_CHECKING:  # ir.py imports this module to print graphs
    from jitc.core.ir import Graph, Loc, Node

CONSTANT_PRINT_LIMIT = 16


def constant_digest(value: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()[:12]


def _fmt_scalar(v, dtype):
    if dtype.kind == "b":
        return "true" if v else "false"
    if dtype.kind == "f":
        return repr(float(v))  # 'nan', 'inf', '-inf', '0.1'
    if dtype.kind == "c":
        return repr(complex(v))  # '(1-2j)', '(nan+infj)': complex() reads it back
    return str(int(v))


def _fmt_attr(kind, value):
    if kind == INTS:
        return "{" + ",".join(str(int(v)) for v in value) + "}"
    if kind == DTYPE:
        return SHORT_NAMES[np.dtype(value)]
    if kind == ARRAY:
        if value.size > CONSTANT_PRINT_LIMIT:
            return f"<{value.size} values sha1={constant_digest(value)}>"
        flat = value.ravel()
        return "{" + ",".join(_fmt_scalar(v, value.dtype) for v in flat) + "}"
    return str(value)


def _fmt_loc(loc: Loc | None) -> str:
    if loc is None:
        return ""
    fn = f" ({loc.function})" if loc.function else ""
    return f"  # {os.path.basename(loc.file)}:{loc.line}{fn}"


def print_graph(graph: Graph, indent: str = "") -> str:
    names: dict[Node, str] = {}
    for i, n in enumerate(graph.nodes):
        names[n] = f"%{i}"
    params = ", ".join(f"{names[p]}: {p.type_str()}" for p in graph.params)
    lines = [f"{indent}graph {graph.name}({params}) {{"]
    for n in graph.nodes:
        if n.op == "parameter":
            continue
        prim = PRIMITIVES[n.op]
        args = ", ".join(names.get(o, f"%?{o.id}") for o in n.operands)
        attrs = "".join(
            f", {k}={_fmt_attr(kind, n.attrs[k])}" for k, kind in prim.attrs.items() if k in n.attrs
        )
        line = f"{indent}  {names[n]} = {n.type_str()} {n.op}({args}){attrs}"
        if n.subgraph is not None:
            lines.append(line + " {" + _fmt_loc(n.loc))
            lines.append(print_graph(n.subgraph, indent + "    "))
            lines.append(f"{indent}  }}")
        else:
            lines.append(line + _fmt_loc(n.loc))
    outs = ", ".join(names.get(o, f"%?{o.id}") for o in graph.outputs)
    lines.append(f"{indent}  return ({outs})")
    lines.append(f"{indent}}}")
    return "\n".join(lines)
