"""Matrix products on both BLAS libraries jitc calls (backends/cpu/blas.py): MKL's
sequential layer where the `mkl` wheel is installed, SciPy's OpenBLAS otherwise or with
JITC_BLAS=openblas. NumPy is the oracle for every product path: BLAS gemm and gemv over
transposed and strided operands, shapes around the block sizes, and the generated loops
(float16, integers, small products)."""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import subprocess
import sys

import numpy as np
import pytest

import jitc
from jitc.backends.cpu import blas
from jitc.backends.cpu.dot import BLAS_MIN_FLOPS


def _installed(package: str) -> bool:
    try:
        importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


HAS_MKL = _installed("mkl")


@pytest.fixture(params=["mkl", "mkl on Intel", "openblas"])
def library(request, monkeypatch):
    """Products planned from here on call this library (the choice is made once per
    process; the test forgets it before and after). "mkl on Intel" takes MKL's gemv too,
    as jitc does on an Intel CPU, whatever this one is."""
    if request.param.startswith("mkl") and not HAS_MKL:
        pytest.skip("the mkl wheel is not installed (pip install 'jitc[mkl]')")
    if request.param == "mkl on Intel":
        monkeypatch.setattr(blas, "cpu_vendor", lambda: "GenuineIntel")
    monkeypatch.setenv("JITC_BLAS", request.param.split()[0])
    blas.mkl.cache_clear()
    blas.blas_address.cache_clear()
    yield request.param
    blas.mkl.cache_clear()
    blas.blas_address.cache_clear()


def _products(x, w, xt, wt, v):
    """gemm, a transposed and a strided operand, gemv (one row, and one column: a matrix
    times a vector, a one-column matrix, a column of a matrix) and the layer's epilogue."""
    return (
        x @ w,
        xt.T @ w,
        x @ wt.T,
        x[:, ::2] @ w[::2],
        v @ w,
        x @ v,
        xt.T @ v,
        x @ v[:, None],
        x[:, ::2] @ w[::2, 1:2],
        (x @ w) * 0.5 + 1,
    )


@pytest.mark.parametrize("m, k, n", [(1, 700, 600), (63, 64, 65), (257, 129, 300)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_products_match_numpy_on_each_library(library, m, k, n, dtype):
    rng = np.random.default_rng(m + k + n)

    def draw(*shape):
        a = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        return a.astype(dtype)

    args = (draw(m, k), draw(k, n), draw(k, m), draw(n, k), draw(k))
    compiled = jitc.jit(_products).lower(*args).compile()
    head = compiled.as_text("kernels").splitlines()[0]
    if m * k * n >= BLAS_MIN_FLOPS:  # else every product runs in generated loops
        assert ("OpenBLAS" if library == "openblas" else "MKL") in head
    tol = 1e-12 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5
    for got, want in zip(compiled(*args), _products(*args)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=5 * tol)


def _matrix_vector(a, at, v, w):
    """A matrix times a vector as NumPy code writes it: rows contiguous or the matrix
    transposed, a strided vector, a one-column matrix, a column of a matrix, a batch."""
    return (
        a @ v,
        at.T @ v,
        a[:, ::2] @ v[::2],
        a @ v[:, None],
        a @ w[:, 3:4],
        np.stack([a, 2 * a]) @ v,
        np.tanh(a @ v) + 1,
    )


@pytest.mark.parametrize("m, k", [(700, 600), (2, 140000), (3000, 90)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_matrix_vector_products_call_gemv_and_match_numpy(library, m, k, dtype):
    """A column (n = 1) goes to gemv over blocks of the matrix's rows, as a row does."""
    assert m * k >= BLAS_MIN_FLOPS
    rng = np.random.default_rng(m + k)

    def draw(*shape):
        a = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        return a.astype(dtype)

    args = (draw(m, k), draw(k, m), draw(k), draw(k, 5))
    compiled = jitc.jit(_matrix_vector).lower(*args).compile()
    assert "gemv(v," in compiled.as_text("kernels")
    tol = 1e-12 if np.dtype(dtype) == np.float64 else 2e-5
    for got, want in zip(compiled(*args), _matrix_vector(*args)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=5 * tol * np.sqrt(k))


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int8])
def test_products_the_loops_compute_match_numpy(dtype):
    """Not BLAS: float16 accumulates in float32 blocks, integers wrap as NumPy's do."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((40, 70)) * 3).astype(dtype)
    w = (rng.standard_normal((70, 90)) * 3).astype(dtype)
    got, want = jitc.jit(lambda x, w: x @ w)(x, w), x @ w
    assert got.dtype == want.dtype
    if dtype == np.float16:
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=0.1)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(not HAS_MKL, reason="the mkl wheel is not installed")
@pytest.mark.parametrize("vendor", ["GenuineIntel", "AuthenticAMD"])
def test_gemv_is_mkls_on_intel_only(vendor, monkeypatch):
    """MKL's sgemv took 1.7x OpenBLAS's time on an AMD EPYC (blas.py): there the
    matrix-vector products call OpenBLAS while gemm stays MKL's, and as_text says both."""
    monkeypatch.delenv("JITC_BLAS", raising=False)
    monkeypatch.setattr(blas, "cpu_vendor", lambda: vendor)
    blas.mkl.cache_clear()
    blas.blas_address.cache_clear()
    try:
        mkl_gemv = ctypes.cast(blas.mkl().sgemv_, ctypes.c_void_p).value
        on_intel = blas.blas_address(np.float32, "gemv") == mkl_gemv
        head = blas.gemm_library()
    finally:
        blas.mkl.cache_clear()
        blas.blas_address.cache_clear()
    assert on_intel == (vendor == "GenuineIntel")
    assert head.startswith("MKL")
    assert ("matrix-vector: OpenBLAS" in head) == (vendor != "GenuineIntel")


def test_the_cpu_vendor_is_read_from_proc_cpuinfo():
    vendor = blas.cpu_vendor()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            assert f"vendor_id\t: {vendor}\n" in f.read()


def test_a_product_without_blas_calls_names_no_library():
    text = jitc.jit(lambda x: x * 2).lower(np.ones(3)).compile().as_text("kernels")
    assert "matrix products" not in text
    with pytest.raises(ValueError, match="unknown stage 'ptx'"):
        jitc.jit(lambda x: x * 2).lower(np.ones(3)).compile().as_text("ptx")


@pytest.mark.skipif(not HAS_MKL, reason="the mkl wheel is not installed")
def test_mkl_runs_sequential_and_leaves_numpys_and_scipys_blas_alone(tmp_path):
    """In a fresh process: a layer's product calls MKL on its sequential layer (jitc splits
    the work itself), and neither NumPy's nor SciPy's OpenBLAS is loaded or touched by it."""
    program = """
import sys, numpy as np, jitc
x = np.linspace(-1, 1, 64 * 512, dtype=np.float32).reshape(64, 512)
w = np.linspace(0, 1, 512 * 256, dtype=np.float32).reshape(512, 256)
f = jitc.jit(lambda x, w: np.maximum(x @ w, 0))
np.testing.assert_allclose(f(x, w), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-4)
from jitc.backends.cpu import blas
from jitc.backends.cpu.dot import BLAS_MIN_FLOPS
assert blas.mkl().MKL_Get_Max_Threads() == 1
assert "threadpoolctl" not in sys.modules  # SciPy's BLAS threads were never touched
print(f.lower(x, w).compile().as_text("kernels").splitlines()[0])
"""
    env = dict(os.environ, JITC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("JITC_BLAS", None)
    run = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "MKL" in run.stdout and "sequential" in run.stdout
