"""The cpu backend as a system: threads, the persistent cache, dumps, lowering coverage."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jitc
from jitc.core import ops


def _softmax_layer(x, W, b):
    y = np.maximum(x @ W + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _inputs(batch=16):
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((batch, 64), dtype=np.float32),
        rng.standard_normal((64, 32), dtype=np.float32),
        rng.standard_normal(32, dtype=np.float32),
    )


_SPECIAL = {
    np.float32: [0.0, -0.0, 1.5, -2.5, 3.0, 1e-3, 100.0, np.inf, -np.inf, np.nan, 0.5, -1.0],
    np.float64: [0.0, -0.0, 1.5, -2.5, 3.0, 1e-3, 100.0, np.inf, -np.inf, np.nan, 0.5, -1.0],
    np.int32: [0, 1, -1, 7, -7, 3, 2**31 - 1, -(2**31), 2, -3, 31, 5],
    np.int64: [0, 1, -1, 7, -7, 3, 2**63 - 1, -(2**63), 2, -3, 63, 5],
    np.bool_: [True, False, True, True, False, False, True, False, True, False, True, False],
}


def _elementwise_graph(dtype):
    """One graph applying every elementwise primitive NumPy has a `dtype` loop for."""
    from jitc.core.ir import Graph

    g = Graph(f"all_{np.dtype(dtype).name}")
    a = g.add_parameter((12,), dtype)
    b = g.add_parameter((12,), dtype)
    names = []
    for op in sorted(ops.UNARY | ops.PREDICATES | ops.BINARY | ops.COMPARE):
        n = 1 if op in ops.UNARY | ops.PREDICATES else 2
        try:
            loop = getattr(np, op).resolve_dtypes((np.dtype(dtype),) * n + (None,))
        except TypeError:
            continue
        if loop[:n] != (np.dtype(dtype),) * n:
            continue
        if op == "power" and np.dtype(dtype).kind == "i":
            continue  # NumPy raises for the negative exponents among the inputs
        g.outputs.append(g.add(op, [a, b][:n], {}, (12,), loop[n]))
        names.append(op)
    return g, names


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_every_elementwise_primitive_matches_numpy_on_special_values(dtype):
    from jitc.backends.cpu.executable import CpuExecutable
    from jitc.backends.reference.interpreter import evaluate

    g, names = _elementwise_graph(dtype)
    a = np.array(_SPECIAL[dtype], dtype=dtype)
    b = np.roll(a, 3)
    got = CpuExecutable(g)(a, b)
    want = evaluate(g, [a, b])
    for name, x, y in zip(names, got, want):
        assert x.dtype == y.dtype, name
        if x.dtype.kind == "f":
            np.testing.assert_allclose(
                x,
                y,
                rtol=4e-6 if x.dtype == np.float32 else 1e-13,
                atol=0,
                equal_nan=True,
                err_msg=name,
            )
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


def test_results_match_numpy_and_the_source_is_kept():
    f = jitc.jit(_softmax_layer, backend="cpu")
    args = _inputs()
    np.testing.assert_allclose(f(*args), _softmax_layer(*args), rtol=2e-5, atol=1e-7)
    compiled = f.lower(*args).compile()
    assert "def driver(" in compiled.executable.source


def test_eight_threads_calling_one_compiled_function():
    f = jitc.jit(_softmax_layer, backend="cpu")
    rng = np.random.default_rng(1)
    W = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal(32, dtype=np.float32)
    xs = [rng.standard_normal((16, 64), dtype=np.float32) for _ in range(8)]
    f(xs[0], W, b)  # compile once up front; the threads then share it
    results = [None] * 8

    def work(i):
        for _ in range(20):
            results[i] = f(xs[i], W, b)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, r in zip(xs, results):
        np.testing.assert_allclose(r, _softmax_layer(x, W, b), rtol=2e-5, atol=1e-7)


_SCRIPT = textwrap.dedent("""
    import numpy as np, jitc
    def f(x):
        return np.tanh(x * 0.5) + x.sum(axis=-1, keepdims=True)
    x = np.linspace(-3, 3, 48, dtype=np.float32).reshape(4, 12)
    got = jitc.jit(f, backend="cpu")(x)
    np.testing.assert_allclose(got, f(x), rtol=2e-5, atol=1e-6)
    print("ok")
""")


def _run(cache_dir):
    env = dict(os.environ, JITC_CACHE_DIR=str(cache_dir))
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )


def test_a_corrupted_cache_entry_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    assert _run(cache).stdout.strip() == "ok"
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert entries, "the first process left nothing in the cache"
    for p in entries:  # truncate or scramble everything it wrote
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 3] + b"\x00garbage")
    second = _run(cache)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "ok"


def test_the_cache_directory_is_private_and_a_shared_one_is_refused(tmp_path):
    cache = tmp_path / "fresh"
    assert _run(cache).stdout.strip() == "ok"
    assert (cache.stat().st_mode & 0o777) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = _run(shared)
    assert result.returncode != 0
    assert "other users can write" in result.stderr


def test_jitc_dump_writes_the_generated_source(tmp_path):
    env = dict(os.environ, JITC_DUMP=str(tmp_path / "dump"), JITC_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    dumped = list((tmp_path / "dump").glob("*.cpu.py"))
    assert dumped and "def driver(" in dumped[0].read_text()


@pytest.mark.parametrize("batch", [1, 5])
def test_new_batch_sizes_give_numpy_results(batch):
    f = jitc.jit(_softmax_layer, backend="cpu")
    args = _inputs(batch)
    np.testing.assert_allclose(f(*args), _softmax_layer(*args), rtol=2e-5, atol=1e-7)


def _large_program(x, y, idx):
    """1-d and 2-d kernels big enough to run split across threads (loops.py's parallel
    paths): strided, reversed and broadcast reads, iota, concatenate, gather, reductions."""
    n = x.shape[0]
    a = np.tanh(x[::2] * 0.5 + y[::-2]) + np.arange(n // 2, dtype=np.float32) * 1e-6
    b = np.concatenate([x[: n // 2], y[n // 2 :]]) * 2.0 + 1.0
    c = np.exp(-np.abs(x))[idx]
    m = x.reshape(256, -1)
    row = np.exp(m - m.max(axis=1, keepdims=True))
    return a, b, c, row / row.sum(axis=1, keepdims=True), m.sum(axis=0)


def test_kernels_split_across_threads_match_numpy():
    from jitc.backends.cpu.launcher import PARALLEL_MIN_WORK

    n = 4 * PARALLEL_MIN_WORK
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    idx = rng.integers(-n, n, size=n // 2)
    got = jitc.jit(_large_program, backend="cpu")(x, y, idx)
    for g, want in zip(got, _large_program(x, y, idx)):
        assert g.dtype == want.dtype and g.shape == want.shape
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=5e-5)  # float32 sums of 256


def test_a_blas_product_splits_into_few_large_blocks():
    """A BLAS kernel's launch is given work for at most BLAS_CHUNKS_PER_THREAD tasks per
    thread (one BLAS call each; GEMV_CHUNKS_PER_THREAD for a gemv), whatever its own work;
    its blocks still give NumPy's answer, over rows at batch 300 (gemm) and over a matrix's
    rows times a vector (gemv). A depth split's blocks are sized already: its launch is
    given all its work."""
    import numba

    from jitc.backends.cpu import launcher
    from jitc.backends.cpu.driver import LAUNCH_ENTRY, LAUNCH_TABLE, LAUNCHES

    rng = np.random.default_rng(5)
    w = rng.standard_normal((512, 1024)).astype(np.float32)
    f = jitc.jit(lambda x, w: np.tanh(x @ w), backend="cpu")
    g = jitc.jit(lambda x, w: np.tanh(w @ x[0]), backend="cpu")
    one_each = numba.config.NUMBA_NUM_THREADS * launcher.CHUNK_MIN_WORK  # a task per thread
    for fn, batch, tasks in (
        (g, 1, launcher.GEMV_CHUNKS_PER_THREAD),
        (f, 300, launcher.BLAS_CHUNKS_PER_THREAD),
        (f, 1, None),
    ):
        x = rng.standard_normal((batch, 1024 if fn is g else 512)).astype(np.float32)
        want = np.tanh(w @ x[0]) if fn is g else np.tanh(x @ w)
        # float32 sums of 512 products in the BLAS's order, not NumPy's: MKL's AVX2 kernels
        # (an AMD EPYC) differ from NumPy's OpenBLAS by up to 3.3e-5 here
        np.testing.assert_allclose(fn(x, w), want, rtol=2e-5, atol=1e-4)
        executable = fn.lower(x, w).compile().executable
        blas = [k for k in executable.program.kernels if k.blas]
        assert len(blas) == 1
        cap = blas[0].work if tasks is None else tasks * one_each
        assert blas[0].work > 2 * one_each and blas[0].sized == (tasks is None)
        n = executable.state
        works = [
            n[e + 3]
            for e in range(
                n[LAUNCH_TABLE], n[LAUNCH_TABLE] + LAUNCH_ENTRY * n[LAUNCHES], LAUNCH_ENTRY
            )
        ]
        assert cap in works


# Operand layouts of dot_general: the groups (batch, free, contracting) in every storage
# order a 3-d view covers, large enough for BLAS (strided sub-matrices, trans flags, gemv
# for one row, column splits for few rows) and small enough for the generated loops.
DOT_LAYOUTS = [
    ("bmk,bkn->bmn", (4, 64, 64), (4, 64, 64)),
    ("mbk,nbk->bmn", (64, 4, 64), (64, 4, 64)),  # attention's q @ k.T, heads in the middle
    ("bmk,kbn->bmn", (4, 64, 64), (64, 4, 64)),
    ("kbm,bkn->bmn", (64, 4, 64), (4, 64, 64)),  # lhs rows contiguous: a transposed lhs
    ("mk,kn->mn", (1, 700), (700, 600)),  # one row: gemv
    ("mk,nk->mn", (1, 700), (600, 700)),
    ("km,nk->mn", (300, 40), (600, 300)),
    ("mk,kn->mn", (1, 701), (701, 600)),  # one row: depth split, uneven chunks
    ("km,kn->mn", (701, 1), (701, 600)),
    ("bmk,bnk->bmn", (3, 1, 300), (3, 600, 300)),  # few rows: columns split
    ("mbk,kbn->bmn", (1, 3, 300), (300, 3, 600)),
    ("bkm,bnk->bmn", (3, 300, 2), (3, 600, 300)),
    ("bmk,bkn->bmn", (2, 3, 5), (2, 5, 7)),  # loops
    ("mbk,nbk->bmn", (3, 2, 5), (7, 2, 5)),  # loops, inner products
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_kernels_over_every_operand_layout_match_numpy(dtype):
    rng = np.random.default_rng(4)
    for spec, sa, sb in DOT_LAYOUTS:
        a = rng.standard_normal(sa).astype(dtype)
        b = rng.standard_normal(sb).astype(dtype)
        f = jitc.jit(lambda a, b, spec=spec: np.einsum(spec, a, b), backend="cpu")
        want = np.einsum(spec, a, b)
        got = f(a, b)
        assert got.dtype == want.dtype and got.shape == want.shape, spec
        np.testing.assert_allclose(
            got,
            want,
            rtol=1e-5 if dtype == np.float32 else 1e-12,
            atol=1e-4 if dtype == np.float32 else 1e-12,
            err_msg=spec,
        )


def test_a_row_times_a_matrix_splits_its_depth_into_partial_rows():
    """`x @ W` at batch 1 splits W's rows (contiguous blocks) over threads, one partial row
    each, summed in order; a column slice of W (rows further apart than its width), a
    row of a matrix, complex dtypes and an epilogue give NumPy's answer."""
    rng = np.random.default_rng(8)
    w = rng.standard_normal((700, 1024))
    x = rng.standard_normal((4, 700))
    cases = [
        (lambda x, w: x[2:3] @ w[:, 100:700], 600),
        (lambda x, w: np.tanh(x[:1] @ w) + w[0], 1024),
        (lambda x, w: x[1] @ w, 1024),
    ]
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        xs, ws = x.astype(dtype), w.astype(dtype)
        if dtype in (np.complex64, np.complex128):
            xs, ws = xs + 1j * x[::-1].astype(dtype), ws - 0.5j * w[::-1].astype(dtype)
        for fn, n in cases:
            f = jitc.jit(fn, backend="cpu")
            want, got = fn(xs, ws), f(xs, ws)
            assert got.dtype == want.dtype and got.shape == want.shape
            tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 30, err_msg=str(dtype))
            kernels = f.lower(xs, ws).compile().as_text("kernels")
            assert "k1 = (c + 1) * " in kernels and "out_c[j] += p_c[j]" in kernels, n


def test_the_depth_split_takes_rows_of_a_matrix_only_where_threads_share_them():
    """A depth split needs two threads, DEPTH_MIN_ROWS rows of W per thread, one row of
    output and W's rows contiguous; else the product splits as before."""
    from jitc.backends.cpu import dot
    from jitc.core.ir import Graph

    def shape(x_shape, w_shape, transposed=False, threads=2):
        g = Graph("dot")
        x = g.add_parameter(x_shape, np.float32)
        w = g.add_parameter(w_shape, np.float32)
        k = len(w_shape) - 1 if transposed else 0
        attrs = {"lhs_contracting": (1,), "rhs_contracting": (k,), "lhs_batch": (), "rhs_batch": ()}
        node = g.add("dot_general", [x, w], attrs, (x_shape[0], w_shape[1 - k]), np.float32)
        return dot.dot_shape(node, *dot.view_orders(node), threads=threads)

    rows = 4 * dot.DEPTH_MIN_ROWS  # and enough multiply-adds for BLAS
    assert shape((1, rows), (rows, 1024)).split == "depth"
    assert shape((1, rows), (rows, 1024), threads=4).chunks == 4
    assert shape((1, rows), (rows, 1024), threads=8).split == "columns"  # too few rows each
    assert shape((1, rows), (rows, 1024), threads=1).split == "columns"
    assert shape((2, rows), (rows, 1024)).split == "columns"
    assert shape((1, rows), (1024, rows), transposed=True).split == "columns"


def roll_stencil(u):
    return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 2, 1) + np.roll(u, -1, 1) - 4 * u


@pytest.mark.parametrize("shape", [(9, 13), (1, 5), (4, 2)])
def test_a_roll_stencil_cuts_its_loop_at_the_seams(shape):
    """np.roll reads a concatenate; the kernel is cut into cells at the seams so that no
    innermost loop holds a branch (which keeps it from vectorizing)."""
    u = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    c = jitc.jit(roll_stencil).lower(u).compile(backend="cpu")
    np.testing.assert_array_equal(c(u), roll_stencil(u))
    bodies = _loop_bodies(c.executable.source, "for i1 in range(")
    assert bodies and not [
        line
        for body in bodies
        for line in body
        if line.lstrip().startswith(("if ", "elif ", "else"))
    ]


def _loop_bodies(source, head):
    """The lines inside each loop of `source` that starts with `head`."""
    lines, bodies = source.splitlines(), []
    for k, line in enumerate(lines):
        if line.lstrip().startswith(head):
            depth, body = len(line) - len(line.lstrip()), []
            for inner in lines[k + 1 :]:
                if len(inner) - len(inner.lstrip()) <= depth:
                    break
                body.append(inner)
            bodies.append(body)
    return bodies


def test_an_index_offset_is_a_sum_of_other_terms():
    """Only sums: a difference (n_5 + i1 - n_6) may be negative where the index is not, and
    a row slice from a negative offset would count from the end."""
    from jitc.backends.cpu.loops import _offset_of

    assert _offset_of("i1", "i1") == ""
    assert _offset_of("3 + (i1 + n_2)", "i1") == "3 + n_2"
    assert _offset_of("nonneg(n_5 - n_6) + i1", "i1") == "nonneg(n_5 - n_6)"
    for no in ("(n_5 + i1 - n_6)", "n_5 - i1", "i1 - n_6", "i1 * 2", "i1 + i1"):
        assert _offset_of(no, "i1") is None


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int8])
def test_a_roll_of_the_flattened_array(dtype):
    """np.roll without an axis reads a concatenate through a reshape (a regression: a row
    slice once started at a negative offset there)."""
    x = np.arange(24).reshape(4, 6).astype(dtype)
    f = jitc.jit(lambda a: (np.roll(a, 5), np.roll(a, -7).T + 1))
    for g, w in zip(f(x), (np.roll(x, 5), np.roll(x, -7).T + 1)):
        np.testing.assert_array_equal(g, w)
