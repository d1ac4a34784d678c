"""Elementwise lowerings for generated CUDA kernels, keyed by primitive name.

`lower(op, operand_dtype, result_dtype, args, attrs, out)` returns a Python expression for one
element; `args` are names or literals, so repeating them is free. Where NumPy's answer needs
branches (integer division by zero, INT_MIN // -1, shifts past the width, float -> int casts,
logaddexp), the lowering writes statements through `out` (a `Statements`) and returns the
variable holding the result. Every result is cast to the graph's dtype: numba widens int32
arithmetic to int64 and types a bare float literal as float64, and float32 must stay float32.
Transcendentals are libdevice routines (`nv.expf`), see devlib.py.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from jitc.core.errors import UnsupportedError

HALF, SINGLE = np.dtype(np.float16), np.dtype(np.float32)
# The typed casts generated code calls, by dtype (devlib.py binds them). A float16 *value* is
# a float32 that float16 holds exactly (as on the cpu, backends/cpu/half.py): loaded from
# its float16 array by `f32(...)`, rounded after every op that makes one by `f32(f16(...))`
# (NumPy's float16 loops: the op in float32, the result rounded to float16), stored by
# `f16(...)`; its "cast" is that rounding.
CAST = {
    np.dtype(d): name
    for d, name in (
        (np.int8, "i8"),
        (np.int16, "i16"),
        (np.int32, "i32"),
        (np.int64, "i64"),
        (np.uint8, "u8"),
        (np.uint16, "u16"),
        (np.uint32, "u32"),
        (np.uint64, "u64"),
        (np.float32, "f32"),
        (np.float64, "f64"),
    )
}


def value_dtype(dtype) -> np.dtype:
    """The dtype a value of `dtype` has in generated code (float16: float32)."""
    return SINGLE if np.dtype(dtype) == HALF else np.dtype(dtype)


def load(dtype, element: str) -> str:
    """An array element of `dtype` as a value."""
    return f"f32({element})" if np.dtype(dtype) == HALF else element


def store(dtype, value: str) -> str:
    """A value of `dtype` as an element of its array."""
    return f"f16({value})" if np.dtype(dtype) == HALF else value


# NumPy ufunc name -> libdevice base name; the float32 routine is the name + "f".
LIBDEVICE = {
    "exp": "exp",
    "exp2": "exp2",
    "expm1": "expm1",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "log1p": "log1p",
    "sqrt": "sqrt",
    "cbrt": "cbrt",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "floor": "floor",
    "ceil": "ceil",
    "rint": "rint",
    "trunc": "trunc",
    "arctan2": "atan2",
    "hypot": "hypot",
    "copysign": "copysign",
    "fmod": "fmod",
    "power": "pow",
    "signbit": "signbit",
    "nextafter": "nextafter",
}

# error codes a kernel stores in its err[0] (the driver raises the matching exception)
ERR_INDEX, ERR_NEGATIVE_POWER, ERR_SCATTER = 1, 2, 3
ERR_SINGULAR, ERR_NOT_POSITIVE_DEFINITE = 4, 5  # linalg.py


class Statements(Protocol):
    """Where a lowering writes statements (emitter.Writer): fresh names, lines, nested
    blocks, the kernel's error flag."""

    def tmp(self, prefix: str = "t") -> str: ...

    def line(self, text: str) -> None: ...

    def open(self, header: str) -> None:
        """Start a block (`if ...:`, `else:`, `while ...:`) whose lines follow."""

    def close(self) -> None: ...

    def error(self, code: int) -> str:
        """A statement storing `code` into the kernel's error flag."""


def literal(value, dtype) -> str:
    """A scalar constant typed as `dtype` in generated code (float16: the float16 value, as a
    float32)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "f":
        v = float(np.asarray(value).astype(dtype)) if dtype == HALF else float(value)
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INF" if v > 0 else "-INF"
        else:
            text = repr(v)
        return f"{CAST[value_dtype(dtype)]}({text})"
    v = int(value)
    if v == np.iinfo(np.int64).min:  # -9223372036854775808 does not fit a literal's int64
        return f"{CAST[dtype]}({v + 1} - 1)"
    return f"{CAST[dtype]}({v})"


def cast(expr: str, dtype) -> str:
    """`expr` (a value of the same kind of dtype, or wider) as a value of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return f"({expr})"
    if dtype == HALF:
        return f"f32(f16({expr}))"
    return f"{CAST[dtype]}({expr})"


def libdevice_name(ufunc: str, dtype) -> str:
    """The libdevice routine for NumPy's `ufunc` on float `dtype` (signbitd / signbitf)."""
    base = LIBDEVICE[ufunc]
    if base == "signbit":
        return "signbitf" if np.dtype(dtype) == np.float32 else "signbitd"
    return base + ("f" if np.dtype(dtype) == np.float32 else "")


def nv_call(ufunc: str, dtype, args) -> str:
    return f"nv.{libdevice_name(ufunc, dtype)}({', '.join(args)})"


def multiply(a: str, b: str, dtype) -> str:
    """a * b. A float product is libdevice's fmul_rn / dmul_rn, which the compilers never
    contract with an add into an FMA (NVVM and ptxas do so with `*` by default): NumPy
    rounds the product, then the sum, and so must we for NumPy's bits."""
    if np.dtype(dtype).kind != "f":
        return f"{a} * {b}"
    return f"nv.{'fmul_rn' if np.dtype(dtype) == SINGLE else 'dmul_rn'}({a}, {b})"


def _to_signed(a, src, dst, out: Statements) -> str:
    """Float `a` to the signed `dst` (int32 or int64) as x86's cvttss2si / cvttsd2si, which
    NumPy's casts run: NaN and out-of-range values give INT_MIN (the GPU's cvt saturates)."""
    bits = dst.itemsize * 8
    lo, hi = literal(-(2.0 ** (bits - 1)), src), literal(2.0 ** (bits - 1), src)
    v = out.tmp()
    out.line(
        f"{v} = {CAST[dst]}({a}) if ({a} >= {lo} and {a} < {hi}) else "
        f"{literal(np.iinfo(dst).min, dst)}"
    )
    return v


def _float_to_int(a, src, dst, out: Statements) -> str:
    """As the cpu backend converts (backends/cpu/lowering.py float_to_int, NumPy on x86-64):
    8- and 16-bit targets through int32, uint32 through int64, uint64 as int64 below 2**63
    and offset by 2**63 above (so 1e19 converts exactly)."""
    i32, i64 = np.dtype(np.int32), np.dtype(np.int64)
    if dst.kind == "i" and dst.itemsize >= 4:
        return _to_signed(a, src, dst, out)
    if dst.itemsize <= 2:
        return cast(_to_signed(a, src, i32, out), dst)
    if dst == np.dtype(np.uint32):
        return cast(_to_signed(a, src, i64, out), dst)
    big, v, d = literal(2.0**63, src), out.tmp(), out.tmp()
    out.open(f"if {a} >= {big}:")
    out.line(f"{d} = {cast(f'{a} - {big}', src)}")
    out.line(f"{v} = u64({_to_signed(d, src, i64, out)}) ^ u64({2**63})")
    out.close()
    out.open("else:")
    out.line(f"{v} = u64({_to_signed(a, src, i64, out)})")
    out.close()
    return v


def _convert(a, src, dst, out: Statements) -> str:
    src = value_dtype(src)  # a float16 value is a float32
    if dst.kind == "b":
        return a if src.kind == "b" else f"({a} != {literal(0, src)})"
    if src.kind == "f" and dst.kind in "iu":
        return _float_to_int(a, src, dst, out)
    if dst == HALF and src.kind in "iu":  # rounded once, as NumPy's npy_double_to_half
        return cast(f"f64({a})", dst)
    return cast(a, dst)


# Integer helpers write every literal in the operands' dtype: numba compares and combines a
# uint64 with an int64 literal in float64.


def _int_floor_divide(a, b, dtype, out):
    """NumPy's: 0 for a zero divisor, INT_MIN // -1 wraps (LLVM's sdiv would trap)."""
    t, zero = CAST[dtype], literal(0, dtype)
    q = out.tmp()
    out.open(f"if {b} == {zero}:")
    out.line(f"{q} = {zero}")
    out.close()
    if dtype.kind == "i":
        out.open(f"elif {b} == {literal(-1, dtype)}:")
        out.line(f"{q} = {t}(-{a})")  # wraps for INT_MIN, as NumPy's
        out.close()
    out.open("else:")
    out.line(f"{q} = {t}({a} // {b})")
    out.close()
    return q


def _int_remainder(a, b, dtype, out, c_semantics):
    t, zero = CAST[dtype], literal(0, dtype)
    r = out.tmp()
    signed = dtype.kind == "i"
    out.open(
        f"if {b} == {zero} or {b} == {literal(-1, dtype)}:" if signed else f"if {b} == {zero}:"
    )
    out.line(f"{r} = {zero}")
    out.close()
    out.open("else:")
    out.line(f"{r} = {t}({a} % {b})")  # floor semantics (sign of the divisor)
    if c_semantics and signed:  # fmod: the sign of the dividend
        out.open(f"if {r} != {zero} and ({r} < {zero}) != ({a} < {zero}):")
        out.line(f"{r} = {t}({r} - {b})")
        out.close()
    out.close()
    return r


def _float_floor_divide(a, b, dtype, out):
    """NumPy's npy_floor_divide: derived from fmod, so it is exact."""
    t = CAST[dtype]
    zero, one, half = literal(0, dtype), literal(1, dtype), literal(0.5, dtype)
    q, mod, div, fl = out.tmp(), out.tmp(), out.tmp(), out.tmp()
    out.open(f"if {b} == {zero}:")
    out.line(f"{q} = {t}({a} / {b})")
    out.close()
    out.open("else:")
    out.line(f"{mod} = {nv_call('fmod', dtype, [a, b])}")
    out.line(f"{div} = {t}(({a} - {mod}) / {b})")
    out.open(f"if {mod} != {zero} and ({b} < {zero}) != ({mod} < {zero}):")
    out.line(f"{div} = {t}({div} - {one})")
    out.close()
    out.open(f"if {div} != {zero}:")
    out.line(f"{fl} = {nv_call('floor', dtype, [div])}")
    out.open(f"if {div} - {fl} > {half}:")
    out.line(f"{fl} = {t}({fl} + {one})")
    out.close()
    out.line(f"{q} = {fl}")
    out.close()
    out.open("else:")
    out.line(f"{q} = {nv_call('copysign', dtype, [zero, f'{t}({a} / {b})'])}")
    out.close()
    out.close()
    return q


def _float_remainder(a, b, dtype, out):
    """NumPy's npy_remainder: fmod moved to the sign of the divisor."""
    t = CAST[dtype]
    zero = literal(0, dtype)
    m = out.tmp()
    out.line(f"{m} = {nv_call('fmod', dtype, [a, b])}")
    out.open(f"if {b} != {zero}:")
    out.open(f"if {m} != {zero}:")
    out.open(f"if ({b} < {zero}) != ({m} < {zero}):")
    out.line(f"{m} = {t}({m} + {b})")
    out.close()
    out.close()
    out.open("else:")
    out.line(f"{m} = {nv_call('copysign', dtype, [zero, b])}")
    out.close()
    out.close()
    return m


def _int_power(a, b, dtype, out):
    t, zero, one = CAST[dtype], literal(0, dtype), literal(1, dtype)
    r, base, e = out.tmp(), out.tmp(), out.tmp()
    if dtype.kind == "i":
        out.open(f"if {b} < {zero}:")
        out.line(out.error(ERR_NEGATIVE_POWER))
        out.close()
    out.line(f"{r} = {one}")
    out.line(f"{base} = {a}")
    out.line(f"{e} = {b}")
    out.open(f"while {e} > {zero}:")
    out.open(f"if {e} & {one}:")
    out.line(f"{r} = {t}({r} * {base})")
    out.close()
    out.line(f"{base} = {t}({base} * {base})")
    out.line(f"{e} = {t}({e} >> {one})")
    out.close()
    return r


def _shift(a, b, dtype, left, out):
    """NumPy's npy_lshift/npy_rshift: a shift by the width or more (or by a negative count)
    gives 0, or -1 for a negative value shifted right."""
    t, zero = CAST[dtype], literal(0, dtype)
    r = out.tmp()
    past = f"{b} >= {literal(dtype.itemsize * 8, dtype)}"
    out.open(f"if {b} < {zero} or {past}:" if dtype.kind == "i" else f"if {past}:")
    out.line(
        f"{r} = {zero}"
        if left or dtype.kind == "u"
        else f"{r} = {literal(-1, dtype)} if {a} < {zero} else {zero}"
    )
    out.close()
    out.open("else:")
    out.line(f"{r} = {t}({a} {'<<' if left else '>>'} {b})")
    out.close()
    return r


def _logaddexp(a, b, dtype, base2, out):
    """NumPy's npy_logaddexp / npy_logaddexp2."""
    t = CAST[dtype]
    zero = literal(0, dtype)
    r, d = out.tmp(), out.tmp()
    if base2:
        same = f"{t}({a} + {literal(1, dtype)})"

        def tail(v):
            return (
                f"{t}({literal(1 / math.log(2), dtype)} * "
                f"{nv_call('log1p', dtype, [nv_call('exp2', dtype, [v])])})"
            )
    else:
        same = f"{t}({a} + {literal(math.log(2), dtype)})"

        def tail(v):
            return nv_call("log1p", dtype, [nv_call("exp", dtype, [v])])

    out.open(f"if {a} == {b}:")  # equal infinities too
    out.line(f"{r} = {same}")
    out.close()
    out.open("else:")
    out.line(f"{d} = {t}({a} - {b})")
    out.open(f"if {d} > {zero}:")
    out.line(f"{r} = {t}({a} + {tail(f'-{d}')})")
    out.close()
    out.open(f"elif {d} <= {zero}:")
    out.line(f"{r} = {t}({b} + {tail(d)})")
    out.close()
    out.open("else:")
    out.line(f"{r} = {d}")  # NaN
    out.close()
    out.close()
    return r


def lower(op, dtype, result, args, attrs, out: Statements) -> str:
    """One element of `op` on `args` (expressions of dtype `dtype`), of dtype `result`."""
    dtype, result = np.dtype(dtype), np.dtype(result)
    a = args[0]
    b = args[1] if len(args) > 1 else None
    kind = dtype.kind
    if op == "convert":
        return _convert(a, dtype, result, out)
    if op == "select":
        return f"({args[1]} if {a} else {args[2]})"
    if dtype == HALF:  # NumPy's float16 loops: the op in float32, rounded to float16
        wide = lower(op, SINGLE, SINGLE if result == HALF else result, args, attrs, out)
        return cast(wide, HALF) if result == HALF else wide
    if kind == "b":
        bool_ops = {
            "add": f"({a} | {b})",
            "maximum": f"({a} | {b})",
            "fmax": f"({a} | {b})",
            "multiply": f"({a} & {b})",
            "minimum": f"({a} & {b})",
            "fmin": f"({a} & {b})",
            "invert": f"(not {a})",
            "absolute": a,
            "square": a,
            "sign": a,
            "floor": a,
            "ceil": a,
            "trunc": a,
            "rint": a,
            "bitwise_and": f"({a} & {b})",
            "bitwise_or": f"({a} | {b})",
            "bitwise_xor": f"({a} != {b})",
            "signbit": "False",
            "isnan": "False",
            "isinf": "False",
            "isfinite": "True",
        }
        if op in bool_ops:
            return bool_ops[op]
    compare = {
        "equal": "==",
        "not_equal": "!=",
        "less": "<",
        "less_equal": "<=",
        "greater": ">",
        "greater_equal": ">=",
    }
    if op in compare:
        return f"({a} {compare[op]} {b})"
    zero = literal(0, dtype)
    logical = {
        "logical_and": f"(({a} != {zero}) & ({b} != {zero}))",
        "logical_or": f"(({a} != {zero}) | ({b} != {zero}))",
        "logical_xor": f"(({a} != {zero}) != ({b} != {zero}))",
        "logical_not": f"({a} == {zero})",
    }
    if op in logical:
        return logical[op]
    t = CAST.get(result)
    if kind == "f":
        if op == "nextafter":
            # NumPy computes x + y when either is NaN, which on x86 is that NaN itself (x's
            # when both are); libdevice gives the GPU's canonical NaN 0x7fffffff instead.
            return f"({a} if {a} != {a} else ({b} if {b} != {b} else {nv_call(op, dtype, args)}))"
        if op in LIBDEVICE and op != "signbit":
            return nv_call(op, dtype, args)
        if op == "signbit":
            return f"({nv_call(op, dtype, args)} != 0)"
        if op == "isnan":
            return f"({a} != {a})"
        if op == "isinf":
            return f"(({a} == {literal(math.inf, dtype)}) | ({a} == {literal(-math.inf, dtype)}))"
        if op == "isfinite":
            return (
                f"(({a} == {a}) & ({a} != {literal(math.inf, dtype)}) & "
                f"({a} != {literal(-math.inf, dtype)}))"
            )
        if op == "floor_divide":
            return _float_floor_divide(a, b, dtype, out)
        if op == "remainder":
            return _float_remainder(a, b, dtype, out)
        if op == "logaddexp":
            return _logaddexp(a, b, dtype, False, out)
        if op == "logaddexp2":
            return _logaddexp(a, b, dtype, True, out)
        if op == "sign":
            one = literal(1, dtype)
            return (
                f"({one} if {a} > {zero} else (-{one} if {a} < {zero} else "
                f"({a} if {a} != {a} else {zero})))"
            )
        if op == "reciprocal":
            return f"{t}({literal(1, dtype)} / {a})"
        if op == "divide":
            return f"{t}({a} / {b})"
        if op == "deg2rad":
            return f"{t}({multiply(a, literal(math.pi / 180, dtype), dtype)})"
        if op == "rad2deg":
            return f"{t}({multiply(a, literal(180 / math.pi, dtype), dtype)})"
    if kind in "iu":
        signed = kind == "i"
        if op in ("floor", "ceil", "trunc", "rint"):
            return a
        if op in ("isnan", "isinf"):
            return "False"
        if op == "isfinite":
            return "True"
        if op == "signbit":
            return f"({a} < {zero})" if signed else "False"
        if op == "sign":
            return (
                f"{t}(1 if {a} > {zero} else (-1 if {a} < {zero} else 0))"
                if signed
                else f"{t}({a} != {zero})"
            )
        if op == "floor_divide":
            return _int_floor_divide(a, b, dtype, out)
        if op == "remainder":
            return _int_remainder(a, b, dtype, out, c_semantics=False)
        if op == "fmod":
            return _int_remainder(a, b, dtype, out, c_semantics=True)
        if op == "power":
            return _int_power(a, b, dtype, out)
        if op == "left_shift":
            return _shift(a, b, dtype, True, out)
        if op == "right_shift":
            return _shift(a, b, dtype, False, out)
        if op == "reciprocal":  # C's 1 / a: truncation; for 0, NumPy's own answer
            with np.errstate(all="ignore"):
                at_zero = literal(np.reciprocal(np.zeros(1, dtype))[0], dtype)
            one = literal(1, dtype)
            if not signed:
                return f"({t}({a} == {one}) if {a} != {zero} else {at_zero})"
            return (
                f"({t}(1 if {a} == {one} else (-1 if {a} == {literal(-1, dtype)} else 0)) "
                f"if {a} != {zero} else {at_zero})"
            )
        if op == "invert":
            return f"{t}(~{a})"
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
            return f"{t}({a} {sym} {b})"
        if op == "absolute" and not signed:
            return a
    if kind in "iuf":
        arith = {
            "add": f"{a} + {b}",
            "subtract": f"{a} - {b}",
            "multiply": multiply(a, b, dtype),
            "square": multiply(a, a, dtype),
            "negative": f"-{a}",
            "absolute": f"abs({a})",
        }
        if op in arith:
            return f"{t}({arith[op]})"
        nan_first = {
            "maximum": (">=", a),
            "minimum": ("<=", a),
            "fmax": (">=", b),
            "fmin": ("<=", b),
        }
        if op in nan_first:  # maximum/minimum propagate NaN, fmax/fmin ignore it
            cmp, nan_check = nan_first[op]
            return f"({a} if ({a} {cmp} {b} or {nan_check} != {nan_check}) else {b})"
    raise UnsupportedError(f"cuda backend: no lowering for {op} on {dtype}")
