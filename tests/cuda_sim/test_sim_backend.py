"""The cuda backend under numba's CUDA simulator: every fusion kind and kernel shape, every
elementwise primitive on special values, device arrays in and out, run-time errors, threads.
NumPy is the oracle throughout."""

import threading

import numpy as np
import pytest
from numba import cuda

import jitc
from benchmarks.workloads import cholesky_in_place, csr_matvec, durbin
from jitc.backends.cuda.executable import CudaExecutable
from jitc.backends.reference.interpreter import evaluate
from jitc.fusion.contract import check_graph
from tests.cuda_sim import programs

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(fn, *args, rtol=2e-5):
    """fn on backend="cuda" equals fn under NumPy; returns the Compiled for more checks."""
    compiled = jitc.jit(fn, backend="cuda").lower(*args).compile()
    got = compiled(*args)
    with np.errstate(all="ignore"):
        want = fn(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    return compiled


def kinds(compiled):
    return sorted(n.attrs["kind"] for n in compiled.graph.nodes if n.op == "fusion")


@pytest.mark.parametrize("dtype", programs.DTYPES)
def test_every_elementwise_primitive_on_special_values(dtype):
    g, names = programs.elementwise_graph(dtype)
    fused = programs.one_loop_fusion(g)
    check_graph(fused)
    a, b = programs.special_inputs(dtype)
    got = CudaExecutable(fused)(a, b)
    want = evaluate(g, [a, b])
    rtol = {np.float16: 1e-3, np.float32: 4e-6, np.float64: 1e-13}
    for name, x, y in zip(names, got, want):
        assert x.dtype == y.dtype, name
        if name.startswith("convert") and a.dtype.kind == "f" and x.dtype.kind in "iu":
            # C leaves NaN and out-of-range conversions undefined, and NumPy's answer then
            # depends on its loop, but for int32/int64 (x86's INT_MIN, as the kernels give)
            info = np.iinfo(x.dtype)
            with np.errstate(all="ignore"):  # float16 against uint64's limits: inf
                keep = (np.trunc(a) >= info.min) & (np.trunc(a) <= info.max)
            x, y = (x, y) if x.dtype.kind == "i" and x.itemsize >= 4 else (x[keep], y[keep])
        if x.dtype.kind == "f" and name != "nextafter":  # (a step of one ulp: exact)
            np.testing.assert_allclose(
                x, y, rtol=rtol[x.dtype.type], atol=0, equal_nan=True, err_msg=name
            )
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


def test_float16_nextafter_is_refused_at_the_users_line():
    def step(x):
        return np.nextafter(x, np.float16(1))

    with pytest.raises(
        jitc.core.errors.UnsupportedError,
        match=r"np.nextafter of float16 at .*test_sim_backend.py:\d+: the cuda "
        "backend has no float16 bit step; use backend='cpu'",
    ):
        jitc.jit(step, backend="cuda")(np.zeros(3, np.float16))


@pytest.mark.parametrize("dtype", programs.DTYPES)
def test_shape_ops_reductions_and_dots_per_dtype(dtype):
    args = programs.structure_inputs(dtype, np.random.default_rng(1))
    run(programs.structure, *args)


def test_loop_fusion_broadcasts_operands_and_scalars():
    c = run(lambda x, b, s: np.tanh(x * b + s) - x[:, :1], f32(5, 7, 3), f32(7, 1), 0.5)
    assert kinds(c) == ["loop"] and c.stats()["launches"] == 1


def test_softmax_and_layernorm_rows_are_one_kernel_each():
    x = f32(6, 50)
    x[2, 17] = np.nan
    c = run(softmax, x)
    assert kinds(c) == ["reduction"] and c.stats()["launches"] == 1
    g, b = f32(50), f32(50)
    c = run(
        lambda x: (
            (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
        ),
        f32(6, 50),
    )
    assert kinds(c) == ["reduction"] and c.stats()["launches"] == 1


def test_column_reductions_with_nan_and_ties():
    """Reducing a leading axis: rows run along threadIdx.x, lanes along y."""
    y = np.round(f32(37, 6))
    y[3, 2] = y[30, 2] = np.nan
    y[:, 5] = 1.0  # ties: the first index wins
    run(
        lambda y: (
            y.sum(axis=0),
            y.max(axis=0),
            np.argmax(y, axis=0),
            np.argmin(y, axis=0),
            (y - y.mean(0)) / y.std(0),
        ),
        y,
    )


def test_multi_output_siblings_share_one_kernel():
    c = run(lambda x: (np.exp(x).sum(0), np.sin(x).max(0)), f32(9, 5))
    assert kinds(c) == ["multi"] and c.stats()["launches"] == 1
    c = run(lambda x: (np.exp(x) + 1, np.sin(x) * 2), f32(9, 5))
    assert kinds(c) == ["multi"]


def test_dot_tile_kernel_with_epilogue_on_the_accumulators():
    x, w, b = f32(40, 24), f32(24, 36), f32(36)
    c = run(lambda x, w, b: np.maximum(x @ w + b, 0), x, w, b, rtol=1e-4)
    assert kinds(c) == ["dot"] and c.stats()["launches"] == 1
    assert "dot_tile" in c.as_text(stage="kernels")


def test_dot_skinny_kernel_and_softmax_epilogue():
    x, w = f32(3, 70), f32(70, 40)
    c = run(lambda x, w: np.tanh(x @ w), x, w, rtol=1e-4)
    assert "dot_skinny" in c.as_text(stage="kernels") and c.stats()["launches"] == 1
    c = run(lambda x, w: softmax(x @ w), x, w, rtol=1e-4)
    assert kinds(c) == ["dot"] and c.stats()["launches"] == 2  # dot, then the row kernel


def test_batched_transposed_and_integer_dots():
    q, k = f32(2, 3, 12, 8), f32(2, 3, 10, 8)
    run(lambda q, k: np.einsum("bhqd,bhkd->bhqk", q, k) * 0.5, q, k, rtol=1e-4)
    a = RNG.integers(-50, 50, (10, 7)).astype(np.int32)
    b = RNG.integers(-50, 50, (7, 11)).astype(np.int32)
    run(lambda a, b: (a @ b, (a > 0) @ (b > 0), a.astype(np.int64) @ b), a, b)
    run(lambda a, b: a @ b, np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32))


def test_device_arrays_in_device_arrays_out():
    x, w = f32(4, 6), f32(6, 5)
    fn = jitc.jit(lambda x, w: (np.maximum(x @ w, 0), x.reshape(6, 4)), backend="cuda")
    dx, dw = cuda.to_device(x), cuda.to_device(w)
    y, r = fn(dx, dw)
    assert type(y) is type(dx) and y.shape == (4, 5)  # a (simulated) device array
    np.testing.assert_allclose(y.copy_to_host(), np.maximum(x @ w, 0), rtol=1e-5)
    assert r.shape == (6, 4) and r is not dx  # an input returned as a result is a copy
    np.testing.assert_array_equal(r.copy_to_host(), x.reshape(6, 4))
    np.testing.assert_array_equal(dx.copy_to_host(), x)  # inputs are not written
    host = fn(x, w)[0]  # the same compiled function with NumPy inputs gives NumPy
    assert type(host) is np.ndarray
    np.testing.assert_allclose(host, np.maximum(x @ w, 0), rtol=1e-5)


def test_strided_device_input_is_read_correctly():
    x = f32(5, 8)
    dx = cuda.to_device(np.asfortranarray(x))
    y = jitc.jit(lambda x: x.sum(axis=1) + x[:, 0], backend="cuda")(dx)
    np.testing.assert_allclose(y.copy_to_host(), x.sum(axis=1) + x[:, 0], rtol=1e-5)


def test_out_of_bounds_gather_raises_index_error():
    table = f32(10, 3)
    fn = jitc.jit(lambda t, i: t[i] * 2, backend="cuda")
    np.testing.assert_allclose(fn(table, np.array([9, -10, 0])), table[[9, -10, 0]] * 2)
    with pytest.raises(IndexError, match="out of bounds"):
        fn(table, np.array([1, 10, 2]))
    with pytest.raises(IndexError):
        fn(table, np.array([-11, 0, 2]))


def test_negative_integer_power_raises_value_error():
    fn = jitc.jit(lambda x, y: x**y, backend="cuda")
    x = np.array([2, 3, 4], np.int64)
    np.testing.assert_array_equal(fn(x, np.array([3, 0, 1], np.int64)), x ** [3, 0, 1])
    with pytest.raises(ValueError, match="negative integer powers"):
        fn(x, np.array([1, -1, 2], np.int64))


def test_calls_from_many_threads():
    fn = jitc.jit(softmax, backend="cuda")
    xs = [f32(3, 9) for _ in range(4)]
    fn(xs[0])
    results = [None] * len(xs)

    def call(i):
        results[i] = fn(xs[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, r in zip(xs, results):
        np.testing.assert_allclose(r, softmax(x), rtol=1e-5)


def test_stats_and_ptx_of_a_compiled_function():
    c = jitc.jit(softmax, backend="cuda").lower(f32(4, 8)).compile()
    stats = c.stats()
    assert {"ops", "fusions", "kernels", "temp_bytes", "launches"} <= set(stats)
    ptx = c.as_text(stage="ptx")  # compiled by NVVM in a child process (no simulator there)
    assert ".target sm_90" in ptx and ptx.count(".entry") == 1
    assert "reduction_" in ptx
    with pytest.raises(ValueError, match="stage"):
        c.as_text(stage="sass")


def test_a_product_feeding_a_sum_is_not_contracted_into_an_fma():
    """NumPy rounds w * g, then w - that: an FMA (NVVM's and ptxas's default for `*` then `-`)
    rounds once and differs in the last bit. The PTX shows the product kept apart."""
    w, g = f32(64, 33), f32(64, 33)

    def sgd(w, g):
        return w - 0.1 * g + w * w

    c = jitc.jit(sgd, backend="cuda").lower(w, g).compile()
    np.testing.assert_array_equal(c(w, g), sgd(w, g))
    ptx = c.as_text(stage="ptx")
    assert "mul.rn.f32" in ptx and "fma." not in ptx, ptx


def _loops(x, y, n):
    """Issue 36's loop forms in one function: a Python `for` with a traced trip count
    writing its carried array in place, a `while` on a traced test, a branch on a traced
    scalar whose both results are used, nested loops and a zero-trip loop."""
    for _ in range(n):
        x[1:-1] = 0.5 * (x[:-2] + x[2:])
    s = 0.0
    while s < 10.0:
        s = s + np.abs(y).sum()
    t = x.sum() if s > 20.0 else -y.sum()
    for i in range(3):
        for j in range(i):
            y = y + x[i] * x[j]
    for _ in range(n - n):
        y = y * 0.0
    return x, s, t, y


def test_loops_run_from_the_host_and_match_numpy():
    """The cuda backend runs a loop's step kernels from the host while the flag the step
    computes on the device is true (program.HostLoop); the caller's array is written in
    place as NumPy writes it."""
    x, y = f32(12), f32(5)
    mine, theirs = x.copy(), x.copy()
    got = jitc.jit(_loops, backend="cuda")(mine, y, 4)
    want = _loops(theirs, y, 4)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5)
    np.testing.assert_allclose(mine, theirs, rtol=2e-5)
    ptx = jitc.jit(_loops, backend="cuda").lower(x, y, 4).compile().as_text(stage="ptx")
    assert ptx.count("// jitc kernel") >= 3  # the steps' kernels, made like any other


def test_issue_36s_scalar_loops_match_numpy_on_cuda():
    """Window reads and writes with traced bounds inside loops (more than 8 trips: shorter
    static ranges run as Python): Levinson-Durbin, Cholesky in place, a CSR mat-vec, the
    float64 oracle NumPy."""
    lags = np.arange(12)
    r = np.exp(-0.5 * lags) * np.cos(0.1 * lags)
    s = RNG.standard_normal((9, 9))
    indptr = np.concatenate([[0], np.cumsum(RNG.integers(0, 3, 10))])
    data, indices = RNG.random(indptr[-1]), RNG.integers(0, 4, indptr[-1])
    for fn, args in [
        (durbin, (r,)),
        (cholesky_in_place, (s @ s.T + 9 * np.eye(9),)),
        (csr_matvec, (data, indices, indptr, RNG.random(4))),
    ]:
        compiled = jitc.jit(fn, backend="cuda").lower(*args).compile()
        assert any(n.op == "while" for n in compiled.graph.nodes)
        mine = [a.copy() for a in args]
        np.testing.assert_allclose(compiled(*mine), fn(*args), rtol=1e-12)
    # unrolled (7 trips), a one-element window's read in a kernel of one element: it was
    # read at the thread's position in a branch before the loop over positions
    np.testing.assert_allclose(jitc.jit(durbin, backend="cuda")(r[:8]), durbin(r[:8]), rtol=1e-12)


def test_a_failure_inside_a_loop_stops_it_and_names_the_users_line():
    def read_past(a, n):
        s = 0.0
        for k in range(n):
            s += a[k]
        return s

    with pytest.raises(IndexError):  # NumPy's verdict
        read_past(np.ones(5), 6)
    line = read_past.__code__.co_firstlineno + 3
    with pytest.raises(IndexError, match=rf"gather.*test_sim_backend.py:{line}"):
        jitc.jit(read_past, backend="cuda")(np.ones(5), 6)


def test_results_of_run_time_size_are_numpys():
    """x[mask], np.nonzero and np.unique (numpy_api/data_sized.py): a running count and a
    scatter on the device, the result cut to its count on the way out."""
    x = np.array([[3.0, -1.0, 2.0], [3.0, 0.0, 5.0]], np.float32)
    run(
        lambda x: (
            x[x > 0],
            *np.nonzero(x),
            *np.unique(x, return_index=True, return_inverse=True, return_counts=True),
            np.sort(x[x > 1]) * 2,
        ),
        x,
    )
