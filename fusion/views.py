"""Views: top-level slices that name bytes of a parameter or constant, so no kernel runs.

`W[k]` of a stacked weight, `b[1:3]`: a slice selecting one contiguous run of a
parameter's or constant's C-order bytes. The fuser leaves it standalone and the backends
place it at an offset into the caller's array (a dot then reads the weight in place,
where a fused slice would copy it into a temporary first). A reshape is a view of any
buffer already (fusion/buffers.py); a slice of a computed value stays fused into the
kernel that reads it.
"""

from __future__ import annotations

from jitc.core.ir import Node


def block_offset(n: Node) -> int | None:
    """The element offset of a slice that selects one contiguous run of its operand's
    elements (unit extents, then one partial axis, then full axes), else None."""
    if n.op != "slice" or any(s != 1 for s in n.attrs["stride"]) or 0 in n.shape:
        return None
    full = n.operands[0].shape
    cut = [k for k, (a, b) in enumerate(zip(n.shape, full)) if a != b]
    if cut and any(n.shape[k] != 1 for k in range(cut[-1])):
        return None
    offset, stride = 0, 1
    for start, size in zip(reversed(n.attrs["start"]), reversed(full)):
        offset += start * stride
        stride *= size
    return offset


def external_view(n: Node) -> tuple[Node, int] | None:
    """(parameter or constant, element offset) when `n` is a slice naming a contiguous run
    of its bytes, through any reshapes and slices of it; None otherwise."""
    if n.op != "slice":
        return None
    offset = 0
    while n.op in ("reshape", "slice"):
        if n.op == "slice":
            k = block_offset(n)
            if k is None:
                return None
            offset += k
        n = n.operands[0]
    return (n, offset) if n.op in ("parameter", "constant") else None


def is_view(n: Node) -> bool:
    """Does `n` name bytes of a buffer that exists (a reshape, or an external slice view)?"""
    return n.op == "reshape" or external_view(n) is not None
