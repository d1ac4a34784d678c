"""What a first call imports (issue 16, cold start): SciPy's cython_blas, not scipy.linalg's
~0.2 s of imports (numba imports cython_blas itself, and finds it loaded), and threadpoolctl
only for a function that calls BLAS, which is then kept to one thread; a later
`import scipy.linalg` finds the same module. (With MKL installed, products call MKL:
JITC_BLAS=openblas keeps them on SciPy's BLAS here; tests/test_blas_library.py has MKL's.)"""

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np, jitc
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    a = np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64)  # big enough for gemm
    w = np.linspace(0, 1, 4096, dtype=np.float32).reshape(64, 64)
    def no_blas(x):
        return np.tanh(x) * 2
    np.testing.assert_allclose(jitc.jit(no_blas)(x), no_blas(x), rtol=2e-6)
    # numba imports scipy and cython_blas itself; jitc loaded the latter first, so
    # scipy.linalg's __init__ never ran, and threadpoolctl waits for a dot
    assert "scipy.linalg" not in sys.modules and "threadpoolctl" not in sys.modules
    def dense(x, w):
        return np.maximum(x @ w, 0)
    np.testing.assert_allclose(jitc.jit(dense)(a, w), dense(a, w), rtol=1e-5, atol=1e-5)
    assert "scipy.linalg.cython_blas" in sys.modules and "scipy.linalg" not in sys.modules
    blas = sys.modules["scipy.linalg.cython_blas"]
    from threadpoolctl import threadpool_info
    scipy_blas = [i for i in threadpool_info() if i["user_api"] == "blas"
                  and "scipy.libs" in i["filepath"]]
    assert scipy_blas and all(i["num_threads"] == 1 for i in scipy_blas), scipy_blas
    import scipy.linalg
    from scipy.linalg import cython_blas
    assert cython_blas is blas
    np.testing.assert_allclose(scipy.linalg.blas.sgemm(1.0, a, w), a @ w, rtol=1e-5, atol=1e-5)
    print("ok")
""")


def test_scipy_linalg_is_not_imported_and_blas_is_single_threaded_for_a_dot(tmp_path):
    import os

    env = dict(os.environ, JITC_CACHE_DIR=str(tmp_path / "cache"), JITC_BLAS="openblas")
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


RACE = textwrap.dedent("""
    import importlib.util, sys, threading
    from jitc.backends.cpu import blas
    create, meet = importlib.util.module_from_spec, threading.Barrier(2, timeout=1.0)

    def module_from_spec(spec):  # both threads create the module before either runs it
        module = create(spec)
        try:
            meet.wait()
        except threading.BrokenBarrierError:  # the other thread is waiting on the lock
            pass
        return module

    importlib.util.module_from_spec = module_from_spec
    loaded, failed = [], []

    def first_call():
        try:
            loaded.append(blas.cython_module("blas"))
        except Exception as e:
            failed.append(repr(e))

    threads = [threading.Thread(target=first_call) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not failed, failed
    module = sys.modules["scipy.linalg.cython_blas"]
    assert loaded == [module, module] and hasattr(module, "__pyx_capi__")
    print("ok")
""")


def test_cython_blas_loads_once_when_two_threads_first_need_it(tmp_path):
    """Two threads' first products (a tiered call's background compile and the main
    thread's lo.compile()) load cython_blas once: it is loaded under Python's import lock
    for it, and the second finds it loaded (Cython refused a second load, and the failed
    load took the first one out of sys.modules)."""
    import os

    env = dict(os.environ, JITC_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run(
        [sys.executable, "-c", RACE], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
