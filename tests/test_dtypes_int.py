"""The integer dtypes NumPy programs use beyond int32/int64 (int8, int16, uint8, uint16, uint32,
uint64), against NumPy 2 as the oracle: values, dtypes, and NumPy's errors.

numba compiles are slow, so each cpu-compiled function checks many things at once; the dtype
rules over every pair of dtypes run on the reference backend, which compiles nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitc
from tests.test_aot import _load, run_c_test

NEW = ["int8", "uint8", "int16", "uint16", "uint32", "uint64"]
ALL = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
]


def _edge_values(dtype, shape, seed=0):
    """Random values of `dtype` with its minimum, maximum, 0, 1 (and -1) among them."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "f":
        x = rng.normal(0, 100, size=shape).astype(dtype)
        x.flat[:3] = [0, 1, -1]
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    edges = [info.min, info.max, 0, 1, info.max - 1] + ([-1] if dtype.kind == "i" else [])
    x.flat[: len(edges)] = edges
    return x


def _same(got, want, what="", float_ulps=0):
    """Equal values and dtypes, and a NumPy scalar exactly where NumPy returns one; float
    values within `float_ulps` ulp."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert type(got) is type(want), (what, type(got), type(want))
        assert np.asarray(got).dtype == np.asarray(want).dtype, (what, got, want)
        if float_ulps and np.asarray(want).dtype.kind == "f":
            np.testing.assert_array_max_ulp(got, want, float_ulps)
        else:
            np.testing.assert_array_equal(got, want, err_msg=str(what))


def _check(fn, *args, backend="cpu"):
    """fn compiled on `backend`, called twice (the second call takes the fast path), against
    NumPy running fn. The cuda backend's float sums (a mean) combine lanes in a tree, not in
    NumPy's pairwise order: within 2 ulp there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's overflow and divide-by-zero warnings
        want = fn(*args)
    f = jitc.jit(fn, backend=backend)
    ulps = 2 if backend == "cuda" else 0
    for _ in range(2):
        got = f(*args)
        if isinstance(want, (tuple, list)):
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                _same(g, w, (fn.__name__, k), ulps)
        else:
            _same(got, want, fn.__name__, ulps)


# --------------------------------------------------------------------------- names


def test_ir_names_and_spec_spellings():
    for name, ir, dtype in [
        ("i8", "s8", np.int8),
        ("s8", "s8", np.int8),
        ("u8", "u8", np.uint8),
        ("i16", "s16", np.int16),
        ("s16", "s16", np.int16),
        ("u16", "u16", np.uint16),
        ("u32", "u32", np.uint32),
        ("u64", "u64", np.uint64),
    ]:
        s = jitc.spec(f"{name}[2,3]")
        assert s == jitc.ShapeDtype((2, 3), dtype) and str(s) == f"{ir}[2,3]"
    lo = jitc.jit(lambda x: x + np.int8(1)).lower(jitc.spec("u8[4]"))
    text = lo.as_text()
    assert "u8[4]" in text and "s16[4]" in text, text
    from jitc.core.ir_text import parse_graph

    assert str(parse_graph(text)) == text


# --------------------------------------------------------------------------- promotion


def _pair_ops(x, y):
    return (x + y, x * y, x < y, x == y, x >= y, np.maximum(x, y))


@pytest.mark.parametrize("a", ALL)
def test_promotion_over_every_pair_of_dtypes_is_numpys(a):
    """NEP 50 for each pair of jitc's 11 dtypes, traced and run on the reference backend."""
    f = jitc.jit(_pair_ops, backend="reference")
    for b in ALL:
        x, y = _edge_values(a, (3, 4), 1), _edge_values(b, (4,), 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _pair_ops(x, y)
        for k, (g, w) in enumerate(zip(f(x, y), want)):
            _same(g, w, (a, b, k))


def _mixed(u8, i8, u16, i32, u32, f32, u64, i64, b, f64, i16):
    return (
        u8 + i8,
        u8 * i8,
        u8 < i8,
        u16 - i32,
        u32 + f32,
        u64 + i64,
        u64 < i64,
        i64 >= u64,
        u64 == i64,
        b + u8,
        u8 - b,
        i16 * u16,
        u32 * i8,
        u64 - f64,
        u64 // u8,
        i8 - u16,
        np.maximum(u8, i16),
        u32 + i32,
        u32 < i64,
    )


def test_mixed_dtype_arithmetic_and_comparison_compiled(backend="cpu"):
    """A representative subset of the pairs, compiled once; uint64 against int64 compares
    exactly (NumPy has a mixed loop for it) and adds in float64."""
    names = [
        "uint8",
        "int8",
        "uint16",
        "int32",
        "uint32",
        "float32",
        "uint64",
        "int64",
        "bool",
        "float64",
        "int16",
    ]
    args = [_edge_values(d, (2, 6), k) for k, d in enumerate(names)]
    args[6][0, :3] = [2**63, 2**64 - 1, 2**63 - 1]  # uint64 values that int64 cannot hold
    args[7][0, :3] = [-1, -1, 2**63 - 1]
    _check(_mixed, *args, backend=backend)


def test_reference_backend_agrees_on_the_mixed_program():
    names = [
        "uint8",
        "int8",
        "uint16",
        "int32",
        "uint32",
        "float32",
        "uint64",
        "int64",
        "bool",
        "float64",
        "int16",
    ]
    _check(_mixed, *[_edge_values(d, (6,), k) for k, d in enumerate(names)], backend="reference")


# --------------------------------------------------------------------------- semantics


def _arith(x):
    y = x[::-1]
    z = y & 7 if x.dtype.kind == "u" else y & np.array(7, x.dtype)
    return (
        x + y,
        x - y,
        x * y,
        x // y,
        x % y,
        np.fmod(x, y),
        -x,
        abs(x),
        ~x,
        x**3,
        x < y,
        x >> z,
        x << z,
        x ^ y,
        np.sign(x),
        np.reciprocal(x),
        np.minimum(x, y),
        x / y,
        x * 3,
        x + 1,
        x // 3,
        x.sum(axis=1),
        x.prod(axis=0),
        x.sum(),
        x.max(axis=1),
        x.min(),
        x.argmax(axis=0),
        x.mean(axis=1),
        np.round(x),
        x @ y.T,
    )


@pytest.mark.parametrize("dtype", ["int8", "uint8", "uint64"])
def test_integer_arithmetic_wraps_like_numpy(dtype, backend="cpu"):
    """Wraparound, division and remainder by zero (0), INT_MIN // -1, negative and invert on
    unsigned, abs(INT_MIN), shifts past the width, reductions' accumulator dtypes (sum of
    uint8 is uint64, of int8 int64), mean in float64, and integer matmul."""
    x = _edge_values(dtype, (5, 7))
    x[1, :3] = x[0, 0]  # INT_MIN (0 for unsigned) against -1, 0, max in the reversed copy
    _check(_arith, x, backend=backend)


def _arith_small(*xs):
    out = []
    for x in xs:
        y = x[::-1]
        out += [
            x + y,
            x * y,
            x // y,
            x % y,
            -x,
            abs(x),
            x << (y & 15),
            x.sum(axis=1),
            x.max(axis=1),
            np.reciprocal(x),
        ]
    return out


def test_integer_arithmetic_of_the_middle_widths(backend="cpu"):
    """int16, uint16 and uint32 (the lowering is the 8-bit one at another width)."""
    xs = [_edge_values(d, (4, 6), k) for k, d in enumerate(["int16", "uint16", "uint32"])]
    for x in xs:
        x[1, :3] = x[0, 0]
    _check(_arith_small, *xs, backend=backend)


def test_reduction_dtypes_follow_numpy_for_every_integer_dtype():
    f = jitc.jit(
        lambda x: (
            x.sum(),
            x.prod(axis=0),
            x.max(axis=1),
            x.min(),
            np.argmax(x),
            x.mean(),
            np.sum(x, axis=0, keepdims=True),
        ),
        backend="reference",
    )
    for d in ALL:
        x = _edge_values(d, (3, 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = (
                x.sum(),
                x.prod(axis=0),
                x.max(axis=1),
                x.min(),
                np.argmax(x),
                x.mean(),
                np.sum(x, axis=0, keepdims=True),
            )
        for k, (g, w) in enumerate(zip(f(x), want)):
            _same(g, w, (d, k))


_FLOATS = np.array(
    [
        0.0,
        1.0,
        -1.0,
        2.7,
        -2.7,
        127.9,
        128.0,
        -128.0,
        -128.9,
        255.0,
        255.5,
        256.0,
        300.0,
        -300.0,
        32767.0,
        -32768.0,
        65535.0,
        70000.0,
        2.0**31 - 1,
        -(2.0**31),
        3e9,
        2.0**32 - 1,
        9.2e18,
        2.0**63,
        1e19,
        2.0**64 - 4096,
        -0.5,
        -0.0,
        1e-300,
    ]
)


def _fits(x, dtype):
    """The values of `x` whose truncation `dtype` holds: where C, and so NumPy, defines the
    conversion. (Beyond it NumPy's answer depends on the loop it takes: float64 -3e9 to
    uint32 was 1294967296 in an 11-element array and 2147483648 in a 23-element one.)"""
    info, t = np.iinfo(dtype), np.trunc(x.astype(np.float64))
    return x[(t >= info.min) & (t <= info.max)]


def _float_casts(floats):
    return [x.astype(d) for d, pair in zip(NEW, floats) for x in pair]


def _int_casts(*ints):
    return [
        x.astype(d)
        for x in ints
        for d in ("int8", "uint16", "uint32", "uint64", "int64", "float32", "float64", "bool")
    ]


def test_astype_from_floats_to_every_integer_dtype(backend="cpu"):
    """Float-to-int truncates toward zero, exactly up to the target's limits (1e19 to
    uint64 included, which int64 cannot hold)."""
    floats = [(_fits(_FLOATS, d), _fits(_FLOATS.astype(np.float32), d)) for d in NEW]
    assert 1e19 in floats[-1][0] and -128.9 in floats[0][0]
    _check(_float_casts, floats, backend=backend)


def test_astype_between_integer_dtypes(backend="cpu"):
    """Int-to-int casts wrap, int-to-float rounds as NumPy, int-to-bool is x != 0."""
    _check(
        _int_casts,
        *[_edge_values(d, (8,), 3) for d in ("int8", "uint8", "uint64")],
        backend=backend,
    )


def _all_casts(*xs):
    return [x.astype(d) for x in xs for d in ALL]


def test_astype_between_all_dtypes_on_the_reference_backend():
    _check(_all_casts, *[_edge_values(d, (8,), 3) for d in ALL], backend="reference")


# --------------------------------------------------------------------------- Python scalars


def _with_scalar(x, k):
    return x + k, x * k, x - k, x < k, x == k, k > x, x + 3, x * 2, x < -1, x != 300


@pytest.mark.parametrize("dtype", ["uint8", "uint64"])
def test_python_ints_stay_weak_and_out_of_range_ones_raise_naming_the_argument(
    dtype, backend="cpu"
):
    x = _edge_values(dtype, (6,))
    _check(_with_scalar, x, 5, backend=backend)
    f = jitc.jit(_with_scalar, backend=backend)
    f(x, 5)
    for k in (-1, 2**70) + ((256, 1000) if dtype == "uint8" else ()):
        with pytest.raises(OverflowError) as numpy_error:
            x + k
        with pytest.raises(OverflowError, match="argument 'k': Python integer") as e:
            f(x, k)
        if k < 2**63:  # beyond, NumPy says "too large to convert to C long"
            assert str(numpy_error.value) in str(e.value)
    if dtype == "uint64":  # NumPy adds 2**63 to a uint64 array; jitc's Python ints are int64
        with pytest.raises(OverflowError, match="argument 'k': .*int64 is the widest"):
            f(x, 2**63)


def test_a_python_int_argument_fits_every_dtype_it_meets():
    """k meets uint8 and int8: NumPy 2 refuses -1 (for uint8) and 200 (for int8)."""

    def both(u, s, k):
        return u + k, s + k

    u, s = np.arange(4, dtype=np.uint8), np.arange(4, dtype=np.int8)
    _check(both, u, s, 100)
    f = jitc.jit(both, backend="cpu")
    for k, dtype in ((-1, "uint8"), (200, "int8")):
        with pytest.raises(OverflowError, match=f"argument 'k': .* out of bounds for {dtype}"):
            f(u, s, k)


def test_python_int_comparisons_are_exact_for_every_dtype():
    """x < k for a Python int out of x's range is all True or all False (NumPy 2 compares the
    values), for constants and for arguments."""
    f = jitc.jit(
        lambda x, k: (x < k, x >= k, x == k, k < x, x > 2**64, x <= -(2**70)), backend="reference"
    )
    for d in NEW + ["int32", "int64"]:
        x = _edge_values(d, (7,))
        for k in (-1, 0, 200, 2**40, -(2**40), 2**63 - 1, -(2**63)):
            want = (x < k, x >= k, x == k, k < x, x > 2**64, x <= -(2**70))
            for j, (g, w) in enumerate(zip(f(x, k), want)):
                _same(g, w, (d, k, j))


def test_a_python_int_literal_out_of_range_raises_with_the_line():
    def bad(x):
        return x + 256

    with pytest.raises(
        OverflowError,
        match=r"Python integer 256 out of bounds for uint8 "
        r"\(at .*test_dtypes_int.py:\d+\)",
    ):
        jitc.jit(bad)(np.arange(3, dtype=np.uint8))


# --------------------------------------------------------------------------- programs


def _brightness(img, gain, bias):
    out = np.clip(img.astype(np.float32) * gain + bias, 0, 255).astype(np.uint8)
    gray = (img.astype(np.uint16) * np.array([77, 150, 29], np.uint16)).sum(axis=-1) >> 8
    return out, gray.astype(np.uint8), img.max(axis=(0, 1)), img.mean(axis=2), 255 - img


def test_a_uint8_image_program(backend="cpu"):
    img = np.random.default_rng(5).integers(0, 256, (12, 9, 3), dtype=np.uint8)
    img[0, 0] = [0, 255, 254]
    _check(_brightness, img, np.float32(1.2), np.float32(10.0), backend=backend)


def _quantized(q, w, scale):
    acc = (q.astype(np.int32) * w.astype(np.int32)).sum(axis=-1)  # int8 dot, widened
    y = np.clip(np.rint(acc * scale), -128, 127).astype(np.int8)
    return acc, y, q @ w.T, q.astype(np.int16) @ w.astype(np.int16).T, np.abs(q).max()


def test_an_int8_quantized_dot_product_program(backend="cpu"):
    rng = np.random.default_rng(6)
    q = rng.integers(-128, 128, (4, 64), dtype=np.int8)
    w = rng.integers(-128, 128, (4, 64), dtype=np.int8)
    q[0, :3] = -128
    _check(_quantized, q, w, np.float32(0.01), backend=backend)


def test_unsigned_index_arrays_gather_and_too_big_ones_are_out_of_bounds(backend="cpu"):
    t = np.arange(12.0).reshape(6, 2)
    f = jitc.jit(lambda t, i: t[i] * 2, backend=backend)
    for dtype in ("uint8", "uint16", "uint32", "uint64"):
        i = np.array([5, 0, 3], dtype)
        _same(f(t, i), t[i] * 2)
    with pytest.raises(IndexError):
        f(t, np.array([2**64 - 1], np.uint64))  # -1 if taken as int64


# --------------------------------------------------------------------------- float16 results


def test_math_numpy_computes_in_float16_is_float16(backend="cpu"):
    """np.exp of uint8 and int8 is float16 in NumPy (float16 is jitc's too: tests/
    test_dtypes_float16.py); sqrt of float32-exact integers rounds the same everywhere."""
    _check(
        lambda x, y: (np.sqrt(x), np.sqrt(y), x / np.uint8(7)),
        np.arange(0, 256, 5, dtype=np.uint8),
        np.arange(-128, 128, 5, dtype=np.int8),
        backend=backend,
    )


# --------------------------------------------------------------------------- AOT


def _aot_fn(img, q):
    return (
        np.clip(img.astype(np.float32) * 1.2 + 10, 0, 255).astype(np.uint8),
        q.astype(np.int32).sum(axis=-1),
        (img >> 1) + np.uint8(200),
        q // np.int8(-3),
        img.astype(np.uint64) * np.uint64(2**62),
        img.astype(np.uint32),
        q.astype(np.int16),
    )


def test_aot_header_types_and_results_for_small_integers(tmp_path):
    import jitc.aot as aot

    art = aot.compile(_aot_fn, "u8[4,5,3]", "i8[4,6]", name="small_ints")
    paths = art.write(str(tmp_path), emit_test=True)
    proto = next(line for line in art.header().splitlines() if line.startswith("int "))
    assert proto.startswith(
        "int small_ints(const uint8_t* arg0, const int8_t* arg1, "
        "uint8_t* res0, int64_t* res1, uint8_t* res2, int8_t* res3, "
        "uint64_t* res4, uint32_t* res5, int16_t* res6, void* temp);"
    ), proto
    out = run_c_test(paths, tmp_path)
    assert out is None or out.startswith("PASS"), out
    rng = np.random.default_rng(8)
    img = rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)
    q = rng.integers(-128, 128, (4, 6), dtype=np.int8)
    for g, w in zip(_load(str(tmp_path), "small_ints")(img, q), _aot_fn(img, q)):
        _same(g, w)


def test_every_dtype_has_a_c_type_and_an_ir_name():
    from jitc.aot.link import _c_type
    from jitc.core.dtypes import SHORT_NAMES, SUPPORTED

    assert len(SUPPORTED) == 14  # with float16, complex64, complex128
    for d in NEW:
        assert _c_type(d) == f"{d}_t" and np.dtype(d) in SHORT_NAMES
