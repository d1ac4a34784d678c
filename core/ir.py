"""The graph IR: SSA nodes with an op, operands, typed attributes, shape, dtype and source location.

A Graph is a list of nodes in topological order (parameters first), plus its outputs.
A fusion node holds a nested Graph (like HLO); a fusion with several results has a
tuple type and is read through `get` nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitc.core.dtypes import type_str


@dataclass(frozen=True)
class Loc:
    """Where in the user's program an op came from."""

    file: str
    line: int
    function: str = ""
    # the NumPy call the user wrote on that line (np.take, x[...]), named in run-time errors
    api: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class Node:
    """One SSA value. `attrs` is treated as immutable once the node is built."""

    __slots__ = (
        "id",
        "op",
        "operands",
        "attrs",
        "shape",
        "dtype",
        "loc",
        "subgraph",
        "tuple_types",
    )

    def __init__(
        self, id, op, operands, attrs, shape, dtype, loc=None, subgraph=None, tuple_types=None
    ):
        self.id = id
        self.op = op
        self.operands = tuple(operands)
        self.attrs = attrs
        self.shape = None if shape is None else tuple(int(d) for d in shape)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.loc = loc
        self.subgraph = subgraph
        self.tuple_types = tuple_types

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        if self.tuple_types is not None:
            return sum(int(np.prod(s, dtype=np.int64)) * d.itemsize for s, d in self.tuple_types)
        return self.size * self.dtype.itemsize

    def type_str(self) -> str:
        if self.tuple_types is not None:
            return "(" + ", ".join(type_str(s, d) for s, d in self.tuple_types) + ")"
        return type_str(self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"<%{self.id} = {self.type_str()} {self.op}>"


class Graph:
    """A function body: parameters, nodes in topological order, and outputs."""

    def __init__(self, name: str = "main"):
        self.name = name
        self.params: list[Node] = []
        self.nodes: list[Node] = []
        self.outputs: list[Node] = []
        # output index -> parameter index: outputs that are the new contents of a parameter
        # (a caller's array the function writes; XLA's input/output aliasing). Buffer
        # planning keeps them computable straight into that parameter's buffer.
        self.aliases: dict[int, int] = {}
        self._next_id = 0

    def add(
        self,
        op,
        operands=(),
        attrs=None,
        shape=(),
        dtype=None,
        loc=None,
        subgraph=None,
        tuple_types=None,
    ) -> Node:
        node = Node(
            self._next_id, op, operands, attrs or {}, shape, dtype, loc, subgraph, tuple_types
        )
        self._next_id += 1
        self.nodes.append(node)
        if op == "parameter":
            self.params.append(node)
        return node

    def add_parameter(self, shape, dtype, loc=None) -> Node:
        return self.add("parameter", (), {"index": len(self.params)}, shape, dtype, loc)

    def users(self) -> dict[Node, list[Node]]:
        """Map each node to the nodes that read it (in order, with repeats)."""
        result: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for n in self.nodes:
            for o in n.operands:
                result[o].append(n)
        return result

    def live_nodes(self) -> list[Node]:
        """Nodes reachable from the outputs (and every parameter), in topological order."""
        live = set(self.params)
        stack = list(self.outputs)
        while stack:
            n = stack.pop()
            if n in live:
                continue
            live.add(n)
            stack.extend(n.operands)
        return [n for n in self.nodes if n in live]

    def count_ops(self, *, recursive: bool = True) -> int:
        """Ops that compute something (not parameters, constants or tuple reads)."""
        total = 0
        for n in self.nodes:
            if n.op in ("parameter", "constant", "get"):
                continue
            if n.subgraph is not None and recursive:
                total += n.subgraph.count_ops()
            else:
                total += 1
        return total

    def copy(self) -> Graph:
        """A structural copy (new Node objects; attrs and constant values shared)."""
        new = Graph(self.name)
        mapping: dict[Node, Node] = {}
        for n in self.nodes:
            sub = n.subgraph.copy() if n.subgraph is not None else None
            m = new.add(
                n.op,
                [mapping[o] for o in n.operands],
                dict(n.attrs),
                n.shape,
                n.dtype,
                n.loc,
                sub,
                n.tuple_types,
            )
            mapping[n] = m
        new.outputs = [mapping[o] for o in self.outputs]
        new.aliases = dict(self.aliases)
        return new

    def __str__(self) -> str:
        from jitc.core.ir_print import print_graph

        return print_graph(self)
