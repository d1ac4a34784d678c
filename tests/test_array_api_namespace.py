"""The Array API standard's namespace (the version NumPy reports, np.__array_api_version__)
inside @jitc.jit, against NumPy: every name of the standard is called on representative
inputs, or refused with the reason (a data-dependent result shape, a factorization jitc
does not compute); the functions added for it (vecdot,
matrix_transpose, unstack, broadcast_arrays, meshgrid, nextafter, np.cross, np.linalg's,
fftshift) over NumPy's dtypes, empty and 0-d inputs, on the reference and cpu backends;
nextafter ahead of time too."""

import warnings

import numpy as np
import pytest

import jitc
from jitc import aot
from jitc.backends.native import background
from jitc.core.errors import UnsupportedError
from tests.conftest import backend_dtypes

# The standard's names, 2024.12 (NumPy 2.4's np.__array_api_version__), from the API
# specification's function pages: https://data-apis.org/array-api/2024.12/API_specification/
# (constants, creation, data type functions, elementwise, indexing, inspection, linear
# algebra, manipulation, searching, set, sorting, statistical, utility) and its extensions'
# pages (linalg, fft). Data type objects (bool, int8, ..., complex128) are not listed.
ARRAY_API_VERSION = "2024.12"
MAIN = """
e inf nan newaxis pi
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones
ones_like tril triu zeros zeros_like
astype can_cast finfo iinfo isdtype result_type
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh
divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf
isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or
logical_xor maximum minimum multiply negative nextafter not_equal positive pow real
reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc
take take_along_axis
__array_namespace_info__
matmul matrix_transpose tensordot vecdot
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape
roll squeeze stack tile unstack
argmax argmin count_nonzero nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_prod cumulative_sum diff max mean min prod std sum var
all any
""".split()
LINALG = """
cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank
matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm
""".split()
FFT = """
fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift ifftshift
""".split()

X = np.arange(1.0, 7.0).reshape(2, 3)
SQ = np.arange(9.0).reshape(3, 3) / 7 + np.eye(3) * 3


def _xp(x):
    return x.__array_namespace__()


def _of(module, name, arguments):
    """A call of module.name on the arguments made from the traced X."""
    return lambda x: getattr(module, name)(*arguments(x))


# One representative call per name; each takes X (traced) and returns arrays or scalars.
CALLS = {
    **{
        n: _of(np, n, lambda x: (x / 10,))
        for n in """abs acos acosh asin
        asinh atan atanh ceil conj cos cosh exp expm1 floor isfinite isinf isnan log log1p
        log2 log10 negative positive reciprocal round sign signbit sin sinh square sqrt tan
        tanh trunc""".split()
    },
    **{
        n: _of(np, n, lambda x: (x, x[::-1] - 3))
        for n in """add atan2
        copysign divide equal floor_divide greater greater_equal hypot less less_equal
        logaddexp maximum minimum multiply nextafter not_equal pow remainder
        subtract""".split()
    },
    **{
        n: _of(np, n, lambda x: (x > 2, x < 5))
        for n in "logical_and logical_or logical_xor".split()
    },
    **{
        n: _of(np, n, lambda x: (x.astype(np.int64), 2))
        for n in """
        bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor""".split()
    },
    "logical_not": lambda x: np.logical_not(x > 2),
    "bitwise_invert": lambda x: np.bitwise_invert(x.astype(np.int8)),
    "clip": lambda x: np.clip(x, min=2, max=4),
    "e": lambda x: x * np.e,
    "pi": lambda x: x + np.pi,
    "inf": lambda x: np.minimum(x, np.inf),
    "nan": lambda x: np.maximum(x, np.nan),
    "newaxis": lambda x: x[np.newaxis],
    "arange": lambda x: np.arange(5) + x[0, 0],
    "asarray": lambda x: (
        _xp(x).asarray(x, dtype=np.float32, copy=True) + _xp(x).asarray([1.0, 2, 3])
    ),
    "empty": lambda x: np.empty((2, 3)).shape,
    "empty_like": lambda x: np.empty_like(x).shape,
    "eye": lambda x: np.eye(3, k=1) + x[0, 0],
    "full": lambda x: np.full((2,), 3.0) + x[0, 0],
    "full_like": lambda x: np.full_like(x, 2),
    "linspace": lambda x: np.linspace(0, 1, 5) * x[0, 0],
    "meshgrid": lambda x: np.meshgrid(x[0], x[1, :2]),
    "ones": lambda x: np.ones(3) + x[0, 0],
    "ones_like": lambda x: np.ones_like(x),
    "tril": lambda x: np.tril(x),
    "triu": lambda x: np.triu(x, 1),
    "zeros": lambda x: np.zeros(3) + x[0, 0],
    "zeros_like": lambda x: np.zeros_like(x),
    "astype": lambda x: np.astype(x, np.float32, copy=False),
    "can_cast": lambda x: x + np.can_cast(np.int32, np.float64),
    "finfo": lambda x: x + np.finfo(x.dtype).eps,
    "iinfo": lambda x: x + np.iinfo(np.int8).max,
    "isdtype": lambda x: x + np.isdtype(x.dtype, "real floating"),
    "result_type": lambda x: x.astype(np.result_type(x, np.float32, "int8")),
    "take": lambda x: np.take(x, np.array([0, 2]), axis=1),
    "take_along_axis": lambda x: np.take_along_axis(x, np.argsort(-x, axis=1), axis=1),
    "__array_namespace_info__": lambda x: x + len(_xp(x).__array_namespace_info__().dtypes()),
    "matmul": lambda x: np.matmul(x, x.T),
    "matrix_transpose": lambda x: np.matrix_transpose(x),
    "tensordot": lambda x: np.tensordot(x, x, axes=2),
    "vecdot": lambda x: np.vecdot(x, x + 1),
    "broadcast_arrays": lambda x: np.broadcast_arrays(x, x[0]),
    "broadcast_to": lambda x: np.broadcast_to(x[0], (4, 3)),
    "concat": lambda x: np.concat([x, x], axis=None),
    "expand_dims": lambda x: np.expand_dims(x, axis=0),
    "flip": lambda x: np.flip(x, axis=1),
    "moveaxis": lambda x: np.moveaxis(x, 0, 1),
    "permute_dims": lambda x: np.permute_dims(x, (1, 0)),
    "repeat": lambda x: np.repeat(x, 2, axis=0),
    "reshape": lambda x: np.reshape(x, (3, 2), copy=None),
    "roll": lambda x: np.roll(x, 1, axis=1),
    "squeeze": lambda x: np.squeeze(x[None], axis=0),
    "stack": lambda x: np.stack([x, x], axis=1),
    "tile": lambda x: np.tile(x, (2, 1)),
    "unstack": lambda x: np.unstack(x, axis=1),
    "argmax": lambda x: np.argmax(x, axis=1, keepdims=True),
    "argmin": lambda x: np.argmin(x, axis=0),
    "count_nonzero": lambda x: np.count_nonzero(x > 2, axis=1, keepdims=True),
    "searchsorted": lambda x: np.searchsorted(x[0], x[1], side="right"),
    "where": lambda x: np.where(x > 2, x, 0),
    "argsort": lambda x: np.argsort(-x, axis=1, stable=True),
    "sort": lambda x: np.sort(-x, stable=True),
    "cumulative_prod": lambda x: np.cumulative_prod(x, axis=1, include_initial=True),
    "cumulative_sum": lambda x: np.cumulative_sum(x, axis=1, include_initial=True),
    "diff": lambda x: np.diff(x, axis=1, prepend=x[:, :1]),
    "max": lambda x: np.max(x, axis=1),
    "mean": lambda x: np.mean(x, axis=0),
    "min": lambda x: np.min(x),
    "prod": lambda x: np.prod(x, axis=1, dtype=np.float64),
    "std": lambda x: np.std(x, correction=1, axis=0),
    "sum": lambda x: np.sum(x, axis=(0, 1), keepdims=True),
    "var": lambda x: np.var(x, correction=1, axis=1, keepdims=True),
    "all": lambda x: np.all(x > 1, axis=1),
    "any": lambda x: np.any(x > 5),
    # linalg extension
    "linalg.cholesky": lambda x: np.linalg.cholesky(SQ @ SQ.T + x[0, 0]),
    "linalg.det": lambda x: np.linalg.det(SQ + x[0, 0]),
    "linalg.inv": lambda x: np.linalg.inv(SQ + x[0, 0]),
    "linalg.slogdet": lambda x: np.linalg.slogdet(SQ + x[0, 0]),
    "linalg.solve": lambda x: np.linalg.solve(SQ + x[0, 0], x[0]),
    "linalg.cross": lambda x: np.linalg.cross(x, x[::-1] + 1),
    "linalg.diagonal": lambda x: np.linalg.diagonal(SQ + x[0, 0], offset=1),
    "linalg.matmul": lambda x: np.linalg.matmul(x, x.T),
    "linalg.matrix_norm": lambda x: np.linalg.matrix_norm(x, ord=np.inf, keepdims=True),
    "linalg.matrix_power": lambda x: np.linalg.matrix_power(SQ + x[0, 0], 3),
    "linalg.matrix_transpose": lambda x: np.linalg.matrix_transpose(x),
    "linalg.outer": lambda x: np.linalg.outer(x[0], x[1]),
    "linalg.tensordot": lambda x: np.linalg.tensordot(x, x.T, axes=1),
    "linalg.trace": lambda x: np.linalg.trace(SQ + x[0, 0], offset=-1),
    "linalg.vecdot": lambda x: np.linalg.vecdot(x, x, axis=0),
    "linalg.vector_norm": lambda x: np.linalg.vector_norm(x, ord=3, axis=1, keepdims=True),
    # fft extension: the shifts are rolls; fftfreq/rfftfreq take sizes, computed when tracing
    "fft.fftshift": lambda x: (np.fft.fftshift(x), np.fft.fftshift(x, axes=1)),
    "fft.ifftshift": lambda x: (np.fft.ifftshift(x), np.fft.ifftshift(x, axes=(0, -1))),
    "fft.fftfreq": lambda x: np.fft.fftfreq(5, d=0.5) * x[0, 0],
    "fft.rfftfreq": lambda x: np.fft.rfftfreq(6) * x[0, 0],
    # the transforms (numpy_api/fft.py; tests/test_fft.py tests them further)
    "fft.fft": lambda x: (np.fft.fft(x), np.fft.fft(x, n=4, axis=0)),
    "fft.ifft": lambda x: np.fft.ifft(x, norm="ortho"),
    "fft.fftn": lambda x: np.fft.fftn(x, s=(3, 2), axes=(0, 1)),
    "fft.ifftn": lambda x: np.fft.ifftn(x),
    "fft.rfft": lambda x: np.fft.rfft(x, n=5),
    "fft.irfft": lambda x: np.fft.irfft(x),
    "fft.rfftn": lambda x: np.fft.rfftn(x),
    "fft.irfftn": lambda x: np.fft.irfftn(x, axes=(0, 1), norm="forward"),
    "fft.hfft": lambda x: np.fft.hfft(x, n=4),
    "fft.ihfft": lambda x: np.fft.ihfft(x),
}
# Results of run-time size (numpy_api/data_sized.py; tests/test_data_sized.py tests them
# further): the caller gets NumPy's exact sizes
CALLS.update(
    {
        "nonzero": lambda x: np.nonzero(x > 2),
        **{
            n: _of(np, n, lambda x: (np.round(x),))
            for n in "unique_all unique_counts unique_inverse unique_values".split()
        },
    }
)
# the factorizations jitc computes (tests/test_linalg_factorizations.py tests them fully)
CALLS.update(
    {
        f"linalg.{n}": _of(np.linalg, n, lambda x: (SQ + SQ.T + x[0, 0],))
        for n in "eigh eigvalsh matrix_rank pinv qr svd svdvals".split()
    }
)
FACTORIZATIONS: dict = {}
# Names refused with a reason: a factorization jitc does not compute; from_dlpack (a
# traced array has no memory to share yet).
REFUSED = {
    **FACTORIZATIONS,
    "from_dlpack": lambda x: np.from_dlpack(x),
}
# complex numbers are another issue's (real and imag of a real array need complex dtypes)
COMPLEX = {"real", "imag"}
NEW = """fft.fftshift fft.ifftshift vecdot matrix_transpose unstack broadcast_arrays meshgrid
nextafter linalg.cross
linalg.diagonal linalg.matmul linalg.matrix_norm linalg.matrix_power linalg.matrix_transpose
linalg.outer linalg.tensordot linalg.trace linalg.vecdot linalg.vector_norm result_type std
var""".split()


def test_the_standard_is_numpys_and_every_name_is_classified():
    assert np.__array_api_version__ == ARRAY_API_VERSION
    names = set(MAIN) | {f"linalg.{n}" for n in LINALG} | {f"fft.{n}" for n in FFT}
    classified = set(CALLS) | set(REFUSED) | COMPLEX
    assert names == classified, (names - classified, classified - names)
    for n in MAIN:
        assert hasattr(np, n), n


def _same(got, want, summed=False):
    """Same types, dtypes, shapes and values: floats within 4 ulp, or where `summed` (dot
    products, whose order of additions BLAS picks) within 16 ulp of the largest value."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, tuple) == isinstance(want, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, summed)
        return
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray) or isinstance(want, np.generic):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
        if want.dtype.kind == "f" and want.size:
            eps = np.finfo(want.dtype).eps
            scale = 16 * eps * max(1.0, float(np.nanmax(np.abs(want)))) if summed else 0
            np.testing.assert_allclose(got, want, rtol=4 * eps, atol=scale)
        else:
            np.testing.assert_array_equal(got, want)
    else:
        assert got == want


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_name_of_the_standard_traces_like_numpy(name):
    fn = CALLS[name]
    with np.errstate(all="ignore"):
        want = fn(X)
        _same(jitc.jit(fn, backend="reference")(X), want)
        if name in NEW:  # the cpu kernels of the functions added for the standard
            _same(jitc.jit(fn, backend="cpu")(X), want)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_rest_is_refused_with_the_reason(name):
    with pytest.raises(UnsupportedError) as e:
        jitc.jit(REFUSED[name], backend="reference")(X)
    message = str(e.value)
    assert "test_array_api_namespace.py" in message
    if name in FACTORIZATIONS:
        assert f"np.{name} " in message and "which jitc does not compute" in message
    else:
        assert "np.from_dlpack" in message


# ------------------------------------------------------------ the new functions, by dtype

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64]
CPU_DTYPES = [np.bool_, np.uint8, np.int64, np.float16, np.float32]  # conftest.backend_dtypes


def _values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) > 0.4
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0 if np.dtype(dtype).kind == "u" else -3, 4, shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


def shape_functions(x, v):
    """x: (2, 3, 4), v: (4,)."""
    return (
        np.matrix_transpose(x),
        np.linalg.matrix_transpose(x[0]),
        np.unstack(x),
        np.unstack(x, axis=-1),
        np.unstack(v[:0]),
        np.broadcast_arrays(x, v, x[:, :1]),
        np.broadcast_arrays(v),
        np.broadcast_arrays(v[0], 2.0),
        np.meshgrid(v, x[0, :, 0]),
        np.meshgrid(v, x[0, :, 0], indexing="ij"),
        np.meshgrid(v, v[:2], x[0, :, 0], sparse=True),
        np.meshgrid(v[:3], copy=False),
        np.meshgrid(),
    )


@pytest.mark.parametrize("backend, dtype", backend_dtypes(DTYPES, CPU_DTYPES))
def test_shape_functions_over_dtypes(backend, dtype):
    x, v = _values(dtype, (2, 3, 4)), _values(dtype, (4,), 1)
    _same(jitc.jit(shape_functions, backend=backend)(x, v), shape_functions(x, v))


def products(x, y, v, w):
    """x, y: (2, 3, 3); v, w: (3,)."""
    out = (
        np.vecdot(x, y),
        np.vecdot(x, y[:1], axis=1),
        np.vecdot(v, w),
        np.vecdot(x[:, :0], y[:, :0]),
        np.linalg.vecdot(x, y, axis=0),
        np.linalg.matmul(x, y),
        np.linalg.tensordot(x, y, axes=([1, 2], [2, 1])),
        np.linalg.outer(v, w),
        np.linalg.trace(x),
        np.linalg.trace(x, offset=1, dtype=np.float64),
        np.linalg.diagonal(x),
        np.linalg.diagonal(x, offset=-1),
    )
    if x.dtype != np.bool_:  # NumPy's cross subtracts: booleans are a TypeError
        out += (
            np.cross(x, y),
            np.cross(x, v, axisa=1),
            np.cross(v, w),
            np.cross(x, y, axisa=1, axisb=2, axisc=0),
            np.cross(x, y, axis=1),
            np.linalg.cross(x, y),
            np.linalg.cross(x, y, axis=1),
        )
    if x.dtype.kind in "biu" or x.dtype.itemsize > 2:  # NumPy has no float16 LAPACK
        out += (
            np.linalg.matrix_power(x, 0),
            np.linalg.matrix_power(x, 1),
            np.linalg.matrix_power(x, 5),
        )
    return out


@pytest.mark.parametrize("backend, dtype", backend_dtypes(DTYPES, CPU_DTYPES))
def test_products_over_dtypes(backend, dtype):
    x, y = _values(dtype, (2, 3, 3)), _values(dtype, (2, 3, 3), 1)
    v, w = _values(dtype, (3,), 2), _values(dtype, (3,), 3)
    got = jitc.jit(products, backend=backend)(x, y, v, w)
    want = products(x, y, v, w)
    _same(got, want, summed=True)


def norms(x):
    """x: (2, 3, 4) floats or ints."""
    return (
        tuple(
            np.linalg.vector_norm(x, ord=o, axis=a, keepdims=k)
            for o in (2, 1, 0, np.inf, -np.inf, 3, -1.5)
            for a, k in ((None, False), (1, True), ((0, 2), False), ((-1, 0), True))
        )
        + tuple(
            np.linalg.matrix_norm(x, ord=o, keepdims=k)
            for o in ("fro", 1, -1, np.inf, -np.inf)
            for k in (False, True)
        )
        + (
            np.linalg.vector_norm(x[0, 0, 0]),
            np.linalg.vector_norm(x[:, :0]),
            np.linalg.matrix_norm(x[:, :0, :0]),
        )
    )


@pytest.mark.parametrize(
    "backend, dtype",
    backend_dtypes(
        [np.int32, np.float16, np.float32, np.float64], [np.int32, np.float16, np.float64]
    ),
)
def test_vector_and_matrix_norms(backend, dtype):
    x = _values(dtype, (2, 3, 4))
    x.flat[5] = 0
    with np.errstate(all="ignore"):
        want = norms(x)
        got = jitc.jit(norms, backend=backend)(x)
    if dtype == np.float16:
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=3e-3)
            assert g.dtype == w.dtype and g.shape == w.shape
        return
    _same(got, want)


def test_var_and_std_keywords(backend):
    def moments(x):
        m = x.mean(axis=1, keepdims=True)
        return (
            np.var(x, correction=1),
            np.std(x, axis=1, correction=2, keepdims=True),
            np.var(x, axis=1, mean=m),
            np.std(x, axis=1, mean=m, ddof=1),
        )

    x = _values(np.float32, (3, 5))
    _same(jitc.jit(moments, backend=backend)(x), moments(x))


def test_cross_of_2_vectors_warns_as_numpy_does(backend):
    def cross2(a, b, c):
        return np.cross(a, b), np.cross(a, c), np.cross(c, a)

    a, b, c = (
        _values(np.float64, (4, 2)),
        _values(np.float64, (4, 2), 1),
        _values(np.float64, (3,), 2),
    )
    background.wait()  # a numba compile in the background enters catch_warnings(record=True),
    #  which swaps the process-wide warning hooks: pytest.warns could miss this warning
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        want = cross2(a, b, c)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        got = jitc.jit(cross2, backend=backend)(a, b, c)
    _same(got, want)


def test_vecdot_and_meshgrid_results_are_fresh_arrays_and_views_like_numpys(backend):
    def write(x, v):
        a, b = np.meshgrid(v, v)
        a[0, 0] = 9  # a copy: v stays
        rows = np.unstack(x)
        rows[0][1] = -1  # a view: x changes
        np.matrix_transpose(x)[2, 1] = 7  # a view: x changes
        return a, b

    x, v = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    xw, vw, xg, vg = x.copy(), v.copy(), x.copy(), v.copy()
    want = write(xw, vw)
    got = jitc.jit(write, backend=backend)(xg, vg)
    _same(got, want)
    np.testing.assert_array_equal(xg, xw)
    np.testing.assert_array_equal(vg, vw)


# ------------------------------------------------------------------------ nextafter


def _special(dtype):
    fi = np.finfo(dtype)
    return np.array(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            2.0,
            -2.0,
            0.5,
            fi.tiny,
            -fi.tiny,
            fi.smallest_subnormal,
            -fi.smallest_subnormal,
            fi.max,
            -fi.max,
            np.inf,
            -np.inf,
            np.nan,
            3.7,
            -1e-3,
            fi.eps,
        ],
        dtype,
    )


def _bits(a):
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nextafter_is_numpys_bit_for_bit(backend, dtype):
    """Every pair of special values: zeros of both signs, subnormals, the largest finite,
    infinities, NaN (float16 keeps NumPy's own rule: x, not y, where x == y)."""
    vals = _special(dtype)
    x, y = np.meshgrid(vals, vals)
    with np.errstate(all="ignore"):
        want = np.nextafter(x, y)
        got = jitc.jit(np.nextafter, backend=backend)(x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_nextafter_promotes_like_numpy(backend):
    def mixed(i, b, f):
        return np.nextafter(i, 5), np.nextafter(b, False), np.nextafter(f, 2.0), np.nextafter(f, i)

    i, b, f = np.arange(4, dtype=np.int32), np.array([True, False]), np.float32(1.5)
    _same(jitc.jit(mixed, backend=backend)(i, b, f), mixed(i, b, f))


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_nextafter_compiles_ahead_of_time(tmp_path, dtype):
    from jitc.aot.link import undefined_symbols
    from tests.test_aot import ALLOWED_IMPORTS, _load

    def step(x, y):
        return np.nextafter(x, y)

    n = len(_special(np.float64))
    art = aot.compile(step, f"{dtype}[{n},{n}]", f"{dtype}[{n},{n}]", name="step")
    assert set(undefined_symbols(art.object)) <= ALLOWED_IMPORTS
    art.write(str(tmp_path))
    vals = _special({"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype])
    x, y = np.meshgrid(vals, vals)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            _bits(_load(str(tmp_path), "step")(x, y)), _bits(np.nextafter(x, y))
        )


# ------------------------------------------------------------------------- errors

ERRORS = [
    (
        lambda x: np.matrix_transpose(x[0]),
        ValueError,
        "matrix_transpose: Input array must be at least 2",
    ),
    (lambda x: np.unstack(x[0, 0]), ValueError, "np.unstack: Input array must be at least 1-d"),
    (lambda x: np.broadcast_arrays(x, x[:, :2]), ValueError, "np.broadcast_arrays: shape mismatch"),
    (
        lambda x: np.meshgrid(x[0], indexing="xx"),
        ValueError,
        "np.meshgrid: Valid values for `indexing`",
    ),
    (lambda x: np.vecdot(x[0, 0], x), ValueError, "vecdot: Input operand 0 does not have enough"),
    (lambda x: np.vecdot(x, x[:, :2]), ValueError, "vecdot: Input operand 1 has a mismatch"),
    (lambda x: np.vecdot(x, np.ones((3, 3))), ValueError, "vecdot: batch dims"),
    (lambda x: np.ones((3, 1, 2)) @ np.stack([x, x]), ValueError, "matmul: batch dims"),
    (
        lambda x: np.vecdot(x, x, axes=[(0,), (0,), ()]),
        UnsupportedError,
        "np.vecdot: argument axes=",
    ),
    (lambda x: np.cross(x, x[:, :1]), ValueError, "np.cross: incompatible dimensions"),
    (
        lambda x: np.linalg.outer(x, x[0]),
        ValueError,
        "np.linalg.outer: Input arrays must be one-dim",
    ),
    (
        lambda x: np.linalg.cross(x[:, :2], x[:, :2]),
        ValueError,
        "np.linalg.cross: Both input arrays must be",
    ),
    (
        lambda x: np.linalg.matrix_power(x[:, :2], 1.5),
        TypeError,
        "np.linalg.matrix_power: exponent must be an int",
    ),
    (
        lambda x: np.linalg.matrix_power(x, 2),
        np.linalg.LinAlgError,
        "np.linalg.matrix_power: Last 2 dimensions",
    ),
    (lambda x: np.var(x, ddof=1, correction=1), ValueError, "np.var: ddof and correction can't"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_name_the_function_and_the_line(case):
    fn, error, message = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(error, match=message.replace("(", r"\(")) as e:
            jitc.jit(fn, backend="reference")(X)
    assert "test_array_api_namespace.py" in str(e.value)


def test_array_methods_of_the_standard():
    def methods(x):
        return x.to_device("cpu") + 1, x.mT, x.device == "cpu"

    _same(jitc.jit(methods, backend="reference")(X), methods(X))
    with pytest.raises(UnsupportedError, match="asarray: device='gpu' is not supported"):
        jitc.jit(lambda x: x.to_device("gpu"), backend="reference")(X)


def test_the_compositions_compile_ahead_of_time(tmp_path):
    """The new functions are existing primitives, so an AOT object needs nothing new."""
    from jitc.aot.link import undefined_symbols
    from tests.test_aot import ALLOWED_IMPORTS, _load

    def geometry(a, b):
        ra, _ = np.broadcast_arrays(a, b[:1])
        return (
            np.vecdot(a, b),
            np.cross(a, b),
            np.linalg.vector_norm(a, axis=-1),
            np.linalg.matrix_norm(a, ord=1),
            np.matrix_transpose(a),
            np.unstack(b)[1],
            np.meshgrid(a[0], b[1], indexing="ij")[1],
            ra,
        )

    art = aot.compile(geometry, "f32[4,3]", "f32[4,3]", name="geometry")
    assert set(undefined_symbols(art.object)) <= ALLOWED_IMPORTS
    art.write(str(tmp_path))
    a, b = _values(np.float32, (4, 3)), _values(np.float32, (4, 3), 1)
    _same(tuple(_load(str(tmp_path), "geometry")(a, b)), geometry(a, b), summed=True)
