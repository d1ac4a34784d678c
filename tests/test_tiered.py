"""Tiered execution (jitc/tiered.py): a first call whose kernels are not cached returns the
reference tier's result (NumPy's bits) while the kernels compile on a background thread;
later calls run the compiled tier. Both must match NumPy, arguments included.

conftest.py makes the other tests compile synchronously; here each test gets
JITC_COMPILE=tiered and a fresh cache directory, so its kernels are really not cached.
"""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitc
from jitc import config, tiered
from jitc.backends.cpu import cache
from jitc.errors import JitcError

HERE = os.path.basename(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT = 120  # seconds a background compile may take on a loaded 2-core machine


@pytest.fixture
def tiered_mode(monkeypatch, tmp_path, caplog):
    """JITC_COMPILE=tiered over an empty cache directory, jitc's log captured."""
    monkeypatch.setattr(config, "COMPILE", "tiered")
    monkeypatch.setenv("JITC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_directory", cache._UNRESOLVED)
    caplog.set_level(logging.INFO, logger="jitc")
    yield caplog
    assert tiered.wait(WAIT)  # no compile may outlive the cache directory it writes to


def tiers(caplog) -> list[str]:
    """Which tier each logged call ran, in order, and forget the log."""
    out = [("reference" if "reference tier ran" in r.message else "compiled")
           for r in caplog.records
           if "reference tier ran" in r.message or "compiled tier" in r.message]
    caplog.clear()
    return out


def leaky_update(x, v):
    """Writes its first argument (the caller must see it) and returns a reduction."""
    x[1:] += np.sin(v[:-1]) * 1.25
    return np.tanh(x).sum()


def expected(x, v):
    x = x.copy()
    return leaky_update(x, v), x


def test_reference_tier_then_compiled_tier(tiered_mode):
    f = jitc.jit(leaky_update)
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(37), rng.standard_normal(37)
    want, want_x = expected(x, v)
    got = f(x, v)  # its kernels are not cached: the reference tier, NumPy's bits
    assert tiers(tiered_mode) == ["reference"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, want_x)

    pid = os.fork()  # waits for the compile: the child has no compile thread
    if pid == 0:
        ok = False
        try:
            want, want_x = expected(x, v)
            ok = not tiered._pending[0] and np.allclose(f(x, v), want, rtol=1e-13, atol=1e-13)
            ok = ok and np.allclose(x, want_x, rtol=1e-13)
        finally:
            os._exit(0 if ok else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert not tiered._pending[0]
    for _ in range(2):  # the switch, then the fast path
        want, want_x = expected(x, v)
        got = f(x, v)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(x, want_x, rtol=1e-13)
    assert tiers(tiered_mode) == ["compiled"]

    g = jitc.jit(leaky_update)  # the same kernels, loaded in this process: no reference tier
    want, want_x = expected(x, v)
    np.testing.assert_allclose(g(x, v), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(x, want_x, rtol=1e-13)
    assert "kernels cached: compiled tier" in tiered_mode.text
    assert tiers(tiered_mode) == ["compiled"]


class Scaler:
    def __init__(self, w):
        self.w = w

    @jitc.jit
    def apply(self, x):
        return x * self.w - 0.5


def test_a_rebound_capture_runs_the_reference_tier_of_its_new_signature(tiered_mode):
    x = np.linspace(-1.0, 1.0, 6)
    s = Scaler(np.arange(6.0))
    np.testing.assert_array_equal(s.apply(x), x * s.w - 0.5)
    s.w = np.arange(6, dtype=np.float32)  # another dtype: traced and compiled anew
    got = s.apply(x)
    assert got.dtype == (x * s.w - 0.5).dtype
    np.testing.assert_array_equal(got, x * s.w - 0.5)
    assert tiered_mode.text.count("compiling apply for") == 2
    assert tiers(tiered_mode)[-1] == "reference"


def gather(x, i):
    return np.exp(x[i]) * 3  # the line each tier's IndexError names


GATHER_LINE = gather.__code__.co_firstlineno + 1


def test_errors_name_the_users_line_in_both_tiers(tiered_mode):
    f = jitc.jit(gather)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x, np.array([4, 0])), gather(x, np.array([4, 0])))
    with pytest.raises(IndexError, match=rf"out of bounds.* at \S*{HERE}:{GATHER_LINE}"):
        f(x, np.array([1, 9]))
    assert tiers(tiered_mode) == ["reference", "reference"]
    assert tiered.wait(WAIT)
    with pytest.raises(IndexError, match=rf"out of bounds.* at \S*{HERE}:{GATHER_LINE}"):
        f(x, np.array([-6, 1]))
    np.testing.assert_allclose(f(x, np.array([2, 3])), gather(x, np.array([2, 3])))
    assert tiers(tiered_mode) == ["compiled"]


def test_a_failed_background_compile_is_raised_by_the_next_call(tiered_mode, monkeypatch):
    import jitc.backends.cpu as cpu

    def broken(graph):
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(cpu, "compile", broken)
    f = jitc.jit(lambda a: np.sqrt(a) + 7.5)
    a = np.arange(4.0)
    np.testing.assert_array_equal(f(a), np.sqrt(a) + 7.5)
    assert tiered.wait(WAIT)
    with pytest.raises(JitcError, match="<lambda>: compiling its kernels in the background "
                                        "failed .*RuntimeError: no compiler today"):
        f(a)


def test_unknown_compile_mode_is_refused(monkeypatch):
    monkeypatch.setattr(config, "COMPILE", "lazy")
    with pytest.raises(JitcError, match="JITC_COMPILE='lazy' is not a compile mode; choose "
                                        "one of tiered, sync"):
        jitc.jit(lambda a: a * 2)(np.arange(3.0))


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import jitc
    from jitc import tiered

    def score(w, x):
        return (np.abs(w) * 0.75 - w * x).sum(axis=1)

    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((6, 9)), rng.standard_normal(9)
    want = score(w, x)
    f = jitc.jit(score)
    got = f(w, x)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (got, want)
    if sys.argv[1] == "exit":  # leave while the background thread compiles
        print("compiling" if tiered._pending[0] else "compiled")
        sys.exit(0)
    assert tiered.wait(120)  # and leave without a call of the compiled tier
    print("ok")
""")


def test_exit_while_compiling_does_not_hang_or_spoil_the_cache(tmp_path):
    env = dict(os.environ, JITC_COMPILE="tiered", JITC_CACHE_DIR=str(tmp_path / "cache"),
               JITC_LOG="compiles", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def child(how):
        run = subprocess.run([sys.executable, "-c", CHILD, how], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=WAIT)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip(), run.stderr

    out, _ = child("exit")
    assert out == "compiling"
    out, log = child("wait")  # whatever the first left in the cache, correct results
    assert out == "ok" and "reference tier ran" in log and "compiled in the background" in log
    out, log = child("wait")  # sealed once compiled in the second: straight from the cache
    assert out == "ok" and "kernels cached: compiled tier" in log
    assert "reference tier ran" not in log
