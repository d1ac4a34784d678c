"""np.linalg.solve, inv, cholesky, det and slogdet (LAPACK on the cpu backend) against NumPy,
which calls another LAPACK build: values within rtol 1e-10 (float64) / 1e-4 (float32) on
well-conditioned matrices, NumPy's dtypes and result types, stacks, non-contiguous
operands, NumPy 2's rules for solve's b, NumPy's LinAlgError at run time (the caller's
arrays untouched), shape errors naming the function and argument at trace time, and the
refusal in AOT. tests/cuda_sim runs these on the cuda backend (under numba's simulator)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitc
from jitc.core.errors import ShapeError, UnsupportedError

RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


def _well_conditioned(rng, shape, dtype):
    """Matrices with a dominant diagonal (int: small integers, still nonsingular)."""
    n = shape[-1]
    if np.dtype(dtype).kind in "iu":
        return (rng.integers(-3, 4, shape) + 4 * n * np.eye(n, dtype=np.int64)).astype(dtype)
    return (0.5 * rng.standard_normal(shape) / np.sqrt(n) + np.eye(n)).astype(dtype)


def _same(got, want):
    """NumPy's type, dtype and shape; values within the LAPACK-to-LAPACK tolerance."""
    if isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert type(got) is type(want), (type(got), type(want))
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    scale = np.abs(want[np.isfinite(want)]).max(initial=0)
    np.testing.assert_allclose(got, want, rtol=RTOL[want.dtype], atol=RTOL[want.dtype] * scale)


def everything(a, b, b1, s):
    """Every function, each on a's (..., n, n) stack; s is symmetric positive definite."""
    return (
        np.linalg.solve(a, b),
        np.linalg.solve(a, b1),
        np.linalg.inv(a),
        np.linalg.det(a),
        np.linalg.slogdet(a),
        np.linalg.cholesky(s),
        np.linalg.cholesky(s, upper=True),
    )


@pytest.fixture(scope="module")
def jitted():
    """One jitted function per backend, shared by the cases (kernels compile once)."""
    cache = {}
    return lambda backend: cache.setdefault(backend, jitc.jit(everything, backend=backend))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("batch,n", [((), 5), ((1000,), 4), ((), 64), ((2, 3), 3)])
def test_every_function_is_numpys(backend, jitted, dtype, batch, n):
    rng = np.random.default_rng(n)
    a = _well_conditioned(rng, batch + (n, n), dtype)
    b = rng.standard_normal(batch + (n, 2)).astype(dtype)
    b1 = rng.standard_normal(n).astype(dtype)  # one vector against the whole stack
    s = (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=a.dtype)).astype(a.dtype)
    copies = a.copy(), b.copy(), b1.copy(), s.copy()
    _same(jitted(backend)(a, b, b1, s), everything(a, b, b1, s))
    for before, after in zip(copies, (a, b, b1, s)):
        np.testing.assert_array_equal(before, after)


def test_results_in_numpys_dtypes(backend):
    """float32 stays float32; float32 beside float64 or an int, bools and ints: float64."""

    def mixed(a32, b64, ai, ab):
        return (
            np.linalg.solve(a32, b64),
            np.linalg.solve(a32, ai[:, 0]),
            np.linalg.det(ab),
            np.linalg.inv(ai),
            np.linalg.det(a32),
        )

    rng = np.random.default_rng(0)
    a32 = _well_conditioned(rng, (3, 3), np.float32)
    b64 = rng.standard_normal((3, 1))
    ai = _well_conditioned(rng, (3, 3), np.int32)
    ab = np.eye(3, dtype=bool)
    _same(jitc.jit(mixed, backend=backend)(a32, b64, ai, ab), mixed(a32, b64, ai, ab))


def test_non_contiguous_operands(backend):
    """Transposed and strided operands, made inside the function and passed by the caller."""

    def views(a, b):
        return (
            np.linalg.solve(a.T, b[::2]),
            np.linalg.inv(a[::2, ::2]),
            np.linalg.det(a[1::2, ::2].T),
            np.linalg.cholesky(a[::2, ::2] @ a[::2, ::2].T),
        )

    rng = np.random.default_rng(1)
    a = _well_conditioned(rng, (8, 8), np.float64)
    b = rng.standard_normal((16, 3))
    f = jitc.jit(views, backend=backend)
    _same(f(a, b), views(a, b))
    at, bs = a.T, b[::2]  # the caller's own views
    _same(jitc.jit(np.linalg.solve, backend=backend)(at, bs), np.linalg.solve(at, bs))
    _same(jitc.jit(np.linalg.inv, backend=backend)(a[::2, ::2]), np.linalg.inv(a[::2, ::2]))


def test_solve_b_follows_numpy2(backend):
    """b 1-d: one vector per matrix of the stack; b (..., n, k): stacks broadcast together
    (a (..., n) b is a stack of matrices in NumPy 2, not of vectors)."""

    def rules(a, b1, bk, bstack):
        return (
            np.linalg.solve(a, b1),
            np.linalg.solve(a, bk),
            np.linalg.solve(a[0], bstack),
            np.linalg.solve(a, bstack[:, None]),
        )

    rng = np.random.default_rng(2)
    a = _well_conditioned(rng, (3, 4, 4), np.float64)
    b1, bk = rng.standard_normal(4), rng.standard_normal((2, 1, 4, 5))
    bstack = rng.standard_normal((2, 4, 4))
    _same(jitc.jit(rules, backend=backend)(a, b1, bk, bstack), rules(a, b1, bk, bstack))


def _raises_numpys(backend, fn, *args, message):
    """NumPy raises LinAlgError(message) here; so does jitc, and leaves the args as they were."""
    copies = [x.copy() for x in args]
    with pytest.raises(np.linalg.LinAlgError, match=f"^{message}$"):
        fn(*args)
    # cuda names the function first, as for its other run-time errors ("inv: Singular ...");
    # every backend then names the NumPy call and the user's line
    with pytest.raises(
        np.linalg.LinAlgError,
        match=f"{'' if backend == 'cuda' else '^'}{message} in "
        r"np\.linalg\.\w+ at .*test_linalg_lapack\.py:\d+$",
    ):
        jitc.jit(fn, backend=backend)(*args)
    for before, after in zip(copies, args):
        np.testing.assert_array_equal(before, after)


def test_singular_and_not_positive_definite_raise_numpys_linalgerror(backend):
    rng = np.random.default_rng(3)
    a = _well_conditioned(rng, (5, 3, 3), np.float64)
    a[3, 1] = 0  # one matrix of the stack exactly singular (LU of a or of a.T alike)
    b = rng.standard_normal((5, 3, 1))
    _raises_numpys(backend, np.linalg.solve, a, b, message="Singular matrix")
    _raises_numpys(backend, lambda x: np.linalg.inv(x) * 2, a, message="Singular matrix")
    _raises_numpys(backend, np.linalg.inv, np.zeros((2, 2), np.float32), message="Singular matrix")
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    _raises_numpys(
        backend, np.linalg.cholesky, indefinite, message="Matrix is not positive definite"
    )
    _raises_numpys(
        backend,
        lambda x: np.linalg.cholesky(x + 0, upper=True),
        indefinite.astype(np.float32),
        message="Matrix is not positive definite",
    )


def test_singular_det_is_exactly_zero(backend):
    """NumPy: sign 0, log|det| -inf and det +0.0 (not -0.0), whatever the pivots."""

    def dets(a):
        return np.linalg.det(a), np.linalg.slogdet(a)

    a = np.array([[[0.0, 1.0], [0.0, 2.0]], [[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]]])
    got, want = jitc.jit(dets, backend=backend)(a), dets(a)
    _same(got, want)
    np.testing.assert_array_equal(got[0], [0.0, 0.0, -1.0])
    np.testing.assert_array_equal(np.signbit(got[0]), [False, False, True])
    np.testing.assert_array_equal(got[1].sign, want[1].sign)


def test_lower_triangle_is_what_cholesky_reads(backend):
    """NumPy reads the lower triangle (upper=True: the upper one); the other is ignored."""

    def both(s):
        return np.linalg.cholesky(s), np.linalg.cholesky(s, upper=True)

    s = np.array([[4.0, -1.0, 0.5], [2.0, 5.0, 1.0], [1.0, 3.0, 6.0]])  # both triangles PD
    _same(jitc.jit(both, backend=backend)(s), both(s))
    _same(jitc.jit(both, backend=backend)(s.T), both(s.T))


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda a, b: np.linalg.inv(a[0]), r"np\.linalg\.inv: argument a: 1-dimensional"),
        (
            lambda a, b: np.linalg.det(a[:, :3]),
            r"np\.linalg\.det: argument a of shape \(4, 3\): Last 2 dimensions .* square",
        ),
        (lambda a, b: np.linalg.cholesky(a[:3]), r"np\.linalg\.cholesky: argument a of shape"),
        (lambda a, b: np.linalg.slogdet(a[:2]), r"np\.linalg\.slogdet: argument a of shape"),
        (lambda a, b: np.linalg.solve(a[:, :2], b), r"np\.linalg\.solve: argument a of shape"),
    ],
)
def test_non_square_a_is_numpys_linalgerror_naming_the_call(call, message):
    a, b = np.eye(4), np.ones(4)
    with pytest.raises(np.linalg.LinAlgError):
        call(a, b)
    with pytest.raises(np.linalg.LinAlgError, match=message) as info:
        jitc.jit(call)(a, b)
    assert "test_linalg_lapack.py" in str(info.value)


@pytest.mark.parametrize(
    "call", [np.linalg.inv, np.linalg.det, np.linalg.cholesky, lambda a: np.linalg.solve(a, a[0])]
)
def test_float16_is_numpys_typeerror(call):
    a = np.eye(3, dtype=np.float16)
    with pytest.raises(TypeError, match="float16 is unsupported in linalg"):
        call(a)
    with pytest.raises(
        TypeError,
        match=r"np\.linalg\.\w+: array type float16 is unsupported"
        r" in linalg \(at .*test_linalg_lapack.py",
    ):
        jitc.jit(call)(a)


@pytest.mark.parametrize(
    "b", [np.ones(3), np.ones((3, 1)), np.ones((3, 4)), np.ones((2, 5, 4, 1)), np.float64(1)]
)
def test_mismatched_b_names_solve_and_b(b):
    def f(a, b):
        return np.linalg.solve(a, b)

    a = np.ones((3, 4, 4))
    with pytest.raises(ValueError):
        f(a, b)
    with pytest.raises(ShapeError, match=r"np\.linalg\.solve: .*b .*(does not fit|broadcast)"):
        jitc.jit(f)(a, b)


@pytest.mark.parametrize(
    "a,b",
    [
        (np.zeros((0, 0)), np.zeros((0, 3))),
        (np.zeros((0, 3, 3)), np.zeros((0, 3, 2))),
        (np.zeros((2, 0, 0)), np.zeros(0)),
    ],
)
def test_empty_matrices_and_stacks(backend, a, b):
    """0 x 0 matrices: det 1.0, empty inverse and factor; empty stacks: empty results."""

    def empty(a, b):
        return (
            np.linalg.det(a),
            np.linalg.inv(a),
            np.linalg.solve(a, b),
            np.linalg.slogdet(a),
            np.linalg.cholesky(a),
        )

    _same(jitc.jit(empty, backend=backend)(a, b), empty(a, b))


def test_writing_the_inverse_over_its_matrix(backend):
    """A[...] = inv(A) in the caller's array: LAPACK reads its own copy of each matrix."""

    def invert_in_place(a):
        a[...] = np.linalg.inv(a)
        a += 1.0

    rng = np.random.default_rng(5)
    a = _well_conditioned(rng, (6, 5, 5), np.float64)
    want = a.copy()
    invert_in_place(want)
    jitc.jit(invert_in_place, backend=backend)(a)
    _same(a, want)


_NEW_PROCESS = textwrap.dedent("""
    import numpy as np, jitc
    def f(a, b):
        return np.linalg.solve(a, b), np.linalg.det(a), np.linalg.cholesky(a @ a.T)
    a = np.eye(4) * 3 + np.arange(16.0).reshape(4, 4) / 16
    b = np.arange(4.0)
    for got, want in zip(jitc.jit(f, backend="cpu")(a, b), f(a, b)):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    print("ok")
""")


def test_cached_lapack_kernels_run_in_a_new_process(tmp_path):
    """LAPACK's addresses are run-time values: a second process (SciPy loaded elsewhere)
    runs the kernels the first one cached."""
    env = dict(os.environ, JITC_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", _NEW_PROCESS],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
    assert any((tmp_path / "cache").rglob("*.nbi"))


def ridge_step(x, y, lam):
    """One ridge regression solve: (X^T X + lam I) w = X^T y."""
    eye = np.eye(x.shape[1])
    return np.linalg.solve(x.T @ x + lam * eye, x.T @ y)


def gaussian_loglik(x, mu, cov):
    """log N(x | mu, cov) per row of x, through cholesky and det."""
    d = x.shape[-1]
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, (x - mu).T)
    return -0.5 * (np.sum(z * z, axis=0) + d * np.log(2 * np.pi) + np.log(np.linalg.det(cov)))


def test_ridge_regression_and_gaussian_loglik_are_numpys(backend):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((200, 12)), rng.standard_normal(12)
    y = x @ w + 0.1 * rng.standard_normal(200)
    _same(jitc.jit(ridge_step, backend=backend)(x, y, 0.5), ridge_step(x, y, 0.5))
    m = rng.standard_normal((6, 6))
    cov, mu = m @ m.T + 6 * np.eye(6), rng.standard_normal(6)
    pts = rng.standard_normal((50, 6))
    _same(jitc.jit(gaussian_loglik, backend=backend)(pts, mu, cov), gaussian_loglik(pts, mu, cov))


def test_the_primitive_rule_and_ir_text():
    """linalg's shape rule refuses what np.linalg never emits; the IR prints and parses."""
    from jitc.core import ir_text
    from jitc.core.primitives import PRIMITIVES

    infer = PRIMITIVES["linalg"].infer
    f64, f32, i64 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)
    for types, kind, message in [
        ([((3, 3), f64)], "qr", "unknown kind 'qr'"),
        ([((3, 3), f64)], "solve", "solve takes 2 operands"),
        ([((3, 3), i64)], "inv", "must be float32 or float64"),
        ([((3, 4), f64)], "inv", "not a stack of square matrices"),
        ([((3, 3), f64), ((3, 1), f32)], "solve", r"b f32\[3,1\] does not fit"),
        ([((2, 3, 3), f64), ((3, 1), f64)], "solve", "does not fit"),
    ]:
        with pytest.raises(ShapeError, match=message):
            infer(types, {"kind": kind})
    assert infer([((2, 3, 3), f32)], {"kind": "slogdet"}) == ((2, 2), f32)

    def f(a, b):
        return np.linalg.solve(a, b), np.linalg.det(a), np.linalg.cholesky(a, upper=True)

    graph = (
        jitc.jit(f)
        .lower(jitc.ShapeDtype((3, 4, 4), np.float64), jitc.ShapeDtype((4,), np.float64))
        .compile(backend="reference")
        .graph
    )
    text = ir_text.print_graph(graph)
    assert "kind=solve" in text and "kind=cholesky_upper" in text
    assert ir_text.print_graph(ir_text.parse_graph(text)) == text


def test_cuda_matrix_kernels_assemble_for_every_kind():
    """The cuda backend's thread-per-matrix kernels (run under the simulator by
    tests/cuda_sim) compile to PTX for sm_90 without spilling."""
    from jitc.backends import cuda as cuda_backend
    from jitc.backends.cuda import toolchain
    from jitc.backends.cuda.ptx import kernel_reports

    ok, why = toolchain.status()
    if not ok:
        pytest.skip(f"CUDA toolchain not installed: {why}")
    kernels = {}
    for dtype in (np.float32, np.float64):
        specs = [jitc.ShapeDtype(s, dtype) for s in [(3, 4, 4), (3, 4, 2), (4,), (3, 4, 4)]]
        graph = jitc.jit(everything).lower(*specs).compile(backend="reference").graph
        for k in cuda_backend.kernels(graph):
            if k.kind == "matrix":
                kernels.setdefault(k.name, k)
    assert len(kernels) >= 8  # solve, inv, slogdet, cholesky (lower, upper) per dtype
    for r in kernel_reports(list(kernels.values()), ("sm_90",)):
        assert r.registers > 0 and r.spill_bytes == 0, r


def test_aot_refuses_linalg_by_name(tmp_path):
    import jitc.aot as aot

    with pytest.raises(UnsupportedError, match=r"np\.linalg\.solve is not supported in AOT"):
        aot.compile(ridge_step, "f64[20,3]", "f64[20]", "f64[]", name="ridge").write(str(tmp_path))
