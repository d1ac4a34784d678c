"""Complex helpers for generated kernels: NumPy's complex loops, built from jitc's real vmath.

c_mul and c_div are NumPy's loops exactly, in the operands' precision (the product as
NumPy's SIMD loop fuses it, re = fma(ar, br, -ai bi), im = fma(ar, bi, ai br), which decides
inf - inf and subnormal results; Smith's quotient, a zero divisor giving NumPy's inf/nan).
The math helpers take and return complex128; a complex64 value is widened in and rounded
out once (lowering.py), so its abs/exp/log/sqrt are computed in double precision (no
overflow of its squares):
- c_abs64: hypot without overflow or underflow (power-of-two scaling), the sum of squares in
  double-double and one Newton correction of the square root: within 1 ulp of libm's hypot.
- c_exp, c_log, c_sqrt: C99 Annex G's special values (glibc, which NumPy calls), finite
  values from vmath's exp/log/log1p/sin/cos; log's angle from atan2_f64 below.
- atan2_f64: fdlibm's atan2 (its reduction to four breakpoints, atan(bp) in two parts and
  the degree-11 odd polynomial; the same special values), within 1 ulp of NumPy's.
"""

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic, overload

from jitc.backends.cpu.vmath import cos_f64, exp_f64, log1p_f64, log_f64, sin_f64

# No fast-math: the error-free products below rely on each operation rounding once.
_jit = njit(forceinline=True, error_model="numpy", nogil=True)
_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter for float64
_BIG, _SMALL = 2.0**500, 2.0**-500
_DOWN, _UP = 2.0**-600, 2.0**600

__all__ = [
    "atan2_f64",
    "c_div",
    "c_abs",
    "c_abs64",
    "c_exp",
    "c_log",
    "c_log64",
    "c_sqrt",
    "c_sqrt64",
    "c_eq",
    "JIT",
    "PORTABLE",
]


@_jit
def _two_prod(a, b):
    """(p, e) with p + e == a * b exactly (Dekker)."""
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's llvm.fma: the FMA instruction on the host)."""
    if not isinstance(a, types.Float) or not a == b == c:
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen


def portable_fma(a, b, c):
    """a * b + c without an FMA instruction or libm's fma (AOT's x86-64 baseline has none
    and its objects import nothing): float32 in float64 (the product exact, one rounding
    to float64 then float32); float64 by Dekker's exact product, with fma's infinities
    (a subnormal product is not exact there: its result may differ in the last bit)."""


@overload(portable_fma, inline="always")
def _portable_fma(a, b, c):
    if a == types.float32:
        return lambda a, b, c: np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    if a == types.float64:

        def fma64(a, b, c):
            if abs(c) == np.inf and abs(a) < np.inf and abs(b) < np.inf:
                return c  # a finite product does not cancel an infinite addend
            p, e = _two_prod(a, b)
            s = p + c
            if not (abs(s) < np.inf and abs(e) < np.inf):  # (a part past 2^996: no split)
                return s
            low = ((p - s) + c if abs(p) >= abs(c) else (c - s) + p) + e
            return s + low if low != 0.0 else s  # s keeps the sign of an exact zero

        return fma64
    return None


def _family(fused):
    """The complex product (and the helpers built on it) over one fma."""

    @_jit
    def c_mul(a, b):
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        return complex(fused(ar, br, -(ai * bi)), fused(ar, bi, ai * br))

    return {"c_mul": c_mul}


JIT = _family(fma)
PORTABLE = _family(portable_fma)


@_jit
def c_div(a, b, one):
    """NumPy's complex divide loop (Smith's method; 0 divisor: each part over +0.0) in the
    parts' precision (`one` is 1 in their dtype)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abr, abi = abs(br), abs(bi)
    if abr >= abi:
        if abr == 0.0 and abi == 0.0:
            return complex(ar / abr, ai / abr)
        rat = bi / br
        scl = one / (br + bi * rat)
        return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = one / (bi + br * rat)
    return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)


@_jit
def c_eq(a, b):
    return a.real == b.real and a.imag == b.imag


@_jit
def c_abs(z):
    """|z| of a complex64 value held as complex128: exact squares, one rounding to float64
    (then one to float32 by the caller)."""
    x, y = z.real, z.imag
    if abs(x) == np.inf or abs(y) == np.inf:
        return np.inf
    return math.sqrt(x * x + y * y)


@_jit
def c_abs64(z):
    """hypot(re, im) in float64 without overflow, within 1 ulp."""
    x, y = abs(z.real), abs(z.imag)
    if x == np.inf or y == np.inf:
        return np.inf
    if x != x or y != y:
        return np.nan
    m = max(x, y)
    scale = 1.0
    if m > _BIG:
        x, y, scale = x * _DOWN, y * _DOWN, _UP
    elif m < _SMALL:
        x, y, scale = x * _UP, y * _UP, _DOWN
    px, ex = _two_prod(x, x)
    py, ey = _two_prod(y, y)
    s = px + py
    lo = (px - s) + py if px >= py else (py - s) + px
    lo += ex + ey
    h = math.sqrt(s)
    if h == 0.0:
        return 0.0
    hh, he = _two_prod(h, h)
    h += ((s - hh) - he + lo) / (2.0 * h)
    return h * scale


@_jit
def c_exp(z):
    x, y = z.real, z.imag
    if y == 0.0:
        return complex(exp_f64(x), y)
    if abs(x) == np.inf and not abs(y) < np.inf:
        return complex(np.inf, y - y) if x > 0 else complex(0.0, math.copysign(0.0, y))
    if x > 709.0:  # e^x overflows before e^x * cos(y) does: two half factors
        r = exp_f64(0.5 * x)
        return complex(r * cos_f64(y) * r, r * sin_f64(y) * r)
    r = exp_f64(x)
    return complex(r * cos_f64(y), r * sin_f64(y))


@_jit
def _log_abs_near_one(m, n):
    """log|z| for 0.5 <= m <= 2 (m >= n >= 0): log1p of m^2 + n^2 - 1 in double-double."""
    px, ex = _two_prod(m, m)
    py, ey = _two_prod(n, n)
    a = px - 1.0  # exact (Sterbenz)
    s = a + py
    err = (a - s) + py if abs(a) >= py else (py - s) + a
    return 0.5 * log1p_f64(s + (err + ex + ey))


# fdlibm's atan: atan(t) = t - t^3 (AT0 + AT1 t^2 + ...) on |t| < 7/16; atan(bp) for the
# breakpoints 0.5, 1, 1.5, inf as hi + lo.
_AT = (
    3.33333333333329318027e-01,
    -1.99999999998764832476e-01,
    1.42857142725034663711e-01,
    -1.11111104054623557880e-01,
    9.09088713343650656196e-02,
    -7.69187620504482999495e-02,
    6.66107313738753120669e-02,
    -5.83357013379057348645e-02,
    4.97687799461593236017e-02,
    -3.65315727442169155270e-02,
    1.62858201153657823623e-02,
)
_ATAN_HI = (
    4.63647609000806093515e-01,
    7.85398163397448278999e-01,
    9.82793723247329054082e-01,
    1.57079632679489655800e00,
)
_ATAN_LO = (
    2.26987774529616870924e-17,
    3.06161699786838301793e-17,
    1.39033110312309984516e-17,
    6.12323399573676603587e-17,
)
_PI, _PI_LO = 3.1415926535897931160e00, 1.2246467991473531772e-16


@_jit
def _atan_nonneg(x):
    """atan(x) for x >= 0 (inf included)."""
    if x < 0.4375:
        t, k = x, -1
    elif x < 0.6875:
        t, k = (2.0 * x - 1.0) / (2.0 + x), 0
    elif x < 1.1875:
        t, k = (x - 1.0) / (x + 1.0), 1
    elif x < 2.4375:
        t, k = (x - 1.5) / (1.0 + 1.5 * x), 2
    else:
        t, k = -1.0 / x, 3
    z = t * t
    w = z * z
    s1 = z * (_AT[0] + w * (_AT[2] + w * (_AT[4] + w * (_AT[6] + w * (_AT[8] + w * _AT[10])))))
    s2 = w * (_AT[1] + w * (_AT[3] + w * (_AT[5] + w * (_AT[7] + w * _AT[9]))))
    if k < 0:
        return t - t * (s1 + s2)
    return _ATAN_HI[k] - ((t * (s1 + s2) - _ATAN_LO[k]) - t)


@_jit
def atan2_f64(y, x):
    """The angle of (x, y), as C's atan2 (signed zeros and infinities included)."""
    if x != x or y != y:
        return x + y
    if y == 0.0:  # +-0 toward x >= +0, +-pi toward x <= -0
        return y if not np.signbit(x) else math.copysign(_PI, y)
    if x == 0.0 or (abs(y) == np.inf and abs(x) < np.inf):
        return math.copysign(0.5 * _PI, y)
    if abs(x) == np.inf:
        if abs(y) == np.inf:
            return math.copysign(0.25 * _PI if x > 0 else 0.75 * _PI, y)
        return math.copysign(0.0 if x > 0 else _PI, y)
    z = _atan_nonneg(abs(y / x))
    if x > 0:
        return math.copysign(z, y)
    return math.copysign(_PI - (z - _PI_LO), y)


@_jit
def _log_parts(x, y, modulus):
    if abs(x) == np.inf or abs(y) == np.inf:
        return complex(np.inf, atan2_f64(y, x))
    if x != x or y != y:
        return complex(np.nan, np.nan)
    return complex(modulus, atan2_f64(y, x))


@_jit
def c_log(z):
    """log of a complex64 value held as complex128 (its squares exact in float64)."""
    x, y = z.real, z.imag
    return _log_parts(x, y, 0.5 * log_f64(x * x + y * y))


@_jit
def c_log64(z):
    x, y = z.real, z.imag
    m, n = max(abs(x), abs(y)), min(abs(x), abs(y))
    if 0.5 <= m <= 2.0:
        modulus = _log_abs_near_one(m, n)
    elif m == 0.0:
        modulus = -np.inf
    else:
        r = n / m
        modulus = log_f64(m) + 0.5 * log1p_f64(r * r)
    return _log_parts(x, y, modulus)


@_jit
def _sqrt_parts(x, y, h):
    """C99's csqrt given h = |z| (Kahan): the root of the larger part, then the other."""
    if abs(y) == np.inf:
        return complex(np.inf, y)
    if x != x:
        return complex(np.nan, np.nan)
    if x == np.inf:
        return complex(np.inf, y - y if y != y else math.copysign(0.0, y))
    if x == -np.inf:
        return complex(y - y if y != y else 0.0, math.copysign(np.inf, y))
    if y != y:
        return complex(np.nan, np.nan)
    if x == 0.0 and y == 0.0:
        return complex(0.0, y)
    t = math.sqrt(0.5 * abs(x) + 0.5 * h) if h > 1e300 else math.sqrt((abs(x) + h) * 0.5)
    if x >= 0.0:
        return complex(t, y / (2.0 * t))
    return complex(abs(y) / (2.0 * t), math.copysign(t, y))


@_jit
def c_sqrt(z):
    """sqrt of a complex64 value held as complex128 (no overflow in float64)."""
    return _sqrt_parts(z.real, z.imag, c_abs(z))


@_jit
def c_sqrt64(z):
    x, y = z.real, z.imag
    m = max(abs(x), abs(y))
    if 0.0 < m < 1e-300:  # subnormal parts: scale by 2^200, root 2^-100
        w = _sqrt_parts(x * 2.0**200, y * 2.0**200, c_abs64(z * 2.0**200))
        return complex(w.real * 2.0**-100, w.imag * 2.0**-100)
    if 1e300 < m < np.inf:  # |z| would overflow: scale by 1/4, root by 2
        w = _sqrt_parts(x * 0.25, y * 0.25, c_abs64(z * 0.25))
        return complex(w.real * 2.0, w.imag * 2.0)
    return _sqrt_parts(x, y, c_abs64(z))
