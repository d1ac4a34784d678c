"""The byte cost model: memory traffic decides what is materialized.

Fusing a producer into its only consumer always saves bytes (one write and one read of the
intermediate) and is done whenever the contract allows it. The choice the model makes is for
a cheap producer read by several kernels: recompute it in each of them, or materialize it
once and let each read it.

    recompute:    sum over readers of the producer's inputs that reader does not already read
    materialize:  producer's inputs (read once) + its result (written once, read per reader)

Expensive ops (ops.EXPENSIVE, reductions, dots) are never recomputed, whatever the bytes.
"""

from __future__ import annotations

from jitc.core.ir import Node
from jitc.fusion.rewrite import nbytes, numel


def input_bytes(n: Node, already_read=frozenset()) -> int:
    """Bytes of n's array inputs not in `already_read` (shape-() constants are free)."""
    total = 0
    for o in dict.fromkeys(n.operands):
        if o in already_read or (o.op == "constant" and numel(o) == 1):
            continue
        total += nbytes(o)
    return total


def recompute_bytes(n: Node, readers_reads) -> int:
    """Traffic if every reader recomputes n from its inputs; readers_reads: one set per reader
    of the values that reader already reads."""
    return sum(input_bytes(n, reads) for reads in readers_reads)


def materialize_bytes(n: Node, n_readers: int) -> int:
    return input_bytes(n) + nbytes(n) * (1 + n_readers)


def should_recompute(n: Node, readers_reads) -> bool:
    return recompute_bytes(n, readers_reads) <= materialize_bytes(n, len(readers_reads))
