"""Processes (issue 14): jitted functions in forked children and multiprocessing pools.

Each case runs as a script in a fresh process: fork-safety depends on what the process did
before it forked. The scripts share the test run's JITC_CACHE_DIR, so workers load the
kernels the first process compiled.
"""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitc

# Large enough that the launcher splits the work across threads (PARALLEL_MIN_WORK).
PROGRAM = textwrap.dedent("""
    import multiprocessing, os, sys
    import numpy as np
    import jitc

    @jitc.jit
    def step(x):
        return np.tanh(x) * 2.0 + x.sum(axis=1, keepdims=True)

    def expected(x):
        return np.tanh(x) * 2.0 + x.sum(axis=1, keepdims=True)

    def inputs():
        return [np.random.default_rng(i).standard_normal((512, 256)) for i in range(4)]
""")

FORK_AFTER_A_CALL = PROGRAM + textwrap.dedent("""
    x = inputs()[0]
    assert np.allclose(step(x), expected(x))  # the parent's threads are running now
    pid = os.fork()
    if pid == 0:
        ok = all(np.allclose(step(y), expected(y)) for y in inputs())
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    print("child", status)
""")

POOL_MAP = PROGRAM + textwrap.dedent("""
    if __name__ == "__main__":
        xs = inputs()
        step(xs[0])  # the parent compiled and ran it before the pool starts
        with multiprocessing.get_context(sys.argv[1]).Pool(2) as pool:
            got = pool.map(step, xs)
        print(all(np.allclose(g, expected(x)) for g, x in zip(got, xs)))
""")


def _run(tmp_path, source, *args, env=None):
    script = tmp_path / "prog.py"
    script.write_text(source)
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    run = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_a_forked_child_runs_parallel_kernels_after_the_parent_did(tmp_path):
    """Before: numba's GNU OpenMP layer killed the child with SIGTERM ("fork() called from
    a process already using GNU OpenMP"), status 15."""
    assert _run(tmp_path, FORK_AFTER_A_CALL) == "child 0"


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pool_map_over_a_jitted_function(tmp_path, method):
    """Before: the jitted function could not be pickled ("not the same object as
    __main__.step"), and with fork the workers were killed and the pool hung."""
    assert _run(tmp_path, POOL_MAP, method) == "True"


def test_numba_threading_layer_set_by_the_user_is_kept(tmp_path):
    source = (
        PROGRAM + "x = inputs()[0]\nassert np.allclose(step(x), expected(x))\n"
        "import numba\nprint(numba.threading_layer())\n"
    )
    assert _run(tmp_path, source, env={"NUMBA_THREADING_LAYER": "workqueue"}) == "workqueue"


def test_jitc_runs_numba_threads_on_tbb(tmp_path):
    source = (
        PROGRAM + "x = inputs()[0]\nassert np.allclose(step(x), expected(x))\n"
        "import numba\nprint(numba.threading_layer())\n"
    )
    assert _run(tmp_path, source, env={"NUMBA_THREADING_LAYER": None}) == "tbb"


def test_a_jitted_function_pickles_by_name_and_one_without_a_name_is_refused():
    f = pickle.loads(pickle.dumps(_scaled))
    assert f is _scaled
    x = np.arange(6.0)
    np.testing.assert_array_equal(f(x), x * 3.0)
    anonymous = jitc.jit(lambda x: x + 1)
    with pytest.raises((pickle.PicklingError, AttributeError), match="pickle.*lambda"):
        pickle.dumps(anonymous)


@jitc.jit
def _scaled(x):
    return x * 3.0
