"""The traced graph cut at its cross-block reductions into stages, and each stage as a
program over one block.

Stage 0 computes everything that needs only the arguments; a reduction over a chunked axis
ends a stage: each block computes its partial, the partials are combined across blocks,
and the next stage reads the combined value (block by block along the axes it kept).
Layernorm's mean is stage 0's, its variance stage 1's, its output stage 2's: each stage
reads its block of x again rather than keeping intermediates, as NumPy's passes do.

A stage's program is the whole graph's nodes with chunked dims at the block's extents, so
constants the trace baked from whole shapes (a mean's 1/N) keep their whole meaning.
"""

from __future__ import annotations

import functools

import numpy as np

from jitc.chunked.partition import COMBINE
from jitc.core.ir import Graph

# Attributes that restate a node's own shape.
_SHAPE_ATTRS = {"broadcast_in_dim": "shape", "iota": "shape", "reshape": "new_sizes"}


class Stages:
    """Which stage computes each node, given the cross-block reductions `cross` (node id
    -> (kind, classes)), and what each stage returns."""

    def __init__(self, graph, cross: dict):
        self.graph, self.cross = graph, cross
        self.stage: dict[int, int] = {p.id: 0 for p in graph.params}
        for n in graph.nodes:
            if n.op != "parameter":
                self.stage[n.id] = max(
                    (self.stage[o.id] + (o.id in cross) for o in n.operands), default=0
                )
        finals = [o for o in graph.outputs if o.id not in cross]
        last = max([self.stage[o.id] for o in finals] + [self.stage[c] for c in cross] + [0])
        # per stage: the nodes its blocks return (partials of its reductions, then results)
        self.returns = [
            [n for n in graph.nodes if n.id in cross and self.stage[n.id] == k]
            + [o for o in dict.fromkeys(finals) if self.stage[o.id] == k]
            for k in range(last + 1)
        ]

    def inputs(self, k: int) -> list:
        """The cross-block reductions of earlier stages that stage `k` reads."""
        needed, seen = [], set()
        stack = list(self.returns[k])
        while stack:
            n = stack.pop()
            if n.id in seen:
                continue
            seen.add(n.id)
            if n.id in self.cross and self.stage[n.id] < k:
                needed.append(n)
                continue
            stack.extend(n.operands)
        return sorted(needed, key=lambda n: n.id)

    def program(self, k: int, shape_of, part, halos) -> Graph:
        """Stage `k` over one block: parameters are the graph's parameters, then the
        combined reductions it reads; `shape_of(node)` is a node's shape in the block.
        An argument with a halo (class root -> depth in `halos`, for its np.rolls) comes
        extended by the halo on both sides: a roll reads its shifted window, every other
        use the block itself."""
        g = Graph(f"{self.graph.name}_stage{k}")
        mapped, extended = {}, {}
        for p in self.graph.params:
            depth = [halos.get(c, 0) for c in part.roots(p)]
            shape = shape_of(p)
            mapped[p.id] = g.add_parameter(
                [n + 2 * h for n, h in zip(shape, depth)], p.dtype, p.loc
            )
            if any(depth):
                extended[p.id] = mapped[p.id], depth
                mapped[p.id] = _window(g, mapped[p.id], depth, shape, [0] * len(shape))
        inputs = self.inputs(k)
        for n in inputs:
            mapped[n.id] = g.add_parameter(shape_of(n), n.dtype, n.loc)
        windows = {r for r, (p, axis, _) in part.rolls.items() if part.roots(p)[axis] in halos}
        live = _live(self.returns[k], stop={n.id for n in inputs} | windows)
        for n in self.graph.nodes:
            if n.id in mapped or n.id not in live:
                continue
            shape = shape_of(n)
            if n.id in windows:
                param, axis, shift = part.rolls[n.id]
                base, depth = extended[param.id]
                offset = [0] * len(shape)
                offset[axis] = -shift
                mapped[n.id] = _window(g, base, depth, shape, offset)
                continue
            attrs = dict(n.attrs)
            if n.op in _SHAPE_ATTRS:
                attrs[_SHAPE_ATTRS[n.op]] = tuple(shape)
            elif n.op == "slice":  # full along chunked dims (else pinned): the block's extent
                operand, whole = shape_of(n.operands[0]), n.operands[0].shape
                attrs["limit"] = tuple(
                    m if lim == w else lim for lim, m, w in zip(attrs["limit"], operand, whole)
                )
            mapped[n.id] = g.add(
                n.op,
                [mapped[o.id] for o in n.operands],
                attrs,
                shape,
                n.dtype,
                n.loc,
                n.subgraph,  # a loop's step: its operands come whole (partition.py)
                n.tuple_types,
            )
        g.outputs = [mapped[n.id] for n in self.returns[k]]
        return g


def _window(g, base, depth, shape, offset):
    """The block-sized window of an extended block `base`, shifted by `offset`."""
    start = [h + o for h, o in zip(depth, offset)]
    return g.add(
        "slice",
        [base],
        {
            "start": tuple(start),
            "limit": tuple(s + n for s, n in zip(start, shape)),
            "stride": (1,) * len(shape),
        },
        shape,
        base.dtype,
        base.loc,
    )


def _live(outputs, stop) -> set:
    seen, stack = set(), list(outputs)
    while stack:
        n = stack.pop()
        if n.id not in seen:
            seen.add(n.id)
            if n.id not in stop:
                stack.extend(n.operands)
    return seen


def combine(kind, *partials):
    """A reduction's value from its blocks' partials, folded pairwise by a jitc kernel
    (one compile per kind, partial shape and dtype in each worker, however many partials a
    combine task reads)."""
    return np.asarray(functools.reduce(functools.partial(_pair, kind), partials))


@functools.cache
def _combiner(kind):
    """The compiled calls of op(a, b) for one combining kind, per partial shape and dtype."""
    from jitc.runtime.dispatch import HostCalls
    from jitc.stages import Function

    op = COMBINE[kind]
    return HostCalls(Function.of(lambda a, b: op(a, b)))


def _pair(kind, a, b):
    return _combiner(kind)(a, b)
