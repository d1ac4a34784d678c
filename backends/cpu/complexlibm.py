"""NumPy's complex loops that call C99's complex functions, calling the same functions.

NumPy computes np.sin, cos, tan, arcsin, arccos, arctan, their hyperbolic kin and np.power
of complex values with the C library's csin ... catanh and cpow (csinf ... for complex64),
and builds expm1, log1p, exp2, log2 and log10 from libm's real and complex functions
(numpy/_core/src/umath/funcs.inc.src; npy_cpow multiplies out small integer powers first).
The kernels here call those functions of the same libm by name, so every value, C99 Annex
G's special values included, is NumPy's own to the bit. np.sign and np.reciprocal follow
NumPy's loops (loops.c.src) in the parts' precision.

AOT objects import nothing (aot/link.py), so the AOT planner refuses these ops by name
(ops.COMPLEX_LIBM); the cuda backend computes no complex values at all.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from jitc.core.ops import COMPLEX_C99

_LIBM = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_DOUBLE, _FLOAT = ir.DoubleType(), ir.FloatType()
_PAIR = ir.VectorType(_FLOAT, 2)  # a float complex, as the x86-64 ABI passes it (one xmm)
_jit = njit(forceinline=True, error_model="numpy", nogil=True)


def _symbol(name: str) -> str:
    """`name`, made resolvable for numba's JIT (and for kernels loaded from its cache)."""
    llvm.add_symbol(name, ctypes.cast(getattr(_LIBM, name), ctypes.c_void_p).value)
    return name


_I32 = ir.IntType(32)


def _to_pair(builder, z):
    """A numba complex64 {float, float} as <2 x float>."""
    pair = ir.Constant(_PAIR, ir.Undefined)
    for k in (0, 1):
        pair = builder.insert_element(pair, builder.extract_value(z, k), ir.Constant(_I32, k))
    return pair


def _from_pair(builder, pair, struct_type):
    out = ir.Constant(struct_type, ir.Undefined)
    for k in (0, 1):
        out = builder.insert_value(out, builder.extract_element(pair, ir.Constant(_I32, k)), k)
    return out


def _intrinsic(name: str, signature, arity: int):
    """An intrinsic of 1 or 2 operands typed by `signature(*types)` (numba's intrinsics
    take no *args)."""
    if arity == 1:

        def typer(typingctx, a):
            return signature(a)
    else:

        def typer(typingctx, a, b):
            return signature(a, b)

    typer.__name__ = name
    return intrinsic(typer)


def _complex_call(name: str, arity: int):
    """An intrinsic calling libm's complex `name` (complex128) or `name`f (complex64) on
    `arity` operands of one complex type."""
    double, single = _symbol(name), _symbol(name + "f")

    def signature(*zs):
        if zs[0] not in (types.complex64, types.complex128):
            return None
        if any(z != zs[0] for z in zs):
            return None
        z = zs[0]

        def codegen(context, builder, signature, args):
            struct_type = context.get_value_type(z)
            if z == types.complex128:
                fnty = ir.FunctionType(
                    ir.LiteralStructType([_DOUBLE, _DOUBLE]), [_DOUBLE] * 2 * arity
                )
                fn = cgutils.get_or_insert_function(builder.module, fnty, double)
                parts = [builder.extract_value(a, k) for a in args for k in (0, 1)]
                pair = builder.call(fn, parts)
                out = ir.Constant(struct_type, ir.Undefined)
                for k in (0, 1):
                    out = builder.insert_value(out, builder.extract_value(pair, k), k)
                return out
            fnty = ir.FunctionType(_PAIR, [_PAIR] * arity)
            fn = cgutils.get_or_insert_function(builder.module, fnty, single)
            return _from_pair(
                builder, builder.call(fn, [_to_pair(builder, a) for a in args]), struct_type
            )

        return z(*zs), codegen

    return _intrinsic(f"libm_{name}", signature, arity)


def _real_call(name: str, arity: int):
    """An intrinsic calling libm's real `name` (float64) or `name`f (float32)."""
    double, single = _symbol(name), _symbol(name + "f")

    def signature(*xs):
        if xs[0] not in (types.float32, types.float64):
            return None
        if any(x != xs[0] for x in xs):
            return None
        x = xs[0]

        def codegen(context, builder, signature, args):
            real = _DOUBLE if x == types.float64 else _FLOAT
            fnty = ir.FunctionType(real, [real] * arity)
            fn = cgutils.get_or_insert_function(
                builder.module, fnty, double if x == types.float64 else single
            )
            return builder.call(fn, list(args))

        return x(*xs), codegen

    return _intrinsic(f"libm_{name}", signature, arity)


_CALLS = {ufunc: _complex_call(c, 1) for ufunc, c in COMPLEX_C99.items()}
_cexp, _clog, _cpow = _complex_call("cexp", 1), _complex_call("clog", 1), _complex_call("cpow", 2)
_sin, _cos, _exp, _expm1, _log = (_real_call(n, 1) for n in ("sin", "cos", "exp", "expm1", "log"))
_hypot, _atan2 = _real_call("hypot", 2), _real_call("atan2", 2)


def _family(real, cplx):
    """The composite loops in one precision: `real` makes a part, `cplx` a value."""
    zero, one, two = real(0), real(1), real(2)
    nan = real(np.nan)
    log2e, log10e, ln2 = real(np.log2(np.e)), real(np.log10(np.e)), real(np.log(2))

    @_jit
    def expm1(z):
        a = _sin(z.imag / two)
        return cplx(
            complex(_expm1(z.real) * _cos(z.imag) - two * a * a, _exp(z.real) * _sin(z.imag))
        )

    @_jit
    def log1p(z):
        return cplx(complex(_log(_hypot(z.real + one, z.imag)), _atan2(z.imag, z.real + one)))

    @_jit
    def exp2(z):
        return _cexp(cplx(complex(z.real * ln2, z.imag * ln2)))

    @_jit
    def log2(z):
        r = _clog(z)
        return cplx(complex(r.real * log2e, r.imag * log2e))

    @_jit
    def log10(z):
        r = _clog(z)
        return cplx(complex(r.real * log10e, r.imag * log10e))

    @_jit
    def mul(ar, ai, br, bi):
        return ar * br - ai * bi, ar * bi + ai * br

    @_jit
    def cdiv(ar, ai, br, bi):
        """npy_cdiv: Smith's quotient; a zero divisor divides each part by its own zero."""
        if abs(br) >= abs(bi):
            if br == zero and bi == zero:
                return cplx(complex(ar / abs(br), ai / abs(bi)))
            rat = bi / br
            scl = one / (br + bi * rat)
            return cplx(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
        rat = br / bi
        scl = one / (bi + br * rat)
        return cplx(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))

    @_jit
    def reciprocal(z):
        """NumPy's loop: Smith's quotient 1 / z."""
        r, i = z.real, z.imag
        if abs(i) <= abs(r):
            q = i / r
            d = r + i * q
            return cplx(complex(one / d, -q / d))
        q = r / i
        d = i + r * q
        return cplx(complex(q / d, -one / d))

    @_jit
    def sign(z):
        """z / |z| (NumPy 2), 0 at 0, a unit axis at an infinite part, NaN at NaN."""
        r, i = z.real, z.imag
        m = _hypot(r, i)
        if m != m:
            return cplx(complex(nan, nan))
        if m == np.inf:
            if abs(r) == np.inf:
                if abs(i) == np.inf:
                    return cplx(complex(nan, nan))
                return cplx(complex(np.copysign(one, r), zero))
            return cplx(complex(zero, np.copysign(one, i)))
        if m == zero:
            return cplx(complex(zero, zero))
        return cplx(complex(r / m, i / m))

    @_jit
    def power(a, b):
        """npy_cpow: 1 for a zero exponent, 0 or NaN for a zero base, integer exponents of
        |n| < 100 by repeated products (a quotient for n < 0), else libm's cpow."""
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if br == zero and bi == zero:
            return cplx(complex(one, zero))
        if ar == zero and ai == zero:
            if br > zero:
                return cplx(complex(zero, zero))
            return cplx(complex(nan, nan))
        if bi == zero and -100.0 < br < 100.0 and np.float64(np.int64(br)) == br:
            n = np.int64(br)
            if n == 1:
                return a
            if n == 2:
                pr, pi = mul(ar, ai, ar, ai)
                return cplx(complex(pr, pi))
            if n == 3:
                pr, pi = mul(ar, ai, ar, ai)
                pr, pi = mul(ar, ai, pr, pi)
                return cplx(complex(pr, pi))
            n = abs(n)
            qr, qi, pr, pi = one, zero, ar, ai
            mask = 1
            while True:
                if n & mask:
                    qr, qi = mul(qr, qi, pr, pi)
                mask <<= 1
                if n < mask:
                    break
                pr, pi = mul(pr, pi, pr, pi)
            if br < zero:
                return cdiv(one, zero, qr, qi)
            return cplx(complex(qr, qi))
        return _cpow(a, b)

    return {
        "expm1": expm1,
        "log1p": log1p,
        "exp2": exp2,
        "log2": log2,
        "log10": log10,
        "reciprocal": reciprocal,
        "sign": sign,
        "power": power,
    }


_BY_WIDTH = {
    "c64": _family(np.float32, np.complex64),
    "c128": _family(np.float64, np.complex128),
}


def kernel_globals() -> dict:
    """The helpers generated kernels call: `cx_<op>` for the C99 calls (both widths, by
    the operand's type), `cx_<op>_c64` / `cx_<op>_c128` for the composite loops."""
    found = {f"cx_{op}": fn for op, fn in _CALLS.items()}
    for width, family in _BY_WIDTH.items():
        found.update({f"cx_{op}_{width}": fn for op, fn in family.items()})
    return found
