"""np.convolve and np.correlate against NumPy on every backend: every mode, both argument
orders (NumPy swaps or reverses when the second is longer), integers exactly, floats to
the last bits of a dot product, kernels past the unrolled size, and NumPy's errors."""

import numpy as np
import pytest

import jitc
from jitc.numpy_api.convolve import UNROLL_MAX


def every_mode(a, v, ints, taps, long):
    out = []
    for mode in ("full", "same", "valid"):
        out += [
            np.convolve(a, v, mode),
            np.convolve(v, a, mode),
            np.correlate(a, v, mode),
            np.correlate(v, a, mode),
            np.convolve(ints, taps, mode),
            np.correlate(a, long, mode),
        ]
    return out + [np.convolve(a, v), np.correlate(a, v)]  # the default modes


def test_every_mode_and_order_is_numpys(backend):
    rng = np.random.default_rng(0)
    a, v = rng.standard_normal(50), rng.standard_normal(7)
    ints, taps = rng.integers(-5, 5, 40).astype(np.int32), np.array([1, -2, 1], np.int64)
    long = rng.standard_normal(UNROLL_MAX + 16)  # longer than a: a window gather and a dot
    want = every_mode(a, v, ints, taps, long)
    got = jitc.jit(every_mode, backend=backend)(a, v, ints, taps, long)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
        else:
            np.testing.assert_array_equal(g, w)


def test_a_smoothing_filter_in_a_loop_with_float32(backend):
    def smooth(signal, passes):
        kernel = np.array([0.25, 0.5, 0.25], np.float32)
        for _ in range(passes):
            signal = np.convolve(signal, kernel, mode="same")
        return signal

    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    got = jitc.jit(smooth, backend=backend, static_argnames=("passes",))(x, passes=3)
    want = smooth(x, 3)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda a: np.convolve(a, a[:0]), "v cannot be empty"),
        (lambda a: np.correlate(a[:0], a), "a cannot be empty"),
        (lambda a: np.convolve(a.reshape(2, 3), a), "object too deep"),
        (lambda a: np.correlate(a, a, mode="middle"), "mode must be one of"),
    ],
)
def test_numpys_errors_with_the_users_line(call, message):
    with pytest.raises(ValueError, match=message + r".*test_convolve\.py"):
        jitc.jit(call, backend="reference")(np.arange(6.0))
