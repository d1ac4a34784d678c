"""Results whose size depends on the values (numpy_api/data_sized.py, trace/sized.py): the
caller gets NumPy's arrays of exactly NumPy's sizes, one compiled function serves every
count, and what cannot be computed without the count is an error naming the line.

tests/test_surface.py has each function's rows over dtypes and special values; this file
runs them as user code calls them, in combination, with counts from none to all."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import jitc
from jitc import aot
from jitc.core.errors import UnsupportedError
from jitc.core.pytree import flatten
from tests.conftest import BACKENDS
from tests.fresh import run

RNG = np.random.default_rng(7)


def outliers(x, k):
    """The positions and values of the points more than k standard deviations out."""
    z = np.abs(x - x.mean()) / x.std()
    far = np.flatnonzero(z > k)
    return far, x[far]


def triplets(A):
    """A dense matrix as COO triplets, the way scipy.sparse.coo_array builds them."""
    rows, cols = np.nonzero(A)
    return rows, cols, A[rows, cols]


def majority(labels):
    values, counts = np.unique(labels, return_counts=True)
    return values[np.argmax(counts)], values, counts


def positives(x):
    pos = x[x > 0]
    return np.sort(pos)[-3:], pos.mean(), np.cumsum(pos), pos * 2 - 1


def relabelled(labels):
    """Labels renumbered 0, 1, ... in sorted order, and each label's first position."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return inverse, first


def workload(x, A, labels):
    return outliers(x, 1.5), triplets(A), majority(labels), positives(x), relabelled(labels)


def _inputs(kind):
    """Inputs that select none, some or all of their elements."""
    x = RNG.standard_normal(40)
    A = np.where(RNG.random((6, 5)) < 0.3, RNG.standard_normal((6, 5)), 0.0)
    labels = RNG.integers(0, 5, 30).astype(np.int32)
    if kind == "none":  # nothing far out, nothing positive (one far value needs more spread)
        x, A = -np.abs(np.linspace(1, 1.1, 40)), np.zeros((6, 5))
        labels = np.full(30, 3, np.int32)
    if kind == "all":
        x, A = np.abs(x) + 1, A + 1
        labels = np.arange(30, dtype=np.int32)
    return x, A, labels


def _same(got, want):
    got_leaves, got_tree = flatten(got)
    want_leaves, want_tree = flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        assert type(g) is type(w), (g, w)
        if not isinstance(w, (np.ndarray, np.generic)):  # x[mask].ndim: a Python int
            assert g == w
            continue
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        if w.dtype.kind == "f":  # sums of the selected values: the order of adds differs
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
        else:
            np.testing.assert_array_equal(g, w)


@pytest.fixture(scope="module", params=BACKENDS)
def compiled_workload(request):
    return jitc.jit(workload, backend=request.param)


@pytest.mark.parametrize("kind", ["some", "none", "all"])
def test_one_compiled_function_gives_numpys_sizes_for_every_count(compiled_workload, kind):
    args = _inputs(kind)
    before = [a.copy() for a in args]
    with warnings.catch_warnings():  # the mean of no positives: NaN, as NumPy's
        warnings.simplefilter("ignore", RuntimeWarning)
        want = workload(*args)
        got = compiled_workload(*args)
    _same(got, want)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


def test_nans_are_one_value_or_each_their_own_as_numpy_says():
    x = np.array([3.0, np.nan, 1.0, 3.0, np.nan, -0.5, 1.0, np.inf])

    def f(x):
        return (
            np.unique(x, return_index=True, return_inverse=True, return_counts=True),
            np.unique(x, equal_nan=False, return_counts=True),
            np.unique_all(x),
            x[x == x],
        )

    _same(jitc.jit(f, backend="reference")(x), f(x))


V = np.array([0.0, 5, 3, 0, 2, 3])
M = np.array([[1.0, 2], [-1, 3], [4, 5]])


@pytest.mark.parametrize(
    "fn,x",
    [
        (lambda x: np.unique(x, True, True, True), np.array(5.0)),  # 0-d
        (lambda x: (np.argwhere(x), np.argwhere(x - 5)), np.array(5.0)),
        (lambda x: np.unique(x, return_inverse=True), np.array([[2, 1], [2, 0]], np.uint8)),
        (lambda x: np.unique(x > 2, return_counts=True), V),  # bool
        (lambda x: (np.flatnonzero(x[x > 1]), np.argsort(x[x > 1]), x[x > 1][::-1]), V),
        (lambda x: (np.sort(x[x > 1])[-2], x[x > 1].astype(np.int32), x[x > 1].copy()), V),
        (lambda x: (x[x > 1][1:], x[x > 1][:-1], x[x > 1][-2:], x[x > 1][7:]), V),
        (lambda x: (x[x[:, 0] > 0][:, 1], x[x[:, 0] > 0] - x[0], x[x > 1].ndim), M),
        (lambda x: np.unique(x[x > 0], return_counts=True), M),  # a sized value's unique
        (lambda x: np.nonzero(x[x > 0] > 2), M),
    ],
)
def test_edge_cases_are_numpys(fn, x):
    _same(jitc.jit(fn, backend="reference")(x), fn(x))


def test_windows_of_traced_bounds_are_returned_at_their_run_time_size(backend):
    def head(y, k):
        return y[:k] * 2, y[k:]

    f = jitc.jit(head, backend=backend)
    y = np.arange(6.0)
    for k in (0, 4, 6):
        _same(f(y, k), head(y, k))


def test_a_first_call_in_a_fresh_process_runs_in_the_default_mode(tmp_path):
    out = run(
        tmp_path,
        """
        import numpy as np, jitc

        @jitc.jit
        def f(x):
            values, counts = np.unique(x, return_counts=True)
            return values, counts, x[x > 2], np.nonzero(x == 3)[0]

        x = np.array([3, 1, 3, 5, 1, 3])
        for _ in range(3):  # the reference tier first, then the compiled one
            got, want = f(x), (np.array([1, 3, 5]), np.array([2, 3, 1]), np.array([3, 3, 5, 3]),
                              np.array([0, 2, 5]))
            assert all(np.array_equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))
        print("ok")
        """,
    )
    assert out.strip() == "ok"


def _raises(error, fn, *args, match, backend="reference"):
    with pytest.raises(error, match=match) as info:
        jitc.jit(fn, backend=backend)(*args)
    assert "test_data_sized.py" in str(info.value), str(info.value)
    return str(info.value)


def test_a_reduction_with_no_identity_of_an_empty_selection_is_numpys_error(backend):
    x = np.arange(5.0)
    _raises(ValueError, lambda x: x[x > 9].max(), x, match="np.max: zero-size", backend=backend)
    _raises(
        ValueError, lambda x: np.argmin(x[x > 9]), x, match="argmin of an empty", backend=backend
    )


def test_an_index_past_the_run_time_size_is_an_index_error():
    _raises(IndexError, lambda x: x[x > 2][2], np.arange(5.0), match="index out of bounds")


@pytest.mark.parametrize(
    "fn,what",
    [
        (lambda x: len(x[x > 0]), r"len\(\) of x\[mask\]"),
        (lambda x: np.nonzero(x)[0].shape, r"\.shape of np\.nonzero's result"),
        (lambda x: np.unique(x) + np.nonzero(x)[0], "come from different computations"),
        (lambda x: np.unique(x).reshape(1, -1), r"\.reshape of np\.unique's result"),
        (lambda x: np.unique(x, axis=0), r"np\.unique\(axis=0\)"),
        (lambda x: np.compress(x > 0, x, out=x), r"np\.compress\(out=\)"),
    ],
)
def test_what_needs_the_size_while_tracing_is_refused_naming_the_line(fn, what):
    _raises(UnsupportedError, fn, np.arange(4.0), match=what)


def test_bad_arguments_get_numpys_errors():
    _raises(ValueError, lambda x: np.nonzero(x[0, 0]), np.ones((2, 2)), match="0d arrays")
    _raises(IndexError, lambda x: np.compress(x > 0, x[:2]), np.ones(3), match="more than")
    _raises(ValueError, lambda x: np.compress(x > 0, x), np.ones((2, 2)), match="1-d")


def test_values_of_run_time_size_inside_an_aot_function_compute(tmp_path):
    """AOT results have static shapes; what is computed from sized values inside runs."""

    def f(x):
        values, counts = np.unique(x[x > 0], return_counts=True)
        return counts.max() + np.cumsum(np.sort(x[x > 1])).max(), values.sum()

    aot.compile(f, "f64[16]").write(str(tmp_path))
    spec = importlib.util.spec_from_file_location("sized_aot", tmp_path / "f.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.array([3.0, -1, 2, 3, 0, 5, 2, 2, -4, 1, 1, 7, 3, 3, 0.5, 9])
    _same(module.f(x), f(x))


def test_aot_and_dask_refuse_a_result_of_run_time_size_by_name():
    def positive(x):
        return x[x > 0]

    with pytest.raises(aot.AotLinkError, match=r"x\[mask\] \(at .*test_data_sized.py.*static"):
        aot.compile(positive, "f64[4]")
    da = pytest.importorskip("dask.array")
    with pytest.raises(UnsupportedError, match=r"dask arrays.*x\[mask\].*run time"):
        jitc.jit(positive)(da.ones(4, chunks=2))
