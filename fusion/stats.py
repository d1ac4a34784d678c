"""Counts every backend reports: ops, fusions, kernel launches, intermediate bytes.

- ops: compute ops in the graph, counting the ops nested in fusions;
- fusions: fusion nodes;
- kernels: launches per call. A fusion or a single op is one kernel; a dot is a library
  call (one launch); a dot fusion is the dot plus its epilogue kernel (two). parameter,
  constant, get and views (a reshape, a slice of a parameter: fusion/views.py) launch
  nothing;
- library_calls: the dots among the launches;
- temp_bytes: the arena of intermediates after buffer planning (fusion/buffers.py), i.e. the
  peak bytes of intermediates materialized per call;
- kernel_names: a name per launch, after the node's `%i` in as_text(): `fusion_3` for a
  fusion, `exp_7` for a single op, and for a dot fusion `fusion_3.dot` (the library call)
  then `fusion_3` (its epilogue).
- loops: `while` nodes. A loop counts as one launch (the copies of its carried values and
  its branches, named `while_5`) plus its step's launches once (named `while_5/fusion_2`),
  though they run once per iteration; its step's fusions and library calls count too.
"""

from __future__ import annotations

from jitc.core.ir import Graph, Node
from jitc.fusion.buffers import plan_buffers
from jitc.fusion.views import is_view

# Top-level ops that launch nothing: they name memory or are folded into addressing.
FREE = frozenset({"parameter", "constant", "get", "reshape"})


def launches(n: Node) -> int:
    if n.op in FREE or is_view(n):
        return 0
    if n.op == "fusion" and n.attrs.get("kind") == "dot":
        return 2
    if n.op == "while":
        return 1 + sum(launches(m) for m in n.subgraph.nodes)
    return 1


def kernel_names(graph: Graph, prefix: str = "") -> list[tuple[str, Node]]:
    """(name, node) per launch, in graph order (see the module docstring)."""
    out = []
    for i, n in enumerate(graph.nodes):
        k = launches(n)
        name = f"{prefix}{n.op}_{i}"
        if n.op == "fusion" and k == 2:
            out.append((f"{name}.dot", n))
        if k:
            out.append((name, n))
        if n.op == "while":
            out += kernel_names(n.subgraph, f"{name}/")
    return out


def _nodes(graph: Graph):
    """The graph's top-level nodes and its loops' steps', recursively."""
    for n in graph.nodes:
        yield n
        if n.op == "while":
            yield from _nodes(n.subgraph)


def graph_stats(graph: Graph) -> dict:
    library = sum(
        1
        for n in _nodes(graph)
        if n.op == "dot_general" or (n.op == "fusion" and n.attrs.get("kind") == "dot")
    )
    return {
        "ops": graph.count_ops(),
        "fusions": sum(1 for n in _nodes(graph) if n.op == "fusion"),
        "kernels": sum(launches(n) for n in graph.nodes),
        "library_calls": library,
        "loops": sum(1 for n in _nodes(graph) if n.op == "while"),
        "temp_bytes": plan_buffers(graph).size,
        "kernel_names": [name for name, _ in kernel_names(graph)],
    }
