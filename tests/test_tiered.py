"""Tiered execution (runtime/tiered.py): a first call whose kernels are not cached returns the
reference tier's result (NumPy's bits) while the kernels compile on a background thread;
later calls run the compiled tier. Both must match NumPy, arguments included.

conftest.py makes the other tests compile synchronously; here each test gets
JITC_COMPILE=tiered and a fresh cache directory, so its kernels are really not cached.
"""

import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import jitc
from jitc.backends.native import background, cache
from jitc.core import config
from jitc.core.errors import JitcError
from jitc.runtime import tiered
from jitc.runtime.fastpath import fast_call_of

HERE = os.path.basename(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT = 120  # seconds a background compile may take on a loaded 2-core machine


def fresh_cache(mode, monkeypatch, tmp_path, caplog):
    """JITC_COMPILE=`mode` over an empty cache directory, jitc's log captured."""
    monkeypatch.setattr(config, "COMPILE", mode)
    monkeypatch.setenv("JITC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_directory", cache._UNRESOLVED)
    caplog.set_level(logging.INFO, logger="jitc")
    yield caplog
    assert tiered.wait(WAIT)  # no compile may outlive the cache directory it writes to


@pytest.fixture
def tiered_mode(monkeypatch, tmp_path, caplog):
    yield from fresh_cache("tiered", monkeypatch, tmp_path, caplog)


def tiers(caplog) -> list[str]:
    """Which tier each logged call ran, in order, and forget the log."""
    out = [
        ("reference" if "reference tier ran" in r.message else "compiled")
        for r in caplog.records
        if "reference tier ran" in r.message or "compiled tier" in r.message
    ]
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
            ok = not background._pending[0] and np.allclose(f(x, v), want, rtol=1e-13, atol=1e-13)
            ok = ok and np.allclose(x, want_x, rtol=1e-13)
        finally:
            os._exit(0 if ok else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert not background._pending[0]
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


def triangular_solve(L, b):
    """Forward substitution with Python loops: a million scalar steps at n = 1400."""
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def relax(u, steps):
    """A time loop of array steps, written in place: the reference tier runs it at NumPy's
    speed."""
    for _ in range(steps):
        u[1:-1] = 0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:])
    return u.sum()


def test_a_loop_of_array_steps_runs_the_reference_tier_first(tiered_mode):
    u = np.linspace(0.0, 1.0, 500) ** 2
    want_u = u.copy()
    want = relax(want_u, 50)
    switch = sys.getswitchinterval()
    got = jitc.jit(relax)(u, 50)
    assert got == want  # NumPy's bits: the reference tier
    np.testing.assert_array_equal(u, want_u)
    assert sys.getswitchinterval() == switch  # shortened while the loop ran, then restored
    assert "the reference tier runs it for up to" in tiered_mode.text
    assert tiers(tiered_mode) == ["reference"]


def test_a_loop_past_the_reference_budget_waits_for_its_kernels(tiered_mode, monkeypatch):
    """The reference tier would run the loop's steps op by op in Python (a Cholesky of
    n = 200: 53 s, against 1.5 s to compile): once it has run LOOP_BUDGET_S, the call waits
    for the kernels and runs them from the start; nothing was written back before."""
    monkeypatch.setattr(tiered, "LOOP_BUDGET_S", 0.0)
    rng = np.random.default_rng(1)
    L = np.tril(rng.random((40, 40))) + 40 * np.eye(40)
    b = rng.random(40)
    switch = sys.getswitchinterval()
    np.testing.assert_allclose(jitc.jit(triangular_solve)(L, b), triangular_solve(L, b), 1e-14)
    assert "the loop ran past the reference tier's budget" in tiered_mode.text
    assert sys.getswitchinterval() == switch
    u = np.linspace(0.0, 1.0, 500) ** 2
    want_u = u.copy()
    want = relax(want_u, 50)
    np.testing.assert_allclose(jitc.jit(relax)(u, 50), want, rtol=1e-13)
    np.testing.assert_allclose(u, want_u, rtol=1e-13)  # written once, by the compiled tier


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
    with pytest.raises(
        JitcError,
        match="<lambda>: compiling its kernels in the background "
        "failed .*RuntimeError: no compiler today",
    ):
        f(a)


def test_unknown_compile_mode_is_refused(monkeypatch):
    monkeypatch.setattr(config, "COMPILE", "lazy")
    with pytest.raises(
        JitcError, match="JITC_COMPILE='lazy' is not a compile mode; choose one of tiered, sync"
    ):
        jitc.jit(lambda a: a * 2)(np.arange(3.0))


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import jitc
    from jitc.backends.native import background
    from jitc.runtime import tiered

    def score(w, x):
        return (np.abs(w) * 0.75 - w * x).sum(axis=1)

    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((6, 9)), rng.standard_normal(9)
    want = score(w, x)
    f = jitc.jit(score)
    got = f(w, x)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (got, want)
    if sys.argv[1] == "exit":  # leave while the background thread compiles
        print("compiling" if background._pending[0] else "compiled")
        sys.exit(0)
    assert tiered.wait(120)  # and leave without a call of the compiled tier
    print("ok")
""")


def _exit_while_compiling(tmp_path):
    """(child(how) -> (stdout, log), the pid the first child's exit handed its compiles to)."""
    env = dict(
        os.environ,
        JITC_COMPILE="tiered",
        JITC_CACHE_DIR=str(tmp_path / "cache"),
        JITC_LOG="compiles",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )

    def child(how):
        run = subprocess.run(
            [sys.executable, "-c", CHILD, how],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert run.returncode == 0, run.stderr
        return run.stdout.strip(), run.stderr

    out, log = child("exit")
    assert out == "compiling"
    handed = re.search(r"exit while compiling: process (\d+) compiles what was left", log)
    assert handed, log
    return child, int(handed.group(1))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_exit_while_compiling_does_not_hang_or_spoil_the_cache(tmp_path):
    """The process the exit handed its compiles to is killed at once: the cache holds
    whatever it and the exiting thread left, and the next runs are still correct."""
    child, pid = _exit_while_compiling(tmp_path)
    os.kill(pid, signal.SIGKILL)
    out, log = child("wait")  # whatever the first left in the cache, correct results
    assert out == "ok" and "reference tier ran" in log and "compiled in the background" in log
    out, log = child("wait")  # sealed once compiled in the second: straight from the cache
    assert out == "ok" and "kernels cached: compiled tier" in log
    assert "reference tier ran" not in log


def test_a_script_that_exits_while_compiling_finds_its_kernels_next_run(tmp_path):
    """Three runs of a one-call script used to take the reference tier every time: each left
    before its kernels compiled. Now the process its exit handed them to compiles them."""
    child, pid = _exit_while_compiling(tmp_path)
    deadline = time.monotonic() + WAIT
    while not _gone(pid):
        assert time.monotonic() < deadline, "the handed-on compile did not finish"
        time.sleep(0.1)
    out, log = child("wait")
    assert out == "ok" and "kernels cached: compiled tier" in log
    assert "reference tier ran" not in log
    assert not list((tmp_path / "cache").glob("*.compile.json"))  # its request, removed


def test_an_exit_hands_on_the_pieces_its_pending_jobs_left(monkeypatch, caplog):
    """_at_exit with two kernel jobs pending: the pieces one has left are handed on; the
    other, whose leftover cannot be planned, is named in a warning, not raised at exit."""
    from jitc.backends.native import precompile

    caplog.set_level(logging.INFO, logger="jitc")
    handed, release = [], threading.Event()
    monkeypatch.setattr(precompile, "hand_on", lambda sources: handed.append(sources) or 4242)

    def unplannable():
        raise ValueError("no plan")

    background.submit(release.wait, leftover=lambda: [("kernel source", False)])
    background.submit(release.wait, leftover=unplannable)
    try:
        background._at_exit()
    finally:
        release.set()
    assert tiered.wait(WAIT)
    assert handed == [[("kernel source", False)]]
    assert "not handed on (ValueError: no plan)" in caplog.text
    assert "process 4242 compiles what was left (sources: 1)" in caplog.text


def test_nothing_is_handed_on_without_a_cache(monkeypatch):
    from jitc.backends.native import precompile

    monkeypatch.setattr(cache, "resolved", lambda: (None, None))
    assert precompile.hand_on([("kernel source", False)]) is None


# -- a function's own driver compiles in the background (backends/cpu/executable.py)


@pytest.fixture
def sync_fresh_cache(monkeypatch, tmp_path, caplog):
    yield from fresh_cache("sync", monkeypatch, tmp_path, caplog)


def decay(w, g):
    """An in-place update of an uncommon signature (float32 3-D, int16 1-D), so that no
    other test of this process has loaded its driver."""
    w *= np.float32(0.5)
    w -= g * np.float32(0.25)
    return w.sum(axis=(1, 2))


def decay_data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((3, 4, 5)).astype(np.float32), np.arange(-2, 3, dtype=np.int16)


def check_decay(f, w, g):
    want_w = w.copy()
    want = decay(want_w, g)
    np.testing.assert_allclose(f(w, g), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(w, want_w)


def test_a_cold_first_call_runs_the_wide_driver_while_its_own_compiles(sync_fresh_cache):
    from jitc.backends.cpu.driver import WIDE_DRIVER_SOURCE
    from jitc.core.errors import SignatureMiss

    f = jitc.jit(decay)
    w, g = decay_data()
    with cache.lock():  # re-entrant for this thread: the background compile waits for it
        check_decay(f, w, g)  # compiles the kernels, runs the wide driver
        (compiled,) = f._cache.values()
        ex = compiled.executable
        assert ex.module is None and cache.module_name(WIDE_DRIVER_SOURCE) in sys.modules
        interim = ex.checked_run
        check_decay(f, w, g)  # the fast path, on the wide driver still
        assert background._pending[0] == 1 and not tiered.kernels_pending()  # only the driver
        _, interim_spans = ex.profiled_call(w, g)  # jitc.report's timed call, wide driver
    assert tiered.wait(WAIT)
    assert "its own driver compiled in the background" in sync_fresh_cache.text
    assert ex.checked_run is not interim
    for _ in range(2):  # the fast call bound to the wide driver misses once, then is made anew
        check_decay(f, w, g)
    assert fast_call_of(compiled) is f._fast
    _, spans = ex.profiled_call(w, g)  # made again for the driver, not the wide one's
    assert len(spans) == len(interim_spans) == len(ex.launch_kernels)

    outs = [np.empty(s, d) for s, d in ex.results]
    with pytest.raises(SignatureMiss):  # a fast call made before the switch misses
        interim(w, g.astype(np.int16), *outs)
    want_w = w.copy()
    want = decay(want_w, g)
    # a call that took it just before retries on the new driver (outputs: the new w, the sum)
    got = sorted(ex._run(interim, [w, g]), key=np.ndim)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], want_w)
    with pytest.raises(SignatureMiss):  # other shapes are still the driver's to refuse
        ex._run(ex.checked_run, [w[:2], g])


def test_a_profiled_call_whose_driver_compiles_meanwhile_is_timed_on_the_new_one(
    sync_fresh_cache, monkeypatch
):
    """The report's timed call took the wide driver's timed run, and this function's own
    driver finished compiling before it ran: the call is timed on the new driver, not run
    untimed (it once returned no spans at all)."""
    from jitc.backends.cpu import profile

    f = jitc.jit(decay)
    w, g = decay_data()
    g = g.astype(np.int8)  # a driver no other test loads into this process
    held = cache.lock()
    held.__enter__()  # the background compile of the driver waits for it
    try:
        check_decay(f, w, g)
        (compiled,) = f._cache.values()
        ex = compiled.executable
        assert ex.module is None
        start = profile.start

        def start_once_the_driver_has_compiled():
            held.__exit__(None, None, None)
            assert tiered.wait(WAIT) and ex.module is not None
            start()

        monkeypatch.setattr(profile, "start", start_once_the_driver_has_compiled)
        outs, spans = ex.profiled_call(w, g)
    finally:
        if cache.lock()._lock._is_owned():
            held.__exit__(None, None, None)
    assert ex._profiled_run[0] is ex.module
    assert sorted(launch for launch, _, _ in spans) == list(range(len(ex.launch_kernels)))
    want_w = w.copy()
    want = decay(want_w, g)
    np.testing.assert_allclose(sorted(outs, key=np.ndim)[0], want, rtol=1e-5, atol=1e-6)


def test_the_wide_driver_refuses_what_numba_dispatch_would(sync_fresh_cache):
    from jitc.backends.cpu.executable import wide_driver
    from jitc.backends.cpu.wide import table_run

    f = jitc.jit(decay)
    w, g = decay_data()
    check_decay(f, w, g)
    (compiled,) = f._cache.values()
    ex = compiled.executable
    run = table_run(wide_driver().driver, ex.state, ex._types)
    outs = [np.empty(shape, dtype) for shape, dtype in ex.results]  # the new w, the sum
    with pytest.raises(TypeError, match="2 arrays given, 4 expected"):
        run(w, g)
    with pytest.raises(
        TypeError, match="array 1 is not a C-contiguous writeable int16 array of 1 dimensions"
    ):
        run(w, g.astype(np.int32), *outs)
    with pytest.raises(TypeError, match="array 0 is not a C-contiguous"):
        run(np.asfortranarray(w), g, *outs)
    want_w = w.copy()
    want = decay(want_w, g)
    run(w, g, *outs)
    got = sorted(outs, key=np.ndim)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], want_w)


def test_a_failed_driver_compile_keeps_the_wide_driver(sync_fresh_cache, monkeypatch):
    from jitc.backends.cpu import executable

    loaded = executable.load_module

    def no_drivers(source, *args, **kwargs):
        if source.startswith("# Generated by jitc's cpu backend: a driver") and not kwargs.get(
            "runtime"
        ):
            raise OSError("no space for drivers today")
        return loaded(source, *args, **kwargs)

    monkeypatch.setattr(executable, "load_module", no_drivers)

    def halve(w, g):  # yet another signature: uint16 in
        return w * 0.5 + g

    f = jitc.jit(halve)
    w, g = np.linspace(0, 1, 7), np.arange(7, dtype=np.uint16)
    np.testing.assert_array_equal(f(w, g), halve(w, g))
    assert tiered.wait(WAIT)
    assert (
        "compiling its own driver failed (OSError: no space for drivers today); its "
        "calls keep the wide driver" in sync_fresh_cache.text
    )
    for _ in range(2):
        np.testing.assert_array_equal(f(w, g), halve(w, g))


def test_a_driver_compile_done_while_the_executable_is_built_is_used(sync_fresh_cache, monkeypatch):
    """Before: the executable submitted its driver's compile, then made the wide driver's run;
    a compile that finished meanwhile (another thread had just compiled the same driver) had
    its run overwritten by one that always missed: the call raised SignatureMiss (seen in
    CI). Here every load of the wide driver waits for the background compiles first."""
    from jitc.backends.cpu import executable

    loaded = executable.wide_driver

    def wide_driver_after_the_compiles():
        assert tiered.wait(WAIT)
        return loaded()

    monkeypatch.setattr(executable, "wide_driver", wide_driver_after_the_compiles)

    def shift(w, g):  # a signature of its own: int8 2-D, float32 1-D
        return w - g

    f = jitc.jit(shift)
    w, g = np.arange(6, dtype=np.int8).reshape(2, 3), np.linspace(0, 1, 3, dtype=np.float32)
    np.testing.assert_array_equal(f(w, g), shift(w, g))
    assert tiered.wait(WAIT)
    assert "its own driver compiled in the background" in sync_fresh_cache.text
    np.testing.assert_array_equal(f(w, g), shift(w, g))  # the fast path, on that driver


DRIVER_CHILD = textwrap.dedent("""
    import numpy as np
    import jitc

    def scale(w, x):
        return w * 2.5 - x

    w, x = np.arange(6, dtype=np.int32).reshape(2, 3), np.linspace(0, 1, 3)
    np.testing.assert_array_equal(jitc.jit(scale)(w, x), scale(w, x))
""")  # and exit at once, its own driver not compiled yet


def test_a_script_that_exits_at_once_still_caches_its_driver(tmp_path):
    env = dict(
        os.environ,
        JITC_COMPILE="sync",
        JITC_CACHE_DIR=str(tmp_path / "cache"),
        JITC_LOG="compiles",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )

    def child():
        run = subprocess.run(
            [sys.executable, "-c", DRIVER_CHILD],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        assert run.returncode == 0, run.stderr
        return run.stderr

    assert "its own driver compiled in the background" in child()  # waited for at exit
    assert "its own driver compiled" not in child()  # cached: loaded with the kernels
