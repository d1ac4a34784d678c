"""Indexing functions (np.take); x[key] itself is jitc/indexing.py."""

from __future__ import annotations

import numpy as np

from jitc import lax
from jitc.errors import UnsupportedError
from jitc.numpy_api.core import _lifted, _mark, implements, normalize_axis
from jitc.source import where


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    from jitc.indexing import take_along

    if out is not None or mode != "raise":
        raise UnsupportedError(f"np.take: out=/mode= are not supported{where()}")
    a = _lifted(a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    out = take_along(a, indices, normalize_axis(axis, a.ndim))
    return _mark(out, out.ndim == 0)
