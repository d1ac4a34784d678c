"""The cuda backend on a real GPU with CuPy: what the simulator cannot show (CuPy's memory pool
and stream, cuBLAS dots, the array type a caller gets back). Skipped without a GPU; the rest of
the cuda tests (tests/cuda_sim) also run on the hardware where there is one."""

import numpy as np
import pytest

import jitc
from jitc.backends.cuda import toolchain

if toolchain.simulator_enabled() or not toolchain.gpu_present():
    pytest.skip(
        "needs a CUDA GPU (tests/cuda_sim run the cuda backend under the simulator)",
        allow_module_level=True,
    )
cp = pytest.importorskip("cupy")

RNG = np.random.default_rng(11)


def layer(x, w, b):
    return np.maximum(x @ w + b, 0), x.T


def test_cupy_arrays_in_cupy_arrays_out_with_a_cublas_dot():
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in ((64, 48), (48, 32), (32,)))
    y, t = jitc.jit(layer, backend="cuda")(cp.asarray(x), cp.asarray(w), cp.asarray(b))
    assert type(y) is cp.ndarray and type(t) is cp.ndarray
    want_y, want_t = layer(x, w, b)
    np.testing.assert_allclose(cp.asnumpy(y), want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(cp.asnumpy(t), want_t)


def test_numba_and_cupy_arrays_together_give_cupy_arrays():
    from numba import cuda

    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in ((8, 6), (6, 4), (4,)))
    y, _ = jitc.jit(layer, backend="cuda")(cuda.to_device(x), cp.asarray(w), cuda.to_device(b))
    assert type(y) is cp.ndarray
    np.testing.assert_allclose(cp.asnumpy(y), layer(x, w, b)[0], rtol=1e-5, atol=1e-5)


def test_an_in_place_update_of_a_cupy_array_is_seen_by_the_caller():
    def step(w, g):
        w -= 0.1 * g
        return (w * w).sum()

    w, g = (RNG.standard_normal((128, 16)).astype(np.float32) for _ in range(2))
    dw = cp.asarray(w)
    loss = jitc.jit(step, backend="cuda")(dw, cp.asarray(g))
    want_w = w.copy()
    want = step(want_w, g)
    np.testing.assert_array_equal(cp.asnumpy(dw), want_w)  # no FMA: NumPy's bits
    np.testing.assert_allclose(float(loss), want, rtol=1e-4)


def test_later_calls_launch_directly_and_match_numpy_on_another_stream():
    """The first call launches through numba; later ones through DirectLaunch (no numba
    dispatcher), on whatever CuPy stream is current, with integer arguments (sizes) too."""

    def f(x, y):
        return np.tanh(x) * y + 1.5, (x * y).sum(axis=1)

    g = jitc.jit(f, backend="cuda")
    x, y = (RNG.standard_normal((300, 70)).astype(np.float32) for _ in range(2))
    first = g(cp.asarray(x), cp.asarray(y))
    executable = g.last_compiled.executable
    assert any(executable.direct), "no step launches directly after the first call"
    with cp.cuda.Stream():
        for k in range(3):
            xk, yk = x + k, y * k
            z, s = g(cp.asarray(xk), cp.asarray(yk))
            want_z, want_s = f(xk, yk)
            np.testing.assert_allclose(cp.asnumpy(z), want_z, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(cp.asnumpy(s), want_s, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cp.asnumpy(first[0]), f(x, y)[0], rtol=1e-5, atol=1e-5)


def test_a_direct_launch_made_on_one_gpu_goes_through_numba_on_another(monkeypatch):
    """The compiled kernel of a DirectLaunch belongs to the GPU it first ran on: with another
    GPU current, the call launches through numba (simulated here by the GPU it notes)."""
    from jitc.backends.cuda import device

    g = jitc.jit(lambda x: np.exp(x) * 2.0, backend="cuda")
    x = RNG.standard_normal(1000).astype(np.float32)
    g(cp.asarray(x))
    directs = [d for d in g.last_compiled.executable.direct if d is not None]
    assert directs
    through_numba, numba_launch = [], device.CupyDevice.launch

    def counted(self, fn, grid, block, args):
        through_numba.append(fn)
        return numba_launch(self, fn, grid, block, args)

    monkeypatch.setattr(device.CupyDevice, "launch", counted)
    for d in directs:
        d.gpu = -1
    np.testing.assert_allclose(cp.asnumpy(g(cp.asarray(x))), np.exp(x) * 2.0, rtol=1e-6)
    assert len(through_numba) == len(directs)
