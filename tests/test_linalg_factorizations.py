"""np.linalg's factorizations (eigh, eigvalsh, svd, svdvals, qr) and what NumPy builds on the
SVD (pinv, matrix_rank, lstsq, the 2 / -2 / 'nuc' matrix norms), and SciPy's banded solvers
(solve_banded, dgtsv, sgtsv), against NumPy and SciPy themselves.

jitc calls the LAPACK routines NumPy and SciPy call (syevd, gesdd, geqrf + orgqr, gtsv,
gbsv) on the same column-major copies, so eigenvector and singular-vector signs are
NumPy's and the vectors are compared directly. Each test compiles one function per backend.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from scipy.linalg.lapack import dgtsv, sgtsv

import jitc
from jitc.core.errors import UnsupportedError

RNG = np.random.default_rng(7)
SYM = RNG.standard_normal((2, 3, 5, 5))
SYM = SYM + np.swapaxes(SYM, -1, -2)
TALL = RNG.standard_normal((5, 3))
WIDE = RNG.standard_normal((3, 5))
SYM32 = SYM[0].astype(np.float32)
TALL32 = TALL.astype(np.float32)
INTS = RNG.integers(-3, 4, (4, 4))


def _close(got, want, rtol):
    """Same structure, types, dtypes and shapes; values within rtol (of the largest)."""
    if isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want), (type(got), type(want))
        for g, w in zip(got, want):
            _close(g, w, rtol)
        return
    if isinstance(want, int):  # matrix_rank of a vector: a NumPy int64 in jitc (traced)
        assert isinstance(got, np.int64) and got == want
        return
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def factorizations(sym, tall, wide, sym32, tall32, ints):
    return (
        np.linalg.eigh(sym),
        np.linalg.eigh(sym, UPLO="u"),
        np.linalg.eigvalsh(sym, UPLO="U"),
        np.linalg.svd(sym),
        np.linalg.svd(tall),
        np.linalg.svd(wide, full_matrices=False),
        np.linalg.svd(tall, compute_uv=False),
        np.linalg.svd(sym[0, 0], hermitian=True),
        np.linalg.svd(sym[0, 0], hermitian=True, compute_uv=False),
        np.linalg.svdvals(wide),
        np.linalg.qr(tall),
        np.linalg.qr(wide),
        np.linalg.qr(tall, mode="complete"),
        np.linalg.qr(wide, mode="complete"),
        np.linalg.qr(sym, mode="r"),
        np.linalg.qr(tall, mode="raw"),
        np.linalg.pinv(tall),
        np.linalg.pinv(sym, rtol=None),
        np.linalg.pinv(wide, rcond=0.5),
        np.linalg.matrix_rank(tall @ wide),
        np.linalg.matrix_rank(sym, rtol=0.1),
        np.linalg.matrix_rank(sym, tol=1.0),
        np.linalg.matrix_rank(tall[0]),
        np.linalg.lstsq(tall, wide.T),
        np.linalg.lstsq(tall, tall[:, 0]),
        np.linalg.lstsq(wide, wide[:, 0], rcond=None),
        np.linalg.norm(tall, 2),
        np.linalg.norm(sym, -2, axis=(1, 3)),
        np.linalg.norm(wide, "nuc", keepdims=True),
        np.linalg.matrix_norm(sym, ord=2),
        np.linalg.matrix_norm(sym, ord="nuc", keepdims=True),
        np.linalg.eigh(sym32),
        np.linalg.svd(tall32),
        np.linalg.qr(tall32),
        np.linalg.eigh(ints),
        np.linalg.svd(ints),
    )


def factorizations_slice(sym, tall, wide, sym32, tall32, ints):
    """One call of each LAPACK routine and of what is built on the SVD, in float64: each
    kind compiles a kernel of its own on the cpu (a few seconds each)."""
    return (
        np.linalg.eigh(sym),
        np.linalg.eigvalsh(sym, UPLO="U"),
        np.linalg.svd(tall),
        np.linalg.svd(wide, full_matrices=False),
        np.linalg.svdvals(wide),
        np.linalg.qr(tall),
        np.linalg.qr(tall, mode="raw"),
        np.linalg.pinv(tall),
        np.linalg.lstsq(tall, wide.T),
        np.linalg.norm(tall, 2),
    )


def test_the_factorizations_are_numpys(backend):
    """Every call on the reference backend; a slice of them on the cpu (dtypes and modes
    are decided when tracing, the same code on both)."""
    args = (SYM, TALL, WIDE, SYM32, TALL32, INTS)
    calls = factorizations if backend == "reference" else factorizations_slice
    got = jitc.jit(calls, backend=backend)(*args)
    want = calls(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        single = any(
            getattr(x, "dtype", None) == np.float32 for x in (w if isinstance(w, tuple) else [w])
        )
        _close(g, w, 1e-4 if single else 1e-10)


def test_with_numpys_lapack_the_cpu_gives_numpys_bits():
    """Where NumPy's wheel has its own LAPACK, the cpu calls it (the same routine on the
    same BLAS threads): eigenvectors, singular vectors and Q are NumPy's to the bit, in
    both precisions."""
    from jitc.backends.cpu.lapack import numpy_lapack_address

    if "cpu" not in jitc.backends.available() or numpy_lapack_address(np.float64, "syevd") is None:
        pytest.skip("no cpu backend, or NumPy links a LAPACK other than its own OpenBLAS")
    a = RNG.standard_normal((40, 40))
    a = a + a.T

    def f(a, b):
        return np.linalg.eigh(a), np.linalg.svd(a), np.linalg.qr(b), np.linalg.eigh(b[:10, :10])

    b = a.astype(np.float32)
    for g, w in zip(jitc.jit(f, backend="cpu")(a, b), f(a, b)):
        for x, y in zip(g, w):
            assert x.dtype == y.dtype and np.array_equal(x, y)


AB = RNG.standard_normal((4, 3, 6))
AB[:, 1] += 5  # diagonally dominant
BANDS = RNG.standard_normal((4, 6))
BANDS[2] += 5  # (l, u) = (1, 2): the main diagonal is row u
B = RNG.standard_normal((4, 6))


def banded(ab, bands, b):
    dl, d, du = ab[0, 2, :-1], ab[0, 1], ab[0, 0, 1:]
    return (
        scipy.linalg.solve_banded((1, 1), ab, b[..., None]),
        scipy.linalg.solve_banded((1, 1), ab[0], b[0]),
        scipy.linalg.solve_banded((1, 2), bands, b.T),
        scipy.linalg.solve_banded((0, 0), bands[2:3], b[0]),
        scipy.linalg.solve_banded((1, 2), bands[:, :1], b[0, :1]),
        dgtsv(dl, d, du, b[0]),
        dgtsv(dl, d, du, b.T),
        sgtsv(dl, d, du, b[0]),
        dgtsv(dl, d * 0, du * 0, b[0]),  # singular: info > 0, no error
    )


def banded_slice(ab, bands, b):
    """solve_banded through gtsv and gbsv, and dgtsv: a kernel each on the cpu."""
    return banded(ab, bands, b)[1:3] + banded(ab, bands, b)[6:7]


def test_scipys_banded_solvers(backend):
    calls = banded if backend == "reference" else banded_slice
    got = jitc.jit(calls, backend=backend)(AB, BANDS, B)
    want = calls(AB, BANDS, B)
    if calls is banded_slice:
        _close(got[:2], want[:2], 1e-10)
        *arrays, info = want[2]
        _close(tuple(got[2][:4]), tuple(arrays), 1e-10)
        return
    for g, w in zip(got[:5], want[:5]):
        _close(g, w, 1e-10)
    for g, w in zip(got[5:], want[5:]):
        *arrays, info = w
        _close(tuple(g[:4]), tuple(arrays), 1e-4 if arrays[0].dtype == np.float32 else 1e-10)
        assert isinstance(g[4], np.int32) and g[4] == info


def test_a_stack_of_tridiagonal_systems_is_one_kernel():
    def solve(ab, b):
        return scipy.linalg.solve_banded((1, 1), ab, b)

    ab = RNG.standard_normal((1000, 3, 100))
    ab[:, 1] += 4
    b = RNG.standard_normal((1000, 100, 1))
    compiled = jitc.jit(solve).lower(ab, b).compile()
    assert sum(name.startswith("linalg") for name in compiled.stats()["kernel_names"]) == 1
    _close(compiled(ab, b), solve(ab, b), 1e-10)


def test_a_python_loop_of_dgtsv_calls_is_one_loop():
    def loop(dl, d, du, b):
        x = np.zeros_like(b)
        for i in range(b.shape[0]):
            x[i] = dgtsv(dl[i], d[i], du[i], b[i])[3]
        return x

    dl, du, b = (RNG.standard_normal((40, 7)) for _ in range(3))
    d = RNG.standard_normal((40, 8)) + 4
    b = RNG.standard_normal((40, 8))
    f = jitc.jit(loop)
    assert f.lower(dl, d, du, b).compile().stats()["loops"] == 1
    _close(f(dl, d, du, b), loop(dl, d, du, b), 1e-10)


def test_failures_at_run_time_are_numpys_and_scipys():
    def fails(a, ab):
        return np.linalg.svd(a), scipy.linalg.solve_banded((1, 1), ab, ab[0])

    a, ab = np.eye(3), np.ones((3, 3))
    f = jitc.jit(fails)
    f(a, ab + np.eye(3)[::-1] * 3)  # regular
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
        f(np.diag([np.nan, 1.0, 1.0]), ab + 2)
    with pytest.raises(np.linalg.LinAlgError, match="singular matrix"):
        scipy.linalg.solve_banded((1, 1), ab * 0, ab[0])
    with pytest.raises(np.linalg.LinAlgError, match="singular matrix"):
        f(a, ab * 0)
    with pytest.raises(np.linalg.LinAlgError, match="singular matrix"):
        jitc.jit(lambda ab, b: scipy.linalg.solve_banded((1, 2), ab, b))(
            np.zeros((4, 5)), np.ones(5)
        )


X = RNG.standard_normal((4, 4))
TRACE_ERRORS = [
    (lambda x: np.linalg.eigh(x, UPLO="X"), ValueError, "np.linalg.eigh: UPLO argument"),
    (lambda x: np.linalg.eigvalsh(x[:3]), np.linalg.LinAlgError, "must be square"),
    (lambda x: np.linalg.eigh(x.astype(np.float16)), TypeError, "float16 is unsupported"),
    (lambda x: np.linalg.svd(x[0]), np.linalg.LinAlgError, "np.linalg.svd: argument a: 1-dim"),
    (lambda x: np.linalg.qr(x, mode="full"), ValueError, "np.linalg.qr: Unrecognized mode"),
    (lambda x: np.linalg.pinv(x, rcond=0.1, rtol=0.1), ValueError, "pinv: `rtol` and `rcond`"),
    (lambda x: np.linalg.lstsq(x[0], x[0]), np.linalg.LinAlgError, "argument a: 1-dim"),
    (lambda x: np.linalg.lstsq(x, x[:3]), np.linalg.LinAlgError, "lstsq: Incompatible dim"),
    (
        lambda x: scipy.linalg.solve_banded(1, x[:3], x[0]),
        TypeError,
        "solve_banded: l_and_u must be",
    ),
    (lambda x: scipy.linalg.solve_banded((1, 1), x[0], x[0]), ValueError, "ab must be"),
    (lambda x: scipy.linalg.solve_banded((1, 1), x[:3], x[:3]), ValueError, "not compatible"),
    (lambda x: scipy.linalg.solve_banded((1, 2), x[:3], x[0]), ValueError, "l\\+u\\+1 \\(4\\)"),
    (lambda x: dgtsv(x, x[0], x[0], x[0]), ValueError, "dgtsv: dl must be 1-d"),
    (lambda x: dgtsv(x[0], x[0], x[0], x[0]), ValueError, "dgtsv: dl \\(4,\\), d"),
]


@pytest.mark.parametrize("case", range(len(TRACE_ERRORS)))
def test_errors_at_trace_time_name_the_function_and_the_line(case):
    fn, error, message = TRACE_ERRORS[case]
    with pytest.raises(error, match=message) as e:
        jitc.jit(fn, backend="reference")(X)
    assert "test_linalg_factorizations.py" in str(e.value)


def test_ahead_of_time_and_cuda_refuse_the_factorizations_by_name():
    def eigenvalues(a):
        return np.linalg.eigvalsh(a)

    with pytest.raises(UnsupportedError, match="np.linalg.eigvalsh is not supported in AOT"):
        jitc.aot.compile(eigenvalues, jitc.spec("f64[4,4]"), name="eigenvalues")
    from jitc.backends.cuda.linalg import linalg_kernel

    graph = jitc.jit(eigenvalues).lower(X).graph
    (linalg,) = [n for n in graph.nodes if n.op == "linalg"]
    with pytest.raises(UnsupportedError, match="np.linalg.eigvalsh is not supported on the cuda"):
        linalg_kernel(linalg)
