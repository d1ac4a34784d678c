"""What a trace knows of its integer scalars: a loop index's range, and sums of one value
with constants (`k + 1`, `k - 1`).

A slice whose bounds follow a loop index (`a[:k]`, `r[k:0:-1]`) is a window of run-time
extent (trace/window.py). NumPy clips each bound to the axis; where the loop's range puts a
bound inside the axis, no clip is needed and the bound stays `k + c`. Two windows' extents
then compare as such sums (`r[1:k + 1]` and `a[:k]` both hold k elements), so windows of
different bounds combine element by element, as NumPy combines their arrays (Levinson's
`np.dot(a[:k], r[k:0:-1])`).
"""

from __future__ import annotations

import operator

import numpy as np

from jitc.numpy_api.core import is_tracer


def range_of(start, stop, step: int) -> tuple:
    """(lo, hi) of the index of a loop over range(start, stop, step) in its body, either
    None where that bound is traced."""
    known = [None if is_tracer(b) else operator.index(b) for b in (start, stop)]
    if step > 0:
        return known[0], None if known[1] is None else known[1] - 1
    return None if known[1] is None else known[1] + 1, known[0]


def note_index(i, lo: int | None, hi: int | None) -> None:
    """The loop index `i` (a Tracer) takes values in [lo, hi] in its body (None: unknown)."""
    i.ctx.index_ranges[i.node] = (lo, hi)


def _origin(ctx, node):
    """(trace, node) where `node` was made: a loop body's parameter that brings in a value
    of the enclosing trace (an invariant, a constant) is that value."""
    while getattr(ctx, "imports", None):
        outer = next((o for o, p in ctx.imports.items() if p is node), None)
        if outer is None:
            break
        ctx, node = ctx.parent, outer
    return ctx, node


def affine(v, depth: int = 8):
    """`v` (a Python int or a 0-d integer Tracer) as (base, c): v == base + c, where base
    is (trace, node) of a value that is not such a sum, or None when v is the constant c."""
    if isinstance(v, (int, np.integer)):
        return None, int(v)
    return _affine(v.ctx, v.node, depth)


def _affine(ctx, node, depth):
    ctx, node = _origin(ctx, node)
    if node.op == "constant" and node.shape == () and node.dtype.kind in "iu":
        return None, int(node.attrs["value"])
    if depth and node.op in ("add", "subtract") and node.shape == ():
        (bx, cx), (by, cy) = (_affine(ctx, o, depth - 1) for o in node.operands)
        if node.op == "add" and None in (bx, by):
            return bx or by, cx + cy
        if node.op == "subtract" and (by is None or by == bx):
            return (bx if by is None else None), cx - cy
    return (ctx, node), 0


def same_extent(first: tuple, second: tuple) -> bool:
    """Do windows with bounds `first` (a, b) and `second` hold as many elements, whatever
    the values (`r[1:k + 1]` and `a[:k]`)?"""
    forms = []
    for a, b in (first, second):
        (ba, ca), (bb, cb) = affine(a), affine(b)
        if ba is not None and ba != bb:
            return False
        forms.append((None if ba is not None else bb, cb - ca))
    return forms[0] == forms[1]


def interval(v) -> tuple:
    """(lo, hi): bounds of `v`'s values, either None where unknown."""
    base, c = affine(v)
    if base is None:
        return c, c
    ctx, node = base
    lo, hi = ctx.index_ranges.get(node, (None, None))
    return (None if lo is None else lo + c), (None if hi is None else hi + c)
