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

from jitc.errors import UnsupportedError

CAST = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
        np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
INT_BITS = {np.dtype(np.int32): 32, np.dtype(np.int64): 64}

# NumPy ufunc name -> libdevice base name; the float32 routine is the name + "f".
LIBDEVICE = {
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin",
    "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "floor": "floor", "ceil": "ceil", "rint": "rint", "trunc": "trunc",
    "arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod",
    "power": "pow", "signbit": "signbit", "nextafter": "nextafter",
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
    """A scalar constant typed as `dtype` in generated code."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "f":
        v = float(value)
        if math.isnan(v):
            text = "NAN"
        elif math.isinf(v):
            text = "INF" if v > 0 else "-INF"
        else:
            text = repr(v)
        return f"{CAST[dtype]}({text})"
    v = int(value)
    if v == np.iinfo(np.int64).min:  # -9223372036854775808 does not fit a literal's int64
        return f"{CAST[dtype]}({v + 1} - 1)"
    return f"{CAST[dtype]}({v})"


def cast(expr: str, dtype) -> str:
    dtype = np.dtype(dtype)
    return f"({expr})" if dtype.kind == "b" else f"{CAST[dtype]}({expr})"


def libdevice_name(ufunc: str, dtype) -> str:
    """The libdevice routine for NumPy's `ufunc` on float `dtype` (signbitd / signbitf)."""
    base = LIBDEVICE[ufunc]
    if base == "signbit":
        return "signbitf" if np.dtype(dtype) == np.float32 else "signbitd"
    return base + ("f" if np.dtype(dtype) == np.float32 else "")


def nv_call(ufunc: str, dtype, args) -> str:
    return f"nv.{libdevice_name(ufunc, dtype)}({', '.join(args)})"


def _convert(a, src, dst, out: Statements) -> str:
    if dst.kind == "b":
        return a if src.kind == "b" else f"({a} != {literal(0, src)})"
    if src.kind == "f" and dst.kind == "i":
        # NumPy on x86 (cvttss2si): NaN and out-of-range values give INT_MIN.
        bits = INT_BITS[dst]
        lo, hi = literal(-(2.0 ** (bits - 1)), src), literal(2.0 ** (bits - 1), src)
        v = out.tmp()
        out.line(f"{v} = {CAST[dst]}({a}) if ({a} >= {lo} and {a} < {hi}) else "
                 f"{literal(np.iinfo(dst).min, dst)}")
        return v
    return cast(a, dst)


def _int_floor_divide(a, b, t, out):
    q = out.tmp()
    out.open(f"if {b} == 0:")
    out.line(f"{q} = {t}(0)")
    out.close()
    out.open(f"elif {b} == -1:")
    out.line(f"{q} = {t}(-{a})")  # wraps for INT_MIN, as NumPy's
    out.close()
    out.open("else:")
    out.line(f"{q} = {t}({a} // {b})")
    out.close()
    return q


def _int_remainder(a, b, t, out, c_semantics):
    r = out.tmp()
    out.open(f"if {b} == 0 or {b} == -1:")
    out.line(f"{r} = {t}(0)")
    out.close()
    out.open("else:")
    out.line(f"{r} = {t}({a} % {b})")  # floor semantics (sign of the divisor)
    if c_semantics:  # fmod: the sign of the dividend
        out.open(f"if {r} != 0 and ({r} < 0) != ({a} < 0):")
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


def _int_power(a, b, t, out):
    r, base, e = out.tmp(), out.tmp(), out.tmp()
    out.open(f"if {b} < 0:")
    out.line(out.error(ERR_NEGATIVE_POWER))
    out.close()
    out.line(f"{r} = {t}(1)")
    out.line(f"{base} = {a}")
    out.line(f"{e} = {b}")
    out.open(f"while {e} > 0:")
    out.open(f"if {e} & 1:")
    out.line(f"{r} = {t}({r} * {base})")
    out.close()
    out.line(f"{base} = {t}({base} * {base})")
    out.line(f"{e} = {e} >> 1")
    out.close()
    return r


def _shift(a, b, dtype, left, out):
    t = CAST[dtype]
    bits = INT_BITS[dtype]
    r = out.tmp()
    out.open(f"if {b} < 0 or {b} >= {bits}:")
    out.line(f"{r} = {t}(0)" if left else f"{r} = {t}(-1) if {a} < 0 else {t}(0)")
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
            return (f"{t}({literal(1 / math.log(2), dtype)} * "
                    f"{nv_call('log1p', dtype, [nv_call('exp2', dtype, [v])])})")
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
    if kind == "b":
        bool_ops = {"add": f"({a} | {b})", "maximum": f"({a} | {b})", "fmax": f"({a} | {b})",
                    "multiply": f"({a} & {b})", "minimum": f"({a} & {b})",
                    "fmin": f"({a} & {b})", "invert": f"(not {a})", "absolute": a,
                    "square": a, "sign": a, "floor": a, "ceil": a, "trunc": a, "rint": a,
                    "bitwise_and": f"({a} & {b})", "bitwise_or": f"({a} | {b})",
                    "bitwise_xor": f"({a} != {b})", "signbit": "False",
                    "isnan": "False", "isinf": "False", "isfinite": "True"}
        if op in bool_ops:
            return bool_ops[op]
    compare = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
               "greater": ">", "greater_equal": ">="}
    if op in compare:
        return f"({a} {compare[op]} {b})"
    if op == "logical_and":
        return f"(({a} != 0) & ({b} != 0))"
    if op == "logical_or":
        return f"(({a} != 0) | ({b} != 0))"
    if op == "logical_xor":
        return f"(({a} != 0) != ({b} != 0))"
    if op == "logical_not":
        return f"({a} == 0)"
    t = CAST.get(result)
    if kind == "f":
        if op in LIBDEVICE and op != "signbit":
            return nv_call(op, dtype, args)
        if op == "signbit":
            return f"({nv_call(op, dtype, args)} != 0)"
        if op == "isnan":
            return f"({a} != {a})"
        if op == "isinf":
            return f"(({a} == {literal(math.inf, dtype)}) | ({a} == {literal(-math.inf, dtype)}))"
        if op == "isfinite":
            return (f"(({a} == {a}) & ({a} != {literal(math.inf, dtype)}) & "
                    f"({a} != {literal(-math.inf, dtype)}))")
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
            return (f"({one} if {a} > {literal(0, dtype)} else (-{one} if {a} < "
                    f"{literal(0, dtype)} else ({a} if {a} != {a} else {literal(0, dtype)})))")
        if op == "reciprocal":
            return f"{t}({literal(1, dtype)} / {a})"
        if op == "divide":
            return f"{t}({a} / {b})"
        if op == "deg2rad":
            return f"{t}({a} * {literal(math.pi / 180, dtype)})"
        if op == "rad2deg":
            return f"{t}({a} * {literal(180 / math.pi, dtype)})"
    if kind == "i":
        if op in ("floor", "ceil", "trunc", "rint"):
            return a
        if op in ("isnan", "isinf"):
            return "False"
        if op == "isfinite":
            return "True"
        if op == "signbit":
            return f"({a} < 0)"
        if op == "sign":
            return f"{t}(1 if {a} > 0 else (-1 if {a} < 0 else 0))"
        if op == "floor_divide":
            return _int_floor_divide(a, b, t, out)
        if op == "remainder":
            return _int_remainder(a, b, t, out, c_semantics=False)
        if op == "fmod":
            return _int_remainder(a, b, t, out, c_semantics=True)
        if op == "power":
            return _int_power(a, b, t, out)
        if op == "left_shift":
            return _shift(a, b, dtype, True, out)
        if op == "right_shift":
            return _shift(a, b, dtype, False, out)
        if op == "reciprocal":  # C's 1 / a: truncation, and NumPy's INT_MIN for 0
            lo = literal(np.iinfo(dtype).min, dtype)
            return f"({t}(1 if {a} == 1 else (-1 if {a} == -1 else 0)) if {a} != 0 else {lo})"
        if op == "invert":
            return f"{t}(~{a})"
        if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            sym = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}[op]
            return f"{t}({a} {sym} {b})"
    if kind in "if":
        arith = {"add": f"{a} + {b}", "subtract": f"{a} - {b}", "multiply": f"{a} * {b}",
                 "square": f"{a} * {a}", "negative": f"-{a}", "absolute": f"abs({a})"}
        if op in arith:
            return f"{t}({arith[op]})"
        nan_first = {"maximum": (">=", a), "minimum": ("<=", a), "fmax": (">=", b),
                     "fmin": ("<=", b)}
        if op in nan_first:  # maximum/minimum propagate NaN, fmax/fmin ignore it
            cmp, nan_check = nan_first[op]
            return f"({a} if ({a} {cmp} {b} or {nan_check} != {nan_check}) else {b})"
    raise UnsupportedError(f"cuda backend: no lowering for {op} on {dtype}")
