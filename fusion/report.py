"""Why two adjacent ops were not fused: the reason, the bytes it costs, both source lines."""

from __future__ import annotations

from jitc import ops
from jitc.ir import Graph, Node


def _where(n: Node) -> str:
    return f"{n.loc.file}:{n.loc.line}" if n.loc else "?"


def _reason(producer: Node, consumer: Node, readers: int) -> str:
    if producer.op == "dot_general" or consumer.op == "dot_general":
        if consumer.op in ("fusion", "dot_general") and _contains(consumer, "dot_general") \
                and producer.op != "parameter":
            return "a dot reads materialized operands (BLAS needs them in memory)"
    if producer.op == "fusion" and producer.attrs.get("kind") == "dot" and readers > 1:
        return "the dot result has several readers"
    if readers > 1 and _expensive(producer):
        return (f"{readers} consumers read it and it is expensive "
                f"({_first_expensive(producer)}); fusing would compute it {readers} times")
    if producer.op == "reshape" or consumer.op == "reshape":
        return "a reshape between them changes the iteration space"
    return "the consumer iterates a different space (layout the kernel cannot share)"


def _contains(n: Node, op: str) -> bool:
    if n.op == op:
        return True
    return n.subgraph is not None and any(m.op == op for m in n.subgraph.nodes)


def _expensive(n: Node) -> bool:
    nodes = n.subgraph.nodes if n.subgraph is not None else [n]
    return any(m.op in ops.EXPENSIVE or m.op in ops.REDUCTIONS or m.op == "dot_general"
               for m in nodes)


def _first_expensive(n: Node) -> str:
    nodes = n.subgraph.nodes if n.subgraph is not None else [n]
    for m in nodes:
        if m.op in ops.EXPENSIVE or m.op in ops.REDUCTIONS or m.op == "dot_general":
            return m.op
    return n.op


def _last_op(n: Node) -> Node:
    if n.subgraph is not None and n.subgraph.outputs:
        return n.subgraph.outputs[-1]
    return n


def boundaries(optimized: Graph):
    """(producer, consumer, reason, bytes) for every materialized edge between kernels."""
    users = optimized.users()
    out = []
    for p in optimized.nodes:
        if p.op in ("parameter", "constant", "get"):
            continue
        produced = [p] if p.tuple_types is None else users[p]
        for value in produced:
            consumers = [u for u in users[value] if u.op != "get"]
            for c in dict.fromkeys(consumers):
                out.append((value if value.op != "get" else p, c,
                            _reason(p, c, len(set(consumers))), value.nbytes))
    return out


def fusion_report(traced: Graph, optimized: Graph) -> str:
    rows = boundaries(optimized)
    head = (f"{optimized.name}: {traced.count_ops()} traced ops -> "
            f"{sum(1 for n in optimized.nodes if n.op not in ('parameter', 'constant', 'get'))}"
            f" kernels; {len(rows)} unfused boundaries")
    lines = [head]
    for p, c, reason, nbytes in rows:
        lp, lc = _last_op(p), _last_op(c)
        lines.append(f"  {p.op}[{p.attrs.get('kind', '')}] {p.type_str()} ({_where(lp)}) -> "
                     f"{c.op}[{c.attrs.get('kind', '')}] ({_where(lc)}): {reason}; "
                     f"{nbytes} bytes materialized")
    return "\n".join(lines)
