"""np.histogram with bins known when tracing, against NumPy on every backend: counts and
edges bit for bit (values on the edges, NaN and inf, float32, ints, weights, density), and
errors that name the argument and the user's line."""

import numpy as np
import pytest

import jitc
from jitc.errors import UnsupportedError


def histograms(a, w, image):
    return (np.histogram(a, bins=20, range=(-3, 3)),
            np.histogram(a, bins=7, range=(-1, 2), weights=w),
            np.histogram(a, bins=np.array([-2.0, -0.5, 0.0, 0.1, 4.0])),
            np.histogram(a, 5, range=(-2, 2), density=True),
            np.histogram(a.astype(np.int32), bins=4, range=(0, 3)),
            np.histogram(a, bins=3, range=(1.0, 1.0)),
            np.histogram(image, bins=16, range=(0, 256)))


def _inputs(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((50, 40)).astype(dtype)
    a.flat[:8] = [np.nan, np.inf, -np.inf, -3.0, 3.0, 2.9999, 1.0, -0.5]  # edges included
    image = rng.integers(0, 256, (32, 32, 3)).astype(np.int32)
    return a, rng.random((50, 40)).astype(dtype), image


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histograms_are_numpys(backend, dtype):
    a, w, image = _inputs(dtype)
    before = [x.copy() for x in (a, w, image)]
    with np.errstate(invalid="ignore"):
        want = histograms(a, w, image)
    got = jitc.jit(histograms, backend=backend)(a, w, image)
    for (gh, ge), (wh, we) in zip(got, want):
        assert gh.dtype == wh.dtype and ge.dtype == we.dtype and gh.shape == wh.shape
        np.testing.assert_array_equal(gh, wh)
        np.testing.assert_array_equal(ge, we)
    for x, b in zip((a, w, image), before):
        np.testing.assert_array_equal(x, b)


@pytest.mark.parametrize("call,error,message", [
    (lambda a: np.histogram(a, bins=10), UnsupportedError, "needs range="),
    (lambda a: np.histogram(a, bins=a[:3]), UnsupportedError, "bins= must be an int or"),
    (lambda a: np.histogram(a, bins=0, range=(0, 1)), ValueError, "must be positive"),
    (lambda a: np.histogram(a, bins=np.array([0.0, 2.0, 1.0])), ValueError,
     "increase monotonically"),
    (lambda a: np.histogram(a, bins=3, range=(2, 1)), ValueError, "max must be larger"),
    (lambda a: np.histogram(a, bins=3, range=(0, np.inf)), ValueError, "is not finite"),
    (lambda a: np.histogram(a, bins=3, range=(0, a[0])), UnsupportedError,
     "range= must be numbers"),
    (lambda a: np.histogram(a, bins=3, range=(0, 1), weights=a[:2]), ValueError,
     "weights should have the same shape"),
    (lambda a: np.histogram(a, bins=np.array([0.0, 1.0]), weights=a), UnsupportedError,
     "weights= and an array of edges"),
])
def test_errors_name_the_argument_and_the_line(call, error, message):
    with pytest.raises(error, match=message + r".*test_histograms\.py"):
        jitc.jit(call, backend="reference")(np.linspace(0, 1, 5))
