"""Slices whose bounds are traced (issue 36): `A[i, :j]`, `y[k:]`, `data[ptr[i]:ptr[i + 1]]`,
read, reduced, dotted and written in the jitted function and inside its loops
(trace/window.py). NumPy running the same function is the oracle."""

import inspect

import numpy as np
import pytest

import jitc
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


def flipped(y, k):
    return np.flip(y[:k]).sum()


def returned(y, k):
    return y[:k]


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
        (flipped, (np.ones(6), 4), UnsupportedError, "np.flip"),
        (returned, (np.ones(6), 4), UnsupportedError, "the shape of x\\[a:b\\]"),
    ],
    ids=["two", "step", "float", "index_array", "matrix", "flip", "returned"],
)
def test_what_windows_cannot_do_is_refused_naming_the_line(fn, args, error, what):
    with pytest.raises(error, match=rf"{what}.*test_windows.py:{_line(fn)}"):
        jitc.jit(fn)(*args)
