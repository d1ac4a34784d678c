"""Large result arrays reused once the caller has dropped them.

glibc maps every allocation of 32 MB or more afresh (its mmap threshold stops growing at
32 MB), and Linux zeroes each page at its first write: a fresh 32 MB float32 result cost
2.6 ms of page faults here, as much as the tanh-GELU computing it (5.1 ms into an existing
array, 7.7 ms into a fresh one). NumPy pays the same for its own results.

So jitc keeps the last KEEP large results it handed out. A call whose result has the same
shape and dtype as one of them takes that array back when nothing but this module
references it any more (the caller dropped it, and no view of it is alive: a view holds a
reference to its base), so its pages are already mapped. A result still referenced is
never touched. At most KEEP arrays of at most MAX_BYTES each stay mapped after the caller
drops them.
"""

from __future__ import annotations

import sys
from collections import deque

import numpy as np

MIN_BYTES = 32 << 20  # below this glibc reuses freed memory itself
MAX_BYTES = 128 << 20
KEEP = 4

_kept: deque = deque()  # arrays handed out, oldest first; popleft/append are atomic


def _references_of_a_local() -> int:
    """sys.getrefcount of an object only one local variable names (2 on CPython 3.11)."""
    probe = object()
    return sys.getrefcount(probe)


_UNREFERENCED = _references_of_a_local()


def allocator(shape: tuple, dtype):
    """The function that allocates a result of this shape and dtype: `empty` for a large
    one, np.empty for the rest (chosen once, when a call's code is made)."""
    nbytes = np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64))
    return empty if MIN_BYTES <= nbytes <= MAX_BYTES else np.empty


def empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """np.empty(shape, dtype), or a result of that shape and dtype the caller has dropped."""
    for _ in range(len(_kept)):
        try:
            kept = _kept.popleft()  # out of the deque, so no other thread can take it
        except IndexError:
            break
        free = sys.getrefcount(kept) == _UNREFERENCED  # checked while only `kept` names it
        _kept.append(kept)  # kept either way, newest now
        if free and kept.shape == shape and kept.dtype == dtype:
            return kept
    fresh = np.empty(shape, dtype)
    _kept.append(fresh)
    while len(_kept) > KEEP:
        _kept.popleft()
    return fresh
