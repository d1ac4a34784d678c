"""np.histogram with bins known when tracing, against NumPy on every backend: counts and
edges bit for bit (values on the edges, NaN and inf, float32, ints, weights, density, edges
from the data's min and max), and errors that name the argument and the user's line."""

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError
from tests.conftest import backend_dtypes


def histograms(a, w, image):
    return (
        np.histogram(a, bins=20, range=(-3, 3)),
        np.histogram(a, bins=7, range=(-1, 2), weights=w),
        np.histogram(a, bins=np.array([-2.0, -0.5, 0.0, 0.1, 4.0])),
        np.histogram(a, 5, range=(-2, 2), density=True),
        np.histogram(a.astype(np.int32), bins=4, range=(0, 3)),
        np.histogram(a, bins=3, range=(1.0, 1.0)),
        np.histogram(image, bins=16, range=(0, 256)),
    )


def from_the_data(a, image):
    """int bins without range=: the edges from the data's min and max."""
    return (
        np.histogram(a[1:], bins=9),  # the finite rows
        np.histogram(image, bins=7),
        np.histogram(a[1:, :3] * 0 + 2, bins=3),  # one value: edges widened by 0.5
        np.histogram(a[:0], 4),
    )


def _inputs(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 40)).astype(dtype)
    a.flat[:8] = [np.nan, np.inf, -np.inf, -3.0, 3.0, 2.9999, 1.0, -0.5]  # edges included
    image = rng.integers(0, 256, (32, 32, 3)).astype(np.int32)
    return a, rng.random((50, 40)).astype(dtype), image


@pytest.mark.parametrize("backend,dtype", backend_dtypes([np.float32, np.float64], [np.float32]))
def test_histograms_are_numpys(backend, dtype):
    a, w, image = _inputs(dtype)
    before = [x.copy() for x in (a, w, image)]
    with np.errstate(invalid="ignore"):
        want = histograms(a, w, image)
    got = jitc.jit(histograms, backend=backend)(a, w, image)
    if backend == "reference":  # the cpu compiles from_the_data's kind in the NaN test below
        want += from_the_data(a, image)
        got += jitc.jit(from_the_data, backend=backend)(a, image)
    for (gh, ge), (wh, we) in zip(got, want):
        assert gh.dtype == wh.dtype and ge.dtype == we.dtype and gh.shape == wh.shape
        np.testing.assert_array_equal(gh, wh)
        np.testing.assert_array_equal(ge, we)
    for x, b in zip((a, w, image), before):
        np.testing.assert_array_equal(x, b)


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda a: np.histogram(a, bins=a[:3]), UnsupportedError, "bins= must be an int or"),
        (lambda a: np.histogram(a, bins=0, range=(0, 1)), ValueError, "must be positive"),
        (
            lambda a: np.histogram(a, bins=np.array([0.0, 2.0, 1.0])),
            ValueError,
            "increase monotonically",
        ),
        (lambda a: np.histogram(a, bins=3, range=(2, 1)), ValueError, "max must be larger"),
        (lambda a: np.histogram(a, bins=3, range=(0, np.inf)), ValueError, "is not finite"),
        (
            lambda a: np.histogram(a, bins=3, range=(0, a[0])),
            UnsupportedError,
            "range= must be numbers",
        ),
        (
            lambda a: np.histogram(a, bins=3, range=(0, 1), weights=a[:2]),
            ValueError,
            "weights should have the same shape",
        ),
        (
            lambda a: np.histogram(a, bins=np.array([0.0, 1.0]), weights=a),
            UnsupportedError,
            "weights= and an array of edges",
        ),
    ],
)
def test_errors_name_the_argument_and_the_line(call, error, message):
    with pytest.raises(error, match=message + r".*test_histograms\.py"):
        jitc.jit(call, backend="reference")(np.linspace(0, 1, 5))


def bincounts(x, w, b):
    return (
        np.bincount(x, minlength=8),
        np.bincount(x, weights=w, minlength=10),
        np.bincount(b, minlength=3),
        np.bincount(x[:0], minlength=4),
    )


def test_bincount_is_numpys(backend):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 8, 40).astype(np.int32)
    w = rng.random(40).astype(np.float32)
    b = x > 3
    before = [v.copy() for v in (x, w, b)]
    got = jitc.jit(bincounts, backend=backend)(x, w, b)
    for g, want in zip(got, bincounts(x, w, b)):
        assert g.dtype == want.dtype and g.shape == want.shape
        np.testing.assert_array_equal(g, want)
    for v, old in zip((x, w, b), before):
        np.testing.assert_array_equal(v, old)


def count(x):
    return np.bincount(x, minlength=5)


@pytest.mark.parametrize("bad", [[0, 5], [3, -1]])
def test_bincount_out_of_range_names_bincount_and_the_line(backend, bad):
    """NumPy raises for a negative value and grows the result for one >= minlength, which a
    static shape cannot: both fail at run time, naming np.bincount and the user's line."""
    line = count.__code__.co_firstlineno + 1
    with pytest.raises(
        ValueError,
        match=rf"np\.bincount: .*raise minlength at "
        rf".*test_histograms\.py:{line}",
    ):
        jitc.jit(count, backend=backend)(np.array(bad))


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda x: np.bincount(x), UnsupportedError, "depends on the data.*pass minlength"),
        (lambda x: np.bincount(x.astype(float), minlength=3), TypeError, "Cannot cast"),
        (lambda x: np.bincount(x.astype(np.uint64), minlength=3), TypeError, "Cannot cast"),
        (lambda x: np.bincount(x.reshape(1, -1), minlength=3), ValueError, "1-dimensional"),
        (lambda x: np.bincount(x, minlength=-1), ValueError, "must not be negative"),
        (lambda x: np.bincount(x, minlength=x[0]), UnsupportedError, "must be an int"),
        (
            lambda x: np.bincount(x, weights=x[:2], minlength=3),
            ValueError,
            "don't have the same length",
        ),
    ],
)
def test_bincount_errors_name_the_line(call, error, message):
    with pytest.raises(error, match=r"np\.bincount.*" + message + r".*test_histograms\.py"):
        jitc.jit(call, backend="reference")(np.arange(4))


def test_edges_from_the_data_are_numpys_and_nan_or_inf_in_it_raise_numpys_error(backend):
    def f(a):
        return np.histogram(a, bins=4)

    compiled = jitc.jit(f, backend=backend)
    a = np.linspace(-1, 2, 9)
    for g, w in zip(compiled(a), f(a)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    for bad in (np.nan, np.inf):
        a = np.linspace(0, 1, 9)
        a[3] = bad
        with pytest.raises(ValueError):
            f(a)
        with pytest.raises(ValueError, match=r"autodetected range .*not finite.*test_histograms"):
            compiled(a)


def histograms_nd(x, y, s, w):
    return (
        np.histogram2d(x, y),
        np.histogram2d(x, y, bins=(3, 4), range=[(-1, 1), (-2, 2)]),
        np.histogram2d(x, y, bins=np.array([-2.0, 0.0, 0.5, 3.0]), weights=w),
        np.histogram2d(x, y, bins=[3, np.array([-1.0, 1.0])], density=True),
        np.histogramdd(s, bins=(2, 3, 4)),
        np.histogramdd(s[:, 0], bins=5),
        np.histogram2d(x.astype(np.float32), y.astype(np.float32), 4),
    )


def _arrays(results):
    for r in results:
        if isinstance(r, (list, tuple)):
            yield from _arrays(r)
        else:
            yield r


def test_histogramdd_and_histogram2d_are_numpys(backend):
    rng = np.random.default_rng(0)
    x, y, s, w = (
        rng.normal(size=100),
        rng.normal(size=100),
        rng.normal(size=(60, 3)),
        rng.random(100),
    )
    x[:3] = [1.0, 0.5, 3.0]  # on edges
    got = list(_arrays(jitc.jit(histograms_nd, backend=backend)(x, y, s, w)))
    want = list(_arrays(histograms_nd(x, y, s, w)))
    assert len(got) == len(want)
    for g, v in zip(got, want):
        assert g.dtype == v.dtype and g.shape == v.shape
        np.testing.assert_array_equal(g, v)


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda a: np.histogram2d(a, a, bins=0), ValueError, "must be positive"),
        (
            lambda a: np.histogram2d(a, a, bins=[2, [[0.0, 1.0], [2.0, 3.0]]]),
            ValueError,
            "scalar or 1d",
        ),
        (lambda a: np.histogram2d(a, a, bins=[2, np.array([1.0, 0.0])]), ValueError, "increasing"),
        (lambda a: np.histogramdd(a[:, None], bins=(2, 3)), ValueError, "dimension of bins"),
        (lambda a: np.histogram2d(a, a, range=[(0, 1)]), ValueError, "one entry per dimension"),
        (lambda a: np.histogram2d(a, a, bins=[2, a[:2]]), UnsupportedError, "known when tracing"),
    ],
)
def test_histogramdd_errors_name_the_argument_and_the_line(call, error, message):
    if error is not UnsupportedError:
        with pytest.raises(error):
            call(np.linspace(0, 1, 5))
    with pytest.raises(error, match=message + r".*test_histograms\.py"):
        jitc.jit(call, backend="reference")(np.linspace(0, 1, 5))
