"""complex64/complex128 against NumPy 2 as the oracle: NEP 50 promotion (Python complex,
float and int scalars weak), NumPy's complex loops, parts and casts, exp/log/sqrt, the
trigonometric, hyperbolic and power functions, sum/prod/mean, where, matmul, vecdot, AOT,
and refusals by name of what jitc does not compute on complex.

Tolerances, where NumPy is not exact itself:
- + - * / negative square conj real imag ==, casts, where: bit for bit, special values
  (inf/nan parts, signed zeros, division by zero) included.
- abs, exp, log, sqrt: within 2 ulp of each part relative to the modulus (NumPy calls
  libm's hypot and glibc's cexp/clog/csqrt, themselves within an ulp), special values
  exactly.
- sin ... arctanh, power, expm1, log1p, exp2, log2, log10, sign, reciprocal: bit for bit
  (jitc calls the C library's functions NumPy calls, in NumPy's order).
- sum/prod/mean, matmul: NumPy's pairwise sums and BLAS against jitc's blocks: within a few
  ulp of sum |terms|.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.special

import jitc
from jitc.backends.native import background
from jitc.core.errors import UnsupportedError

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
COMPLEX = [C64, C128]
BACKENDS = ["reference", "cpu"]


def _parts(dtype):
    return np.finfo(dtype).dtype


def _random(dtype, shape, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, scale, shape) + 1j * rng.normal(0, scale, shape)).astype(dtype)


def _edges(dtype):
    """Every pair of special parts: signed zeros, ones, huge, tiny, inf, nan."""
    f = np.finfo(_parts(dtype))
    vals = np.array(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.5,
            f.max,
            -f.max,
            f.tiny,
            f.smallest_subnormal,
            np.inf,
            -np.inf,
            np.nan,
        ],
        dtype=_parts(dtype),
    )
    re, im = np.meshgrid(vals, vals)
    z = np.empty(re.size, dtype)
    z.real, z.imag = re.ravel(), im.ravel()
    return z


def _bits(x):
    """Parts as comparable integers: NaNs of any sign and payload as one value, -0.0 apart
    from 0.0."""
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return x
    parts = np.stack([x.real, x.imag]) if x.dtype.kind == "c" else x[None]
    ity = {4: np.int32, 8: np.int64, 2: np.int16}[parts.dtype.itemsize]
    return np.where(np.isnan(parts), ity(-1), parts.view(ity))


def _same(got, want, what=""):
    """Same type, dtype and bits (NaN where NumPy has NaN, signed zeros as NumPy's)."""
    assert type(got) is type(want), (what, type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, (what, got, want)
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{what}: {got} vs {want}")


def _close(got, want, ulps, what=""):
    """Each part within `ulps` ulp of NumPy's relative to the modulus; special values (inf
    and nan parts, and parts NumPy gives as a signed zero) exactly NumPy's."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    eps = np.finfo(got.dtype).eps
    finite = np.isfinite(want) & np.isfinite(got)
    scale = np.maximum(np.abs(want), np.finfo(got.dtype).tiny)
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / scale
    assert np.all(np.where(finite, err, 0) <= ulps * eps), (what, np.max(err[finite]) / eps)
    for g, w in ((np.real(got), np.real(want)), (np.imag(got), np.imag(want))):
        special = ~np.isfinite(w) | ~np.isfinite(g) | (w == 0)
        np.testing.assert_array_equal(_bits(g[special]), _bits(w[special]), err_msg=what)


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _run(fn, *args, backend="cpu"):
    """fn compiled on `backend` and called twice (the fast path second), and NumPy's."""
    want = _quiet(fn, *args)
    f = jitc.jit(fn, backend=backend)
    _quiet(f, *args)
    return _quiet(f, *args), want


# ----------------------------------------------------------------------------- dtypes


def test_ir_names_and_specs():
    lo = jitc.jit(lambda z: z * 2).lower(jitc.spec("c64[3]"))
    assert "c64[3]" in lo.as_text()
    assert jitc.spec("c128[2,2]") == jitc.ShapeDtype((2, 2), np.complex128)


OTHERS = [
    "bool",
    "int8",
    "uint8",
    "int32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


@pytest.mark.parametrize("c", COMPLEX, ids=str)
def test_promotion_with_every_dtype_and_python_scalar_is_numpys(c):
    """x + z for every array dtype, NumPy scalars, and Python complex/float/int (weak)."""
    z = _random(c, (3,))
    operands = [np.arange(3).astype(d) for d in OTHERS]
    operands += [
        np.float32(2.5),
        np.float64(2.5),
        np.complex64(1 + 2j),
        np.complex128(1 - 2j),
        2,
        2.5,
        1 + 2j,
        True,
        1e300 + 1e300j,
    ]

    def f(z, *xs):
        return tuple(z + x for x in xs) + tuple(x * z for x in xs)

    got, want = _run(f, z, *operands, backend="reference")
    for g, w, x in zip(got, want, operands * 2):
        _same(g, w, f"{c} with {type(x).__name__} {getattr(x, 'dtype', '')}")


def test_real_arrays_meet_complex_scalars_as_numpy():
    """float32 array with Python complex: complex64; with np.complex128: complex128; an int
    array with a Python complex: complex128; a Python complex argument is weak too."""
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    i = np.arange(5, dtype=np.int16)

    def f(x, i, w):
        return x * 1j, x + np.complex128(2j), i - 1j, x * w, i * w, (x + 1j) / 3

    for backend in BACKENDS:
        got, want = _run(f, x, i, 2 - 3j, backend=backend)
        for g, w in zip(got, want):
            _same(g, w, backend)


# ----------------------------------------------------------------------------- arithmetic


def _arith(a, b):
    return (
        a + b,
        a - b,
        a * b,
        a / b,
        -a,
        np.square(a),
        np.conj(a),
        b.conj(),
        a == b,
        a != b,
        a.real,
        a.imag,
        np.real(b),
        np.imag(b),
        np.isnan(a),
        np.isinf(a),
        np.isfinite(a),
    )


@pytest.mark.parametrize("c", COMPLEX, ids=str)
@pytest.mark.parametrize("backend", BACKENDS)
def test_arithmetic_over_every_pair_of_special_values_is_numpys_bit_for_bit(c, backend):
    """Division by zero (inf/nan as NumPy), inf * 0 parts, signed zeros, huge parts."""
    e = _edges(c)
    a, b = np.repeat(e, e.size), np.tile(e, e.size)
    got, want = _run(_arith, a, b, backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"output {k}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_identities_that_are_not_identities_for_complex(backend):
    """z * 1 is not z (inf*1j * (1+0j) is nan+infj), z + 0 not z (-0.0 parts), a sum or
    product over a unit axis not a reshape: the algebra pass leaves them to NumPy's loops."""
    z = _edges(C64).reshape(-1, 1)

    def f(z):
        return (
            z * 1,
            1.0 * z,
            z + 0,
            z - 0j,
            z / 1,
            z.sum(axis=1),
            z.prod(axis=1),
            np.mean(z, axis=1),
        )

    got, want = _run(f, z, backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"output {k}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_and_transposed_complex_arguments(backend):
    """Views of complex arrays (a transpose, a step, a real view's parts) as arguments."""
    z = _random(C128, (6, 8), 4)

    def f(a, b):
        return a * b + 1j, np.abs(a - b), (a / b).sum(axis=0), np.exp(a).imag

    got, want = _run(f, z.T[::2], z[:, ::2].T, backend=backend)
    for g, w in zip(got[:2] + got[3:], want[:2] + want[3:]):
        _close(g, w, 2)
    _close(got[2], want[2], 8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_d_and_empty_arrays_and_numpy_scalars(backend):
    z0 = np.array(1.5 - 2j, C64)
    s = np.complex128(3 + 4j)
    empty = np.zeros((0, 3), C128)

    def f(z0, s, empty):
        return z0 * 2, s / z0, np.abs(s), empty + 1j, np.abs(empty), s.real, z0.imag

    got, want = _run(f, z0, s, empty, backend=backend)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_parts_of_real_arrays_are_numpys(backend):
    """np.real of a real array is its values, np.imag its zeros; np.angle of reals, bools."""
    x = np.array([-1.5, -0.0, 0.0, 2.0, np.nan], np.float32)
    i = np.array([-2, 0, 3], np.int32)

    def f(x, i):
        return (
            np.real(x),
            np.imag(x),
            x.real,
            x.imag,
            np.angle(x),
            np.angle(i),
            np.angle(x, deg=True),
            np.real(i),
            np.imag(i),
        )

    got, want = _run(f, x, i, backend=backend)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("c", COMPLEX, ids=str)
def test_abs_and_angle_within_two_ulp_without_overflow(c):
    """|z| for huge and subnormal parts (no overflow/underflow of the squares), inf with
    nan (inf as hypot), angle over every special pair (NumPy's arctan2)."""
    f = np.finfo(_parts(c))
    big = np.array([f.max, f.max / 3, f.tiny, f.smallest_subnormal * 7], _parts(c))
    z = np.concatenate(
        [_edges(c), _random(c, (2000,), 1), (big[:, None] + 1j * big[None, :]).ravel().astype(c)]
    )

    def g(z):
        return np.abs(z), np.angle(z), np.angle(z, deg=True)

    for backend in BACKENDS:
        got, want = _run(g, z, backend=backend)
        _close(got[0], want[0], 2, f"abs {backend}")
        _close(got[1], want[1], 2, f"angle {backend}")  # the cpu's arctan2 is libm's
        _close(got[2], want[2], 2, f"angle deg {backend}")


@pytest.mark.parametrize("c", COMPLEX, ids=str)
def test_exp_log_sqrt_within_two_ulp_and_special_values_exact(c):
    f = np.finfo(_parts(c))
    rng = np.random.default_rng(2)
    n = 3000
    mags = 10.0 ** rng.uniform(np.log10(f.tiny) / 2, np.log10(f.max) / 2, n)
    phase = rng.uniform(-np.pi, np.pi, n)
    wide = (mags * np.exp(1j * phase)).astype(c)
    near_one = np.exp(1j * phase).astype(c) * (1 + rng.normal(0, 1e-3, n)).astype(c)
    small = _random(c, (n,), 3, scale=20.0)  # exp's range

    def g(w, u, s, e):
        return (
            np.log(w),
            np.sqrt(w),
            np.log(u),
            np.sqrt(u),
            np.exp(s),
            np.exp(e),
            np.log(e),
            np.sqrt(e),
        )

    got, want = _run(g, wide, near_one, small, _edges(c))
    for k, (a, b) in enumerate(zip(got, want)):
        _close(a, b, 2, f"output {k}")


def test_log_near_the_unit_circle_keeps_its_digits():
    """log|z| for |z| ~ 1 from parts that cancel (x^2 + y^2 - 1 in double-double)."""
    t = np.linspace(0.1, 1.4, 200)
    z = np.cos(t) + 1j * np.sin(t) + 1e-12
    got, want = _run(np.log, z)
    assert np.all(np.abs(got.real - want.real) <= 4 * np.spacing(np.abs(want.real)))
    _close(got, want, 2)


def test_casts_between_complex_and_real_as_numpy():
    """astype to real keeps the real part with NumPy's ComplexWarning (raised while
    tracing); to bool: z != 0; real and bool to complex; complex64 <-> complex128."""
    z = _edges(C128)
    x = np.array([1.5, -0.0, np.inf, np.nan], np.float32)

    def to_real(z):
        return z.astype(np.float32), z.astype(np.float64), np.real(z).astype(np.int64)

    def others(z, x):
        return (
            z.astype(bool),
            z.astype(np.complex64),
            x.astype(np.complex128),
            (x > 0).astype(np.complex64),
            x.astype(np.float16).astype(np.complex64),
        )

    for backend in BACKENDS:
        background.wait()  # a numba compile in the background enters catch_warnings(record=True),
        #  which swaps the process-wide warning hooks: pytest.warns could miss this warning
        with pytest.warns(np.exceptions.ComplexWarning, match="discards the imaginary"):
            got = jitc.jit(to_real, backend=backend)(z)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = to_real(z)
        for g, w in zip(got, want):
            _same(g, w, backend)
        got, want = _run(others, z, x, backend=backend)
        for g, w in zip(got, want):
            _same(g, w, backend)


# ----------------------------------------------------------------------------- programs


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_and_indexing_move_complex_values_exactly(backend):
    z = _random(C64, (4, 5))
    w = _random(C128, (5,), 1)

    def f(z, w):
        y = np.where(z.real > 0, z, w)
        y2 = np.where(np.abs(z) > 2, 1j, z)
        return y, y2, z[::-1, 1:3].T, np.concatenate([z, z * 1j]), z[[0, 2]], z.reshape(-1)

    got, want = _run(f, z, w, backend=backend)
    for g, v in zip(got, want):
        _same(g, v)


def test_in_place_update_of_a_callers_complex_array():
    z = _random(C128, (6,))
    mask = np.array([True, False, True, False, False, True])

    def f(z, mask):
        z[mask] = z[mask] * 1j
        z += 1
        return z.sum()

    want_z = z.copy()
    want = f(want_z, mask)
    got_z = z.copy()
    got = jitc.jit(f)(got_z, mask)
    _same(got_z, want_z)
    _close(got, want, 2)


@pytest.mark.parametrize("c", COMPLEX, ids=str)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sum_prod_mean_follow_numpy(c, backend):
    z = _random(c, (7, 33), 5)
    zero_d = np.array(2 - 1j, c)
    empty = np.zeros((0, 4), c)

    def f(z, zero_d, empty):
        return (
            z.sum(),
            np.sum(z, axis=0),
            z.sum(axis=1, keepdims=True),
            np.mean(z),
            z.mean(axis=0),
            np.prod(z[:, :5], axis=1),
            zero_d.sum(),
            empty.sum(axis=0),
            empty.prod(axis=0),
            np.mean(z * 1j + 1, axis=1),
        )

    got, want = _run(f, z, zero_d, empty, backend=backend)
    for k, (g, w) in enumerate(zip(got, want)):
        assert type(g) is type(w), (k, type(g), type(w))
        bound = 8 * np.finfo(c).eps * np.abs(z).sum()
        assert np.asarray(g).dtype == np.asarray(w).dtype
        if k == 5:  # products: relative
            _close(g, w, 16, "prod")
        else:
            assert np.all(np.abs(np.asarray(g) - np.asarray(w)) <= bound), k


@pytest.mark.parametrize("c", COMPLEX, ids=str)
def test_matmul_and_dot_through_complex_blas_and_loops(c):
    """Large products through cgemm/zgemm (and gemv for one row), small ones in loops."""
    a, b = _random(c, (96, 80), 1), _random(c, (80, 72), 2)
    v = _random(c, (80,), 3)

    def f(a, b, v):
        return a @ b, np.dot(a[:1], b), a.T[:5] @ a[:, :4], a @ v, np.matmul(a[:3], b[:, :2])

    for backend in BACKENDS:
        got, want = _run(f, a, b, v, backend=backend)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            bound = 8 * a.shape[1] * np.finfo(c).eps * 9 * 4
            assert np.abs(g - w).max() <= bound * np.abs(w).max() / 10


def test_a_complex_elementwise_chain_is_one_kernel():
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    z = _random(C64, (1000,))

    def chain(x, z):
        return np.abs(np.exp(1j * x) * z + z)

    c = jitc.jit(chain).lower(x, z).compile()
    assert c.stats()["kernels"] == 1
    got, want = c(x, z), chain(x, z)
    assert got.dtype == want.dtype == np.float32
    _close(got, want, 4)


# ------------------------------------------------------ C99's complex functions (libm)

TRANSCENDENTALS = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "expm1", "log1p", "exp2", "log2", "log10", "sign", "reciprocal",
)  # fmt: skip


def _transcendentals(z, w):
    return tuple(getattr(np, n)(z) for n in TRANSCENDENTALS) + (
        np.power(z, w),
        z**3,
        np.power(z, -2.0 + 0j),
        np.float_power(z, w),
        z**2,  # NumPy's fast paths: np.square, np.reciprocal, np.sqrt; z ** 2.0 is power's
        z**-1,
        z**0.5,
        z**2.0,
        z ** np.array(-1),
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_trig_hyperbolic_power_and_the_log_family_are_numpys_bit_for_bit(backend, dtype):
    """NumPy calls the C library's csin ... catanh and cpow (csinf ... on complex64) and
    builds expm1, log1p, exp2, log2, log10 from libm; jitc's kernels call the same functions
    in the same order, so every part is NumPy's to the bit: every pair of special parts,
    random values, and powers with zero, integer (npy_cpow's products) and complex
    exponents."""
    z = np.concatenate([_edges(dtype), _random(dtype, (300,), 5)])
    exponents = np.array([2, 3, -1, 0.5, 0, 1j, -3, 7, 99, -99, 100, 1 + 1j], dtype)
    w = np.concatenate([np.resize(exponents, z.size - 300), _random(dtype, (300,), 6, 1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got, want = jitc.jit(_transcendentals, backend=backend)(z, w), _transcendentals(z, w)
    names = TRANSCENDENTALS + ("power", "z**3", "power(z, -2)", "float_power", "z**2", "z**-1")
    names += ("z**0.5", "z**2.0", "z**array(-1)")
    for name, g, wanted in zip(names, got, want, strict=True):
        if name == "z**0.5":  # jitc's own sqrt (it compiles ahead of time): 2 ulp, above
            _close(g, wanted, 2, name)
        else:
            _same(g, wanted, name)


# ----------------------------------------------------------------------------- refusals


def _max(z):
    return np.max(z)  # noqa: E704


def _max_method(z):
    return z.max()  # noqa: E704


def _less(z):
    return z < 1  # noqa: E704


def _sort(z):
    return np.sort(z)  # noqa: E704


def _var(z):
    return np.var(z)  # noqa: E704


def _std_method(z):
    return z.std()  # noqa: E704


def _cumsum(z):
    return np.cumsum(z)  # noqa: E704


def _inv(z):
    return np.linalg.inv(z.reshape(2, 2))  # noqa: E704


def _einsum(z):
    return np.einsum("i,i->", z, z)  # noqa: E704


def _argmax(z):
    return np.argmax(z)  # noqa: E704


def _clip(z):
    return np.clip(z, 0, 1)  # noqa: E704


def _maximum(z):
    return np.maximum(z, z)  # noqa: E704


def _erf(z):
    return scipy.special.erf(z)  # noqa: E704


@pytest.mark.parametrize(
    "fn,name",
    [
        (_max, "np.max"),
        (_max_method, "ndarray.max"),
        (_less, "np.less"),
        (_sort, "np.sort"),
        (_var, "np.var"),
        (_std_method, "ndarray.std"),
        (_cumsum, "np.cumsum"),
        (_inv, "np.linalg.inv"),
        (_einsum, "np.einsum"),
        (_argmax, "np.argmax"),
        (_clip, "np.clip"),
        (_maximum, "np.maximum"),
        (_erf, "scipy.special.erf"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_what_jitc_does_not_compute_on_complex_is_refused_by_name(fn, name):
    z = _random(C64, (4,))
    with pytest.raises(
        UnsupportedError,
        match=rf"{name} on complex64 is not supported .*"
        rf"test_dtypes_complex.py:\d+",
    ):
        jitc.jit(fn, backend="reference")(z)


def test_a_primitive_reached_with_complex_operands_is_refused_at_the_users_line():
    """The trace-time gate below the NumPy layer (lax.emit) names the primitive; a convert
    from complex to real is only ever of a real part."""
    from jitc.trace import lax

    def f(z):
        return lax.emit(z.ctx, "floor", [z])

    with pytest.raises(UnsupportedError, match=r"floor on complex128 .*test_dtypes_complex"):
        jitc.jit(f).lower(_random(C128, (3,)))

    def g(z):
        return lax.convert(z, np.float64)

    with pytest.raises(
        UnsupportedError,
        match=r"convert to float64 on complex128 .*"
        r"test_dtypes_complex",
    ):
        jitc.jit(g).lower(_random(C128, (3,)))


def test_the_cpu_lowering_refuses_a_complex_op_it_has_no_loop_for():
    from jitc.backends.cpu.lowering import lower_complex

    with pytest.raises(UnsupportedError, match="no lowering for floor on complex64"):
        lower_complex("floor", C64, C64, ["z"])
    with pytest.raises(UnsupportedError, match="convert complex64 -> float32"):
        lower_complex("convert", C64, np.dtype(np.float32), ["z"])


def test_the_cuda_backend_refuses_complex_by_argument_and_op():
    from jitc.backends import cuda

    lo = jitc.jit(lambda z: z * 2).lower(jitc.spec("c64[4]"))
    with pytest.raises(UnsupportedError, match="argument 'z' has dtype complex64"):
        cuda.refuse_dtypes(lo.graph, lo.arg_names)
    lo = jitc.jit(lambda x: np.abs(x * 1j)).lower(jitc.spec("f32[4]"))
    with pytest.raises(UnsupportedError, match=r"computes in complex64 at .*test_dtypes_complex"):
        cuda.refuse_dtypes(lo.graph, lo.arg_names)
    if "cuda" in jitc.backends.available():
        with pytest.raises(UnsupportedError, match="argument 'z' has dtype complex128"):
            jitc.jit(lambda z: z + 1, backend="cuda")(np.ones(3, C128))


# ----------------------------------------------------------------------------- AOT


def _aot_fn(z, x):
    w = z * x + 1j
    return np.abs(w), np.exp(w) / (z + 2), np.sqrt(z).sum(), (z * z).prod(axis=0), np.log(w)


def test_aot_object_with_complex_buffers_builds_links_and_runs(tmp_path):
    """float _Complex in the header; the object imports nothing (the complex product's fma
    in software on the x86-64 baseline); the emitted C test and the Python loader against
    NumPy."""
    import jitc.aot as aot
    from tests.test_aot import _load, run_c_test

    art = aot.compile(_aot_fn, "c64[4,8]", "f32[8]", name="complex_fn")
    paths = art.write(str(tmp_path), emit_test=True)
    proto = next(line for line in art.header().splitlines() if line.startswith("int "))
    assert proto.startswith(
        "int complex_fn(const float _Complex* arg0, const float* arg1, "
        "float* res0, float _Complex* res1, float _Complex* res2, "
        "float _Complex* res3, float _Complex* res4"
    ), proto
    out = run_c_test(paths, tmp_path)
    assert out is None or out.startswith("PASS"), out
    z, x = _random(C64, (4, 8), 7), np.linspace(-1, 1, 8, dtype=np.float32)
    for g, want in zip(_load(str(tmp_path), "complex_fn")(z, x), _aot_fn(z, x)):
        assert g.dtype == want.dtype and g.shape == want.shape
        _close(g, want, 8)


def test_aot_refuses_what_numpy_computes_with_the_c_librarys_complex_functions():
    import jitc.aot as aot

    def f(z):
        return np.exp(z) + np.sin(z)

    with pytest.raises(
        UnsupportedError,
        match=r"np.sin on complex64 is not supported in AOT .*C library.*test_dtypes_complex",
    ):
        aot.compile(f, "c64[4]", name="complex_sin")


def test_complex_logs_atan2_is_cs_within_an_ulp():
    """jitc's own atan2 (no libm call, so complex log compiles ahead of time) against
    NumPy's over every pair of special values and parts over 600 decades: zeros (signed)
    and nan bit for bit, the rest within 1 ulp."""
    from numba import njit

    from jitc.backends.cpu.complexmath import atan2_f64

    @njit
    def many(y, x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = atan2_f64(y[i], x[i])
        return out

    e = _edges(C128)
    rng = np.random.default_rng(1)
    n = 20000
    y = np.concatenate([e.imag, rng.normal(size=n) * 10 ** rng.uniform(-300, 300, n)])
    x = np.concatenate([e.real, rng.normal(size=n) * 10 ** rng.uniform(-300, 300, n)])
    got, want = many(y, x), np.arctan2(y, x)
    special = (want == 0) | np.isnan(want)
    _same(got[special], want[special])
    assert np.all(np.abs(got - want)[~special] <= np.spacing(np.abs(want[~special])))


def test_portable_fma_is_the_fused_result():
    """AOT's software fma against the FMA instruction: every pair of special values, and
    products whose low bits decide the sum. One known difference: a float64 product in the
    subnormal range is not exact in Dekker's split, so a subnormal result may differ in its
    last bit (checked to be within it)."""
    from numba import njit

    from jitc.backends.cpu.complexmath import fma, portable_fma

    @njit
    def both(a, b, c):
        out = np.empty((2, a.size), a.dtype)
        for i in range(a.size):
            out[0, i] = fma(a[i], b[i], c[i])
            out[1, i] = portable_fma(a[i], b[i], c[i])
        return out

    for dt in (np.float32, np.float64):
        e = _edges(np.complex64 if dt == np.float32 else np.complex128).real[:12]
        rng = np.random.default_rng(0)
        a = np.concatenate([np.repeat(e, 144), rng.normal(size=1000)]).astype(dt)
        b = np.concatenate([np.tile(np.repeat(e, 12), 12), rng.normal(size=1000)]).astype(dt)
        c = np.concatenate([np.tile(e, 144), -(a[1728:] * b[1728:])]).astype(dt)
        with np.errstate(all="ignore"):
            fused, soft = both(a, b, c)
        tiny = np.abs(fused) < np.finfo(dt).tiny
        np.testing.assert_array_equal(_bits(soft[~tiny]), _bits(fused[~tiny]))
        assert np.all(np.abs(soft[tiny] - fused[tiny]) <= np.finfo(dt).smallest_subnormal)


def test_a_long_complex64_sum_is_as_accurate_as_numpys_pairwise_one():
    """2^18 terms: jitc adds them in complex128 (NumPy pairwise in complex64); both within
    a few float32 eps of the exact sum, where one complex64 accumulator erred ~100x more."""
    z = _random(C64, (1 << 18,), 9) + np.complex64(3 + 1j)
    exact = z.astype(C128).sum()
    for backend in BACKENDS:
        got = jitc.jit(np.sum, backend=backend)(z)
        assert type(got) is np.complex64
        assert abs(complex(got) - exact) <= 4 * np.finfo(np.float32).eps * abs(exact)
        assert abs(complex(z.sum()) - exact) <= 4 * np.finfo(np.float32).eps * abs(exact)


def test_creation_functions_make_complex_arrays():
    z = _random(C64, (3,))

    def f(z):
        return (
            np.zeros(3, np.complex64) + z,
            np.full((2, 3), 1 - 2j),
            np.ones_like(z),
            np.zeros_like(z, dtype=np.complex128),
            np.full_like(z, 2j),
        )

    for backend in BACKENDS:
        got, want = _run(f, z, backend=backend)
        for g, w in zip(got, want):
            _same(g, w, backend)


def test_part_primitives_need_complex_operands():
    from jitc.core.errors import ShapeError
    from jitc.core.primitives import PRIMITIVES

    with pytest.raises(ShapeError, match="imag: operand must be complex, got float32"):
        PRIMITIVES["imag"].infer([((3,), np.dtype(np.float32))], {})
    assert PRIMITIVES["absolute"].infer([((3,), C128)], {}) == ((3,), np.dtype(np.float64))


def test_vecdot_conjugates_its_first_operand_and_unstack_keeps_complex_values():
    a, b = _random(C128, (3, 5), 1), _random(C64, (5,), 2)

    def f(a, b):
        return np.vecdot(a, b), np.linalg.vecdot(b, a, axis=-1), np.unstack(a, axis=1)[2]

    got, want = jitc.jit(f)(a, b), f(a, b)
    for g, w in zip(got, want):
        _close(g, w, 8)
