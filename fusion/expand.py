"""Expand functional writes into ops every backend already fuses.

The tracer records NumPy's writes as update ops on a new version of a buffer
(trace/mutation/functional.py). A region write into a buffer that lives in memory anyway (a
written argument or captured array: graph.aliases; an earlier region write's result) stays an
update_slice when the region is under 2/3 of the buffer: a backend then runs it as a kernel
over the region only, in the buffer's memory where the old version dies at it
(fusion/buffers.py), for about 3 region bytes (its value written, read, and written into
place) against 2 buffer bytes for an expanded write (every element of the new version
written once). The others become plain array ops, so the write fuses with the computation of
the buffer and of its value into one loop:

- update_slice with unit strides: concatenates of the untouched parts of the buffer and
  the update, one per sliced axis (x[1:-1, 1:-1] = v is rows 0 and -1 around columns 0
  and -1 around v); with other strides: a gather of the update selected where the region is;
  over the whole buffer: the update itself;
- scatter with constant indices: the last write to each row wins (mode "set"), or the
  updates apply in order, one round per repeat (np.<ufunc>.at): a gather of the updates
  selected where a round writes.

A scatter with traced indices stays a scatter (a backend runs it as a sequential kernel).
"""

from __future__ import annotations

import numpy as np

from jitc.core.ir import Graph, Node
from jitc.core.primitives import PRIMITIVES
from jitc.fusion.dce import dce
from jitc.fusion.rewrite import rewrite


def _add(g: Graph, op: str, operands, loc, **attrs) -> Node:
    shape, dtype = PRIMITIVES[op].infer([(o.shape, o.dtype) for o in operands], attrs)
    return g.add(op, operands, attrs, shape, dtype, loc)


def _constant(g: Graph, value, loc) -> Node:
    value = np.ascontiguousarray(value)
    value.flags.writeable = False
    return g.add("constant", (), {"value": value}, value.shape, value.dtype, loc)


def _slice_axis(g, x, axis, lo, hi, step, loc):
    start, limit, stride = [0] * x.ndim, list(x.shape), [1] * x.ndim
    start[axis], limit[axis], stride[axis] = lo, hi, step
    return _add(g, "slice", [x], loc, start=tuple(start), limit=tuple(limit), stride=tuple(stride))


def _spread(g, values, axis, rows, like, loc):
    """(values gathered so that row rows[j] along `axis` holds row j, the mask of the rows
    written), both shaped like `like`; rows are distinct."""
    n = like.shape[axis]
    source = np.zeros(n, np.int64)
    written = np.zeros(n, bool)
    source[rows] = np.arange(len(rows))
    written[rows] = True
    gathered = _add(g, "gather", [values, _constant(g, source, loc)], loc, axis=axis)
    mask = _add(
        g,
        "broadcast_in_dim",
        [_constant(g, written, loc)],
        loc,
        shape=like.shape,
        broadcast_dimensions=(axis,),
    )
    return gathered, mask


def _placed(g, base, values, axis, rows, loc):
    """`base` with row `rows[j]` along `axis` replaced by row j of `values`."""
    gathered, mask = _spread(g, values, axis, rows, base, loc)
    return _add(g, "select", [mask, gathered, base], loc)


def keeps(n: Node, written: set, kept: set) -> bool:
    """Does region write n cost less as a kernel over its region than as a pass over its
    buffer, whose old version is in memory: an argument it writes (`written`: parameter
    indices) or an earlier write it keeps (`kept`)?"""
    base, update = n.operands
    in_memory = base in kept or (base.op == "parameter" and base.attrs["index"] in written)
    return in_memory and 3 * update.size < 2 * base.size


def kept_writes(graph: Graph, aliases: dict) -> set:
    """The update_slices of a traced graph that `expand` keeps (its decisions, replayed)
    when `aliases` are the written arguments."""
    written, kept = set(aliases.values()), set()
    for n in graph.nodes:
        if n.op == "update_slice" and n.operands[1].size and keeps(n, written, kept):
            kept.add(n)
    return kept


def expand_update_slice(n, g, written: set, kept: set):
    """update_slice(b, u, region)  ==>  concatenate(b[before], u, b[after]) per axis"""
    if n.op != "update_slice":
        return None
    base, update = n.operands
    if update.size == 0:
        return base
    if update.shape == base.shape and all(s == 1 for s in n.attrs["stride"]):
        return update
    if keeps(n, written, kept):
        kept.add(n)
        return None
    start, limit, stride = n.attrs["start"], n.attrs["limit"], n.attrs["stride"]

    def place(b, axis):  # b: the buffer cut to the region on the axes before `axis`
        if axis == b.ndim:
            return update
        s, l, st, size = start[axis], limit[axis], stride[axis], b.shape[axis]
        if s == 0 and st == 1 and l == size:
            return place(b, axis + 1)
        middle = place(_slice_axis(g, b, axis, s, l, st, n.loc), axis + 1)
        if st != 1:
            return _placed(g, b, middle, axis, list(range(s, l if l >= 0 else -1, st)), n.loc)
        parts = (
            ([_slice_axis(g, b, axis, 0, s, 1, n.loc)] if s > 0 else [])
            + [middle]
            + ([_slice_axis(g, b, axis, l, size, 1, n.loc)] if l < size else [])
        )
        return _add(g, "concatenate", parts, n.loc, dimension=axis)

    return place(base, 0)


def expand_constant_scatter(n, g):
    """scatter(b, constant rows, u)  ==>  select(written, gather(u, source), b) per round"""
    if n.op != "scatter" or n.operands[1].op != "constant":
        return None
    base, indices, updates = n.operands
    axis, mode = n.attrs["axis"], n.attrs["mode"]
    size = base.shape[axis]
    rows = indices.attrs["value"].reshape(-1).astype(np.int64)
    rows = np.where(rows < 0, rows + size, rows)
    if rows.size and (rows.min() < 0 or rows.max() >= size):
        return None  # out of bounds: the scatter raises at run time, as NumPy does
    flat = base.shape[:axis] + (rows.size,) + base.shape[axis + 1 :]
    values = _add(g, "reshape", [updates], n.loc, new_sizes=flat)
    if rows.size == 0:
        return base
    if mode == "set":  # the last write to a row wins: keep each row's last occurrence
        last = {int(r): j for j, r in enumerate(rows)}
        keep = np.array(sorted(last.values()), np.int64)
        values = _add(g, "gather", [values, _constant(g, keep, n.loc)], n.loc, axis=axis)
        return _placed(g, base, values, axis, rows[keep], n.loc)
    # np.<mode>.at: round r applies every row's r-th update, in order
    seen: dict = {}
    rounds: list = []
    for j, r in enumerate(rows):
        k = seen.get(int(r), 0)
        seen[int(r)] = k + 1
        if k == len(rounds):
            rounds.append([])
        rounds[k].append(j)
    current = base
    for js in rounds:
        js = np.array(js, np.int64)
        part = _add(g, "gather", [values, _constant(g, js, n.loc)], n.loc, axis=axis)
        gathered, mask = _spread(g, part, axis, rows[js], current, n.loc)
        combined = _add(g, mode, [current, gathered], n.loc)
        current = _add(g, "select", [mask, combined, current], n.loc)
    return current


def expand(graph: Graph) -> Graph:
    written = set(graph.aliases.values())  # the parameters whose new versions are outputs
    kept: set = set()

    def update_slice(n, g):
        return expand_update_slice(n, g, written, kept)

    update_slice.__doc__ = expand_update_slice.__doc__
    return dce(rewrite(graph, (update_slice, expand_constant_scatter)))
