"""Merge chains of region writes into one array into one kernel (fusion/region.py).

`A[..., 0, 0] = u; A[..., 0, 1] = v; ...` writes four slabs whose elements interleave in
memory: four kernels each pass over every cache line of A, one kernel passes once. A region
fusion whose base is another region fusion read by nothing else joins it when

- their updates have one shape (one loop computes both),
- their regions are disjoint (a later write overwrites nothing of an earlier one, so the
  order of the stores within the loop does not matter),
- the later value reads the array only inside its own region (what it reads there is what
  the array held before the chain: no earlier write touched it).

The merged kernel computes every value from the arrays as they were before the chain, which
is what each write saw: every input of a later write other than the array is computed
before the chain's first write or is independent of it (the intermediate versions of the
array are read by nothing else).
"""

from __future__ import annotations

from jitc.core.ir import Graph, Node
from jitc.fusion.forward import disjoint, region_box
from jitc.fusion.region import reads_base_in_region, region_of, write_chain

MAX_WRITES = 8  # one kernel stores into at most this many regions (a kernel's arrays grow)


def _is_region_fusion(n: Node) -> bool:
    return n.op == "fusion" and n.attrs["kind"] == "region"


def _joins(chain: list, later: Node, users, results: set) -> bool:
    """May region fusion `later`, whose base is the last of the region fusions `chain`,
    join them?"""
    last = chain[-1]
    if users[last] != [later] or later.operands.count(last) != 1 or last in results:
        return False  # another op reads the version `last` writes, or the caller gets it
    done = [w for n in chain for w in write_chain(n.subgraph)[0]]
    new = write_chain(later.subgraph)[0]
    if len(done) + len(new) > MAX_WRITES:
        return False
    updates = {w.operands[1].shape for w in done + new}
    shapes = {o.shape for n in chain + [later] for o in region_of(n).value.outputs}
    if len(updates) != 1 or len(shapes) != 1:
        return False
    if not all(disjoint(region_box(a), region_box(b)) for a in done for b in new):
        return False
    return reads_base_in_region(later)


def _merged_body(chain: list) -> tuple[Graph, list]:
    """The body of one region fusion doing the writes of `chain` in order, and its
    operands: the array the chain writes, then every other input once."""
    body = Graph(chain[0].subgraph.name)
    base = chain[0].operands[region_of(chain[0]).base]
    operands = [base]
    params = {base: body.add_parameter(base.shape, base.dtype, base.loc)}
    mappings = []
    for k, n in enumerate(chain):  # parameters first (the contract's canonical form)
        own_base = region_of(n).base
        mapping = {}
        for i, (p, top) in enumerate(zip(n.subgraph.params, n.operands)):
            if k > 0 and i == own_base:
                top = base  # read only in its own region: the array before the chain
            if top not in params:
                params[top] = body.add_parameter(top.shape, top.dtype, top.loc)
                operands.append(top)
            mapping[p] = params[top]
        mappings.append(mapping)
    written = params[base]  # the array as the writes so far leave it
    for n, mapping in zip(chain, mappings):
        sub = n.subgraph
        writes, _ = write_chain(sub)
        for m in sub.nodes:
            if m.op == "parameter":
                continue
            args = [mapping[o] for o in m.operands]
            if m in writes:
                args[0] = written
            mapping[m] = body.add(m.op, args, m.attrs, m.shape, m.dtype, m.loc)
            if m in writes:
                written = mapping[m]
    body.outputs = [written]
    return body, operands


def merge_writes(graph: Graph) -> Graph:
    """Chains of region fusions into one array, merged (in place; returns `graph`)."""
    users, results = graph.users(), set(graph.outputs)
    chain_of: dict = {}  # region fusion -> the chain it belongs to
    for n in graph.nodes:
        if not _is_region_fusion(n):
            continue
        base = n.operands[region_of(n).base]
        chain = chain_of.get(base)
        if chain is not None and base is chain[-1] and _joins(chain, n, users, results):
            chain.append(n)
        else:
            chain = [n]
        chain_of[n] = chain
    merged: dict = {}  # last node of a chain of several -> the merged fusion
    dropped = set()
    for chain in {id(c): c for c in chain_of.values()}.values():
        if len(chain) > 1:
            body, operands = _merged_body(chain)
            last = chain[-1]
            merged[last] = graph.add(
                "fusion", operands, {"kind": "region"}, last.shape, last.dtype, last.loc, body
            )
            dropped.update(chain[:-1])
    if not merged:
        return graph
    nodes = []
    for n in graph.nodes:
        if n in dropped or n in merged.values():
            continue
        n = merged.get(n, n)
        n.operands = tuple(merged.get(o, o) for o in n.operands)
        nodes.append(n)
    graph.nodes = nodes
    graph.outputs = [merged.get(o, o) for o in graph.outputs]
    into = {n: merged[c[-1]] for c in chain_of.values() if len(c) > 1 for n in c}
    notes = getattr(graph, "fusion_notes", {})
    graph.fusion_notes = {(v, into.get(c, c)): why for (v, c), why in notes.items()}
    return graph
