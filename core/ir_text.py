"""HLO-like text for graphs: one op per line, typed values, attributes and source lines.

    graph layer(%0: f32[64,128], %1: f32[128,256]) {
      %2 = f32[64,256] dot_general(%0, %1), lhs_contracting={1}, ...  # mlp.py:7
      return (%2)
    }

`parse_graph(print_graph(g))` rebuilds an equal graph (printing it again gives the same text).
Constants with more than CONSTANT_PRINT_LIMIT elements print as a digest and need the
`constants` argument of parse_graph to be read back.
"""

from __future__ import annotations

import re

import numpy as np

from jitc.core.dtypes import BY_SHORT_NAME
from jitc.core.errors import VerifyError
from jitc.core.ir import Graph, Loc, Node
from jitc.core.ir_print import CONSTANT_PRINT_LIMIT, constant_digest, print_graph
from jitc.core.primitives import DTYPE, INT, INTS, PRIMITIVES, STR

__all__ = ["parse_graph", "print_graph", "constant_digest", "CONSTANT_PRINT_LIMIT"]

# ----------------------------------------------------------------------------- parser

_TYPE = r"[a-z0-9]+\[[0-9,]*\]"
_HEADER = re.compile(r"\s*graph (\w+)\((.*)\) \{$")
_PARAM = re.compile(rf"%(\d+): ({_TYPE})")
_NODE = re.compile(rf"\s*%(\d+) = (\(.*?\)|{_TYPE}) (\w+)\(([^)]*)\)(.*?)( \{{)?(  # (.*))?$")
_RETURN = re.compile(r"\s*return \((.*)\)$")
_LOC = re.compile(r"(.*):(\d+)(?: \((.*)\))?$")


def _parse_type(text):
    m = re.fullmatch(r"([a-z0-9]+)\[([0-9,]*)\]", text.strip())
    if not m or m.group(1) not in BY_SHORT_NAME:
        raise VerifyError(f"bad type {text!r}")
    shape = tuple(int(d) for d in m.group(2).split(",") if d)
    return shape, BY_SHORT_NAME[m.group(1)]


def _split_attrs(text):
    """', a={1,2}, b=f32' -> {'a': '{1,2}', 'b': 'f32'} (commas inside braces are kept)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            if cur.strip():
                out.append(cur)
            cur = ""
            continue
        depth += ch in "{<"
        depth -= ch in "}>"
        cur += ch
    if cur.strip():
        out.append(cur)
    return dict(part.strip().split("=", 1) for part in out)


def _parse_attr(kind, text, shape, dtype, constants):
    if kind == INT:
        return int(text)
    if kind == INTS:
        return tuple(int(v) for v in text.strip("{}").split(",") if v)
    if kind == DTYPE:
        return BY_SHORT_NAME[text]
    if kind == STR:
        return text
    m = re.fullmatch(r"<\d+ values sha1=(\w+)>", text)
    if m:
        for value in constants or ():
            if constant_digest(value) == m.group(1):
                return value
        raise VerifyError(f"constant {text} not given to parse_graph(constants=...)")
    items = [v for v in text.strip("{}").split(",") if v]
    if dtype.kind == "b":
        vals = [v == "true" for v in items]
    elif dtype.kind == "f":
        vals = [float(v) for v in items]
    elif dtype.kind == "c":
        vals = [complex(v) for v in items]
    else:
        vals = [int(v) for v in items]
    return np.array(vals, dtype=dtype).reshape(shape)


def parse_graph(text: str, constants=None) -> Graph:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    graph, pos = _parse_body(lines, 0, constants)
    if pos != len(lines):
        raise VerifyError(f"unexpected text after graph: {lines[pos]!r}")
    return graph


def _parse_body(lines, pos, constants):
    m = _HEADER.match(lines[pos])
    if not m:
        raise VerifyError(f"expected 'graph NAME(...) {{', got {lines[pos]!r}")
    graph = Graph(m.group(1))
    values: dict[str, Node] = {}
    for pm in _PARAM.finditer(m.group(2)):
        shape, dtype = _parse_type(pm.group(2))
        values[pm.group(1)] = graph.add_parameter(shape, dtype)
    pos += 1
    while True:
        line = lines[pos]
        rm = _RETURN.match(line)
        if rm:
            graph.outputs = [values[v.strip()[1:]] for v in rm.group(1).split(",") if v.strip()]
            return graph, pos + 2
        nm = _NODE.match(line)
        if not nm:
            raise VerifyError(f"cannot parse line {line!r}")
        vid, typ, op, args, attr_text, opens, _, loc_text = nm.groups()
        if op not in PRIMITIVES:
            raise VerifyError(f"unknown op {op!r} in {line!r}")
        operands = [values[a.strip()[1:]] for a in args.split(",") if a.strip()]
        tuple_types = None
        if typ.startswith("("):
            tuple_types = tuple(_parse_type(t) for t in re.findall(_TYPE, typ))
            shape = dtype = None
        else:
            shape, dtype = _parse_type(typ)
        raw = _split_attrs(attr_text)
        kinds = PRIMITIVES[op].attrs
        attrs = {k: _parse_attr(kinds[k], v, shape, dtype, constants) for k, v in raw.items()}
        loc = None
        if loc_text:
            lm = _LOC.match(loc_text.strip())
            loc = Loc(lm.group(1), int(lm.group(2)), lm.group(3) or "")
        sub = None
        pos += 1
        if opens:
            sub, pos = _parse_body(lines, pos, constants)
            if lines[pos - 1].strip() != "}" or lines[pos].strip() != "}":
                raise VerifyError(f"unclosed fusion body near {lines[pos]!r}")
            pos += 1
        node = graph.add(op, operands, attrs, shape, dtype, loc, sub, tuple_types)
        values[vid] = node
