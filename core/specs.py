"""Abstract arguments: jitc.ShapeDtype and jitc.spec("f32[1,512]")."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from jitc.core.dtypes import BY_SHORT_NAME, SHORT_NAMES, check_supported


@dataclass(frozen=True)
class ShapeDtype:
    """The shape and dtype of an argument, without its values (for lower() and AOT)."""

    shape: tuple
    dtype: np.dtype

    def __init__(self, shape, dtype):
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))
        object.__setattr__(self, "dtype", check_supported(dtype, "ShapeDtype"))
        _check_size(self)

    def __str__(self):
        return f"{SHORT_NAMES[self.dtype]}[{','.join(map(str, self.shape))}]"


def _check_size(s: ShapeDtype):
    """Refuse a shape no NumPy array has (NumPy's rule: the nonzero extents times the item
    size fit in intp): compiled for, it would only give overflowed sizes in C and Python."""
    if any(d < 0 for d in s.shape):
        raise ValueError(f"shape {list(s.shape)} has a negative dimension")
    nbytes = math.prod(d for d in s.shape if d) * s.dtype.itemsize
    if nbytes > np.iinfo(np.intp).max:
        raise ValueError(
            f"{s} is larger than any NumPy array can be ({nbytes:,} bytes; the "
            f"limit is {np.iinfo(np.intp).max:,})"
        )


_SPEC = re.compile(r"\s*([a-z]+\d*)\s*\[\s*([0-9,\s]*)\]\s*")


def spec(text: str) -> ShapeDtype:
    """Parse 'f32[1,512]' (also f16, f64, s8/i8, s16/i16, s32/i32, s64/i64, u8, u16, u32, u64,
    pred/bool; 'f32[]' is 0-d)."""
    m = _SPEC.fullmatch(text)
    if text.strip() in BY_SHORT_NAME:
        raise ValueError(
            f"bad spec {text!r}: a shape is missing; write '{text.strip()}[]' for "
            f"a scalar (0-d), or '{text.strip()}[d0,d1,...]'"
        )
    if not m or m.group(1) not in BY_SHORT_NAME:
        names = ", ".join(sorted(BY_SHORT_NAME))
        raise ValueError(
            f"bad spec {text!r}: expected DTYPE[d0,d1,...] with DTYPE one of "
            f"{names}, e.g. 'f32[1,512]'"
        )
    dims = [d.strip() for d in m.group(2).split(",")] if m.group(2).strip() else []
    if not all(dims):
        raise ValueError(
            f"bad spec {text!r}: an empty dimension (write 'f32[2,3]', or 'f32[]' for a 0-d array)"
        )
    return ShapeDtype(tuple(int(d) for d in dims), BY_SHORT_NAME[m.group(1)])
