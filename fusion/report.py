"""Why two adjacent ops were not fused: the reason, the bytes it costs, both source lines.

Every value a kernel writes to memory and another kernel reads is a boundary. For each one
the report names the op that produced it and the op that reads it (inside their fusions),
with the user's file:line of both, the reason the fuser recorded when it kept them apart
(graph.fusion_notes, set by fusion/fuse.py and carried by later passes), and the bytes of the
intermediate. Reads through a reshape (a free bitcast) count as reads of the reshaped value.
"""

from __future__ import annotations

import os

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.fusion.contract import write_chain
from jitc.fusion.region import is_region_write, region_of
from jitc.fusion.stats import graph_stats


def _where(n: Node) -> str:
    if n.loc is None:
        return "?"
    path = n.loc.file
    try:
        rel = os.path.relpath(path)
        path = rel if not rel.startswith("..") else path
    except ValueError:
        pass
    return f"{path}:{n.loc.line}"


def _name(n: Node) -> str:
    if n.op == "reduce":
        return f"reduce[{n.attrs['kind']}]"
    if n.op == "fusion":
        return f"fusion[{n.attrs['kind']}]"
    return n.op


def producing_op(v: Node) -> Node:
    """The op that computes top-level value v (inside its fusion, if any)."""
    if v.op == "get":
        return v.operands[0].subgraph.outputs[v.attrs["index"]]
    if v.op == "fusion":
        return v.subgraph.outputs[0]
    return v


def reading_op(c: Node, v: Node) -> Node:
    """The first op of kernel c that reads top-level value v."""
    if c.op != "fusion":
        return c
    params = {p for p, top in zip(c.subgraph.params, c.operands) if top is v}
    for n in c.subgraph.nodes:
        if any(o in params for o in n.operands):
            return n
    return c


def _contains(n: Node, pred) -> Node | None:
    nodes = n.subgraph.nodes if n.op == "fusion" else [n]
    return next((m for m in nodes if pred(m)), None)


def infer_reason(v: Node, c: Node, n_readers: int) -> str:
    """A reason from structure alone, for boundaries without a recorded note."""
    p = producing_op(v)
    reader = reading_op(c, v)
    if reader.op == "dot_general":
        if p.op == "dot_general":
            return "dot output feeds a second dot (a dot reads its operands from memory)"
        return "a dot reads its operands from memory (library call)"
    expensive = _contains(
        v.operands[0] if v.op == "get" else v,
        lambda m: m.op in ops.EXPENSIVE or m.op in ops.REDUCTIONS or m.op == "dot_general",
    )
    if n_readers > 1 and expensive is not None:
        return (
            f"{n_readers} kernels read it and it computes {expensive.op}: fusing would "
            f"compute {expensive.op} {n_readers} times"
        )
    return "the consumer iterates another space than the producer"


def boundaries(optimized: Graph):
    """(value, consumer kernel, reason, bytes) for every materialized edge between kernels."""
    users = optimized.users()
    notes = getattr(optimized, "fusion_notes", {})

    def readers(v, seen=()):
        out = []
        for u in users[v]:
            if u.op == "reshape":  # a bitcast: its readers read v
                out += readers(u)
            elif u.op != "get":
                out.append(u)
        return list(dict.fromkeys(out))

    rows = []
    for v in optimized.nodes:
        if v.op in ("parameter", "constant", "reshape") or v.tuple_types is not None:
            continue
        consumers = readers(v)
        for c in consumers:
            why = notes.get((v, c)) or infer_reason(v, c, len(consumers))
            rows.append((v, c, why, v.nbytes))
    return rows


def _written_in_place(optimized: Graph) -> set:
    """The (loc, region) of the optimized graph's region writes that run in their array's
    memory: over an old version that dies there, or the argument itself where it is donated."""
    from jitc.fusion.buffers import can_write_into_parameter, plan_buffers

    plan = plan_buffers(optimized)
    donatable = {
        p for k, p in optimized.aliases.items() if can_write_into_parameter(optimized, p, k)
    }
    kept = set()
    for n in optimized.nodes:
        if not is_region_write(n):
            continue
        base, writes = n.operands[0], [n]
        if n.op == "fusion":
            base, writes = n.operands[region_of(n).base], write_chain(n.subgraph)[0]
        if n in plan.in_place or (base.op == "parameter" and base.attrs["index"] in donatable):
            kept.update(_region(w) for w in writes)
    return kept


def _region(n: Node) -> tuple:
    """What identifies region write n (an update_slice) across passes."""
    return (n.loc, n.shape, n.operands[1].shape, n.attrs["start"], n.attrs["stride"])


def whole_array_writes(traced: Graph, optimized: Graph) -> list:
    """(the traced write, bytes, why) for every region write into an array in memory that
    costs a pass over the whole array rather than the bytes of its region."""
    from jitc.fusion.expand import kept_writes

    kept = kept_writes(traced, optimized.aliases)
    in_place = _written_in_place(optimized)
    written = set(optimized.aliases.values())
    rows = []
    for n in traced.nodes:
        if n.op != "update_slice" or not n.operands[1].size:
            continue
        base = n.operands[0]
        if n in kept:
            if _region(n) not in in_place:
                why = "its old contents are read after the write: the array is copied first"
                rows.append((n, base.nbytes, why))
        elif base in kept or (base.op == "parameter" and base.attrs["index"] in written):
            why = (
                "the region is over 2/3 of the array: one pass writing its new version "
                "costs less than the region written aside and copied in"
            )
            rows.append((n, base.nbytes, why))
    return rows


def fusion_report(traced: Graph, optimized: Graph) -> str:
    rows = boundaries(optimized)
    s = graph_stats(optimized)
    lines = [
        f"{optimized.name}: {traced.count_ops()} traced ops -> {s['kernels']} kernel "
        f"launches ({s['fusions']} fusions, {s['library_calls']} library calls); "
        f"{len(rows)} boundaries not fused, temp_bytes {s['temp_bytes']}"
    ]
    index = {n: i for i, n in enumerate(optimized.nodes)}
    for v, c, why, nbytes in rows:
        p, r = producing_op(v), reading_op(c, v)
        lines.append(
            f"  {_name(p)} ({_where(p)}) -> {_name(r)} ({_where(r)}) "
            f"[%{index[v]} -> %{index[c]} {_name(c)}]: {why}; "
            f"{nbytes} bytes materialized ({v.type_str()})"
        )
    for n, nbytes, why in whole_array_writes(traced, optimized):
        lines.append(
            f"  write into {n.operands[0].type_str()} ({_where(n)}): a pass over the whole "
            f"array, {nbytes} bytes: {why}"
        )
    return "\n".join(lines)
