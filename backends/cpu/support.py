"""Helpers the generated drivers import."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload


def contiguous(a):
    """`a` if it is C-contiguous, else a C-contiguous copy (kernels index dense buffers)."""
    return np.ascontiguousarray(a)


@overload(contiguous)
def _contiguous(a):
    if isinstance(a, types.Array) and a.layout == "C":
        return lambda a: a
    return lambda a: np.ascontiguousarray(a)
