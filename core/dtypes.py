"""The dtypes jitc supports and their short names in IR text (f32[2,3])."""

import numpy as np

from jitc.core.errors import UnsupportedError

SHORT_NAMES = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int8): "s8",
    np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}
BY_SHORT_NAME = {v: k for k, v in SHORT_NAMES.items()}
# Spellings accepted by jitc.spec() in addition to the IR names.
# (u8 is both the IR name and the NumPy-style spelling of uint8.)
BY_SHORT_NAME.update(
    {
        "bool": np.dtype(np.bool_),
        "i8": np.dtype(np.int8),
        "i16": np.dtype(np.int16),
        "i32": np.dtype(np.int32),
        "i64": np.dtype(np.int64),
    }
)
SUPPORTED = tuple(SHORT_NAMES)


def check_supported(dtype, what: str) -> np.dtype:
    """Return `dtype` as np.dtype or raise UnsupportedError naming `what`."""
    dtype = np.dtype(dtype)
    if dtype not in SHORT_NAMES:
        names = ", ".join(str(d) for d in SUPPORTED)
        raise UnsupportedError(f"{what} has dtype {dtype}; jitc supports {names}")
    return dtype


# Generated loop kernels nest a loop per reduced dimension, and Python allows 20 nested
# blocks; NumPy allows 64 dimensions.
MAX_RANK = 16


def check_rank(shape, what: str) -> tuple:
    """Return `shape` or raise UnsupportedError naming `what` when it has too many dims."""
    if len(shape) > MAX_RANK:
        raise UnsupportedError(
            f"{what} has {len(shape)} dimensions; jitc compiles arrays of "
            f"up to {MAX_RANK}: reshape it (merge dimensions) first"
        )
    return shape


def type_str(shape, dtype) -> str:
    """f32[2,3] for a float32 array of shape (2, 3)."""
    return f"{SHORT_NAMES[np.dtype(dtype)]}[{','.join(str(d) for d in shape)}]"


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


def is_int(dtype) -> bool:
    """Signed or unsigned integer."""
    return np.dtype(dtype).kind in "iu"


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


# Python scalars as NumPy types them (NEP 50: weakly, at these dtypes unless an array's
# dtype says otherwise)
WEAK_DTYPES = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def int_bounds(dtypes) -> tuple[int, int]:
    """The values every integer dtype in `dtypes` holds (uint8 and int8: 0..127), and int64,
    jitc's Python ints."""
    infos = [np.iinfo(d) for d in (np.int64, *dtypes)]
    return max(i.min for i in infos), min(i.max for i in infos)
