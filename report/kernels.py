"""The kernels of an optimized graph as the report lists them: a name per launch (the names
stats() gives, fusion/stats.py), what each reads and writes, its FLOPs where known, and which
of the backend's launches run it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitc.core.ir import Node
from jitc.fusion.report import _where
from jitc.fusion.stats import kernel_names


@dataclass
class Kernel:
    name: str
    node: Node
    bytes_read: int
    bytes_written: int
    flops: int | None  # dots only: elementwise work is not counted
    where: str  # the user's file:line of the node
    summary: str  # its ops, e.g. "dot_general, add, maximum, reduce[max], exp"
    runs: list = field(default_factory=list)  # indices of the cpu program kernels running it
    inside: str | None = None  # the kernel whose program kernel also runs this one (a dot
    # epilogue)


def _dot_flops(dot: Node) -> int:
    lhs = dot.operands[0]
    contracted = int(np.prod([lhs.shape[d] for d in dot.attrs["lhs_contracting"]], dtype=np.int64))
    return 2 * int(np.prod(dot.shape, dtype=np.int64)) * contracted


def _written(n: Node) -> int:
    if n.tuple_types is not None:
        return sum(int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize for s, d in n.tuple_types)
    return n.nbytes


def _op_name(m: Node) -> str:
    return f"reduce[{m.attrs['kind']}]" if m.op == "reduce" else m.op


def _summary(nodes) -> str:
    names = [_op_name(m) for m in nodes if m.op not in ("parameter", "constant")]
    return ", ".join(dict.fromkeys(names))


def kernels(graph) -> list[Kernel]:
    """One Kernel per launch name of `graph` (an optimized graph), in graph order."""
    out = []
    for name, n in kernel_names(graph):
        read = sum(o.nbytes for o in dict.fromkeys(n.operands) if o.tuple_types is None)
        if n.op == "while":  # its step's kernels are rows of their own
            summary = "loop: its carried values copied in and after each step, its test"
            out.append(Kernel(name, n, read, _written(n), None, _where(n), summary))
            continue
        body = n.subgraph.nodes if n.subgraph is not None else [n]
        dot = next((m for m in body if m.op == "dot_general"), None)
        if name.endswith(".dot"):  # the library call of a dot fusion
            params = dict(zip(n.subgraph.params, n.operands))
            read = sum(params[o].nbytes if o in params else o.nbytes for o in dot.operands)
            out.append(
                Kernel(name, n, read, dot.nbytes, _dot_flops(dot), _where(dot), "dot_general")
            )
            continue
        if n.op == "fusion" and n.attrs.get("kind") == "dot":  # its epilogue
            epilogue = [m for m in body if m is not dot]
            out.append(
                Kernel(
                    name,
                    n,
                    read - _reads_of(n, dot) + dot.nbytes,
                    _written(n),
                    None,
                    _where(n),
                    _summary(epilogue),
                )
            )
            continue
        out.append(
            Kernel(
                name,
                n,
                read,
                _written(n),
                _dot_flops(dot) if dot else None,
                _where(n),
                _summary(body),
            )
        )
    return out


def _reads_of(fusion: Node, dot: Node) -> int:
    """Bytes of the fusion's operands that only its dot reads."""
    params = dict(zip(fusion.subgraph.params, fusion.operands))
    users = fusion.subgraph.users()
    only_dot = [params[o] for o in dot.operands if o in params and users[o] == [dot]]
    return sum(o.nbytes for o in dict.fromkeys(only_dot))


def assign_runs(table: list[Kernel], program_kernels) -> list[int]:
    """Attach each kernel of the cpu program (plan.Kernel, which knows its node) to the
    table's kernels; returns those that belong to no node (copies into results)."""
    by_node: dict = {}
    for k in table:
        by_node.setdefault(k.node, []).append(k)
    orphans = []
    for i, launch in enumerate(program_kernels):
        named = by_node.get(launch.node)
        if named is None:
            orphans.append(i)
            continue
        named[-1].runs.append(i)
    for named in by_node.values():
        if len(named) == 2:  # a dot fusion: the dot, then its epilogue
            dot, epilogue = named
            if len(epilogue.runs) >= 2:  # the epilogue is a program kernel of its own
                dot.runs, epilogue.runs = epilogue.runs[:-1], epilogue.runs[-1:]
            else:  # one program kernel runs both
                dot.runs, epilogue.runs = epilogue.runs, []
                epilogue.inside = dot.name
    return orphans


def per_kernel(launch_values: list, launch_kernels: list, n_kernels: int) -> tuple:
    """(value per program kernel, the kernels that ran in a concurrent group) from a value
    per launch: a group's launch (executor: schedule.py) shares its value among its members."""
    values, grouped = [0.0] * n_kernels, set()
    for value, members in zip(launch_values, launch_kernels):
        for k in members:
            values[k] += value / len(members)
        if len(members) > 1:
            grouped.update(members)
    return values, grouped
