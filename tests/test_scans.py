"""Running sums, products and extrema (np.cumsum, np.cumprod, np.cumulative_sum/prod,
ufunc.accumulate) against NumPy on every backend: values bit for bit (NumPy adds one element
after the other, and so does jitc), dtypes, axes, the caller's arrays after in-place use,
and errors naming the call."""

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError

DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]


def every_scan(x):
    return (
        np.cumsum(x),
        np.cumsum(x, axis=0),
        x.cumsum(axis=1),
        np.cumsum(x, axis=-1),
        np.cumprod(x, axis=1),
        x.cumprod(),
        np.cumsum(x, axis=2, dtype=np.float64),
        np.maximum.accumulate(x, axis=2),
        np.minimum.accumulate(x),
        np.add.accumulate(x, axis=1),
        np.multiply.accumulate(x, axis=2),
        np.cumulative_sum(x, axis=0, include_initial=True),
        np.cumulative_prod(x, axis=2),
    )


def _values(dtype, shape, rng):
    if dtype == np.bool_:
        return rng.random(shape) > 0.4
    if np.dtype(dtype).kind in "iu":  # unsigned: -3..-1 wrap to the top of the range
        return rng.integers(-3, 4, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 1.5).astype(dtype)
    x.flat[[3, 17, 40]] = [np.nan, np.inf, -np.inf]
    return x


def _same(got, want):
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_scan_over_every_axis_is_numpys(backend, dtype):
    x = _values(dtype, (3, 4, 6), np.random.default_rng(0))
    with np.errstate(all="ignore"):
        want = every_scan(x)
        got = jitc.jit(every_scan, backend=backend)(x)
    for g, w in zip(got, want):
        _same(g, w)


def test_long_float_sums_round_like_numpys(backend):
    """A running sum is sequential in NumPy too: 100,000 float32 steps agree bit for bit."""
    x = np.random.default_rng(1).standard_normal((2, 100_000)).astype(np.float32)
    f = jitc.jit(lambda x: (np.cumsum(x, axis=1), np.cumsum(x.T, axis=0)), backend=backend)
    for g, w in zip(f(x), (np.cumsum(x, axis=1), np.cumsum(x.T, axis=0))):
        _same(g, w)


def test_scalars_empty_axes_and_out(backend):
    def edge(x, e, s, out):
        np.cumsum(x, axis=0, out=out)
        return np.cumsum(s), np.cumprod(e, axis=1), np.maximum.accumulate(e, axis=0), out

    x, e = np.arange(6.0).reshape(2, 3), np.ones((2, 0))
    want_out, got_out = np.zeros((2, 3)), np.zeros((2, 3))
    want = edge(x, e, 2.5, want_out)
    got = jitc.jit(edge, backend=backend)(x, e, 2.5, got_out)
    for g, w in zip(got, want):
        _same(g, w)
    np.testing.assert_array_equal(got_out, want_out)


def inverse_cdf_sample(weights, u, counts):
    """Categorical sampling as real code writes it: a normalized running sum, in place."""
    cdf = np.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]
    picks = (u[:, None] > cdf).sum(axis=1)
    np.add.at(counts, picks, 1)
    return picks, cdf


def test_a_sampler_with_in_place_updates(backend):
    rng = np.random.default_rng(2)
    weights, u = rng.random((64, 10)), rng.random(64)
    want_counts, got_counts = np.zeros(10, np.int64), np.zeros(10, np.int64)
    want = inverse_cdf_sample(weights, u, want_counts)
    f = jitc.jit(inverse_cdf_sample, backend=backend)
    got = f(weights, u, got_counts)
    for g, w in zip(got, want):
        _same(g, w)
    np.testing.assert_array_equal(got_counts, want_counts)
    if backend == "cpu":  # the scan is one kernel; its neighbours fuse around it
        assert f.lower(weights, u, got_counts).compile().stats()["kernels"] <= 4


def test_errors_name_the_call(backend):
    x = np.ones((2, 3))
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds.*test_scans"):
        jitc.jit(lambda x: np.cumsum(x, axis=2), backend=backend)(x)
    with pytest.raises(UnsupportedError, match=r"np\.subtract\.accumulate is not supported"):
        jitc.jit(lambda x: np.subtract.accumulate(x), backend=backend)(x)
    with pytest.raises(TypeError, match="cannot accumulate on a scalar"):
        jitc.jit(lambda x: np.add.accumulate(x.sum()), backend=backend)(x)
    with pytest.raises(ValueError, match="axis= is required for a 2-d array"):
        jitc.jit(lambda x: np.cumulative_sum(x), backend=backend)(x)
    with pytest.raises(UnsupportedError, match="np.cumsum on complex128 is not supported.*test_sc"):
        jitc.jit(lambda x: np.cumsum(x, dtype=np.complex128), backend=backend)(x)
