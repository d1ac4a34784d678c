"""float16 in generated kernels: arrays hold its bits as uint16, values compute as float32.

Numba has no CPU float16 type, so a kernel sees a float16 array as a uint16 view and
converts each element on load (`h2f`) and store (`f2h`). A float16 value between ops is a
float32 that float16 holds exactly (`round16` after every op that makes one, as NumPy's
float16 loops round each result), so comparisons, selects, max/min and stores see NumPy's
float16 values.

Two implementations of the conversions, the same values (round to nearest even, overflow
to inf, subnormals, NaN stays NaN):
- NATIVE: LLVM's own `half` type (`bitcast i16 -> half; fpext -> float`, `fptrunc float ->
  half; bitcast -> i16`). With F16C (every AVX2 x86-64) LLVM lowers these to vcvtph2ps /
  vcvtps2ph, which its loop vectorizer packs eight at a time: one instruction per 8 elements
  where the bit manipulation below takes a dozen integer ops per element. Used by the JIT
  when the host has F16C (or is not x86, where LLVM has native conversions too).
- PORTABLE: that bit manipulation in integer ops, for AOT objects: their x86-64 baseline
  (x86-64-v2) has no F16C, and LLVM would call compiler-rt's __extendhfsf2/__truncsfhf2,
  which a self-contained object may not import.
"""

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, register_jitable


@intrinsic
def _h2f_native(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


@intrinsic
def _f2h_native(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


@intrinsic
def _f32_bits(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def _bits_f32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.uint32), codegen


@register_jitable
def _h2f_portable(h):
    """float16 bits -> float32: exponent rebiased; subnormals scaled from an integer."""
    x = np.uint32(h)
    sign = (x & np.uint32(0x8000)) << np.uint32(16)
    e = (x >> np.uint32(10)) & np.uint32(0x1F)
    m = x & np.uint32(0x3FF)
    bits = sign | ((e + np.uint32(112)) << np.uint32(23)) | (m << np.uint32(13))
    if e == np.uint32(0x1F):  # inf or NaN
        bits = sign | np.uint32(0x7F800000) | (m << np.uint32(13))
    if e == np.uint32(0):  # zero or subnormal: m * 2**-24, exact in float32
        bits = sign | _f32_bits(np.float32(m) * np.float32(5.9604644775390625e-08))
    return _bits_f32(bits)


@register_jitable
def _f2h_portable(f):
    """float32 -> float16 bits, rounded to nearest even (F. Giesen's float_to_half_fast3_rtne):
    subnormal results by one float add that lines 2**-24 up with float32's last bit."""
    x = _f32_bits(f)
    sign = np.uint16((x >> np.uint32(16)) & np.uint32(0x8000))
    x = x & np.uint32(0x7FFFFFFF)
    odd = (x >> np.uint32(13)) & np.uint32(1)
    h = np.uint16((x + np.uint32(0xC8000FFF) + odd) >> np.uint32(13))  # rebias, round
    if x < np.uint32(0x38800000):  # below 2**-14: a subnormal half or zero
        h = np.uint16(_f32_bits(_bits_f32(x) + np.float32(0.5)) - np.uint32(0x3F000000))
    if x >= np.uint32(0x477FF000):  # rounds to 65536 or more: inf
        h = np.uint16(0x7C00)
    if x > np.uint32(0x7F800000):  # NaN, quieted as vcvtps2ph does
        h = np.uint16(0x7E00)
    return sign | h


def _family(h2f, f2h):
    """The kernel helpers on one pair of conversions (the names generated code calls).
    Plain register_jitable: LLVM inlines them; numba's IR inliner (inline="always")
    mis-scopes variables assigned in branches of these helpers."""

    @register_jitable
    def round16(x):
        """A float32 (or int, bool) rounded to the nearest float16, kept as float32."""
        return h2f(f2h(np.float32(x)))

    @register_jitable
    def round16_f64(d):
        """A float64 rounded once to the nearest float16, as NumPy's npy_double_to_half:
        to float32 rounding to odd first (24 bits keep what a second rounding to 11 bits
        needs), since float64 -> float32 -> float16 by nearest even can round twice."""
        f = np.float32(d)
        if np.float64(f) != d and np.isfinite(f):
            bits = _f32_bits(f)
            if bits & np.uint32(1) == np.uint32(0):
                bits = bits + np.uint32(1) if abs(d) > abs(np.float64(f)) else bits - np.uint32(1)
            f = _bits_f32(bits)
        return round16(f)

    return {"h2f": h2f, "f2h": f2h, "round16": round16, "round16_f64": round16_f64}


NATIVE = _family(_h2f_native, _f2h_native)
PORTABLE = _family(_h2f_portable, _f2h_portable)


def _host_converts() -> bool:
    """Does LLVM lower half <-> float on this host without a library call?"""
    triple = llvm.get_process_triple()
    if not triple.startswith(("x86_64", "i386", "i686")):
        return True
    return bool(llvm.get_host_cpu_features().get("f16c", False))


JIT = NATIVE if _host_converts() else PORTABLE
