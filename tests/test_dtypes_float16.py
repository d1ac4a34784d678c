"""float16 against NumPy 2 as the oracle: NEP 50 promotion, NumPy's float16 loops (each op
in float32, rounded to float16 where NumPy makes a float16 array), casts, reductions, matmul,
in-place updates and AOT objects (the cuda backend: tests/cuda_sim/test_sim_dtypes.py).

Tolerances, where NumPy is not exact itself:
- + - * / sqrt, comparisons, casts, max/min, cumsum: bit for bit (float32 then one rounding
  is what NumPy computes, and IEEE makes each of those exact).
- exp, log, tanh, sin ...: within 1 float16 ulp (NumPy's float32 math and jitc's differ in
  the last float32 bits, which moves a result rounded near a float16 tie by one ulp).
- sum/prod along NumPy's inner loop (the reduced axes end in memory's last): NumPy adds
  pairwise in float32 and rounds once, jitc adds in float32 blocks: within 1 ulp. Along a
  kept last axis NumPy rounds after every add, and so does jitc: bit for bit.
- matmul/dot: both accumulate in float32 and round once: |jitc - NumPy| <= 1 ulp of the
  result + 2 K 2**-24 sum_k |a_ik b_kj| (two float32 accumulations of K products).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError
from tests.test_aot import _load, run_c_test

H = np.float16
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
    "float16",
    "float32",
    "float64",
]


def _values(dtype, shape, seed=0):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "f":
        return rng.normal(0, 20, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -300), min(info.max, 300), size=shape, dtype=dtype)


def _halves(shape, seed=0, scale=3.0):
    return (np.random.default_rng(seed).normal(0, scale, size=shape)).astype(H)


EDGES = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        -65504.0,
        6.1035e-05,
        5.96e-08,
        -5.96e-08,
        np.inf,
        -np.inf,
        np.nan,
        0.1,
        1000.0,
        2.5,
        -3.5,
    ],
    dtype=H,
)


def _same(got, want, what=""):
    """Equal values (NaN where NumPy has NaN) and dtypes; a NumPy scalar where NumPy has one."""
    assert type(got) is type(want), (what, type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, (what, got, want)
    np.testing.assert_array_equal(got, want, err_msg=str(what))


def _ulps(got, want) -> int:
    """The most float16 ulps between `got` and `want` (NaN against NaN: 0)."""

    def order(x):
        b = np.asarray(x, H).view(np.uint16).astype(np.int64)
        return np.where(b & 0x8000, -(b & 0x7FFF), b)

    got, want = np.asarray(got, H), np.asarray(want, H)
    both_nan = np.isnan(got) & np.isnan(want)
    diff = np.where(both_nan, 0, np.abs(order(got) - order(want)))
    diff = np.where(np.isnan(got) != np.isnan(want), 1 << 20, diff)
    return int(diff.max(initial=0))


def _run(fn, *args, backend="cpu"):
    """fn compiled on `backend`, called twice (the second call takes the fast path); the
    second call's results and NumPy's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's overflow and invalid-value warnings
        want = fn(*args)
        f = jitc.jit(fn, backend=backend)
        f(*args)
        return f(*args), want


# --------------------------------------------------------------------------- names


def test_ir_name_and_spec_spelling():
    s = jitc.spec("f16[2,3]")
    assert s == jitc.ShapeDtype((2, 3), H) and str(s) == "f16[2,3]"
    text = jitc.jit(lambda x: x * 2 + 1.5).lower(jitc.spec("f16[4]")).as_text()
    assert "f16[4]" in text, text
    from jitc.core.ir_text import parse_graph

    assert str(parse_graph(text)) == text


# --------------------------------------------------------------------------- promotion


def _pair_ops(x, y):
    return (x + y, y * x, x < y, x == y, x >= y, np.maximum(x, y), y - x, x / y)


def test_promotion_of_float16_with_every_dtype_is_numpys():
    """NEP 50 on the reference backend, both operand orders: float16 with (u)int8 stays
    float16, with (u)int16 goes to float32, with wider integers to float64, with
    float32/float64 to them."""
    x = _halves((3, 4), 1)
    f = jitc.jit(_pair_ops, backend="reference")
    for b in ALL:
        y = _values(b, (4,), 2)
        for args in ((x, y), (y, x)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = _pair_ops(*args)
                got = f(*args)
            for k, (g, w) in enumerate(zip(got, want)):
                _same(g, w, (b, k))


def _pairs(x, *ys):
    return [r for y in ys for r in _pair_ops(x, y) + _pair_ops(y, x)]


def test_mixed_float16_arithmetic_compiled(backend="cpu"):
    """Pairs whose result is float16 (bool, int8) or float32 (int16, float32), compiled
    once on cpu (one kernel); every dtype's promotion is checked on reference above."""
    ys = [_values(b, (4,), k) for k, b in enumerate(["bool", "int8", "int16", "float32"])]
    got, want = _run(_pairs, _halves((3, 4), 1), *ys, backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, k)


def _with_scalars(x, s):
    return (
        x + 2.5,
        3 * x,
        x - 1,
        x / 3.0,
        x * np.float16(0.1),
        x + np.float32(1.0),
        x * np.int8(3),
        x + np.int16(2),
        2.0**x,
        x > 0.3,
        x + s,
        x * np.float64(2),
        x + 70000,
        x * 1e10,
        x - 1e-9,
        np.maximum(x, 2**40),
    )


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_python_and_numpy_scalars_with_float16(backend):
    """Python floats and ints stay float16 (weak); NumPy scalars are strong: np.float32 and
    np.int16 make float32, np.float64 float64; a float16 scalar argument is float16; Python
    numbers past float16's range overflow to inf as NumPy converts them."""
    x = np.concatenate([_halves(12, 3), EDGES])
    got, want = _run(_with_scalars, x, H(0.3), backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, k)


# --------------------------------------------------------------------------- elementwise


def _chain(a, b, c):
    """Each line rounds to float16 where NumPy stores a float16 array: (a*b)+c is not
    fma(a, b, c), nor (a*b)+c in float32."""
    return (
        (a * b) + c,
        a / b - c,
        (a - b) * (a + b),
        np.sqrt(np.abs(a)),
        -a,
        a * a * a,
        np.floor(a),
        np.rint(c),
        np.trunc(b),
        np.minimum(a, b),
        np.fmax(a, c),
        np.where(a > b, a, c),
        np.clip(a, -1.5, 2.25),
        a // b,
        a % b,
        a**2,
        a**0.5,
        np.reciprocal(b),
        np.square(b) - a,
        np.sign(a),
        np.copysign(a, b),
        np.isnan(a / b),
        np.isinf(a * 1000),
        np.signbit(a),
        a != b,
        a <= c,
    )


def test_elementwise_chains_are_numpys_bit_for_bit(backends=("reference", "cpu")):
    """Fused into one kernel on cpu, with NumPy's float16 rounding after every op; overflow
    to inf (1000 * 1000), subnormals (tiny * tiny), NaN (0/0, inf - inf) and -0.0 among the
    values."""
    a = np.concatenate([_halves(40, 4, 30.0), EDGES, EDGES[::-1]])
    b = np.concatenate([_halves(40, 5), EDGES[::-1], EDGES])
    c = np.concatenate([_halves(40, 6, 0.01), EDGES, EDGES])
    for backend in backends:
        got, want = _run(_chain, a, b, c, backend=backend)
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (backend, k))


def _math(x):
    return (
        np.exp(x),
        np.log(x),
        np.tanh(x),
        np.sin(x),
        np.cos(x),
        np.expm1(x),
        np.log1p(x),
        np.arctan(x),
        np.exp2(x),
        np.log2(x),
        np.power(x, 1.7),
        np.arctan2(x, x[::-1]),
        np.cbrt(x),
        1 / (1 + np.exp(-x)),
    )


def test_transcendentals_within_one_ulp_of_numpy_over_every_float16(backend="cpu", step=1):
    """Every float16 value (NaN and inf included): NumPy's float32 math against jitc's, each
    rounded to float16. Measured: at most 1 ulp, on 0 to 20 of the 65536 values per function
    (exp 4, sin 2, cos 2, expm1 1, arctan 2, cbrt 20); a sigmoid built of exp, add and divide
    carries exp's ulp through two more roundings: 2 ulp, on 2 values."""
    x = np.arange(0, 65536, step, dtype=np.uint32).astype(np.uint16).view(H)
    got, want = _run(_math, x, backend=backend)
    worst = [_ulps(g, w) for g, w in zip(got, want)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == H
    assert max(worst[:-1]) <= 1 and worst[-1] <= 2, worst


# --------------------------------------------------------------------------- casts


def _casts(h, f32, f64, i32, u8, b):
    return (
        h.astype(np.float32),
        h.astype(np.float64),
        f32.astype(H),
        f64.astype(H),
        i32.astype(H),
        u8.astype(H),
        b.astype(H),
        h.astype(np.int32),
        h.astype(np.int8),
        h.astype(np.uint8),
        h.astype(bool),
        (h * 2).astype(np.int64),
        h.astype(np.float32) * np.float32(1.001),
        (f64 * 3).astype(H) + h[0],
    )


def test_casts_both_ways_are_numpys(backends=("reference", "cpu")):
    """float64 -> float16 rounds once (to float32 and then to float16 would round twice:
    1 + 2**-11 + 2**-40 is 1.0 that way, 1.00098 in NumPy); integers past 65504 are inf;
    float16 -> integers where C defines the conversion."""
    rng = np.random.default_rng(7)
    h = np.concatenate([(rng.normal(0, 40, 40)).astype(H), H([0.0, -0.0, 100.5, -100.5])])
    f32 = np.concatenate(
        [
            rng.normal(0, 1e4, 40).astype(np.float32),
            np.float32([65504, 65519.9, 65520, 1e-8, 2**-25, np.nan]),
        ]
    )
    f64 = np.concatenate(
        [
            rng.normal(0, 1e3, 40),
            [
                1 + 2**-11 + 2**-40,
                1 + 2**-11,
                1 - 2**-12 - 2**-45,
                2**-25 + 2**-60,
                65519.999,
                np.inf,
            ],
        ]
    )
    i32 = np.concatenate(
        [
            rng.integers(-70000, 70000, 40, dtype=np.int32),
            np.int32([2049, 2051, 65504, 65520, -65536, 4097]),
        ]
    )
    u8 = np.arange(46, dtype=np.uint8) * 5
    b = np.arange(46) % 3 == 0
    for backend in backends:
        got, want = _run(_casts, h, f32, f64, i32, u8, b, backend=backend)
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (backend, k))


def _created(x):
    return (
        np.zeros(3, dtype=np.float16),
        np.ones((2, 2), np.float16) * x[0],
        np.full(4, 0.1, dtype=np.float16),
        np.arange(0, 3, 0.25, dtype=np.float16),
        x + np.float16(0.1),
        np.zeros_like(x) + 1 / 3,
        np.zeros(2, np.float16) + np.float16(1e-7),
    )


def test_creation_and_constants_in_float16(backends=("reference", "cpu")):
    x = _halves(12, 9)
    for backend in backends:
        got, want = _run(_created, x, backend=backend)
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (backend, k))


def _moves(a, b, i):
    return (
        np.concatenate([a, b * 2]),
        a[::-1] + b,
        a[i],
        a.reshape(4, -1).T * 3,
        np.stack([a, b]),
        np.roll(a, 3) - b,
        np.pad(a, 2),
        np.flip(b),
        np.where(i[:1] > 0, a[:4], b[:4]),
    )


def test_data_movement_of_float16_is_exact(backends=("reference", "cpu")):
    """Concatenation (cell by cell), reversal, gathers, transposes, stacks, rolls, padding
    move float16 bits unchanged (the cpu kernels' loads and stores)."""
    a, b, i = _halves(16, 24), _halves(16, 25), np.array([3, -1, 0, 15, 7])
    for backend in backends:
        got, want = _run(_moves, a, b, i, backend=backend)
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, (backend, k))


# --------------------------------------------------------------------------- reductions


def _reductions(x, y):
    return (
        np.sum(x),
        x.sum(axis=1),
        np.mean(x),
        x.mean(axis=1),
        x.mean(axis=0),
        x[:, :6].prod(axis=1),
        y.sum(axis=(1, 2)),
        x.T.sum(axis=0),  # float32 inner loops
        x.sum(axis=0),
        x[:9].prod(axis=0),
        y.sum(axis=(0, 1)),
        y.sum(axis=1),  # rounded
        x.max(),
        x.min(axis=0),
        np.argmax(x),
        np.max(x, axis=1),
        y.sum(axis=(0, 2)),
        np.var(x, axis=1),
        np.std(x),
    )


def test_reductions_follow_numpy(backend="cpu"):
    """NumPy's float16 add/multiply.reduce: along its inner loop (the reduced axes end in
    memory's last one) a float32 accumulator rounded once, where jitc adds in float32 blocks:
    within 1 ulp (0 on these values); along a kept last axis every add or product rounds to
    float16, in order, and so does jitc: bit for bit (32 ulp from the exact sum there). Both
    at once (y.sum(axis=(0, 2)): jitc sums the rows in float32 and rounds once) within 2 ulp
    of the partial sums; var/std (float16 all the way) within 2 ulp."""
    x = _halves((64, 40), 11, 2.0)
    x[3, 5] = H(60000)  # partial sums near float16's top
    y = _halves((6, 5, 7), 12, 2.0)
    got, want = _run(_reductions, x, y, backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype, k
        if k < 8:
            assert _ulps(g, w) <= 1, (k, g, w)
        elif k < 16:
            _same(g, w, k)
        elif k == 16:  # NumPy rounds a float32 row sum into each float16 partial: 2 ulp
            # of the partials' magnitude (not of a result they cancel to)
            scale = np.spacing(np.abs(y.astype(np.float64)).sum(axis=(0, 2)).astype(H))
            assert (np.abs(g.astype(np.float64) - w) <= 2 * scale).all(), (g, w)
        else:
            assert _ulps(g, w) <= 2, (k, g, w)


def _layouts(x, y, b, z):
    return (
        (x.T * 2).sum(axis=0),
        (x.T * 2).sum(axis=1),
        (x.T + y.T).sum(axis=0),
        np.exp(x.T).sum(axis=0),
        (x.T - b).sum(axis=1),
        x.T.prod(axis=1),
        z.sum(axis=(0, 1)),
        z.transpose(2, 0, 1).sum(axis=(1, 2)),
        z.sum(axis=1),
    )


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_reductions_follow_numpys_memory_order_bit_for_bit(backend, shape=(300, 200)):
    """Which loop NumPy runs depends on memory order: x.T is a view, an elementwise result
    of views keeps their order (order="K"; a broadcast operand does not count), so
    (x.T * 2).sum(axis=0) accumulates pairwise in float32 and (x.T * 2).sum(axis=1) rounds
    every add. jitc follows that order through the trace: equal to NumPy on every value
    (a 7 to 750 ulp difference otherwise, on these)."""
    rng = np.random.default_rng(31)
    x, y = (rng.normal(1, 3, shape).astype(H) for _ in range(2))
    b, z = rng.normal(1, 3, shape[0]).astype(H), rng.normal(1, 3, (6, 7, 8)).astype(H)
    got, want = _run(_layouts, x, y, b, z, backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, k)


def _running(x):
    return np.cumsum(x, axis=1), np.cumprod(x[:, :5], axis=1), np.maximum.accumulate(x, axis=0)


def test_running_sums_round_every_step_as_numpy(backend="cpu"):
    """ufunc.accumulate on float16 rounds after each add in NumPy, and so does the scan."""
    got, want = _run(_running, _halves((6, 30), 12), backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, k)


def _matmul(a, b, v):
    return a @ b, np.dot(v, b), np.matmul(a[:, :7], b[:7])


def test_matmul_and_dot_within_the_float32_accumulation_bound(backend="cpu"):
    """(Measured: bit for bit on these.) np.einsum of float16 is refused: NumPy rounds its
    float16 output after every product added (158 ulp off the exact sum of 50 products)."""
    a, b, v = _halves((7, 50), 13), _halves((50, 9), 14), _halves(50, 15)
    got, want = _run(_matmul, a, b, v, backend=backend)
    for (g, w), (lhs, rhs) in zip(zip(got, want), [(a, b), (v, b), (a[:, :7], b[:7])]):
        assert g.dtype == w.dtype == H and g.shape == w.shape
        k = lhs.shape[-1]
        bound = 2 * k * 2.0**-24 * (np.abs(lhs.astype(np.float64)) @ np.abs(rhs.astype(np.float64)))
        ulp = np.spacing(np.abs(w)).astype(np.float64)
        assert (np.abs(g.astype(np.float64) - w) <= ulp + bound).all()
    with pytest.raises(UnsupportedError, match=r"np\.einsum of float16.*test_dtypes_float16"):
        jitc.jit(lambda a, b: np.einsum("ij,jk->ik", a, b), backend="reference")(a, b)


# --------------------------------------------------------------------------- writes


def _update(x, y, i):
    x += y
    x[1:3] = 0.5
    x[x > 2] = -x[x > 2]
    np.add.at(x, i, y[:3])
    x *= 1.001
    return x.sum()


def test_in_place_updates_of_a_callers_float16_array(backends=("reference", "cpu")):
    """x += y, a slice store, a masked store, np.add.at and x *= s write the caller's
    float16 array as NumPy does (each op rounds to float16 in place)."""
    x0, y, i = _halves(16, 16), _halves(16, 17), np.array([0, 5, 5])
    want_x = x0.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _update(want_x, y, i)
    for backend in backends:
        f = jitc.jit(_update, backend=backend)
        for _ in range(2):
            x = x0.copy()
            got = f(x, y, i)
            _same(x, want_x, backend)
            assert _ulps(got, want) <= 1 and type(got) is type(want)


def _many(*xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total, xs[3] * 2


def test_a_function_of_many_float16_arrays_takes_the_wide_path():
    """Past 16 arrays the cpu driver gathers pointers through per-dtype collectors, which
    see float16 arrays as their bits as the kernels do; each add rounds as in NumPy."""
    rng = np.random.default_rng(30)
    xs = [rng.normal(0, 300, 10).astype(H) for _ in range(20)]
    got, want = _run(_many, *xs)
    for g, w in zip(got, want):
        _same(g, w)


# --------------------------------------------------------------------------- programs


def _layernorm_mlp(x, g, b, w, bias):
    """A half-precision transformer piece: layernorm over the last axis, then a dense layer
    with GELU (tanh form) and a residual add."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    h = (x - mu) / np.sqrt(var + np.float16(1e-5)) * g + b
    z = h @ w + bias
    gelu = 0.5 * z * (1 + np.tanh(0.7978846 * (z + 0.044715 * z**3)))
    return gelu + x, h


def test_half_precision_layernorm_and_mlp_layer_against_numpy(backend="cpu"):
    """Every op rounds to float16 as in NumPy; the mean's and the matmul's float32 sums are
    where the two may part, so the check is relative to the float16 ulp of the activations:
    within 4 ulp of NumPy's layer output scale (an ulp moved in a mean moves later ops)."""
    rng = np.random.default_rng(21)
    x = rng.normal(0, 1, (8, 64)).astype(H)
    g, b = (1 + 0.1 * rng.normal(size=64)).astype(H), (0.1 * rng.normal(size=64)).astype(H)
    w, bias = (rng.normal(0, 0.125, (64, 64))).astype(H), (0.1 * rng.normal(size=64)).astype(H)
    got, want = _run(_layernorm_mlp, x, g, b, w, bias, backend=backend)
    for gg, ww in zip(got, want):
        assert gg.dtype == ww.dtype == H
        scale = np.spacing(np.abs(ww).max().astype(H)).astype(np.float64)
        assert np.abs(gg.astype(np.float64) - ww).max() <= 4 * scale


# --------------------------------------------------------------------------- backends


@pytest.mark.parametrize("family", ["NATIVE", "PORTABLE"])
def test_both_float16_conversions_are_numpys_on_every_value(family):
    """The kernels' float16 <-> float32 conversions (NATIVE: LLVM half, F16C; PORTABLE: bit
    manipulation, for AOT objects) against NumPy's casts: every float16, float32s around
    every float16 value (ties and their neighbours), and float64 -> float16 rounding once."""
    from numba import njit

    from jitc.backends.cpu import half

    every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    mid = every.view(H).astype(np.float32).view(np.uint32)
    near = (mid[:, None].astype(np.int64) + np.arange(-2, 3)).astype(np.uint32).ravel()
    f32 = np.concatenate([near.view(np.float32), np.float32([2**-25, 3 * 2**-26, 1e-30])])
    h64 = every.view(H).astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf + -inf among the neighbours
        f64 = np.concatenate([(h64[:-1] + h64[1:]) / 2, (h64[:-1] + h64[1:]) / 2 * (1 + 2**-40)])
    fns = getattr(half, family)
    h2f, f2h, r64 = fns["h2f"], fns["f2h"], fns["round16_f64"]

    @njit
    def run(h, x, d, up, down, down64):
        for i in range(h.shape[0]):
            up[i] = h2f(h[i])
        for i in range(x.shape[0]):
            down[i] = f2h(x[i])
        for i in range(d.shape[0]):
            down64[i] = f2h(r64(d[i]))

    up = np.empty(every.size, np.float32)
    down, down64 = np.empty(f32.size, np.uint16), np.empty(f64.size, np.uint16)
    run(every, f32, f64, up, down, down64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(up, every.view(H).astype(np.float32))
        assert _ulps(down.view(H), f32.astype(H)) == 0
        assert _ulps(down64.view(H), f64.astype(H)) == 0


def _aot_fn(x, w):
    return (
        np.tanh(x * w + np.float16(0.5)),
        x.sum(axis=1),
        x.astype(np.float32) @ w.astype(np.float32),
        (x > w).astype(np.float16),
    )


def test_aot_object_with_float16_buffers_builds_links_and_runs(tmp_path):
    """uint16_t in the header; the emitted C test (float16 bits within 1 ulp of NumPy) and
    the Python loader against NumPy."""
    import jitc.aot as aot

    art = aot.compile(_aot_fn, "f16[4,8]", "f16[8]", name="half_fn")
    paths = art.write(str(tmp_path), emit_test=True)
    proto = next(line for line in art.header().splitlines() if line.startswith("int "))
    assert proto.startswith(
        "int half_fn(const uint16_t* arg0, const uint16_t* arg1, "
        "uint16_t* res0, uint16_t* res1, float* res2, uint16_t* res3"
    ), proto
    out = run_c_test(paths, tmp_path)
    assert out is None or out.startswith("PASS"), out
    x, w = _halves((4, 8), 22), _halves(8, 23)
    for g, want in zip(_load(str(tmp_path), "half_fn")(x, w), _aot_fn(x, w)):
        assert g.dtype == want.dtype and g.shape == want.shape
        if want.dtype == H:
            assert _ulps(g, want) <= 1
        else:
            np.testing.assert_allclose(g, want, rtol=1e-6)


def _aot_update(x, y):
    x += y * np.float16(0.5)
    return x.sum()


def test_aot_writes_a_float16_in_out_argument(tmp_path):
    import jitc.aot as aot

    art = aot.compile(_aot_update, "f16[64]", "f16[64]", name="upd16")
    assert art.plan.inout == (0,)
    paths = art.write(str(tmp_path), emit_test=True)
    assert "int upd16(uint16_t* arg0, const uint16_t* arg1, uint16_t* res0" in art.header()
    out = run_c_test(paths, tmp_path) or pytest.skip("no system C compiler")
    assert "1 in-out arguments match NumPy" in out, out
