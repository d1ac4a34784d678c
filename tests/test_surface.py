"""Differential tests of the NumPy surface in DESIGN.md against NumPy itself.

ONE table (CASES) drives them: each Case is a plain NumPy function, the argument sets it
is called with (A(...) makes an array argument) and the dtype variants. For every argument
set x dtype variant x value mode (normal values; special values: NaN/Inf/-0/integer
extremes) the same function runs under NumPy and under jitc on every backend, and
`check_same` requires the same values (exact for ints/bools, a few ulp for floats),
shapes, dtypes and result types (np.float32 scalar vs 0-d array). Where NumPy raises,
jitc must raise an exception of the same kind. Every jitc call is repeated with Fortran-
order, strided (x[..., ::2]) and negative-stride (x[::-1]) views of the same values, and
every call checks that its inputs were not mutated.

One jitted function per case runs all of its variants (a tuple of results), so the cpu
backend compiles once per case.
"""

from __future__ import annotations

import itertools
import os
import warnings
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitc
from jitc.core import ops
from tests.conftest import BACKENDS

B, I32, I64, F32, F64 = (
    np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)
)
DTYPES = (B, I32, I64, F32, F64)
NUMERIC = (I32, I64, F32, F64)
INTS = (I32, I64)
FLOATS = (F32, F64)
# float16 (NumPy's result on bool and int8/uint8 inputs): 2 ulp, as jitc's float32 math and
# NumPy's round to float16 (tests/test_dtypes_float16.py measures 1 ulp per function)
RTOL = {F32: 2e-5, F64: 1e-6, np.dtype(np.float16): 2e-3}


# ----------------------------------------------------------------------------- inputs

SPECIAL_F = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-3, 3.0]
EXTREME_F = [1e30, -1e30, 1e-30, -1e-30, 1e-40, 88.8, -88.8, 709.0, -745.0, 1e4, -1e4, 1e300]


def _special_ints(dtype):
    info = np.iinfo(dtype)
    return [info.min, info.max, info.min + 1, info.max - 1, 0, 1, -1, 2, -2, 7, -7]


@dataclass(frozen=True)
class A:
    """An array argument: shape, dtype (None: the variant's dtype number `slot`), kind.

    kind: "any" (normal values), "pos" (> 0), "nonneg" (0..5), "idx" (ints in [-n, n) with
    n = high), "uidx" (ints in [0, n)), "castable" (finite, in range of every int dtype).
    """

    shape: tuple
    dtype: object = None
    kind: str = "any"
    high: int = 0
    slot: int = 0

    def make(self, variant, mode, rng):
        return np.asarray(self._make(variant, mode, rng))  # 0-d: an array, not a NumPy scalar

    def _make(self, variant, mode, rng):
        dtype = np.dtype(self.dtype) if self.dtype is not None else variant[self.slot]
        shape, kind = self.shape, self.kind
        if kind in ("idx", "uidx"):
            low = -self.high if kind == "idx" else 0
            return rng.integers(low, self.high, size=shape).astype(dtype)
        if dtype == B:
            return rng.random(shape) < 0.5
        if kind == "nonneg":
            pool = [0, 1, 2, 3, 5] if mode == "normal" else [0, 1, 2, 3, 31, 30, 12, 4]
            return rng.choice(pool, size=shape).astype(dtype)
        if dtype.kind == "i":
            if mode == "normal":
                low = 1 if kind == "pos" else -9
                return rng.integers(low, 10, size=shape).astype(dtype)
            pool = [v for v in _special_ints(dtype) if kind != "pos" or v > 0]
            return np.array(rng.choice(np.array(pool, dtype=dtype), size=shape), dtype=dtype)
        # floats
        if mode == "normal" or kind == "castable":
            x = rng.standard_normal(shape) * 3
            if kind == "castable" and mode != "normal":
                x = rng.choice([0.0, -0.0, 0.5, -0.5, 2.75, -2.75, 1e5, -1e5, 2.0**30], size=shape)
            return (np.abs(x) + 0.1 if kind == "pos" else x).astype(dtype)
        pool = SPECIAL_F if mode == "special" else SPECIAL_F + EXTREME_F
        if kind == "pos":
            pool = [v for v in pool if not v <= 0]
        with np.errstate(all="ignore"):
            return np.array(rng.choice(pool, size=shape)).astype(dtype)


def S(value):
    """A scalar argument passed as is (a Python scalar is weakly typed, NEP 50)."""
    return _Scalar(value)


@dataclass(frozen=True)
class _Scalar:
    value: object

    def make(self, variant, mode, rng):
        return self.value


def layouts(x):
    """Views with the values of `x` in other memory layouts, by name."""
    if not isinstance(x, np.ndarray) or x.ndim == 0:
        return {}
    out = {}
    if x.ndim >= 2:
        out["fortran"] = np.asfortranarray(x)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    wide[..., ::2] = x
    out["strided"] = wide[..., ::2]
    rev = x[::-1].copy()
    out["reversed"] = rev[::-1]
    return out


# ----------------------------------------------------------------------------- comparison


def _builtin_base(exc_type):
    """The builtin exception class a NumPy exception is (UFuncTypeError -> TypeError)."""
    for k in exc_type.__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def _tolerance(want, rtol, atol_from):
    if atol_from is None:
        return rtol, rtol
    mags = [
        np.abs(a[np.isfinite(a)].astype(np.float64)).sum()
        for a in atol_from
        if isinstance(a, np.ndarray) and a.dtype.kind in "fi" and a.size
    ]
    return rtol, rtol * max([1.0] + mags)


def check_same(got, want, rtol=None, atol_from=None, where=""):
    """`got` is what NumPy returned: same structure, type, shape, dtype and values."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want), f"{where}: {type(got)} vs NumPy's {type(want)}"
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            check_same(g, w, rtol, atol_from, f"{where}[{i}]")
        return
    assert type(got) is type(want), (
        f"{where}: jitc returned {type(got).__name__}, NumPy returned {type(want).__name__}"
    )
    if not isinstance(want, (np.ndarray, np.generic)):
        assert got == want, where
        return
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape}, NumPy gives {want.shape}"
    if want.dtype.kind == "f" or (want.dtype.kind == "c" and rtol is not None):
        r = rtol if rtol is not None else RTOL[want.dtype]
        r, a = _tolerance(want, r, atol_from)
        np.testing.assert_allclose(got, want, rtol=r, atol=a, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want, err_msg=where)


def _unsupported_dtypes(result):
    """A result dtype jitc does not compute in."""
    if isinstance(result, (tuple, list)):
        return any(_unsupported_dtypes(r) for r in result)
    from jitc.core.dtypes import SUPPORTED

    return isinstance(result, (np.ndarray, np.generic)) and result.dtype not in SUPPORTED


def _snapshot(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _assert_unchanged(args, before, where):
    for i, (a, b) in enumerate(zip(args, before)):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (
                f"{where}: input {i} was mutated"
            )


def numpy_result(fn, args):
    """(result, None) or (None, exception) of running `fn` under NumPy."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as e:  # noqa: BLE001 - the type is what we compare
            return None, e


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    name: str
    fn: object
    argsets: list  # each: a tuple of A(...)/S(...) makers, one call
    dtypes: tuple = DTYPES  # each: a dtype (slot 0) or a tuple of dtypes (slots 0, 1, ...)
    modes: tuple = ("normal", "special")
    rtol: float | None = None
    reduces: bool = False  # a sum of many terms: atol grows with the inputs' magnitudes
    layouts: bool = True
    xfail: dict = field(default_factory=dict)  # backend (or "*") -> reason: a known bug

    def variants(self, full=True):
        """(argset, dtypes) pairs: all of them, or (full=False) up to 5 dtype variants for
        the first argument set (an even sample, offset per case) and one dtype, in turn,
        for each of the others."""
        first = self.dtypes
        if not full and len(first) > 5:
            step = -(-len(first) // 5)
            first = first[zlib.crc32(self.name.encode()) % step :: step]
        for i, argset in enumerate(self.argsets):
            dts = first if full or i == 0 else [self.dtypes[i % len(self.dtypes)]]
            for dt in dts:
                yield argset, (dt if isinstance(dt, tuple) else (dt,))


def a(*shape, **kw):
    return A(tuple(shape), **kw)


def one(*shape, **kw):
    return [(a(*shape, **kw),)]


CASES: list[Case] = []


def case(name, fn, argsets, **kw):
    CASES.append(Case(name, fn, argsets, **kw))


# -- elementwise ufuncs, through np.<name> (every op in core/ops.py, plus NumPy's aliases)
UNARY_SHAPES = [(a(3, 4),), (a(),), (a(0, 3),)]
BINARY_SHAPES = [
    (a(3, 4), a(3, 4)),
    (a(3, 1), a(4)),
    (a(), a(3)),
    (a(0, 3), a(3)),
    (a(2, 1, 3), a(4, 1)),
]
_ALIASES = {"fabs": (FLOATS,), "degrees": (), "radians": (), "positive": (), "conjugate": ()}
for name in sorted(ops.UNARY | ops.PREDICATES | set(_ALIASES)):
    ufunc = getattr(np, name)
    case(f"np.{name}", ufunc, UNARY_SHAPES, modes=("normal", "special", "extreme"))

_INT_EXPONENT = {"power", "left_shift", "right_shift"}
for name in sorted(ops.BINARY | ops.COMPARE | {"true_divide", "float_power"}):
    ufunc = getattr(np, name)
    if name in _INT_EXPONENT:  # NumPy raises for negative integer exponents at run time
        sets = [(x, A(y.shape, kind="nonneg")) for x, y in BINARY_SHAPES]
    else:
        sets = BINARY_SHAPES
    case(f"np.{name}", ufunc, sets, modes=("normal", "special", "extreme"))

# -- mixed dtypes: NumPy 2 promotion for every pair, through the ufunc and the operator
PAIRS = tuple(itertools.product(DTYPES, DTYPES))
_MIXED = [(a(3, 4), a(4, slot=1))]
for name, fn in [
    ("add", np.add),
    ("subtract", lambda x, y: x - y),
    ("multiply", np.multiply),
    ("divide", lambda x, y: x / y),
    ("floor_divide", np.floor_divide),
    ("remainder", lambda x, y: x % y),
    ("maximum", np.maximum),
    ("less", lambda x, y: x < y),
    ("equal", lambda x, y: x == y),
    ("bitwise_and", lambda x, y: x & y),
    ("arctan2", np.arctan2),
    ("logical_xor", np.logical_xor),
    ("fmin", np.fmin),
]:
    case(f"promote {name}", fn, _MIXED, dtypes=PAIRS)
case("promote power", lambda x, y: x**y, [(a(3, 4), a(4, kind="nonneg", slot=1))], dtypes=PAIRS)

# -- operators, reflected operators, Python scalars (weak) and NumPy scalars (strong)
OPERATORS = {
    "x + y": lambda x, y: x + y,
    "x - y": lambda x, y: x - y,
    "x * y": lambda x, y: x * y,
    "x / y": lambda x, y: x / y,
    "x // y": lambda x, y: x // y,
    "x % y": lambda x, y: x % y,
    "x & y": lambda x, y: x & y,
    "x | y": lambda x, y: x | y,
    "x ^ y": lambda x, y: x ^ y,
    "x < y": lambda x, y: x < y,
    "x <= y": lambda x, y: x <= y,
    "x > y": lambda x, y: x > y,
    "x >= y": lambda x, y: x >= y,
    "x == y": lambda x, y: x == y,
    "x != y": lambda x, y: x != y,
}
for text, fn in OPERATORS.items():
    case(text, fn, BINARY_SHAPES[:3])
case("x ** y", lambda x, y: x**y, [(a(3, 4), a(3, 4, kind="nonneg")), (a(), a(3, kind="nonneg"))])
case("x << y, x >> y", lambda x, y: (x << y, x >> y), [(a(3, 4), a(3, 4, kind="nonneg"))])
case("-x, +x, abs(x), ~x", lambda x: (-x, +x, abs(x), ~x), UNARY_SHAPES[:2])

SCALARS = {
    "x + 1": lambda x: x + 1,
    "1 - x": lambda x: 1 - x,
    "x * 2.5": lambda x: x * 2.5,
    "2.5 / x": lambda x: 2.5 / x,
    "7 // x": lambda x: 7 // x,
    "x % 3": lambda x: x % 3,
    "2 ** x (nonneg)": None,
    "x ** 2": lambda x: x**2,
    "x ** 0.5": lambda x: x**0.5,
    "x > 0": lambda x: x > 0,
    "x == 1.5": lambda x: x == 1.5,
    "x + True": lambda x: x + True,
    "x * np.float32(2)": lambda x: x * np.float32(2),
    "x * np.sqrt(2 / np.pi)": lambda x: x * np.sqrt(2 / np.pi),
    "x + np.int64(1)": lambda x: x + np.int64(1),
    "x + np.int32(1)": lambda x: x + np.int32(1),
    "x + np.bool_(True)": lambda x: x + np.bool_(True),
    "x + 2**40 (overflows int32)": lambda x: x + 2**40,
    "x - 2**63 (overflows int64)": lambda x: x - 2**63,
    "np.maximum(x, 0)": lambda x: np.maximum(x, 0),
    "np.float32(1.5) + x": lambda x: np.float32(1.5) + x,
    "x * 1e300": lambda x: x * 1e300,
}
SCALARS["2 ** x (nonneg)"] = lambda x: 2**x
for text, fn in SCALARS.items():
    kind = "nonneg" if "nonneg" in text else "any"
    case(text, fn, [(a(3, 4, kind=kind),), (a(kind=kind),)])
case(
    "scalar arguments (weak Python, strong NumPy)",
    lambda x, s, t, u: (x * s, x + t, x - u, s * u, x * np.exp(t), np.add(s, 1) * x, t * u),
    [(a(3), S(2), S(1.5), S(np.float32(0.5))), (a(3), S(True), S(-3), S(np.int64(7)))],
)
case(
    "Python scalar arithmetic gives Python scalars",
    lambda s, t: (s * 2, s + t, s - t, -s, s * t),
    [(S(3), S(0.5)), (S(True), S(2)), (S(True), S(False))],
    dtypes=(F32,),
)
case(
    "np.<ufunc> of Python scalars gives NumPy scalars",
    lambda s, t, x: (np.exp(t), np.add(s, 1), np.multiply(s, t) * x, np.float32(2) * s, s * x),
    [(S(3), S(0.5), a(3)), (S(True), S(2), a(2))],
    dtypes=(F32, I32),
)
case(
    "NumPy scalar ** 0.5 is pow, not sqrt",
    lambda s: s**0.5,
    [(S(np.float32(-np.inf)),), (S(np.float64(-0.0)),)],
    dtypes=(F32,),
)
case(
    "NumPy scalar arguments",
    lambda s, t, x: (s * t, s + 1, np.exp(s), s * x, t**2, np.power(s, 0.5), -t, x**0.5),
    [
        (S(np.float32(-np.inf)), S(np.int32(3)), a(3)),
        (S(np.float64(2.5)), S(np.bool_(True)), a(2, 2)),
        (S(np.float32(-0.0)), S(np.int64(-4)), a()),
    ],
    dtypes=FLOATS,
)

# -- integer edge values: division by zero, INT_MIN // -1, % as NumPy gives them
for dt in INTS:
    info = np.iinfo(dt)
    edge = np.array([info.min, info.min, info.max, 7, -7, 7, -7, 0, 5, info.min], dt)
    by = np.array([-1, 0, 0, 2, 2, -2, -2, 0, -1, 1], dt)
    case(
        f"int edges {dt}",
        lambda x, y: (
            x // y,
            x % y,
            np.fmod(x, y),
            x * y,
            x - y,
            -x,
            np.abs(x),
            np.negative(x),
            x // -1,
            x % -1,
        ),
        [(S(edge), S(by))],
        dtypes=(dt,),
        modes=("normal",),
    )
    case(
        f"int shifts {dt}",
        lambda x, y: (x << y, x >> y, np.left_shift(x, 3), np.right_shift(x, 3)),
        [(S(edge), S(np.array([0, 1, 31, 63, 64, 100, 3, 2, 1, 30], dt)))],
        dtypes=(dt,),
        modes=("normal",),
    )

# -- where, clip
case(
    "np.where",
    np.where,
    [
        (a(3, 4, dtype=B), a(3, 4), a(3, 4, slot=1)),
        (a(3, 1, dtype=B), a(4), a(3, 4, slot=1)),
        (a(dtype=B), a(), a(slot=1)),
    ],
    dtypes=PAIRS,
)
case("np.where(x > 0, x, 0)", lambda x: np.where(x > 0, x, 0), UNARY_SHAPES)
case(
    "np.where(x > 0, 1.5, -x)", lambda x: np.where(x > 0, 1.5, -x), UNARY_SHAPES[:2], dtypes=NUMERIC
)
case("np.where(int cond)", lambda c, x: np.where(c, x, -1), [(a(4, dtype=I32), a(4))])
case("np.clip scalars", lambda x: np.clip(x, -1, 2), UNARY_SHAPES)
case("np.clip float bounds", lambda x: np.clip(x, -0.5, 2.5), UNARY_SHAPES[:2])
case("np.clip None", lambda x: (np.clip(x, None, 1), np.clip(x, 0, None)), UNARY_SHAPES[:2])
case("np.clip arrays", np.clip, [(a(3, 4), a(4, slot=1), a(3, 1, slot=1))], dtypes=PAIRS[:15])
case("x.clip", lambda x: x.clip(0, 3), UNARY_SHAPES[:2])
case("np.clip min=max=", lambda x: np.clip(x, min=-1, max=1), UNARY_SHAPES[:1])


def clip_copy(x):
    """Neither bound: a copy (NumPy 2.1+, the Array API), written without touching x."""
    y = np.clip(x)
    y[..., :1] = 0
    return x, y


case("np.clip neither bound", clip_copy, UNARY_SHAPES[:1], dtypes=(F64, I32))

# -- reductions: axis None / int / negative / tuple / (), keepdims, as functions and methods
AXES = [None, 0, 1, -1, (0, 2), (-1, 0), ()]
R3 = [(a(3, 4, 5),)]
REDUCERS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "amax": np.amax,
    "min": np.min,
    "amin": np.amin,
    "var": np.var,
    "std": np.std,
    "any": np.any,
    "all": np.all,
}
for name, red in REDUCERS.items():
    for axis, keep in itertools.product(AXES, (False, True)):
        kind = "pos" if name == "prod" else "any"
        case(
            f"np.{name}(axis={axis}, keepdims={keep})",
            lambda x, red=red, axis=axis, keep=keep: red(x, axis=axis, keepdims=keep),
            [(a(3, 4, 5, kind=kind),)],
            reduces=True,
        )
    case(
        f"np.{name} 0-d, empty, 1-d",
        lambda x, y, z, red=red: (red(x), red(z), red(y, axis=1)),
        [(a(), a(0, 3), a(4))],
        reduces=True,
    )
    case(f"np.{name} empty axis", lambda y, red=red: red(y, axis=0), [(a(0, 3),)], reduces=True)
for name in ("argmax", "argmin"):
    red = getattr(np, name)
    for axis, keep in itertools.product([None, 0, 1, -1], (False, True)):
        case(
            f"np.{name}(axis={axis}, keepdims={keep})",
            lambda x, red=red, axis=axis, keep=keep: red(x, axis=axis, keepdims=keep),
            R3,
        )
    case(
        f"np.{name} 0-d, 1-d, empty",
        lambda x, y, red=red: (red(x), red(y)),
        [(a(), a(5)), (a(), a(0))],
    )
case(
    "methods: x.sum() ... x.argmin()",
    lambda x: (
        x.sum(),
        x.sum(axis=0),
        x.mean(axis=-1),
        x.prod(axis=1),
        x.max(),
        x.min(axis=0, keepdims=True),
        x.var(axis=1),
        x.std(),
        x.argmax(axis=1),
        x.argmin(),
        x.any(axis=0),
        x.all(),
    ),
    [(a(3, 4),)],
    reduces=True,
)
case(
    "reduction dtype=",
    lambda x: (
        np.sum(x, dtype=np.float64),
        np.mean(x, dtype=np.float32),
        x.sum(axis=0, dtype=np.int32),
        np.prod(x, dtype=np.int64),
    ),
    [(a(3, 4),)],
    reduces=True,
)
case(
    "var/std ddof",
    lambda x: (np.var(x, ddof=1), np.std(x, axis=0, ddof=1)),
    [(a(3, 4),)],
    reduces=True,
)
case(
    "ufunc.reduce",
    lambda x: (
        np.add.reduce(x),
        np.maximum.reduce(x, axis=1),
        np.multiply.reduce(x, axis=None),
        np.logical_or.reduce(x),
    ),
    [(a(3, 4),)],
    dtypes=(B, I32, F32),
    reduces=True,
)
case(
    "NaN in max/min/argmax/argmin/fmax",
    lambda x: (
        np.max(x),
        np.min(x, axis=0),
        np.argmax(x, axis=1),
        np.argmin(x),
        np.fmax(x, 0.0),
        x.max(axis=1, keepdims=True),
    ),
    [(S(np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 2.0], [0.0, -0.0, np.nan]])),)],
    dtypes=FLOATS,
    modes=("normal",),
)
case(
    "sum/mean/var with Inf and NaN",
    lambda x: (x.sum(axis=0), x.mean(axis=1), x.var(axis=0)),
    [(S(np.array([[1.0, np.inf, 3.0], [np.inf, -np.inf, 2.0], [0.0, 1.0, np.nan]])),)],
    dtypes=FLOATS,
    modes=("normal",),
)
case("reduction errors", lambda x: np.sum(x, axis=3), R3)
case("reduction duplicate axis", lambda x: np.sum(x, axis=(0, 0)), R3)

# -- products: matmul / @ / dot / einsum / tensordot / inner / outer
MATMUL_SHAPES = [
    (a(3, 4), a(4, 5, slot=1)),
    (a(4), a(4, 5, slot=1)),
    (a(3, 4), a(4, slot=1)),
    (a(4), a(4, slot=1)),
    (a(2, 3, 4), a(2, 4, 5, slot=1)),
    (a(2, 1, 3, 4), a(5, 4, 2, slot=1)),
    (a(2, 3, 4), a(4, 5, slot=1)),
    (a(3, 4), a(2, 4, 5, slot=1)),
    (a(0, 4), a(4, 5, slot=1)),
    (a(3, 0), a(0, 5, slot=1)),
    (a(3, 4), a(5, 5, slot=1)),
    (a(), a(4, slot=1)),
]
case("np.matmul", np.matmul, MATMUL_SHAPES, dtypes=tuple((d, d) for d in DTYPES), reduces=True)
case("x @ y mixed dtypes", lambda x, y: x @ y, MATMUL_SHAPES[:1], dtypes=PAIRS, reduces=True)
DOT_SHAPES = [
    (a(3, 4), a(4, 5, slot=1)),
    (a(4), a(4, slot=1)),
    (a(2, 3, 4), a(4, slot=1)),
    (a(2, 3, 4), a(5, 4, 2, slot=1)),
    (a(3, 4), a(3, 4, slot=1)),
]
DOT_DTYPES = ((F32, F32), (F64, I32), (I32, I64), (B, B))
case("np.dot", np.dot, DOT_SHAPES, dtypes=DOT_DTYPES, reduces=True)
# NumPy's dot by a 0-d operand scales with BLAS, which gives 0 * inf = 0: normal values only.
case(
    "np.dot 0-d",
    np.dot,
    [(a(), a(3, 4, slot=1)), (a(3, 4), a(slot=1))],
    dtypes=DOT_DTYPES,
    modes=("normal",),
)
case(
    "x.dot(y)", lambda x, y: x.dot(y), DOT_SHAPES[:2], dtypes=((F32, F32), (F64, I32)), reduces=True
)
EINSUM = [
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("ij,jk", (3, 4), (4, 5)),
    ("ij,kj", (3, 4), (5, 4)),
    ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)),
    ("...ij,jk", (2, 3, 4), (4, 5)),
    ("i,i->", (4,), (4,)),
    ("i,j->ij", (3,), (4,)),
    ("bhqd,bhkd->bhqk", (1, 2, 3, 4), (1, 2, 5, 4)),
    ("ij,ij->i", (3, 4), (3, 4)),
    ("ijk,ikl->jl", (2, 3, 4), (2, 4, 5)),
]
for spec, s1, s2 in EINSUM:
    case(
        f"np.einsum {spec}",
        lambda x, y, spec=spec: np.einsum(spec, x, y),
        [(A(s1), A(s2, slot=1))],
        dtypes=((F32, F32), (F64, F64), (I32, I64), (F32, F64)),
        reduces=True,
    )
for spec in ["ij->ji", "ij->", "ij->j", "ij", "...j->..."]:
    case(
        f"np.einsum {spec}",
        lambda x, spec=spec: np.einsum(spec, x),
        [(a(3, 4),)],
        dtypes=NUMERIC,
        reduces=True,
    )
case(
    "np.einsum 3 operands",
    lambda x, y, z: np.einsum("ij,jk,kl->il", x, y, z),
    [(a(2, 3), a(3, 4), a(4, 5))],
    dtypes=FLOATS,
    reduces=True,
)
case(
    "np.einsum shape error",
    lambda x, y: np.einsum("ij,jk->ik", x, y),
    [(a(3, 4), a(5, 6))],
    dtypes=(F32,),
)
for axes in [2, 1, 0, ([1, 0], [0, 1]), (1, 0), ([2], [1])]:
    case(
        f"np.tensordot axes={axes}",
        lambda x, y, axes=axes: np.tensordot(x, y, axes),
        [(a(3, 4, 2), a(4, 2, 5, slot=1))],
        dtypes=((F32, F32), (F64, F64), (I32, F32)),
        reduces=True,
    )
case(
    "np.inner",
    np.inner,
    [
        (a(4), a(4, slot=1)),
        (a(3, 4), a(5, 4, slot=1)),
        (a(), a(3, slot=1)),
        (a(3, 4), a(3, slot=1)),
    ],
    dtypes=((F32, F32), (F64, I32), (I64, I64)),
    reduces=True,
)
case(
    "np.outer",
    np.outer,
    [(a(3), a(4, slot=1)), (a(2, 2), a(3, slot=1)), (a(), a(2, slot=1))],
    dtypes=((F32, F32), (I32, F64), (B, B)),
)
case(
    "ufunc.outer",
    lambda x, y: (
        np.add.outer(x, y),
        np.multiply.outer(y, x),
        np.subtract.outer(x, 2, dtype=np.float32),
        np.greater.outer(x, y),
    ),
    [(a(3), a(2, 2, slot=1)), (a(), a(3, slot=1))],
    dtypes=((F64, F64), (I32, F32)),
)
case(
    "np.linspace traced bounds",
    lambda x, y: (
        np.linspace(0, x[0], 7),
        np.linspace(x[0], y, 4, endpoint=False, retstep=True, axis=-1),
        np.linspace(x[1], x[1], 3, retstep=True),  # step 0
        np.linspace(x[0], x[1], 1),
        np.linspace(y[0], x[1], 6, dtype=np.int32),
    ),
    [(a(3), a(2, slot=1))],
    dtypes=((F64, F64), (F32, I32), (I64, F32)),
    modes=("normal",),  # NaN to int32 is not a value NumPy defines
)
case(
    "np.logspace traced bounds",
    lambda x, y: (
        np.logspace(0, x[0], 5),
        np.logspace(x[0], y, 3, base=2.0, axis=-1),
        np.logspace(x[0], x[1], 4, base=y),  # an array base: broadcast with the bounds
    ),
    [(a(3), A((2,), kind="pos", slot=1))],
    dtypes=((F64, F64), (F32, F32)),
    modes=("normal",),
)

case(
    "np.geomspace traced bounds",
    lambda x, y: (
        np.geomspace(1.0, x[0], 4),
        np.geomspace(x[0], x[1], 5, endpoint=False),
        np.geomspace(-x[0], -y, 3, axis=-1),
        np.geomspace(x[:2], y, 4, axis=1),
        np.geomspace(x[1], x[2], 3, dtype=np.float32),
    ),
    [(A((3,), kind="pos"), A((2,), kind="pos", slot=1))],
    dtypes=((F64, F64), (F32, I32)),
    modes=("normal",),
)
# -- shapes
S34 = [(a(3, 4),), (a(0, 4),)]
S234 = [(a(2, 3, 4),)]
case("reshape(-1)", lambda x: x.reshape(-1), S34 + [(a(),)])
case(
    "reshape forms",
    lambda x: (
        x.reshape(4, 6),
        x.reshape((2, -1)),
        np.reshape(x, (6, 4)),
        np.reshape(x, -1),
        x.reshape(2, 3, 2, 2),
        x.reshape([24]),
    ),
    S234,
)
case("reshape bad size", lambda x: x.reshape(5, 5), S234)
case("reshape two -1", lambda x: x.reshape(-1, -1), S234)
case(
    "transpose",
    lambda x: (
        x.transpose(),
        np.transpose(x),
        x.transpose(1, 0, 2),
        x.transpose((2, 0, 1)),
        np.transpose(x, (0, 2, 1)),
        x.T,
    ),
    S234,
)
case("x.T of 0-d and 1-d", lambda x, y: (x.T, y.T), [(a(), a(3))])
case("transpose bad axes", lambda x: x.transpose(0, 1), S234)
case("swapaxes", lambda x: (np.swapaxes(x, 0, 2), x.swapaxes(-1, 1), np.swapaxes(x, 1, 1)), S234)
case(
    "moveaxis",
    lambda x: (
        np.moveaxis(x, 0, -1),
        np.moveaxis(x, -1, 0),
        np.moveaxis(x, [0, 1], [2, 0]),
        np.moveaxis(x, (0,), (1,)),
    ),
    S234,
)
case(
    "expand_dims",
    lambda x: (
        np.expand_dims(x, 0),
        np.expand_dims(x, -1),
        np.expand_dims(x, (0, 2)),
        np.expand_dims(x, (-1, 1)),
    ),
    S34,
)
case("expand_dims bad axis", lambda x: np.expand_dims(x, 4), S34[:1])
case(
    "squeeze",
    lambda x: (np.squeeze(x), x.squeeze(0), np.squeeze(x, axis=(0, 2)), x.squeeze(-1)),
    [(a(1, 3, 1),)],
)
case("squeeze non-1 axis", lambda x: np.squeeze(x, 1), [(a(1, 3, 1),)])
case(
    "broadcast_to",
    lambda x: (np.broadcast_to(x, (2, 3, 4)), np.broadcast_to(x, (3, 4))),
    [(a(3, 1),), (a(4),), (a(),)],
)
case("broadcast_to incompatible", lambda x: np.broadcast_to(x, (3, 5)), [(a(3, 4),)])
case("ravel/flatten", lambda x: (np.ravel(x), x.ravel(), x.flatten()), S234 + [(a(),)])
case(
    "shape properties",
    lambda x: (
        x.shape,
        x.ndim,
        x.size,
        len(x),
        x.dtype == np.float32,
        np.shape(x),
        np.ndim(x),
        np.size(x),
        x * x.shape[0],
    ),
    S234,
    dtypes=(F32, I32),
)


def CONCAT(x, y):  # noqa: N802 - a table entry
    return (
        np.concatenate([x, y]),
        np.concatenate((x, y, x), axis=1),
        np.concatenate([x, y], axis=-1),
        np.concatenate([x, y], axis=None),
    )


case("concatenate", CONCAT, [(a(2, 3), a(2, 3, slot=1))], dtypes=PAIRS[::3])
case("concatenate empty", CONCAT, [(a(0, 3), a(0, 3, slot=1))], dtypes=PAIRS[::3])
case(
    "concatenate shape mismatch", lambda x, y: np.concatenate([x, y], axis=1), [(a(2, 3), a(3, 3))]
)
case("concatenate 0-d", lambda x: np.concatenate([x, x]), [(a(),)])
case(
    "stack",
    lambda x, y: (np.stack([x, y]), np.stack([x, y], axis=1), np.stack((x, y, x), axis=-1)),
    [(a(2, 3), a(2, 3, slot=1)), (a(), a(slot=1))],
    dtypes=PAIRS[::3],
)
case("stack shape mismatch", lambda x, y: np.stack([x, y]), [(a(2, 3), a(3, 2))])
case(
    "hstack/vstack",
    lambda x, y: (np.hstack([x, y]), np.vstack([x, y])),
    [(a(3), a(3, slot=1)), (a(2, 3), a(2, 3, slot=1)), (a(), a(slot=1))],
    dtypes=PAIRS[::4],
)
case(
    "split",
    lambda x: (
        np.split(x, 2),
        np.split(x, [1, 3], axis=1),
        np.split(x, 3, axis=-1),
        np.split(x, [-1]),
    ),
    [(a(4, 6),)],
)
case("split unequal", lambda x: np.split(x, 3), [(a(4, 6),)])
case(
    "array_split",
    lambda x: (np.array_split(x, 3), np.array_split(x, 4, axis=1), np.array_split(x, [2, 10])),
    [(a(4, 6),)],
)

# -- indexing: basic slicing (steps, negative steps, None, Ellipsis, ints)
BASIC = {
    "x[1]": lambda x: x[1],
    "x[-1]": lambda x: x[-1],
    "x[1:3]": lambda x: x[1:3],
    "x[::2]": lambda x: x[::2],
    "x[::-1]": lambda x: x[::-1],
    "x[::-2]": lambda x: x[::-2],
    "x[3:0:-1]": lambda x: x[3:0:-1],
    "x[10:20]": lambda x: x[10:20],
    "x[-10:2]": lambda x: x[-10:2],
    "x[:, ::-1]": lambda x: x[:, ::-1],
    "x[1:-1:2, 1::3]": lambda x: x[1:-1:2, 1::3],
    "x[None]": lambda x: x[None],
    "x[..., None]": lambda x: x[..., None],
    "x[..., 0]": lambda x: x[..., 0],
    "x[:, None, 1:]": lambda x: x[:, None, 1:],
    "x[0, 0]": lambda x: x[0, 0],
    "x[0, ..., 1]": lambda x: x[0, ..., 1],
    "x[-1, ::-1, 2]": lambda x: x[-1, ::-1, 2],
    "x[...]": lambda x: x[...],
    "x[1, 2, 3]": lambda x: x[1, 2, 3],
    "x[None, ..., None, 0]": lambda x: x[None, ..., None, 0],
    "x[:0]": lambda x: x[:0],
    "x[5:1:-2, :, ::-1]": lambda x: x[5:1:-2, :, ::-1],
    "x[::-1][1:]": lambda x: x[::-1][1:],
    "x[4] (out of bounds)": lambda x: x[4],
    "x[0, 0, 0, 0] (too many)": lambda x: x[0, 0, 0, 0],
    "x[..., ...]": lambda x: x[..., ...],
    "x[1.5]": lambda x: x[1.5],
    "x[:0][::-1]": lambda x: x[:0][::-1],
    "x[3:1, ::-2][..., 5:2:-1]": lambda x: x[3:1, ::-2][..., 5:2:-1],
}
for text, fn in BASIC.items():
    case(text, fn, [(a(4, 5, 6),)], dtypes=(F32, I64, B))
case("0-d indexing", lambda x: (x[()], x[...], x[None]), [(a(),)], dtypes=(F64, I32))
# -- integer-array indexing: gather (embedding lookup), lists, ranges
case(
    "W[ids] (embedding lookup)",
    lambda W, ids: W[ids],
    [
        (a(10, 4), a(3, dtype=I32, kind="idx", high=10)),
        (a(10, 4), a(2, 3, dtype=I64, kind="idx", high=10)),
        (a(10, 4), a(dtype=I64, kind="uidx", high=10)),
        (a(10, 4), a(0, dtype=I64, kind="idx", high=10)),
        (a(10), a(5, dtype=I32, kind="idx", high=10)),
    ],
)
case(
    "x[:, ids], x[ids, 1], x[1, :, ids], x[..., ids]",
    lambda x, ids: (
        x[:, ids],
        x[ids, 1],
        x[1, :, ids],
        x[..., ids],
        x[ids, ::-1],
        x[None, ids],
        x[0, ids],
    ),
    [(a(4, 5, 6), a(2, 3, dtype=I64, kind="idx", high=4))],
    dtypes=(F32, I32),
)
case(
    "np.take",
    lambda x, ids: (np.take(x, ids, axis=0), np.take(x, ids), np.take(x, ids, 1)),
    [(a(4, 5), a(3, dtype=I32, kind="idx", high=4))],
    dtypes=(F64, B),
)
case(
    "list/range/array constant indices",
    lambda x: (
        x[[0, 2, 1]],
        x[[-1, 0]],
        x[range(1, 3)],
        x[:, [4, 0]],
        x[np.array([[1], [0]])],
        x[[True, False, True, False]],
        x[[]],
        x[1:, [0, -1]],
        x[range(3, 0, -1), 2],
    ),
    [(a(4, 5),)],
    dtypes=(F32, I64),
)
case("index out of bounds list", lambda x: x[[0, 7]], [(a(4, 5),)])
case("float index array", lambda x, i: x[i], [(a(4, 5), a(2, dtype=F32))], dtypes=(F32,))

# -- astype, creation functions, tri
case(
    "astype",
    lambda x, t: x.astype(t),
    [
        (a(3, 4), S(np.float32)),
        (a(3, 4), S(np.float64)),
        (a(3, 4), S(np.bool_)),
        (a(), S(np.float32)),
    ],
)
case(
    "astype to int",
    lambda x, t: (x.astype(t), x.astype(t, copy=False)),
    [(a(3, 4, kind="castable"), S(np.int32)), (a(3, 4, kind="castable"), S(np.int64))],
)
case(
    "astype by name",
    lambda x: (x.astype("float32"), x.astype(float), x.astype(int), x.astype(bool)),
    [(a(3, 4, kind="castable"),)],
)
case(
    "*_like",
    lambda x: (
        np.zeros_like(x),
        np.ones_like(x),
        np.full_like(x, 2),
        np.full_like(x, 1.5),
        np.zeros_like(x, dtype=np.float32),
        np.ones_like(x, dtype=bool),
        np.full_like(x, 3, dtype=np.int32),
        np.zeros_like(x, shape=(2,)),
    ),
    [(a(3, 4),), (a(),), (a(0, 2),)],
)
case("full_like traced fill", lambda x, v: np.full_like(x, v), [(a(3, 4), a(dtype=F64))])
case(
    "creation with static args",
    lambda x: (
        np.zeros((3, 4)) + x,
        np.ones(x.shape, dtype=x.dtype) * x,
        np.full((4,), 2.5) * x,
        np.arange(4) * x,
        np.arange(2, 10, 2) + x,
        np.arange(4.0) - x,
        np.arange(x.shape[-1]) + x,
        np.linspace(0, 1, 4) * x,
        np.linspace(-1, 1, 4, endpoint=False, dtype=np.float32) + x,
        np.eye(4) @ x.T,
        np.eye(3, 4, k=1) * x,
        np.tri(3, 4) * x,
        np.tri(3, 4, k=-1, dtype=int) + x,
        np.identity(4) + x[0],
        np.zeros(4, dtype=np.int32) + x,
    ),
    [(a(3, 4),)],
)
case(
    "tril/triu",
    lambda x: (
        np.tril(x),
        np.triu(x),
        np.tril(x, 1),
        np.triu(x, -1),
        np.tril(x, -5),
        np.triu(x, k=2),
    ),
    [(a(4, 4),), (a(3, 5),), (a(2, 3, 4),), (a(0, 3),)],
)
case(
    "causal mask",
    lambda s: np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf),
    [(a(4, 4),)],
    dtypes=FLOATS,
)
case("np.round", lambda x: (np.round(x), np.around(x), x.round()), [(a(3, 4),)])
case(
    "copy",
    lambda x: (np.copy(x), x.copy(), np.copy(x.sum()), x.sum().copy()),
    [(a(3, 4),), (a(),)],
    reduces=True,
)
case(
    "NumPy scalars through shape ops",
    lambda x: (
        lambda s: (
            np.reshape(s, ()),
            np.transpose(s),
            s.T,
            np.squeeze(s),
            s.reshape(()),
            np.broadcast_to(s, ()),
            np.ravel(s),
            s.astype(np.float64),
            s[...],
            s[()],
            np.clip(s, 0, 1),
            np.where(s > 0, s, 0),
            s.sum(),
            -s,
            np.round(s),
            np.stack([s, s]),
            np.expand_dims(s, 0),
            np.mean(s),
            np.zeros_like(s),
            np.max(x, axis=()),
            np.take(x.ravel(), 1),
            x.ravel()[1],
        )
    )(x.sum()),
    [(a(3, 4),), (a(),)],
    reduces=True,
)
case("atleast", lambda x: (np.atleast_1d(x), np.atleast_2d(x)), [(a(),), (a(3),), (a(2, 3),)])
# -- a few whole programs
case(
    "softmax(relu(x @ W + b))",
    lambda x, W, b: (
        lambda y: (
            np.exp(y - y.max(-1, keepdims=True))
            / np.exp(y - y.max(-1, keepdims=True)).sum(-1, keepdims=True)
        )
    )(np.maximum(x @ W + b, 0)),
    [(a(4, 8), a(8, 5), a(5))],
    dtypes=FLOATS,
    reduces=True,
)
case(
    "layernorm",
    lambda x, g, b: (
        (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    ),
    [(a(4, 8), a(8), a(8))],
    dtypes=FLOATS,
    reduces=True,
)
case(
    "gelu tanh",
    lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    [(a(3, 4),)],
    dtypes=FLOATS,
)
case(
    "sigmoid, logsumexp",
    lambda x: (1 / (1 + np.exp(-x)), np.log(np.sum(np.exp(x), axis=-1))),
    [(a(3, 4),)],
    dtypes=FLOATS,
    reduces=True,
)

# -- shifting and padding: stencils and convolutions (np.roll, np.pad, np.diff)
case(
    "np.roll",
    lambda x: (
        np.roll(x, 2),
        np.roll(x, -7, axis=1),
        np.roll(x, 13, axis=0),
        np.roll(x, (1, -2), axis=(0, 1)),
        np.roll(x, (1, 1), axis=(-1, -1)),
    ),
    [(a(4, 5),), (a(3, 0),)],
)
case("np.roll 1-d and 0-d", lambda x: (np.roll(x, 1), np.roll(x, -1)), [(a(6),), (a(),)])
case("np.roll axis out of bounds", lambda x: np.roll(x, 1, axis=2), [(a(4, 5),)])
case("np.roll float shift", lambda x: np.roll(x, 1.5, axis=1), [(a(4, 5),)])
case("np.roll float axis", lambda x: np.roll(x, 1, axis=1.0), [(a(4, 5),)])
case(
    "np.pad constant",
    lambda x: (
        np.pad(x, 2),
        np.pad(x, ((1, 2), (0, 3)), constant_values=7.5),
        np.pad(x, ((1, 2), (3, 4)), constant_values=((1, 2), (3, 4))),
        np.pad(x, (1, 0), constant_values=-1),
    ),
    [(a(4, 5),), (a(3, 0),)],
)
case(
    "np.pad edge/reflect/symmetric/wrap",
    lambda x: (
        np.pad(x, 3, mode="edge"),
        np.pad(x, ((2, 9), (7, 1)), mode="reflect"),
        np.pad(x, ((2, 9), (7, 1)), mode="symmetric"),
        np.pad(x, ((2, 9), (11, 1)), mode="wrap"),
        np.pad(x, 1, mode="reflect"),
    ),
    [(a(4, 5),), (a(1, 3),)],
)
case("np.pad im2col", lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), [(a(2, 3, 4, 4),)])
case("np.pad negative width", lambda x: np.pad(x, -1), [(a(4, 5),)])
case("np.pad float width", lambda x: np.pad(x, 1.0), [(a(4, 5),)])
case("np.pad width of the wrong shape", lambda x: np.pad(x, ((1, 2, 3),)), [(a(4, 5),)])
case(
    "np.pad keyword of another mode",
    lambda x: np.pad(x, 1, mode="edge", constant_values=3),
    [(a(4, 5),)],
)
case("np.pad empty axis", lambda x: np.pad(x, 1, mode="edge"), [(a(3, 0),)])
case(
    "np.diff",
    lambda x: (
        np.diff(x),
        np.diff(x, 2, axis=0),
        np.diff(x, n=0),
        np.diff(x, prepend=0, append=x[:, :1]),
        np.diff(x, 9),
    ),
    [(a(4, 5),), (a(3, 0),)],
)
case("np.diff 0-d", np.diff, [(a(),)])
case(
    "np.gradient",
    lambda f: (
        np.gradient(f),
        np.gradient(f, 2.0),
        np.gradient(f, axis=1),
        np.gradient(f, 0.5, edge_order=2),
        np.gradient(f, np.array([0, 1, 3, 4, 7.5]), 2),
        np.gradient(f, np.arange(5.0), np.array([0, 1, 2, 4, 8, 9]), edge_order=2),
        np.gradient(f, np.array([0, 2, 4, 6, 8, 10]), axis=-1),
    ),
    [(a(5, 6),)],
    dtypes=NUMERIC,
)
for _name, _fn in [
    ("np.gradient too small", lambda f: np.gradient(f[:2], edge_order=2)),
    ("np.gradient duplicate axis", lambda f: np.gradient(f, axis=(0, 0))),
    ("np.gradient edge_order 3", lambda f: np.gradient(f, edge_order=3)),
    ("np.gradient spacing count", lambda f: np.gradient(f, 1.0, 2.0, 3.0)),
    ("np.gradient 2-d spacing", lambda f: np.gradient(f, np.ones((5, 6)), 1.0)),
    ("np.gradient spacing length", lambda f: np.gradient(f, np.arange(4.0), 1.0)),
]:
    case(_name, _fn, [(a(5, 6),)], dtypes=(F64,))

case("np.diff negative or float order", lambda x: (np.diff(x, -1), np.diff(x, 1.5)), [(a(4, 5),)])


# -- several integer arrays, broadcast together (im2col's X[:, k, i, j])
def SEVERAL(x, k, i, j):  # noqa: N802 - a table entry
    y = x.copy()
    y[:, k, i, j] = -1
    y[0, k[0], :, j[0]] = 5
    return (
        x[:, k, i, j],
        x[0, k, :, j],
        x[:, :, i, j],
        x[..., i[0], j[0]],
        x[:, None, k[0], i[0]],
        x[:, k[0], None, i[0]],
        x[1, k[:, :1], i[:1]],
        y,
    )


case(
    "x[:, k, i, j] (several index arrays)",
    SEVERAL,
    [
        (
            a(2, 3, 6, 6),
            a(4, 5, dtype=I64, kind="idx", high=3),
            a(4, 5, dtype=I32, kind="idx", high=6),
            a(4, 5, dtype=I64, kind="uidx", high=6),
        )
    ],
    dtypes=(F32, I32),
)
case(
    "x[[0, 1], [2, 3]], np.ix_",
    lambda x: (x[[0, 1], [2, 3]], x[np.ix_([0, 2], [1, 3])], x[[[0], [2]], [-1, 0, 1]]),
    [(a(4, 5),)],
)
case(
    "index arrays that do not broadcast",
    lambda x, i, j: x[i, j],
    [(a(4, 5), a(3, dtype=I64, kind="uidx", high=4), a(2, dtype=I64, kind="uidx", high=5))],
)

# -- flips, tiles, takes, diagonals, norms, nan-reductions
case(
    "np.flip/fliplr/flipud",
    lambda x: (np.flip(x), np.flip(x, 1), np.flip(x, (0, -1)), np.fliplr(x), np.flipud(x)),
    [(a(3, 4, 2),)],
)
case("np.flip 0-d", np.flip, [(a(),)])
case("np.fliplr 1-d", np.fliplr, [(a(3),)])
case(
    "np.tile",
    lambda x: (np.tile(x, 2), np.tile(x, (2, 1, 3)), np.tile(x, (1, 1))),
    [(a(3, 4),), (a(),), (a(2, 0),)],
)
case(
    "np.repeat",
    lambda x: (
        np.repeat(x, 2),
        np.repeat(x, 3, axis=1),
        np.repeat(x, 0, axis=0),
        np.repeat(x, [1, 0, 2], axis=0),
    ),
    [(a(3, 4),)],
)
case("np.repeat negative", lambda x: np.repeat(x, -1), [(a(3, 4),)])
case("np.repeat counts of the wrong length", lambda x: np.repeat(x, [1, 2], axis=0), [(a(3, 4),)])
case(
    "np.take modes",
    lambda x, i: (
        np.take(x, i, axis=1, mode="wrap"),
        np.take(x, i, mode="clip"),
        np.take(x, i, 0, mode="wrap"),
    ),
    [(a(3, 4), a(2, 3, dtype=I64, kind="idx", high=40))],
)
case("np.take bad mode", lambda x: np.take(x, [0], mode="nearest"), [(a(3, 4),)])
case(
    "np.take_along_axis",
    lambda x, i: (
        np.take_along_axis(x, i, 1),
        np.take_along_axis(x, i[:1], 0),
        np.take_along_axis(x, np.argsort(x, 1), 1) if False else np.take_along_axis(x, i, -1),
    ),
    [(a(3, 4), a(3, 2, dtype=I64, kind="idx", high=3))],
)
case(
    "np.take_along_axis axis=None",
    lambda x, i: np.take_along_axis(x, i, None),
    [(a(3, 4), a(5, dtype=I32, kind="idx", high=12))],
)
case(
    "np.take_along_axis wrong ndim",
    lambda x, i: np.take_along_axis(x, i, 1),
    [(a(3, 4), a(2, dtype=I64, kind="uidx", high=3))],
)
case(
    "np.diagonal/np.trace",
    lambda x: (
        np.diagonal(x),
        np.diagonal(x, 1),
        np.diagonal(x, -2),
        np.diagonal(x, 0, 1, 2),
        np.diagonal(x, 7),
        np.trace(x),
        np.trace(x, -1, 2, 0),
        x.diagonal(),
        x.trace(),
    ),
    [(a(3, 4, 5),)],
    dtypes=NUMERIC,
)
case("np.diagonal 1-d", np.diagonal, [(a(4),)])
case(
    "np.kron",
    lambda x, y: (np.kron(x, y), np.kron(x[0], y), np.kron(x, y[0, 0])),
    [(a(2, 3), a(3, 2, slot=1))],
    dtypes=PAIRS[::5],
)
case(
    "np.linalg.norm vectors",
    lambda x: (
        np.linalg.norm(x),
        np.linalg.norm(x, axis=1),
        np.linalg.norm(x, 1, axis=0),
        np.linalg.norm(x, np.inf, axis=-1),
        np.linalg.norm(x, -np.inf, axis=1, keepdims=True),
        np.linalg.norm(x, 0, axis=1),
        np.linalg.norm(x, 3, axis=0),
        np.linalg.norm(x[0], 2),
        np.linalg.norm(x, keepdims=True),
    ),
    [(a(3, 4),)],
    dtypes=(F32, F64, I32),
)
case(
    "np.linalg.norm matrices",
    lambda x: (
        np.linalg.norm(x, "fro"),
        np.linalg.norm(x, 1),
        np.linalg.norm(x, -1),
        np.linalg.norm(x, np.inf),
        np.linalg.norm(x, -np.inf, keepdims=True),
        np.linalg.norm(x, axis=(1, 0)),
        np.linalg.norm(x, 1, axis=(1, 0)),
    ),
    [(a(3, 4),)],
    dtypes=(F32, F64),
)
case("np.linalg.norm bad order", lambda x: np.linalg.norm(x, "fro", axis=0), [(a(3, 4),)])
case(
    "np.cov/np.corrcoef",
    lambda x: (
        np.cov(x),
        np.cov(x[:2], x[2], bias=True),
        np.cov(x.T, rowvar=False, ddof=2),
        np.cov(x[0]),
        np.cov(x[:, :1]),  # one sample: NumPy's degrees-of-freedom warning and inf/nan
        np.cov(x, fweights=[1, 2, 0, 3], aweights=[0.5, 1, 2, 1]),
        np.cov(x, aweights=[1, 2, 3, 4], ddof=1),
        np.cov(x, fweights=[1, 2, 1, 1], ddof=0),
        np.cov(x, dtype=np.float32),
        np.corrcoef(x),
        np.corrcoef(x[0], x[1]),
        np.corrcoef(x[1]),
    ),
    [(a(3, 4),)],
    dtypes=(F32, F64, I32),
)
case(
    "np.ptp/count_nonzero",
    lambda x: (
        np.ptp(x),
        np.ptp(x, axis=1),
        np.ptp(x, 0, keepdims=True),
        np.count_nonzero(x, axis=0),
        np.count_nonzero(x, axis=(0, 1), keepdims=True),
    ),
    [(a(3, 4),)],
    dtypes=NUMERIC,
)
case(
    "np.average",
    lambda x, w: (
        np.average(x),
        np.average(x, axis=1),
        np.average(x, weights=w),
        np.average(x, 0, w),
        np.average(x, 1, w[0], keepdims=True),
    ),
    [(a(3, 4), a(3, 4, kind="pos", slot=1))],  # bool weights may sum to 0: NumPy raises
    dtypes=((F64, F64), (I32, F32), (F32, I64), (B, F64), (I64, I32)),
    modes=("normal",),
)  # int64 extremes cancel in float64: any other order differs
case(
    "np.average weights need an axis",
    lambda x, w: np.average(x, weights=w),
    [(a(3, 4), a(4, kind="pos"))],
)
case(
    "nan-reductions",
    lambda x: (
        np.nansum(x),
        np.nansum(x, axis=1),
        np.nanprod(x, axis=0),
        np.nanmax(x, axis=1),
        np.nanmin(x),
        np.nanmean(x, axis=0),
        np.nanmax(x, 0, keepdims=True),
        np.nanmean(x),
    ),
    [(a(3, 4),)],
    modes=("normal", "special"),
    dtypes=(F32, F64, I32),
)  # int64 extremes cancel in a float64 mean: order-dependent
for _name, _fn, _args in [  # where NumPy raises, jitc must raise the same kind
    ("np.flipud 0-d", np.flipud, [(a(),)]),
    ("np.linspace negative num", lambda x: np.linspace(0, x[0], -1), [(a(3),)]),
    ("np.geomspace through zero", lambda x: np.geomspace(x[0] * 0, 1.0, 3), [(a(3),)]),
    ("np.repeat negative count", lambda x: np.repeat(x, [1, -1, 2], axis=0), [(a(3, 4),)]),
    ("np.take wrap of an empty axis", lambda x: np.take(x, [1], axis=1, mode="wrap"), [(a(3, 0),)]),
    (
        "np.take_along_axis axis=None 2-d",
        lambda x: np.take_along_axis(x, np.zeros((2, 2), int), None),
        [(a(3, 4),)],
    ),
    (
        "np.take_along_axis float indices",
        lambda x: np.take_along_axis(x, np.zeros((3, 2)), 1),
        [(a(3, 4),)],
    ),
    ("np.diagonal same axes", lambda x: np.diagonal(x, 0, 1, 1), [(a(3, 4),)]),
    ("np.linalg.norm three axes", lambda x: np.linalg.norm(x, axis=(0, 1, 2)), [(a(2, 2, 2),)]),
    ("np.linalg.norm duplicate axes", lambda x: np.linalg.norm(x, axis=(1, 1)), [(a(3, 4),)]),
    ("np.linalg.norm bad matrix order", lambda x: np.linalg.norm(x, 3), [(a(3, 4),)]),
    ("np.cov of 3 dimensions", np.cov, [(a(2, 2, 2),)]),
    ("np.cov y of 3 dimensions", lambda x: np.cov(x[0], x), [(a(2, 2, 2),)]),
    ("np.cov ddof not an integer", lambda x: np.cov(x, ddof=1.5), [(a(3, 4),)]),
    ("np.cov fweights not integers", lambda x: np.cov(x, fweights=[1.5, 1, 1, 1]), [(a(3, 4),)]),
    ("np.cov fweights of 2 dimensions", lambda x: np.cov(x, fweights=[[1] * 4]), [(a(3, 4),)]),
    ("np.cov aweights too short", lambda x: np.cov(x, aweights=[1, 1]), [(a(3, 4),)]),
    ("np.cov negative aweights", lambda x: np.cov(x, aweights=[-1, 1, 1, 1]), [(a(3, 4),)]),
    ("np.average weights of another length", lambda x: np.average(x, 1, np.ones(3)), [(a(3, 4),)]),
]:
    case(_name, _fn, _args, dtypes=(F64,))


def SEARCH(t, v):  # noqa: N802 - a table entry
    table = t[0] + np.arange(7) // 2  # sorted, with repeats (NumPy requires a sorted table)
    return (
        np.searchsorted(table, v),
        np.searchsorted(table, v, "right"),
        np.searchsorted(table, v[0]),
        np.searchsorted(table, v.reshape(2, -1)),
        np.searchsorted(np.array([0.0, 1.0, 1.0, np.nan]), v),
        np.digitize(v, np.array([0.0, 2.5, 5.0, 7.5])),
        np.digitize(v, np.array([9, 5, 1]), True),
        np.digitize(v, np.array([1.0, 2.0, 2.0, 3.0]), right=True),
    )


case(
    "np.searchsorted/np.digitize",
    SEARCH,
    [(a(7), a(6))],
    dtypes=((F64, F64), (I32, F32), (F32, I64)),
    modes=("normal", "special"),
)
for _name, _fn in [
    ("np.searchsorted bad side", lambda v: np.searchsorted([1, 2], v, "middle")),
    ("np.searchsorted 2-d table", lambda v: np.searchsorted(np.ones((2, 2)), v)),
    ("np.digitize 2-d bins", lambda v: np.digitize(v, np.ones((2, 2)))),
    ("np.digitize unsorted bins", lambda v: np.digitize(v, [1, 3, 2])),
    ("np.digitize complex bins", lambda v: np.digitize(v, np.array([1j, 2j]))),
]:
    case(_name, _fn, [(a(3),)], dtypes=(F64,))
case(
    "np.isclose/np.nan_to_num",
    lambda x, y: (
        np.isclose(x, y),
        np.isclose(x, x, equal_nan=True),
        np.isclose(x, y, rtol=0.5, atol=1),
        np.isclose(x[0, 0], 1.0),
        np.nan_to_num(x),
        np.nan_to_num(x, nan=-1.0, posinf=9.0),
    ),
    [(a(3, 4), a(3, 4, slot=1))],
    dtypes=PAIRS[::5],
    modes=("normal", "special"),
)

# -- np.fft (numpy_api/fft.py: rocket-fft's pocketfft on the cpu; tests/test_fft.py has
# the sizes and norms) and LAPACK's factorizations (tests/test_linalg_factorizations.py)
case(
    "np.fft transforms",
    lambda x: (
        np.fft.fft(x),
        np.fft.ifft(x, n=6, norm="ortho"),
        np.fft.rfft(x, axis=0),
        np.fft.irfft(x, n=5),
        np.fft.fft2(x),
        np.fft.rfftn(x),
        np.fft.irfftn(x),
        np.fft.hfft(x),
        np.fft.ihfft(x, norm="forward"),
    ),
    [(a(3, 4),)],
    dtypes=(I32, F32, F64),
    modes=("normal",),
    rtol=1e-5,
)
case(
    "np.linalg eigh/svd/qr/pinv/lstsq",
    lambda x, y: (
        np.linalg.eigh(x @ x.T),
        np.linalg.eigvalsh(x),
        np.linalg.svd(x),
        np.linalg.svd(y, full_matrices=False),
        np.linalg.svdvals(y),
        np.linalg.qr(y),
        np.linalg.qr(y, mode="r"),
        np.linalg.pinv(y),
        np.linalg.matrix_rank(x),
        np.linalg.lstsq(y, x[:, 0]),
        np.linalg.norm(x, 2),
    ),
    [(a(4, 4), a(4, 3, slot=1))],
    dtypes=((F32, F32), (F64, F64)),
    modes=("normal",),
    rtol=1e-4,
)
# -- results whose size depends on the values (numpy_api/data_sized.py): NumPy's exact sizes
case(
    "np.nonzero/flatnonzero/argwhere/where(cond)",
    lambda x: (np.nonzero(x), np.flatnonzero(x), np.argwhere(x), np.where(x != 0), x.nonzero()),
    [(a(3, 4),), (a(5),), (a(0, 3),)],
)
case(
    "x[mask], np.extract, np.compress",
    lambda x: (
        x[x > 0],
        x[x[:, 0] > 0],
        np.extract(x > 0, x),
        np.compress(x[:, 0] > 0, x, axis=0),
        np.compress(x[0] > 0, x, axis=1),
        np.compress([True, False, True], x),
    ),
    [(a(3, 4),)],
)
case(
    "np.unique",
    lambda x: (
        np.unique(x),
        np.unique(x, return_index=True, return_inverse=True, return_counts=True),
        np.unique(x, return_counts=True, equal_nan=False),
    ),
    [(a(3, 4),), (a(0, 3),)],
)
case(
    "np.unique_all/counts/inverse/values",
    # NumPy's unique_values may order them as its hash table does (the standard leaves the
    # order open; jitc's are sorted): sorted here
    lambda x: (
        np.unique_all(x),
        np.unique_counts(x),
        np.unique_inverse(x),
        np.sort(np.unique_values(x)),
    ),
    [(a(3, 4),)],
)
case(
    "run-time sizes computed on",
    lambda x: (
        np.sort(x[x > 0]),
        np.cumsum(x[x > 0]),
        x[x > 0][1:-1] * 2,
        np.unique(x[x > 0], return_counts=True),
        x[np.nonzero(x > 0)],
    ),
    [(a(3, 4),)],
    dtypes=NUMERIC,
)

# Compiled backends take seconds per kernel to compile (numba), so by default they run every
# case on a sample of its variants (Case.variants(full=False)) and memory layouts (compiled
# backends specialize per layout) on the cases below; JITC_TEST_FULL=1 runs everything
# everywhere. The reference backend always runs everything.
FULL = os.environ.get("JITC_TEST_FULL", "") not in ("", "0")
LAYOUTS_EVERYWHERE = {
    "np.exp",
    "np.sin",
    "np.sqrt",
    "np.isnan",
    "np.negative",
    "np.tanh",
    "np.add",
    "np.multiply",
    "np.maximum",
    "np.less",
    "np.divide",
    "np.power",
    "np.floor_divide",
    "np.arctan2",
    "np.sum(axis=1, keepdims=False)",
    "np.max(axis=None, keepdims=False)",
    "np.mean(axis=(0, 2), keepdims=True)",
    "np.var(axis=-1, keepdims=False)",
    "np.argmax(axis=1, keepdims=False)",
    "np.any(axis=0, keepdims=True)",
    "np.matmul",
    "np.dot",
    "np.einsum bij,bjk->bik",
    "np.tensordot axes=1",
    "transpose",
    "x[::-1]",
    "x[1:-1:2, 1::3]",
    "x[:, ids], x[ids, 1], x[1, :, ids], x[..., ids]",
    "W[ids] (embedding lookup)",
    "concatenate",
    "np.where",
    "np.clip arrays",
    "astype",
    "tril/triu",
    "layernorm",
    "softmax(relu(x @ W + b))",
    "broadcast_to",
    "stack",
    "np.roll",
    "np.pad edge/reflect/symmetric/wrap",
    "np.diff",
    "np.gradient",
    "x[:, k, i, j] (several index arrays)",
}


# ----------------------------------------------------------------------------- the runner


def _variant_id(argset, variant):
    shapes = ",".join(str(m.shape) if isinstance(m, A) else repr(m.value)[:20] for m in argset)
    return f"[{shapes}] dtypes={'/'.join(str(d) for d in variant)}"


# Variants a backend refuses by design, with an UnsupportedError naming the op: backend ->
# case name -> result dtypes (cuda holds float16 values as float32: no float16 bit step).
REFUSED = {"cuda": {"np.nextafter": {np.dtype(np.float16)}}}


def run_case(case: Case, backend: str):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    refused_dtypes = REFUSED.get(backend, {}).get(case.name, set())
    ok = []  # (id, args per mode, NumPy's result per mode)
    for argset, variant in case.variants(full=backend == "reference" or FULL):
        vid = _variant_id(argset, variant)
        per_mode = [[m.make(variant, mode, rng) for m in argset] for mode in case.modes]
        results = [numpy_result(case.fn, args) for args in per_mode]
        err = next((e for _, e in results if e is not None), None)
        refused = any(getattr(w, "dtype", None) in refused_dtypes for w, _ in results)
        if err is None and not refused and not any(_unsupported_dtypes(w) for w, _ in results):
            ok.append((vid, per_mode, [w for w, _ in results]))
            continue
        # Where NumPy raises, jitc raises the same kind of exception (at trace time); where
        # NumPy's result has a dtype jitc does not support (bool -> float16 in np.sin),
        # jitc raises UnsupportedError.
        expected = jitc.UnsupportedError if err is None else _builtin_base(type(err))
        args = per_mode[0]
        before = _snapshot(args)
        with pytest.raises(Exception) as info:  # noqa: PT011 - the type is checked below
            jitc.jit(case.fn, backend=backend)(*args)
        assert isinstance(info.value, expected), (
            f"{vid}: NumPy raised {type(err).__name__}({err}), jitc raised "
            f"{type(info.value).__name__}({info.value})"
        )
        _assert_unchanged(args, before, vid)
    if not ok:
        return

    # Everything else: one jitted function computing every variant, so one compile, called
    # once per value mode (same shapes and dtypes: no new compile).
    _run_grouped(case, backend, ok, with_layouts=backend == "reference" or FULL)
    # Other memory layouts: compiled backends specialize per layout, so a sample of cases
    # runs its first variant alone in Fortran-order, strided and negative-stride views.
    if case.layouts and backend != "reference" and not FULL and case.name in LAYOUTS_EVERYWHERE:
        _run_grouped(case, backend, ok[:1], with_layouts=True, layouts_only=True)


def _run_grouped(case, backend, ok, with_layouts, layouts_only=False):
    def all_variants(*flat):
        out, i = [], 0
        for _, per_mode, _ in ok:
            n = len(per_mode[0])
            out.append(case.fn(*flat[i : i + n]))
            i += n
        return tuple(out)

    static = tuple(
        i for i, x in enumerate(x for _, pm, _ in ok for x in pm[0]) if isinstance(x, type)
    )
    f = jitc.jit(all_variants, backend=backend, static_argnums=static)

    for m, mode in enumerate(case.modes):
        flat = [x for _, per_mode, _ in ok for x in per_mode[m]]
        kinds = [] if layouts_only else [("C-contiguous", flat)]
        if case.layouts and with_layouts:
            for name in ("fortran", "strided", "reversed"):
                views = [layouts(x).get(name, x) for x in flat]
                if any(v is not x for v, x in zip(views, flat)):
                    kinds.append((name, views))
        for label, inputs in kinds:
            before = _snapshot(inputs)
            got = f(*inputs)
            _assert_unchanged(inputs, before, label)
            assert type(got) is tuple and len(got) == len(ok)
            for (vid, per_mode, wants), g in zip(ok, got):
                check_same(
                    g,
                    wants[m],
                    case.rtol,
                    per_mode[m] if case.reduces else None,
                    f"{vid} mode={mode} {label}",
                )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_numpy_surface(case, backend, request):
    from tests.conftest import in_cpu_slice

    if backend == "cpu" and not in_cpu_slice(CASES.index(case)):
        pytest.skip("cpu: CI runs a representative slice; JITC_FULL_SURFACE=1 runs all")
    reason = case.xfail.get(backend) or case.xfail.get("*")
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    run_case(case, backend)


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    assert LAYOUTS_EVERYWHERE <= set(names), LAYOUTS_EVERYWHERE - set(names)


# ----------------------------------------------------------------------------- hypothesis

HYPOTHESIS_BACKENDS = BACKENDS
SETTINGS = settings(
    max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
dtypes_st = st.sampled_from(DTYPES)
BINARY_OPS = [
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.maximum,
    np.less,
    np.floor_divide,
    np.arctan2,
    np.logical_and,
    np.power,
    np.remainder,
    np.minimum,
    np.hypot,
]


@pytest.mark.parametrize("backend", HYPOTHESIS_BACKENDS)
@SETTINGS
@given(
    shapes=hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4
    ),
    dtypes=st.tuples(dtypes_st, dtypes_st),
    op=st.sampled_from(BINARY_OPS),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_binary_ops(backend, shapes, dtypes, op, seed):
    rng = np.random.default_rng(seed)
    kind = "nonneg" if op is np.power else "any"
    x = A(shapes.input_shapes[0]).make(dtypes, "normal", rng)
    y = A(shapes.input_shapes[1], kind=kind, slot=1).make(dtypes, "normal", rng)
    _check_one(op, (x, y), backend)


@pytest.mark.parametrize("backend", HYPOTHESIS_BACKENDS)
@SETTINGS
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4),
    data=st.data(),
    red=st.sampled_from(["sum", "mean", "max", "min", "var", "prod", "any", "argmax"]),
    keepdims=st.booleans(),
    dtype=dtypes_st,
)
def test_reduction_axes(backend, shape, data, red, keepdims, dtype):
    ndim = len(shape)
    if red == "argmax":
        axis = data.draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    else:
        axis = data.draw(
            st.one_of(
                st.none(),
                st.integers(-ndim, ndim - 1),
                st.lists(st.integers(0, ndim - 1), unique=True).map(tuple),
            )
        )
    x = A(shape).make((dtype,), "normal", np.random.default_rng(0))
    fn = getattr(np, red)
    _check_one(lambda x: fn(x, axis=axis, keepdims=keepdims), (x,), backend, reduces=True)


@pytest.mark.parametrize("backend", HYPOTHESIS_BACKENDS)
@SETTINGS
@given(data=st.data())
def test_basic_slicing(backend, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    index = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    x = A(shape).make((F32,), "normal", np.random.default_rng(0))
    _check_one(lambda x: x[index] * 2, (x,), backend)


def _check_one(fn, args, backend, reduces=False):
    want, err = numpy_result(fn, args)
    before = _snapshot(args)
    if err is not None:
        with pytest.raises(_builtin_base(type(err))):
            jitc.jit(fn, backend=backend)(*args)
    else:
        got = jitc.jit(fn, backend=backend)(*args)
        check_same(got, want, None, args if reduces else None, "hypothesis")
    _assert_unchanged(args, before, "hypothesis")


# ----------------------------------------------------------------------------- the table's reach


def test_every_elementwise_op_is_in_the_table():
    names = {c.name for c in CASES}
    missing = [
        n for n in ops.UNARY | ops.PREDICATES | ops.BINARY | ops.COMPARE if f"np.{n}" not in names
    ]
    assert not missing


def test_float_results_are_within_a_few_ulp():
    """The tolerances above are loose; the contract is a few ulp: check a dense sweep."""
    x = np.linspace(-20, 20, 4001)
    for dt in FLOATS:
        xs = x.astype(dt)
        for fn in (np.exp, np.tanh, np.sin, lambda v: np.log(np.abs(v) + 1e-3)):
            for backend in BACKENDS:
                before = xs.copy()
                got = jitc.jit(fn, backend=backend)(xs)
                assert np.array_equal(xs, before)
                want = fn(xs)
                ulp = np.spacing(np.abs(want).astype(dt))
                err = np.abs(got.astype(np.float64) - want.astype(np.float64))
                assert np.all(err <= 4 * ulp + np.finfo(dt).tiny), (
                    f"{backend} {dt}: max error {np.max(err / ulp):.1f} ulp"
                )


def test_the_readme_surface_table_is_the_generated_one():
    """The README's table is `python -m jitc.numpy_api.surface --markdown`, regenerated,
    never edited."""
    from jitc.numpy_api import surface

    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    start, end = readme.index(surface.BEGIN), readme.index(surface.END) + len(surface.END)
    assert readme[start:end] == surface.markdown(), (
        "run python -m jitc.numpy_api.surface --markdown"
    )


def test_every_registered_function_is_in_the_table():
    from jitc.numpy_api import FUNCTIONS, surface

    table = " ".join(names for _, names, _ in surface.rows())
    for func in FUNCTIONS:
        assert surface._numpy_name(func) in table
