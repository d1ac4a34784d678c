"""Access signatures: at which index a fused kernel reads each value of its body.

A fusion runs one iteration space S (a shape). Every body value is read either

- at a *full* index: the iteration index mapped through a chain of index maps ("steps":
  transpose, slice, reshape, concatenate part, gather, expanding broadcast). `IDENT`, the
  empty chain, means "at the iteration index itself" (size-1 dims aside); or
- at a *row* index `("row", K)`: only the iteration axes K vary (the value is broadcast
  along all others). In a reduction fusion whose kept axes contain K, such a value is
  computed once per row, not once per element.

Axes are counted in squeezed coordinates: the axes of S with extent != 1. Size-1 dims never
change an index, so reshapes and broadcasts that only add or drop them are not steps.

A value read under two different signatures is computed twice by an index-driven code
generator; a value read under an *expanding* signature (an expanding broadcast or a gather)
is computed once per reader element. Both are fine for cheap ops and forbidden for
expensive ones: that is how fusion never computes an expensive op twice.
"""

from __future__ import annotations

from jitc.core import ops
from jitc.core.ir import Node


def numel(n: Node) -> int:
    size = 1
    for d in n.shape:
        size *= d
    return size


IDENT = ("full",)
MAX_STEPS = 12
OPAQUE = ("full", ("opaque",))
_EXPANDING = frozenset({"bcast", "gather", "gidx+", "rowx", "opaque"})


def squeeze(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


def is_row(sig) -> bool:
    return sig[0] == "row"


def expanding(sig) -> bool:
    """Does this signature read some element of the value for several iteration points?"""
    if sig[0] == "row":
        return True
    return any(step[0] in _EXPANDING for step in sig[1:])


_NAMES = {
    "bcast": "a broadcast",
    "rowx": "a broadcast",
    "gather": "a gather",
    "gidx": "a gather",
    "gidx+": "a gather",
    "transpose": "a transpose",
    "slice": "a slice",
    "reshape": "a reshape",
    "concat": "a concatenate",
    "opaque": "a long chain of index maps",
}


def describe(sig) -> str:
    """The index maps of a signature, nearest to the value first ("a transpose, then a
    reshape"), for messages."""
    if sig[0] == "row":
        return "a broadcast"
    if len(sig) == 1:
        return "its own index"
    names = list(dict.fromkeys(_NAMES.get(step[0], step[0]) for step in reversed(sig[1:])))
    return ", then ".join(names)


def _full(sig, step):
    if len(sig) >= MAX_STEPS:
        return OPAQUE
    return sig + (step,)


def _row_axes(u: Node, o: Node, dims, axes_of_u) -> tuple:
    """The iteration axes an operand of a broadcast varies along.

    `axes_of_u[i]` is the iteration axis of u's i-th non-unit dim."""
    position = {}
    k = 0
    for d, s in enumerate(u.shape):
        if s != 1:
            position[d] = k
            k += 1
    return tuple(sorted(axes_of_u[position[dims[j]]] for j, s in enumerate(o.shape) if s != 1))


def extend(sig, u: Node, k: int):
    """The signature of u's operand k, when u is read under `sig`; None if no kernel can."""
    o = u.operands[k]
    op = u.op
    if sig[0] == "row":
        axes = sig[1]
        if op in ops.ELEMENTWISE:
            return sig
        if op in ops.REDUCTIONS:
            return IDENT
        if op == "reshape" and squeeze(o.shape) == squeeze(u.shape):
            return sig
        if op == "broadcast_in_dim":
            if numel(o) == numel(u):
                return sig
            return ("row", _row_axes(u, o, u.attrs["broadcast_dimensions"], axes))
        sig = ("full", ("rowx", axes))  # read a row value through an index map: expanding
    if op in ops.ELEMENTWISE:
        return sig
    if op in ops.REDUCTIONS or op == "dot_general":
        return None  # a reduce/dot result is never read at a full index (see contract.py)
    if op == "reshape":
        if squeeze(o.shape) == squeeze(u.shape):
            return sig
        return _full(sig, ("reshape", o.shape, u.shape))
    if op == "broadcast_in_dim":
        if numel(o) == numel(u):
            return sig
        dims = tuple(u.attrs["broadcast_dimensions"])
        if sig == IDENT:
            return ("row", _row_axes(u, o, dims, tuple(range(len(squeeze(u.shape))))))
        return _full(sig, ("bcast", dims, o.shape, u.shape))
    if op == "transpose":
        perm = tuple(u.attrs["permutation"])
        moved = [p for p in perm if o.shape[p] != 1]
        if moved == sorted(moved):
            return sig
        return _full(sig, ("transpose", perm, o.shape))
    if op == "slice":
        a = u.attrs
        if (
            o.shape == u.shape
            and all(s == 0 for s in a["start"])
            and all(st == 1 for st in a["stride"])
        ):
            return sig
        return _full(sig, ("slice", tuple(a["start"]), tuple(a["stride"]), o.shape))
    if op == "concatenate":
        dim = u.attrs["dimension"]
        offset = sum(x.shape[dim] for x in u.operands[:k])
        return _full(sig, ("concat", dim, offset, o.shape))
    if op == "gather":
        if k == 0:
            return _full(sig, ("gather", u))
        kind = "gidx+" if numel(u) > numel(o) else "gidx"
        return _full(sig, (kind, u.attrs["axis"], o.shape, u.shape))
    return None
