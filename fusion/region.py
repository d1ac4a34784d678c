"""Region writes fused with the computation of their values (XLA's in-place fusion of a
dynamic-update-slice): one kernel over the region computes each value and stores it into the
array it writes, so `A[1:-2, 2:-2, :, ip, kr] = x * c` costs the bytes of the region.

A region fusion is a fusion of kind "region" whose body ends in a chain of update_slices of
one body parameter (the array written, `base`); the rest of the body computes the updates.
Several writes of disjoint regions over one shape share a kernel (`merge`: the four slabs
A[..., ip, kr] of a 5-d array written in one pass over its cache lines, not four).

Backends run `value`, a loop body with one output per write over the regions' common shape
(their axes of one element dropped), and store output k into a view of the result taking
write k's `start` and `stride` on its `spanned` axes and the start alone on the others.
Every value reads the base as it was before the kernel: a later write's value may read only
its own region of it (which no earlier write of the chain touched).

The kernel may overwrite its base in place when each value reads the base only inside its
own region, each element by the iteration that writes it (`x[r] += v`); `x[1:] = x[:-1] * 2`
reads elements the kernel has overwritten already, so its base is copied first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitc.core import ops
from jitc.core.ir import Graph, Node
from jitc.fusion.access import extend, squeeze
from jitc.fusion.contract import ContractError, Space, signatures, write_chain


@dataclass(frozen=True)
class Write:
    start: tuple
    stride: tuple
    spanned: tuple  # base axes the value's axes run along, in order


@dataclass(frozen=True)
class Region:
    base: int  # operand index of the array written
    value: Graph  # output k: the update of write k, over the regions' squeezed shape
    writes: tuple  # of Write, in program order


def is_region_write(n: Node) -> bool:
    """Does n write regions of its base, leaving the rest of it as it was?"""
    return n.op == "update_slice" or (n.op == "fusion" and n.attrs["kind"] == "region")


def _unit_reshapes(update: Node, inside: set) -> Node:
    """The value under the reshapes inside the body that only add or drop axes of one
    element (a region's integer indices)."""
    v = update
    while (
        v.op == "reshape"
        and (v.operands[0] in inside or v.operands[0].op == "parameter")
        and squeeze(v.operands[0].shape) == squeeze(update.shape)
        and v.shape != squeeze(update.shape)
    ):
        v = v.operands[0]
    return v


def region_of(node: Node) -> Region:
    """The parts of region fusion `node` a backend runs."""
    body = node.subgraph
    chain, p_base = write_chain(body)
    inside = {n for n in body.nodes if n.op != "parameter"}
    values, writes = [], []
    for write in chain:
        update = write.operands[1]
        value = _unit_reshapes(update, inside)
        if value.shape == squeeze(update.shape):
            spanned = tuple(d for d, s in enumerate(update.shape) if s != 1)
        else:
            value = update
            spanned = tuple(range(len(update.shape)))
        values.append(value)
        writes.append(Write(tuple(write.attrs["start"]), tuple(write.attrs["stride"]), spanned))
    graph = Graph(f"{body.name}_value")
    graph.params = list(body.params)
    graph.outputs = values
    graph.nodes = body.nodes
    graph.nodes = graph.live_nodes()
    return Region(p_base.attrs["index"], graph, tuple(writes))


def _reads_of(value: Node, base: Node, nodes) -> set | None:
    """The signatures at which the loop computing `value` reads `base` (None: unknown)."""
    live = Graph("value")
    live.outputs, live.nodes = [value], list(nodes)
    live.nodes = live.live_nodes()
    members = {n for n in live.nodes if n.op != "parameter"}
    if not members:
        return {("full",)} if value is base else set()
    try:
        sigs = signatures(live.nodes, members, [value], Space(value.shape))
    except ContractError:
        return None
    return {
        extend(s, u, k)
        for u in members
        for k, o in enumerate(u.operands)
        if o is base
        for s in sigs[u]
    }


def reads_base_in_region(node: Node) -> bool:
    """Does region fusion `node` read its base only at the element each iteration of each
    write writes?"""
    r = region_of(node)
    base = r.value.params[r.base]
    for value, w in zip(r.value.outputs, r.writes):
        reads = _reads_of(value, base, r.value.nodes)
        if reads is None or reads - {("full", ("slice", w.start, w.stride, base.shape))}:
            return False
    return True


def _pointwise(value: Graph, shape: tuple) -> bool:
    """Is every op of `value` elementwise over `shape`, on arrays of `shape` and scalars
    (so it computes the same over any reshape of the loop)?"""
    for n in value.nodes:
        if n.op == "parameter" or (n.op == "constant" and n.shape == ()):
            continue
        scalar_broadcast = n.op == "broadcast_in_dim" and n.operands[0].shape == ()
        if n.shape != shape or not (scalar_broadcast or n.op in ops.ELEMENTWISE):
            return False
        if any(o.op == "parameter" and o.shape != shape for o in n.operands):
            return False
    return all(o.shape == shape for o in value.outputs)


def collapsed(region: Region, base_shape: tuple) -> tuple[Region, tuple] | None:
    """`region` over a loop with fewer axes, and the shape its base is viewed as, where its
    values are pointwise and an axis of the regions is the whole of its base axis: a slab
    A[1:-2, 2:-2, :, ip, kr] of a (n, n, nz, 2, 2) array is a region of one axis of
    (n - 4) * nz elements in its base viewed as (n, n * nz, 2, 2); a loop over rows of nz
    elements spent most of its time starting rows. None where nothing collapses."""
    shape = region.value.outputs[0].shape
    spans = {w.spanned for w in region.writes}
    if len(spans) != 1 or not _pointwise(region.value, shape):
        return None
    (spanned,) = spans
    if len(spanned) != len(shape):
        return None
    groups = [[0]] if shape else []
    for k in range(1, len(shape)):
        outer, d = spanned[k - 1], spanned[k]
        whole = all(
            w.start[d] == 0 and w.stride[d] == 1 and w.stride[outer] == 1 for w in region.writes
        )
        if d == outer + 1 and whole and shape[k] == base_shape[d]:
            groups[-1].append(k)
        else:
            groups.append([k])
    if len(groups) == len(shape):
        return None
    first = {spanned[g[0]]: [spanned[k] for k in g] for g in groups}
    merged = {d for g in groups for d in (spanned[k] for k in g[1:])}
    new_base, new_spanned, axis_of = [], [], {}
    for d in range(len(base_shape)):
        if d in merged:
            continue
        axis_of[d] = len(new_base)
        axes = first.get(d, [d])
        new_base.append(int(np.prod([base_shape[e] for e in axes], dtype=np.int64)))
        if d in first:
            new_spanned.append(len(new_base) - 1)
    writes = []
    for w in region.writes:
        start, stride = [], []
        for d in axis_of:
            axes = first.get(d, [d])
            inner = int(np.prod([base_shape[e] for e in axes[1:]], dtype=np.int64))
            start.append(w.start[d] * inner)
            stride.append(w.stride[d])
        writes.append(Write(tuple(start), tuple(stride), tuple(new_spanned)))
    loop = tuple(int(np.prod([shape[k] for k in g], dtype=np.int64)) for g in groups)
    return Region(region.base, _reshaped(region.value, shape, loop), tuple(writes)), tuple(new_base)


def _reshaped(value: Graph, shape: tuple, loop: tuple) -> Graph:
    """Pointwise `value` over `loop` instead of `shape` (the same number of elements)."""
    g = Graph(value.name)
    new = {}
    for n in value.nodes:
        at = loop if n.shape == shape else n.shape
        if n.op == "parameter":
            new[n] = g.add("parameter", (), n.attrs, at, n.dtype, n.loc)
            continue
        attrs = dict(n.attrs, shape=loop) if n.op == "broadcast_in_dim" else n.attrs
        new[n] = g.add(n.op, [new[o] for o in n.operands], attrs, at, n.dtype, n.loc)
    g.params = [new[p] for p in value.params]
    g.outputs = [new[o] for o in value.outputs]
    return g
