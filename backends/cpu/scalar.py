"""Scalar helpers for generated kernels where NumPy's semantics differ from a bare operator.

Each follows NumPy's C loops: integer division by zero gives 0, INT_MIN // -1 wraps
(LLVM's sdiv would trap), shifts past the bit width saturate, maximum/minimum propagate NaN.
"""

import math

import numpy as np
from numba.extending import register_jitable


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
def fmod_int(a, b):
    if b == 0 or b == -1:
        return a - a
    r = abs(a) % abs(b)
    return -r if a < 0 else r


@register_jitable(inline="always")
def floordiv_float(a, b):
    """NumPy's npy_divmod: floor of a/b computed from fmod so it is exact."""
    if b == 0:
        return a / b
    mod = math.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and ((b < 0) != (mod < 0)):
        div -= 1
    if div != 0:
        floordiv = math.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv


@register_jitable(inline="always")
def remainder_float(a, b):
    if b == 0:
        return math.fmod(a, b)
    mod = math.fmod(a, b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


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
def logaddexp(a, b):
    if a == b:
        return a + math.log(2.0)
    hi = max(a, b)
    return hi + math.log1p(math.exp(-abs(a - b))) if hi == hi else hi


@register_jitable(inline="always")
def logaddexp2(a, b):
    if a == b:
        return a + 1.0
    hi = max(a, b)
    return hi + math.log1p(2.0 ** (-abs(a - b))) / math.log(2.0) if hi == hi else hi


@register_jitable(inline="always")
def sign(a):
    if a != a:
        return a
    return (a > 0) - (a < 0)


HELPERS = {f.__name__: f for f in (
    floordiv_int, remainder_int, fmod_int, floordiv_float, remainder_float, power_int,
    left_shift, right_shift, logaddexp, logaddexp2, sign)}
HELPERS.update(math=math, np=np)
