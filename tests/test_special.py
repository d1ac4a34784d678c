"""scipy.special's elementwise functions against SciPy (every value of a dense sweep) and
mpmath (exact to 40 digits, at sample points), on every backend.

SciPy's own erfc and ndtr take exp(-x*x) unsplit, so far in the tails they are off by up
to ~500 ulp (x*x*eps relative); jitc splits x*x and is within a few ulp of the exact value
there, so the sweep compares with SciPy to 1e-13 relative (that bound) and mpmath checks
the ulps.
"""

import mpmath
import numpy as np
import pytest
import scipy.special as sp

import jitc
from jitc.core.errors import UnsupportedError

mpmath.mp.dps = 40

SWEEP = np.concatenate(
    [
        np.linspace(-40, 40, 8001),
        [
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            0.46875,
            -0.46875,
            4.0,
            -4.0,
            26.6,
            26.65,
            5.9,
            6.0,
            6.1,
            -19.9,
            -20.0,
            -20.1,
            -38.0,
            -1e10,
            1e10,
        ],
    ]
)
SPECIAL = np.array([np.nan, np.inf, -np.inf])
PROBABILITIES = np.concatenate(
    [np.linspace(0, 1, 2001), [np.nan, -0.1, 1.1, 0.3, 0.65, 1e-300, 1 - 1e-16]]
)
EXACT = {
    "erf": mpmath.erf,
    "erfc": mpmath.erfc,
    "ndtr": mpmath.ncdf,
    "log_ndtr": lambda v: mpmath.log1p(-mpmath.ncdf(-v)) if v > 0 else mpmath.log(mpmath.ncdf(v)),
    "expit": lambda v: 1 / (1 + mpmath.exp(-v)),
    "logit": lambda p: mpmath.log(p / (1 - p)),
}
ULPS = {"erf": 4, "erfc": 4, "ndtr": 4, "log_ndtr": 40, "expit": 4, "logit": 4}
# ndtr(x) is erfc(-x/sqrt(2)) / 2, and rounding x/sqrt(2) moves erfc by up to ~x*x ulp in the
# tails (SciPy's ndtr and log_ndtr too): there the bound is x*x ulp
ILL_CONDITIONED = {"ndtr", "log_ndtr"}


def _jitted(name, backend):
    fn = getattr(sp, name)
    return jitc.jit(lambda v: fn(v), backend=backend)


@pytest.mark.parametrize("name", sorted(EXACT))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_scipy_on_a_dense_sweep(backend, name, dtype):
    x = (PROBABILITIES if name == "logit" else np.concatenate([SWEEP, SPECIAL])).astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(sp, name)(x)
        got = _jitted(name, backend)(x)
    assert got.dtype == want.dtype
    tiny = np.finfo(dtype).tiny
    rtol = 1e-13 if dtype == np.float64 else 2 * np.finfo(np.float32).eps
    np.testing.assert_allclose(got, want, rtol=rtol, atol=16 * tiny * np.finfo(dtype).eps)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_within_a_few_ulp_of_the_exact_value(backend, name):
    if name == "logit":
        x = np.concatenate([np.linspace(0.001, 0.999, 97), [0.3, 0.5, 0.65, 1e-200]])
    else:
        x = np.concatenate(
            [
                np.linspace(-30, 30, 97),
                [0.4, 0.47, 3.9, 4.1, 5.9, 6.1, -19.9, -20.1, -35.0, 25.5, 26.6],
            ]
        )
    got = _jitted(name, backend)(x)
    exact = np.array([float(EXACT[name](mpmath.mpf(float(v)))) for v in x])
    normal = np.abs(exact) >= np.finfo(np.float64).tiny

    ulps = np.abs(got[normal] - exact[normal]) / np.spacing(np.abs(exact[normal]))
    bound = np.maximum(ULPS[name], x[normal] ** 2 if name in ILL_CONDITIONED else 0)
    worst = np.argmax(ulps - bound)
    assert np.all(ulps <= bound), (name, x[normal][worst], ulps[worst], bound[worst])


def test_xlogy_dtypes_scalars_and_zero_times_anything(backend):
    x = np.array([0.0, 0.0, 0.0, 1.5, -2.0, 3.0], np.float32)
    y = np.array([0.0, np.inf, np.nan, 2.0, 0.5, -1.0], np.float32)
    f = jitc.jit(
        lambda a, b: (sp.xlogy(a, b), sp.xlogy(a, 2.0), sp.expit(a[3]) * 2, sp.erf(np.int32(1))),
        backend=backend,
    )
    with np.errstate(all="ignore"):
        want = (sp.xlogy(x, y), sp.xlogy(x, 2.0), sp.expit(x[3]) * 2, sp.erf(np.int32(1)))
        got = f(x, y)
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, equal_nan=True)


def test_fused_with_the_rest_of_the_program():
    """Black-Scholes' call price: ndtr inside one fused elementwise program."""

    def call(s, k, t, r, v):
        d1 = (np.log(s / k) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
        d2 = d1 - v * np.sqrt(t)
        return s * sp.ndtr(d1) - k * np.exp(-r * t) * sp.ndtr(d2)

    rng = np.random.default_rng(0)
    s, k = rng.uniform(10, 100, 1000), rng.uniform(10, 100, 1000)
    t, v = rng.uniform(0.1, 2, 1000), rng.uniform(0.1, 0.5, 1000)
    f = jitc.jit(call)
    np.testing.assert_allclose(
        f(s, k, t, 0.03, v), call(s, k, t, 0.03, v), rtol=1e-12, atol=1e-12 * s.max()
    )  # deep out of the money: a difference
    assert f.lower(s, k, t, 0.03, v).compile().stats()["kernels"] == 1


GAMMALN_SWEEP = np.concatenate(
    [
        np.linspace(-40, 40, 16001),
        np.geomspace(1e-300, 13, 400),
        np.geomspace(13, 1e306, 400),
        -np.geomspace(1e-300, 1e6, 400),
        [
            0.0,
            -0.0,
            1.0,
            2.0,
            3.0,
            -1.0,
            -34.0,
            -34.5,
            13.0,
            1000.0,
            1e8,
            2.556348e305,
            2.6e305,
            5e-324,
            -2.457,
        ],
    ]
)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gammaln_matches_scipy(backend, dtype):
    """Against SciPy over both signs, the poles, the recurrence's range (< 13), Stirling's
    (>= 13) and the overflow edge. SciPy's and jitc's log differ in their last bit, so
    where the result cancels to near 0 (x near 1, 2 and the negative roots, e.g. -2.457)
    the difference is an absolute ~1e-15, not a relative one."""
    with np.errstate(all="ignore"):
        x = np.concatenate([GAMMALN_SWEEP, SPECIAL]).astype(dtype)
        want = sp.gammaln(x)
        got = _jitted("gammaln", backend)(x)
    assert got.dtype == want.dtype
    if dtype == np.float64:
        np.testing.assert_allclose(got, want, rtol=4e-15, atol=2e-15)
    else:
        np.testing.assert_allclose(got, want, rtol=2 * np.finfo(np.float32).eps, atol=1e-7)


def test_gammaln_within_a_few_ulp_of_the_exact_value(backend):
    x = np.concatenate(
        [
            np.linspace(0.05, 30, 60),
            [0.5, 2.5, 12.9, 13.1, 200.5, 1e5, 3e7, -0.5, -1.5, -33.5, -34.5, -100.25],
        ]
    )
    got = _jitted("gammaln", backend)(x)
    exact = np.array([float(mpmath.log(abs(mpmath.gamma(mpmath.mpf(float(v)))))) for v in x])
    far = np.abs(exact) > 0.1  # away from the roots, where no rounding of x is exact enough
    ulps = np.abs(got[far] - exact[far]) / np.spacing(np.abs(exact[far]))
    assert np.all(ulps <= 8), (x[far][np.argmax(ulps)], ulps.max())


def test_other_scipy_functions_are_refused_by_their_scipy_name():
    f = jitc.jit(lambda v: sp.gamma(v))
    with pytest.raises(UnsupportedError, match=r"scipy\.special\.gamma is not supported"):
        f(np.ones(3))
    g = jitc.jit(lambda v: sp.erf(v, out=v))
    with pytest.raises(UnsupportedError, match=r"scipy\.special\.erf: .* keyword arguments"):
        g(np.ones(3))
