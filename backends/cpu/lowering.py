"""Elementwise lowerings for generated numba code, keyed by primitive name.

`lower_elementwise(op, operand_dtype, result_dtype, args, attrs)` returns a Python expression
(a string) computing one element. Results are cast to the graph's dtype explicitly: numba
widens int32 arithmetic to int64 and a bare float literal to float64.
"""

from __future__ import annotations

import math

import numpy as np

from jitc.core import interrupts
from jitc.core.errors import UnsupportedError
from jitc.core.ops import COMPLEX_C99, COMPLEX_LIBM

TYPE_NAMES = {
    np.dtype(np.bool_): "np.bool_",
    np.dtype(np.int8): "np.int8",
    np.dtype(np.int16): "np.int16",
    np.dtype(np.int32): "np.int32",
    np.dtype(np.int64): "np.int64",
    np.dtype(np.uint8): "np.uint8",
    np.dtype(np.uint16): "np.uint16",
    np.dtype(np.uint32): "np.uint32",
    np.dtype(np.uint64): "np.uint64",
    np.dtype(np.float32): "np.float32",
    np.dtype(np.float64): "np.float64",
    # a float16 value is a float32 that float16 holds (backends/cpu/half.py): its "cast"
    # rounds to the nearest float16
    np.dtype(np.float16): "round16",
    np.dtype(np.complex64): "np.complex64",
    np.dtype(np.complex128): "np.complex128",
}
HALF, SINGLE = np.dtype(np.float16), np.dtype(np.float32)
# Element types of arrays in memory as numba sees them: float16 as its bits.
STORAGE = {**TYPE_NAMES, HALF: "np.uint16"}


def storage(dtype) -> np.dtype:
    """The dtype numba reads an array of `dtype` as (float16: uint16)."""
    return np.dtype(np.uint16) if np.dtype(dtype) == HALF else np.dtype(dtype)


def load(dtype, expr: str) -> str:
    """An element `expr` of an array of `dtype` as a value."""
    return f"h2f({expr})" if np.dtype(dtype) == HALF else expr


def store(dtype, expr: str) -> str:
    """A value `expr` of `dtype` as an element to write into an array of `dtype`."""
    return f"f2h({expr})" if np.dtype(dtype) == HALF else expr


def literal(value, dtype) -> str:
    """A scalar constant typed as `dtype` in generated code."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "True" if value else "False"
    if dtype.kind == "c":
        part = np.finfo(dtype).dtype
        value = complex(value)
        return (
            f"{TYPE_NAMES[dtype]}(complex({literal(value.real, part)}, "
            f"{literal(value.imag, part)}))"
        )
    if dtype.kind == "f":
        v = float(value)
        text = (
            "np.nan"
            if math.isnan(v)
            else ("np.inf" if v == math.inf else "-np.inf" if v == -math.inf else repr(v))
        )
        return f"{TYPE_NAMES[dtype]}({text})"
    return f"{TYPE_NAMES[dtype]}({int(value)})"


def _vmath_table() -> dict:
    """backends/cpu/vmath.py's VMATH, imported with Ctrl-C held back: the import makes
    numba dispatchers, and a KeyboardInterrupt inside one leaves llvmlite's lock held by the
    main thread, so the compile thread's next LLVM call waits forever (core/interrupts.py)."""
    with interrupts.deferred():
        try:
            from jitc.backends.cpu.vmath import VMATH
        except ImportError:
            return {}
    return VMATH


def _vmath(name, dtype):
    """jitc's vectorizable math function name for (name, dtype), or None."""
    table = _vmath_table()
    fn = table.get((name, np.dtype(dtype).type)) or table.get((name, np.dtype(dtype)))
    return None if fn is None else f"vm_{name}_{np.dtype(dtype).name}"


def vmath_globals() -> dict:
    return {f"vm_{name}_{np.dtype(dt).name}": fn for (name, dt), fn in _vmath_table().items()}


# Float ops numba implements with NumPy's scalar semantics (NaN for domain errors, ...).
_NP_FLOAT = frozenset(
    {
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "cbrt",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "floor",
        "ceil",
        "rint",
        "trunc",
        "arctan2",
        "hypot",
        "copysign",
        "logaddexp",
        "logaddexp2",
        "fmod",
        "power",
    }
)


def float_to_int(a, src, dst) -> str:
    """`a` (a float of dtype `src`) converted to the integer dtype `dst` as NumPy converts on
    x86-64, where C leaves it undefined (NaN, out of range) included where that is one
    instruction: 8- and 16-bit targets through int32 (cvttsd2si: INT_MIN beyond its range,
    then the low bits), uint32 through int64, uint64 as int64 below 2**63 and offset by 2**63
    above (so 1e19 converts exactly). One case differs: NaN to uint32 is 0 here, 2**31 in
    NumPy's vector loop (NumPy calls it undefined)."""
    t = TYPE_NAMES[dst]
    if dst.kind == "i" and dst.itemsize >= 4:
        return f"{t}({a})"
    if dst.itemsize <= 2:
        return f"{t}(np.int32({a}))"
    if dst == np.dtype(np.uint32):
        return f"{t}(np.int64({a}))"
    big = literal(2.0**63, src)
    return (
        f"(np.uint64(np.int64({a} - {big})) ^ np.uint64(9223372036854775808) "
        f"if {a} >= {big} else np.uint64(np.int64({a})))"
    )


# Float arithmetic numba types as its operands' dtype already: no cast around it (the casts
# were half of numba's typing work on a long elementwise chain).
_FLOAT_SAME_TYPE = {
    "add": "{a} + {b}",
    "subtract": "{a} - {b}",
    "multiply": "{a} * {b}",
    "divide": "{a} / {b}",
    "negative": "-{a}",
    "square": "{a} * {a}",
    "absolute": "abs({a})",
}


def lower_elementwise(op, dtype, result, args, attrs) -> str:
    """One element of `op` applied to `args` (expressions of dtype `dtype`)."""
    dtype, result = np.dtype(dtype), np.dtype(result)
    if (dtype.kind == "c" or result.kind == "c") and op != "select":
        return lower_complex(op, dtype, result, args)
    t = TYPE_NAMES[result]
    a = args[0]
    b = args[1] if len(args) > 1 else None
    is_int = dtype.kind in "iu"
    # Unsigned helpers keep every value in the operands' type: numba would type a signed
    # literal against a uint64 as float64 (and lose its low bits).
    u = "u" if dtype.kind == "u" else ""
    is_bool = dtype.kind == "b"
    if op == "convert":
        if result.kind == "b":
            return f"({a} != 0)"
        if dtype.kind == "f" and result.kind in "iu":
            return float_to_int(a, SINGLE if dtype == HALF else dtype, result)
        if result == HALF and dtype != SINGLE:  # float64 and integers: rounded once
            return f"round16_f64(np.float64({a}))"
        return f"{t}({a})"
    if op == "nextafter":  # a step of the bit pattern, not float32 math rounded to float16
        if dtype == HALF:
            return f"h2f(nextafter_bits16(f2h({a}), f2h({b}), {a}, {b}))"
        return f"nextafter_{'f32' if dtype == SINGLE else 'f64'}({a}, {b})"
    if dtype == HALF and op != "select":
        # NumPy's float16 loops: the op in float32 on the exact values, rounded to float16
        wide = lower_elementwise(op, SINGLE, SINGLE if result == HALF else result, args, attrs)
        return f"round16({wide})" if result == HALF else wide
    if op == "select":
        return f"({args[1]} if {a} else {args[2]})"
    if dtype.kind == "f" and result == dtype and op in _FLOAT_SAME_TYPE:
        return "(" + _FLOAT_SAME_TYPE[op].format(a=a, b=b) + ")"
    if op in _NP_FLOAT and dtype.kind == "f":
        fn = _vmath(op, dtype) or f"np.{op}"
        return f"{t}({fn}({', '.join(args)}))"
    simple = {
        "add": f"{a} + {b}",
        "subtract": f"{a} - {b}",
        "multiply": f"{a} * {b}",
        "equal": f"{a} == {b}",
        "not_equal": f"{a} != {b}",
        "less": f"{a} < {b}",
        "less_equal": f"{a} <= {b}",
        "greater": f"{a} > {b}",
        "greater_equal": f"{a} >= {b}",
        "bitwise_and": f"{a} & {b}",
        "bitwise_or": f"{a} | {b}",
        "bitwise_xor": f"{a} ^ {b}",
        "logical_and": f"({a} != 0) & ({b} != 0)",
        "logical_or": f"({a} != 0) | ({b} != 0)",
        "logical_xor": f"({a} != 0) != ({b} != 0)",
        "logical_not": f"not ({a} != 0)",
        "square": f"{a} * {a}",
        "negative": f"-{a}",
        "maximum": f"{a} if ({a} >= {b} or {a} != {a}) else {b}",
        "minimum": f"{a} if ({a} <= {b} or {a} != {a}) else {b}",
        "fmax": f"{a} if ({a} >= {b} or {b} != {b}) else {b}",
        "fmin": f"{a} if ({a} <= {b} or {b} != {b}) else {b}",
        "isnan": f"{a} != {a}",
        "sign": f"sign({a})",
    }
    if is_bool and op in ("add", "maximum", "fmax"):
        return f"({a} or {b})"
    if is_bool and op in ("multiply", "minimum", "fmin"):
        return f"({a} and {b})"
    if is_bool and op == "invert":
        return f"(not {a})"
    if op in ("floor", "ceil", "trunc", "rint") and dtype.kind in "biu":
        return f"{t}({a})"
    if op in simple:
        return f"{t}({simple[op]})"
    if op == "absolute":
        return a if dtype.kind == "u" else f"{t}(abs({a}))"
    if op == "invert":
        return f"{t}(~{a})"
    if op == "isinf":
        return "False" if not dtype.kind == "f" else f"np.isinf({a})"
    if op == "isfinite":
        return "True" if not dtype.kind == "f" else f"np.isfinite({a})"
    if op == "signbit":
        return f"({a} < 0)" if not dtype.kind == "f" else f"np.signbit({a})"
    if op == "reciprocal":
        if is_int:  # C's 1 / a: truncation; for 0, NumPy's own answer (INT_MIN for int32)
            with np.errstate(all="ignore"):
                zero = literal(np.reciprocal(np.zeros(1, dtype))[0], dtype)
            if dtype.kind == "u":
                return f"({t}({a} == 1) if {a} != 0 else {zero})"
            return f"({t}(1 if {a} == 1 else (-1 if {a} == -1 else 0)) if {a} != 0 else {zero})"
        return f"{t}({literal(1, dtype)} / {a})"
    if op == "divide":
        return f"{t}({a} / {b})"
    if op == "floor_divide":
        return f"{t}(floordiv_{u + 'int' if is_int else 'float'}({a}, {b}))"
    if op == "remainder":
        return f"{t}(remainder_{u + 'int' if is_int else 'float'}({a}, {b}))"
    if op == "fmod":
        return f"{t}(remainder_uint({a}, {b}))" if u else f"{t}(fmod_int({a}, {b}))"
    if op == "power":
        if u:
            return f"{t}(power_uint({a}, {b}, {literal(1, dtype)}))"
        return f"{t}(power_int({a}, {b}))"
    bits = dtype.itemsize * 8
    if op == "left_shift":
        return f"{t}(left_shift{'_uint' if u else ''}({a}, {b}, {literal(bits, dtype)}))"
    if op == "right_shift":
        return f"{t}(right_shift{'_uint' if u else ''}({a}, {b}, {literal(bits, dtype)}))"
    if op == "deg2rad":
        return f"{t}({a} * {literal(math.pi / 180, dtype)})"
    if op == "rad2deg":
        return f"{t}({a} * {literal(180 / math.pi, dtype)})"
    raise UnsupportedError(f"cpu backend: no lowering for {op} on {dtype}")


# Complex ops in the operands' own precision, as NumPy's loops (a complex64 product
# overflows where float32 does); `one` is 1 in the parts' dtype.
_COMPLEX_HELPERS = {
    "multiply": "c_mul({a}, {b})",
    "divide": "c_div({a}, {b}, {one})",
    "square": "c_mul({a}, {a})",
    "equal": "c_eq({a}, {b})",
    "not_equal": "not c_eq({a}, {b})",
    "add": "{a} + {b}",
    "subtract": "{a} - {b}",
    "negative": "-{a}",
    "conjugate": "complex({a}.real, -{a}.imag)",
    "real": "{a}.real",
    "imag": "{a}.imag",
    "isnan": "({a}.real != {a}.real or {a}.imag != {a}.imag)",
    "isinf": "(abs({a}.real) == np.inf or abs({a}.imag) == np.inf)",
    "isfinite": "(abs({a}.real) < np.inf and abs({a}.imag) < np.inf)",
}
# Complex math on complex128 values (complexmath.py): a complex64 operand is widened on
# the way in (its parts square exactly in float64) and each result rounded once.
_COMPLEX_BY_WIDTH = {
    "absolute": ("c_abs", "c_abs64"),
    "log": ("c_log", "c_log64"),
    "sqrt": ("c_sqrt", "c_sqrt64"),
    "exp": ("c_exp", "c_exp"),
}


def lower_complex(op, dtype, result, args) -> str:
    """One element of `op` with a complex operand or result (ops.COMPLEX)."""
    t = TYPE_NAMES[result]
    if op == "convert":
        if dtype.kind == "c" and result.kind == "b":
            return f"({args[0]}.real != 0 or {args[0]}.imag != 0)"
        if dtype.kind == "c" and result.kind != "c":
            raise UnsupportedError(
                f"cpu backend: convert {dtype} -> {result} (jitc takes the real part first)"
            )
        if dtype == HALF:
            return f"{t}(complex({args[0]}, 0.0))"
        return f"{t}({args[0]})"
    if op in COMPLEX_C99:  # complexlibm.py: libm's own function, by the operand's type
        return f"{t}(cx_{op}({args[0]}))"
    if op in COMPLEX_LIBM or op in ("sign", "reciprocal"):
        width = "c128" if dtype == np.dtype(np.complex128) else "c64"
        return f"{t}(cx_{op}_{width}({', '.join(args)}))"
    if op in _COMPLEX_BY_WIDTH:
        fn = _COMPLEX_BY_WIDTH[op][dtype == np.dtype(np.complex128)]
        return f"{t}({fn}(np.complex128({args[0]})))"
    if op not in _COMPLEX_HELPERS:
        raise UnsupportedError(f"cpu backend: no lowering for {op} on {dtype}")
    one = literal(1, np.finfo(dtype).dtype)
    expr = _COMPLEX_HELPERS[op].format(a=args[0], b=args[1] if len(args) > 1 else None, one=one)
    return f"{t}({expr})"
