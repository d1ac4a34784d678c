"""Reads between the region writes of one array read the version holding the same bytes.

An ocean-model step writes a slab of `flux`, reads it back to update a slab of `T`, then
reads the next slab of `T` to write the next slab of `flux`: every version of both arrays
is read by the other chain, so neither chain of writes can run as one kernel
(fusion/merge_writes.py). But a read of version j of an array over a box that none of the
writes 1..j touched sees what version 0 holds there, and one that none of the writes
j+1..k touch sees what the last version holds: the read of the next slab of `T` reads the
argument itself, the read-back of the `flux` slab reads the final `flux`. Then each chain's
versions are read only by the next write, the nodes are put back in a dependency order, and
merge_writes joins each chain.

A chain is rewired only when every read of its intermediate versions can be, its writes
have one update shape and disjoint regions (so that it merges), and no cycle results:
reading version 0 later keeps its buffer alive, which costs a copy unless the chain merges.
"""

from __future__ import annotations

import heapq

from jitc.core.ir import Graph, Node


def box(start, stride, shape) -> list:
    """(lowest, highest) index along each axis of the elements a slice or region covers."""
    box = []
    for s, st, m in zip(start, stride, shape):
        last = s + st * (m - 1)
        box.append((min(s, last), max(s, last)))
    return box


def disjoint(a: list, b: list) -> bool:
    return any(ha < lb or hb < la for (la, ha), (lb, hb) in zip(a, b))


def region_box(w: Node) -> list:
    """The box update_slice w writes."""
    return box(w.attrs["start"], w.attrs["stride"], w.operands[1].shape)


def _chains(graph: Graph, users) -> list:
    """Maximal chains [v0, v1, ..., vk] (k >= 2): v(j+1) is the one region write whose base
    is vj."""

    def next_write(v):
        writes = [u for u in users[v] if u.op == "update_slice" and u.operands[0] is v]
        return writes[0] if len(writes) == 1 and writes[0].operands[1] is not v else None

    chains, seen = [], set()
    for n in graph.nodes:
        if n.op != "update_slice" or n in seen:
            continue
        base = n.operands[0]
        if base.op == "update_slice" and next_write(base) is n:
            continue  # not the first write of its chain
        chain = [base, n]
        while (w := next_write(chain[-1])) is not None:
            chain.append(w)
        seen.update(chain[1:])
        if len(chain) > 2:
            chains.append(chain)
    return chains


def _rewiring(chain: list, users) -> dict | None:
    """{(reader, version): version it reads instead}, or None where the chain stays."""
    writes = chain[1:]
    regions = [region_box(w) for w in writes]
    if len({w.operands[1].shape for w in writes}) != 1:
        return None
    if not all(disjoint(a, b) for i, a in enumerate(regions) for b in regions[i + 1 :]):
        return None
    moves = {}
    for j in range(1, len(chain) - 1):
        v = chain[j]
        for u in users[v]:
            if u is chain[j + 1] and u.operands[1] is not v:
                continue
            if u.op != "slice" or tuple(u.operands) != (v,):
                return None
            read = box(u.attrs["start"], u.attrs["stride"], u.shape)
            if all(disjoint(read, r) for r in regions[:j]):
                moves[u] = chain[0]
            elif all(disjoint(read, r) for r in regions[j:]):
                moves[u] = chain[-1]
            else:
                return None
    return moves


def _ordered(graph: Graph) -> list | None:
    """graph's nodes in a dependency order, nearest to their present one; None on a cycle."""
    position = {n: i for i, n in enumerate(graph.nodes)}
    waiting = {n: len(set(n.operands)) for n in graph.nodes}
    readers: dict = {n: [] for n in graph.nodes}
    for n in graph.nodes:
        for o in set(n.operands):
            readers[o].append(n)
    ready = [(position[n], n.id, n) for n in graph.nodes if not waiting[n]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for r in readers[n]:
            waiting[r] -= 1
            if not waiting[r]:
                heapq.heappush(ready, (position[r], r.id, r))
    return order if len(order) == len(graph.nodes) else None


def forward_reads(graph: Graph) -> Graph:
    """Rewire the reads of intermediate versions of region-write chains (in place). A chain
    whose rewiring would make a cycle is tried again after the others: two chains reading
    each other (flux and T) untangle one at a time."""
    progress = True
    while progress:
        progress = False
        users = graph.users()
        for chain in _chains(graph, users):
            moves = _rewiring(chain, users)
            if not moves:
                continue
            before = {u: u.operands for u in moves}
            for u, v in moves.items():
                u.operands = (v,)
            order = _ordered(graph)
            if order is None:  # the chain itself needs what would read its last version
                for u, operands in before.items():
                    u.operands = operands
                continue
            graph.nodes = order
            users = graph.users()
            progress = True
    return graph
