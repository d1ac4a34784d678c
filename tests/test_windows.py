"""Slices whose bounds are traced (issue 36): `A[i, :j]`, `y[k:]`, `data[ptr[i]:ptr[i + 1]]`,
read, reduced, dotted and written in the jitted function and inside its loops
(trace/window.py). NumPy running the same function is the oracle."""

import inspect

import numpy as np
import pytest

import jitc
from benchmarks.workloads import durbin
from jitc.core.errors import UnsupportedError
from tests.test_loops import matches_numpy

RNG = np.random.default_rng(361)
BACKENDS = ("reference", "cpu")


def prefix_dot(A, i, j):
    return A[i, :j] @ A[j, :j]


def ends(y, k):
    """Bounds from the end, clipped to the axis as NumPy clips them."""
    return y[k:].sum() + np.sum(y[:-k] * 2.0) + np.dot(y[-k:], y[-k:])


def scale_window(y, a, b):
    y[a:b] = y[a:b] * 2.0 + 1.0
    y[:a] = 0.0
    return y


def csr_matvec(data, idx, ptr, x):
    out = np.zeros(ptr.shape[0] - 1)
    for i in range(ptr.shape[0] - 1):
        lo = ptr[i]
        hi = ptr[i + 1]
        out[i] = np.sum(data[lo:hi] * x[idx[lo:hi]])
    return out


def cholesky_rows(A):
    """Issue 36's Cholesky, a dot of two windows whose extent follows the outer index."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = L[i, :j] @ L[j, :j]
            if i == j:
                L[i, i] = np.sqrt(A[i, i] - s)
            else:
                L[i, j] = (A[i, j] - s) / L[j, j]
    return L


def _csr(rows, cols):
    dense = (RNG.random((rows, cols)) < 0.4) * RNG.random((rows, cols))
    ptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))])
    return dense[dense != 0], np.nonzero(dense)[1], ptr, RNG.random(cols)


def _spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_windows_match_numpy(backend):
    A = RNG.random((6, 6))
    for i, j in [(4, 3), (2, 0), (5, 5)]:
        matches_numpy(prefix_dot, (A, i, j), (), backend, 1e-14, 0)
    y = RNG.random(9)
    for k in (-12, -3, 0, 2, 9, 14):  # beyond either end too: NumPy clips
        matches_numpy(ends, (y, k), (), backend, 1e-14, 0)
    for a, b in [(2, 6), (-4, -1), (5, 3), (0, 20)]:
        matches_numpy(scale_window, (y, a, b), (), backend, 0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_windows_that_follow_a_loop_index_match_numpy(backend):
    matches_numpy(csr_matvec, _csr(7, 9), (), backend, 1e-14, 0)
    matches_numpy(cholesky_rows, (_spd(12),), (), backend, 1e-13, 0)


def reversals(y, k):
    """A window reversed every way NumPy spells it, bounds from the end and clipped too."""
    w = np.flip(y[:k]) * 3.0 + y[:k][::-1]
    return w.sum(), np.dot(y[k::-1], y[k::-1] * 2.0), (y[k:0:-1] ** 2).sum(), y[-2:k:-1].sum()


def reverse_into(y, k):
    """Assignment through a reversed slice: its first element is y[k]."""
    y[k::-1] = np.flip(y[k::-1]) * 2.0
    return y


def levinson_durbin(r, order):
    """AR coefficients from autocorrelations: a dot of a window with a reversed window of
    other bounds (`r[k:0:-1]` holds r[k], ..., r[1]), and a window updated from itself
    reversed."""
    a = np.zeros(order + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, order + 1):
        lam = -np.dot(a[:k], r[k:0:-1]) / e
        a[: k + 1] = a[: k + 1] + lam * a[k::-1]
        e = e * (1.0 - lam * lam)
    return a, e


def levinson(r, y):
    """Issue 36's Levinson recursion: solves T x = y, T symmetric Toeplitz of first row r."""
    n = y.shape[0]
    f = np.zeros(n)
    x = np.zeros(n)
    f[0] = 1.0 / r[0]
    x[0] = y[0] / r[0]
    for k in range(1, n):
        ef = np.dot(r[k:0:-1], f[:k])
        ex = np.dot(r[k:0:-1], x[:k])
        f[: k + 1] = (f[: k + 1] - ef * f[k::-1]) / (1.0 - ef * ef)
        x[: k + 1] = x[: k + 1] + (y[k] - ex) * np.flip(f[: k + 1])
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_reversed_windows_match_numpy(backend):
    y = RNG.random(9)
    for k in (-12, -3, 0, 4, 8, 14):  # traced bounds: clipped to the axis as NumPy's are
        matches_numpy(reversals, (y, k), (), backend, 1e-14, 0)
        matches_numpy(reverse_into, (y, k), (), backend, 0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_levinson_compiles_as_one_loop_and_matches_numpy(backend):
    n = 40
    lags = np.arange(n + 1)  # a damped cosine's autocorrelations: well conditioned
    r = np.exp(-0.5 * lags) * np.cos(0.1 * lags)
    # each step's dot sums in another order than NumPy's BLAS: rounding, amplified a little
    matches_numpy(levinson_durbin, (r, n), ("order",), backend, 1e-10, 1e-12)
    matches_numpy(levinson, (r[:n], RNG.random(n)), (), backend, 1e-10, 1e-12)
    matches_numpy(durbin, (r / r[0],), (), backend, 1e-10, 1e-12)  # the form
    for fn, args, static in [(levinson_durbin, (r, n), ("order",)), (levinson, (r[:n], r[:n]), ())]:
        graph = jitc.jit(fn, static_argnames=static).lower(*args).graph
        assert [m.op for m in graph.nodes].count("while") == 1


def test_loops_over_windows_compile_as_loops_not_unrolled():
    graph = jitc.jit(cholesky_rows).lower(_spd(40)).graph
    assert [n.op for n in graph.nodes].count("while") == 1
    assert graph.count_ops() < 400  # 40 unrolled rows would be thousands


def two_windows(A, i, j):
    return A[:i, :j].sum()


def stepped(y, k):
    return y[0:k:2].sum()


def float_bound(y, x):
    return y[: x * 2.0].sum()


def with_an_index_array(A, k):
    return A[[0, 1], :k].sum()


def matrix_windows(A, k):
    return A[:k] @ A[:k]


def flipped_across(A, k):
    return np.flip(A[:k], axis=1).sum()


def other_axes(A, k):
    return (A[:k] + A[:, :k]).sum()


def unknown_extents(y, a, b):
    return y[a:b] @ y[a + 1 : b + 1]


def measured(y, k):
    return len(y[:k])


def _line(fn):
    lines, first = inspect.getsourcelines(fn)
    return first + len(lines) - 1  # the return line: each body is one line


@pytest.mark.parametrize(
    "fn, args, error, what",
    [
        (two_windows, (np.ones((3, 4)), 2, 3), UnsupportedError, "two slices of traced bounds"),
        (stepped, (np.ones(6), 4), UnsupportedError, "a step other than 1"),
        (float_bound, (np.ones(6), 1.5), TypeError, "slice indices must be integers"),
        (with_an_index_array, (np.ones((3, 4)), 2), UnsupportedError, "integer-array index"),
        (
            matrix_windows,
            (np.ones((3, 4)), 2),
            UnsupportedError,
            "matrix product with more than 1-d",
        ),
        (flipped_across, (np.ones((4, 4)), 3), UnsupportedError, "np.flip\\(axis=1\\)"),
        (other_axes, (np.ones((4, 4)), 3), UnsupportedError, "on different axes"),
        (unknown_extents, (np.ones(6), 1, 4), UnsupportedError, "with y\\[c:d\\]"),
        (measured, (np.ones(6), 4), UnsupportedError, "len\\(\\) of x\\[a:b\\]"),
    ],
    ids=["two", "step", "float", "index_array", "matrix", "flip", "axes", "extents", "len"],
)
def test_what_windows_cannot_do_is_refused_naming_the_line(fn, args, error, what):
    with pytest.raises(error, match=rf"{what}.*test_windows.py:{_line(fn)}"):
        jitc.jit(fn)(*args)
