"""float16 in generated kernels: arrays hold its bits as uint16, values compute as float32.

Numba has no CPU float16 type, so a kernel sees a float16 array as a uint16 view and
converts each element with LLVM's own `half` type: `bitcast i16 -> half; fpext -> float`
on load and `fptrunc float -> half; bitcast -> i16` on store. On x86-64 with F16C (every
AVX2 machine) LLVM lowers these to vcvtph2ps / vcvtps2ph, which its loop vectorizer
packs eight at a time; fptrunc rounds to nearest even, overflows to inf, keeps NaN and
makes subnormals, as NumPy's npy_float_to_half. Bit tricks on the uint16 would do the same
in a dozen integer ops per element. A float16 value between ops is a float32 that float16
holds exactly (`round16` after every op that makes one), so comparisons, selects, max/min
and stores see NumPy's float16 values.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, register_jitable


@intrinsic
def h2f(typingctx, bits):
    """float16 bits (uint16) -> float32, exact."""
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())
    return types.float32(types.uint16), codegen


@intrinsic
def f2h(typingctx, value):
    """float32 -> float16 bits (uint16), rounded to nearest even."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))
    return types.uint16(types.float32), codegen


@register_jitable(inline="always")
def round16(x):
    """A float32 rounded to the nearest float16 (kept as float32)."""
    return h2f(f2h(np.float32(x)))


@register_jitable(inline="always")
def round16_f64(d):
    """A float64 rounded once to the nearest float16, as NumPy's npy_double_to_half: to
    float32 rounding to odd first (24 bits keep the information a second rounding to 11
    bits needs), since float64 -> float32 -> float16 by nearest even can round twice."""
    f = np.float32(d)
    if np.float64(f) != d and np.isfinite(f):
        bits = np.array([f]).view(np.uint32)[0]
        if bits & np.uint32(1) == 0:
            bits = bits + np.uint32(1) if abs(d) > abs(np.float64(f)) else bits - np.uint32(1)
        f = np.array([bits]).view(np.float32)[0]
    return round16(f)
