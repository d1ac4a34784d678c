"""Split a loop kernel's iteration space at the seams of concatenates.

A write into part of an array (`u[1:-1, 1:-1] += ...`, lowered by fusion/expand.py) is a
concatenate of the untouched border and the new interior; np.roll is a concatenate read.
Evaluated element by element, a concatenate is a branch per element that keeps the loop
from vectorizing. Instead the space is cut into cells where every output reads one operand
of each concatenate: rows choose their cell once per row, and each cell along the last axis
is a loop of its own, with no branch inside.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from jitc.core.ir import Node
from jitc.core.ops import ELEMENTWISE

MAX_CELLS = 64  # beyond this many cells, the per-element branch is kept (code size)


@dataclass(frozen=True)
class Box:
    """The part of an output computed by `leaf`, starting at `start` (one per dim)."""

    start: tuple
    leaf: Node

    def covers(self, lo: tuple) -> bool:
        return all(s <= x < s + d for s, x, d in zip(self.start, lo, self.leaf.shape))


@dataclass(frozen=True)
class Cell:
    """A box of the iteration space, [lo, hi) per dim, and the Box each output reads there."""

    lo: tuple
    hi: tuple
    boxes: tuple


def boxes_of(out: Node) -> list[Box]:
    """An output as the leaves of its nested concatenates, each with its start."""
    boxes, stack = [], [Box((0,) * out.ndim, out)]
    while stack:
        box = stack.pop()
        n = box.leaf
        if n.op != "concatenate":
            boxes.append(box)
            continue
        dim, offset = n.attrs["dimension"], 0
        for part in n.operands:
            start = list(box.start)
            start[dim] += offset
            stack.append(Box(tuple(start), part))
            offset += part.shape[dim]
    return boxes


def aligned_concatenates(outputs: list[Node], shape: tuple) -> list[Node]:
    """Concatenates read at the loop's own index (through elementwise ops of the loop's
    shape from an output): np.roll's shifted copies. Cutting the space at their seams too,
    each cell reads one operand of each, with no branch."""
    found, seen, stack = [], set(), list(outputs)
    while stack:
        n = stack.pop()
        if n in seen or n.shape != shape:
            continue
        seen.add(n)
        if n.op == "concatenate":
            found.append(n)
        elif n.op in ELEMENTWISE:
            stack.extend(n.operands)
    return found


def cells(outputs: list[Node], shape: tuple, reads=()) -> list[Cell] | None:
    """The cells of `shape` where every output reads one leaf, and every concatenate in
    `reads` one operand; None when there is nothing to split or there would be too many
    cells."""
    if not (reads or any(o.op == "concatenate" for o in outputs)) or 0 in shape:
        return None
    per_output = [boxes_of(o) for o in outputs]
    seams = per_output + [[Box(tuple(start), part) for start, part in _parts(n)] for n in reads]
    cuts = []
    for d, size in enumerate(shape):
        points = {0, size}
        for boxes in seams:
            for b in boxes:
                points |= {b.start[d], b.start[d] + b.leaf.shape[d]}
        points = sorted(p for p in points if 0 <= p <= size)
        cuts.append(list(zip(points, points[1:])))
    if math.prod(len(c) for c in cuts) > MAX_CELLS:
        return None
    result = []
    for ranges in itertools.product(*cuts):
        lo = tuple(a for a, _ in ranges)
        hi = tuple(b for _, b in ranges)
        result.append(
            Cell(lo, hi, tuple(next(b for b in boxes if b.covers(lo)) for boxes in per_output))
        )
    return result


def _parts(n: Node):
    """(start, operand) of a concatenate's operands, one level."""
    dim, offset = n.attrs["dimension"], 0
    for part in n.operands:
        start = [0] * n.ndim
        start[dim] = offset
        yield start, part
        offset += part.shape[dim]


def operand_in(n: Node, cell: Cell) -> tuple[int, Node] | None:
    """(offset, operand) of concatenate `n` that covers all of `cell`, if one does."""
    dim = n.attrs["dimension"]
    for start, part in _parts(n):
        if start[dim] <= cell.lo[dim] and cell.hi[dim] <= start[dim] + part.shape[dim]:
            return start[dim], part
    return None
