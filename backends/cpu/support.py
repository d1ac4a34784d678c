"""Helpers the generated drivers import."""

from __future__ import annotations

from numba import types
from numba.extending import overload

from jitc.errors import SignatureMiss


def expect(a, dtype, ndim, n, k):
    """Raise SignatureMiss unless `a` is an array of `dtype` and `ndim` whose shape is
    n[k:k + ndim]. Type and rank are checked when numba compiles the driver for a's type (a
    driver specialized for another type always raises); the shape at run time."""


@overload(expect, prefer_literal=True)
def _expect(a, dtype, ndim, n, k):
    want = dtype.dtype if isinstance(dtype, types.DType) else dtype.instance_type
    if not (isinstance(a, types.Array) and isinstance(ndim, types.IntegerLiteral)
            and a.ndim == ndim.literal_value and a.dtype == want):
        def miss(a, dtype, ndim, n, k):
            raise SignatureMiss()

        return miss

    def check(a, dtype, ndim, n, k):
        for d in range(ndim):
            if a.shape[d] != n[k + d]:
                raise SignatureMiss()

    return check
