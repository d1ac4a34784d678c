"""Scalar helpers for generated kernels where NumPy's semantics differ from a bare operator.

Each follows NumPy's C loops: integer division by zero gives 0, INT_MIN // -1 wraps
(LLVM's sdiv would trap), shifts past the bit width saturate, maximum/minimum propagate NaN.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable

from jitc.backends.cpu.vmath import _bits32, _bits64, _float32, _float64


@register_jitable(inline="always")
def floordiv_int(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    q = a // b
    return q


@register_jitable(inline="always")
def remainder_int(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    return r


@register_jitable(inline="always")
def floordiv_uint(a, b):
    if b == 0:
        return a - a
    return a // b


@register_jitable(inline="always")
def remainder_uint(a, b):  # also fmod: both operands are >= 0
    if b == 0:
        return a - a
    return a % b


@register_jitable(inline="always")
def fmod_int(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b  # floor semantics; C's fmod truncates, so move r to the sign of a
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@register_jitable(inline="always")
def floordiv_float(a, b):
    """NumPy's npy_floor_divide: floor of a/b derived from fmod, so it is exact."""
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1
    if div != 0:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1
        return floordiv
    return np.copysign(div - div, a / b)


@register_jitable(inline="always")
def remainder_float(a, b):
    """NumPy's npy_remainder: fmod moved to the sign of the divisor."""
    mod = np.fmod(a, b)
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
        return mod
    return np.copysign(mod - mod, b)


@register_jitable(inline="always")
def power_int(a, b):
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = a - a + 1
    base = a
    while b > 0:
        if b & 1:
            result *= base
        base *= base
        b >>= 1
    return result


@register_jitable(inline="always")
def power_uint(a, b, one):
    """a ** b with every value in the operands' unsigned type (`one` is 1 in it)."""
    result = one
    base = a
    while b != 0:
        if b & one:
            result *= base
        base *= base
        b >>= one
    return result


@register_jitable(inline="always")
def left_shift_uint(a, b, bits):
    if b >= bits:
        return a - a
    return a << b


@register_jitable(inline="always")
def right_shift_uint(a, b, bits):
    if b >= bits:
        return a - a
    return a >> b


@register_jitable(inline="always")
def left_shift(a, b, bits):
    if b < 0 or b >= bits:
        return a - a
    return a << b


@register_jitable(inline="always")
def right_shift(a, b, bits):
    if b < 0 or b >= bits:
        return (a - a) - 1 if a < 0 else a - a
    return a >> b


@register_jitable(inline="always")
def sign(a):
    if a != a:
        return a
    return (a > 0) - (a < 0)


def _ieee(name):
    """An intrinsic calling LLVM's `llvm.<name>` on two floats of one type."""

    @intrinsic
    def call(typingctx, a, b):
        if not isinstance(a, types.Float) or a != b:
            return None

        def codegen(context, builder, signature, args):
            t = args[0].type
            fn = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(t, [t, t]),
                f"llvm.{name}.{'f32' if t == ir.FloatType() else 'f64'}",
            )
            return builder.call(fn, list(args))

        return a(a, b), codegen

    return call


# NaN-propagating max/min (IEEE 754-2019 maximum/minimum) for float reductions: LLVM
# vectorizes a reduction over these, not over the select NumPy's semantics would spell.
fmaximum = _ieee("maximum")
fminimum = _ieee("minimum")


def _reassoc(op):
    """An intrinsic: `op` (fadd or fmul) on two floats of one type, flagged `reassoc` alone.

    Kernels compile without fast-math (NumPy's answers must not change); a reduction's
    accumulation is the one place where reordering is wanted, so that LLVM can split it into
    vector lanes. The flag on that one instruction is all its loop vectorizer needs."""

    @intrinsic
    def call(typingctx, a, b):
        if not isinstance(a, types.Float) or a != b:
            return None

        def codegen(context, builder, signature, args):
            return getattr(builder, op)(*args, flags=("reassoc",))

        return a(a, b), codegen

    return call


reassoc_add = _reassoc("fadd")
reassoc_mul = _reassoc("fmul")


@intrinsic
def float_bits(typingctx, bits):
    """The float64 whose bits are the int64 `bits` (a float constant's size slot), as
    np.int64(bits).view(np.float64) but without numba's view overload, which it compiles
    again in every process (~0.03 s, paid by a cold first call)."""
    sig = types.float64(bits)

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.bitcast(value, ir.DoubleType())

    return sig, codegen


@intrinsic
def nonneg(typingctx, a):
    """`a`, with LLVM told it is >= 0, so that indexing by it needs no negative-index
    wraparound (which blocks vectorization): for indices like `block start + k`, which
    LLVM cannot prove non-negative by itself."""
    if not isinstance(a, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        assume = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(1)]), "llvm.assume"
        )
        builder.call(assume, [builder.icmp_signed(">=", args[0], ir.Constant(args[0].type, 0))])
        return args[0]

    return a(a), codegen


# np.nextafter as C's nextafter: NaN if either is NaN, y where x == y (so the sign of a zero
# y), the smallest subnormal toward y from a zero x, else the bit pattern one step from x:
# for IEEE sign-magnitude bits, +1 moves away from zero and -1 toward it (inf and the
# largest finite number are neighbours). Plain register_jitable: branches assign (see half).


@register_jitable
def nextafter_f64(x, y):
    if x != x or y != y:
        return x + y
    if x == y:
        return y
    if x == 0:
        return _float64(1) if y > 0 else -_float64(1)
    bits = _bits64(x)
    return _float64(bits + 1 if (y > x) == (x > 0) else bits - 1)


@register_jitable
def nextafter_f32(x, y):
    if x != x or y != y:
        return x + y
    if x == y:
        return y
    if x == 0:
        return _float32(1) if y > 0 else -_float32(1)
    bits = _bits32(x)
    return _float32(bits + 1 if (y > x) == (x > 0) else bits - 1)


@register_jitable
def nextafter_bits16(hx, hy, x, y):
    """The float16 bits of nextafter(x, y), given x's and y's bits and values; NumPy's
    npy_half_nextafter, which differs from C's: x (not y) where x == y, its own NaN."""
    if x != x or y != y:
        return np.uint16(0x7E00)
    if x == y:
        return hx
    if x == 0:
        return np.uint16(1) if y > 0 else np.uint16(0x8001)
    return np.uint16(hx + np.uint16(1)) if (y > x) == (x > 0) else np.uint16(hx - np.uint16(1))


# Radix sort keys (backends/cpu/sort.py): an int64 whose bytes, compared as an unsigned
# number, order like NumPy's sort (both zeros alike, so ties keep their input order; NaNs
# never get here). Byte k of the key is (key >> 8k) & 255 whatever the sign.
_MIN64 = np.int64(-9223372036854775808)


@register_jitable
def radix_key_f32(x):
    if x == 0:
        return np.int64(0x80000000)
    b = np.int64(_bits32(x))
    return (~b) & 0xFFFFFFFF if b < 0 else b | 0x80000000


@register_jitable
def radix_key_f64(x):
    if x == 0:
        return _MIN64
    b = _bits64(x)
    return ~b if b < 0 else b ^ _MIN64
