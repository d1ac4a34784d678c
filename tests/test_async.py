"""Jitted.submit: futures, dataflow through future arguments, errors, cancellation, threads
(runtime). NumPy computes every expected value."""

import concurrent.futures as cf
import threading

import numpy as np
import pytest

import jitc
from jitc.core import config
from jitc.core.errors import JitcError, UnsupportedError
from jitc.runtime import executor


def affine(x, y):
    return x * 0.5 + y


def pair(xs):
    a, b = xs
    return a - b, {"sum": a + b}


def pick(x, i):
    return x[i]  # PICK_LINE


def bump(x, y):
    x += y
    return x.sum()


PICK_LINE = pick.__code__.co_firstlineno + 1
AFFINE = {b: jitc.jit(affine, backend=b) for b in ("reference", "cpu")}
PAIR = jitc.jit(pair, backend="reference")
X = np.linspace(-1.0, 1.0, 8)


def test_submit_returns_a_future_and_chains(backend):
    f = AFFINE[backend]
    first = f.submit(X, 1.0)
    assert isinstance(first, cf.Future)
    chained = f.submit(first, first)  # a future stands for its result
    # at any depth (the reference backend: how futures are found does not depend on it)
    nested = PAIR.submit((first, chained))
    expect_first = X * 0.5 + 1.0
    expect_chained = expect_first * 0.5 + expect_first
    np.testing.assert_array_equal(first.result(), expect_first)
    np.testing.assert_array_equal(chained.result(), expect_chained)
    by_name = f.submit(y=first, x=X)  # keyword arguments too
    np.testing.assert_array_equal(by_name.result(), X * 0.5 + expect_first)
    diff, sums = nested.result()
    np.testing.assert_array_equal(diff, expect_first - expect_chained)
    np.testing.assert_array_equal(sums["sum"], expect_first + expect_chained)
    assert first.done() and first.exception() is None
    seen = []
    first.add_done_callback(seen.append)  # a done future calls back at once
    assert seen == [first]


def test_a_call_waits_for_a_pending_input_without_blocking_the_caller():
    gate = cf.Future()
    dependent = AFFINE["cpu"].submit(gate, 2.0)
    later = AFFINE["cpu"].submit(X, 0.0)  # not held up by the waiting call
    np.testing.assert_array_equal(later.result(), X * 0.5)
    assert not dependent.done()
    gate.set_result(X)
    np.testing.assert_array_equal(dependent.result(), X * 0.5 + 2.0)


def test_errors_name_the_user_line_and_fail_dependents():
    f = jitc.jit(pick)
    failed = f.submit(X, np.array([1, 99]))
    with pytest.raises(IndexError, match=rf"test_async.py:{PICK_LINE}") as info:
        failed.result()
    assert any("pick.submit at" in n and "test_async.py" in n for n in info.value.__notes__)
    dependent = AFFINE["cpu"].submit(failed, 1.0)
    grand = AFFINE["cpu"].submit(dependent, 1.0)
    assert dependent.exception() is failed.exception()
    assert grand.exception() is failed.exception()
    gate = cf.Future()
    waiting = AFFINE["cpu"].submit(gate, 1.0)
    error = ValueError("the input's own error")
    gate.set_exception(error)
    assert waiting.exception() is error


@pytest.fixture
def python_executor(monkeypatch):
    """Every submit on jitc's Python executor thread (tests/test_native_submit.py tests the
    native worker's path, which a compiled signature otherwise takes)."""
    from jitc.runtime import native

    monkeypatch.setattr(native, "submit", lambda *args: None)


def test_cancel_before_start(python_executor):
    started, release = threading.Event(), threading.Event()
    executor.run(lambda: (started.set(), release.wait()))  # hold the executor thread
    started.wait()
    queued = AFFINE["cpu"].submit(X, 1.0)
    gate = cf.Future()
    waiting = AFFINE["cpu"].submit(gate, 1.0)
    dependent = AFFINE["cpu"].submit(waiting, 1.0)
    assert queued.cancel() and waiting.cancel()
    release.set()
    gate.set_result(X)
    assert queued.cancelled() and waiting.cancelled()
    with pytest.raises(cf.CancelledError):
        dependent.result()
    np.testing.assert_array_equal(AFFINE["cpu"].submit(X, 1.0).result(), X * 0.5 + 1.0)
    done = AFFINE["cpu"].submit(X, 1.0)
    done.result()
    assert not done.cancel()


def test_a_done_callback_on_the_executor_thread_may_wait_for_a_later_call(python_executor):
    started, release = threading.Event(), threading.Event()
    executor.run(lambda: (started.set(), release.wait()))
    started.wait()
    first = AFFINE["cpu"].submit(X, 1.0)
    later = AFFINE["cpu"].submit(X, 2.0)  # queued behind `first`
    seen = []
    first.add_done_callback(lambda f: seen.append(later.result()))  # runs on the executor
    release.set()
    first.result()
    np.testing.assert_array_equal(later.result(), X * 0.5 + 2.0)
    np.testing.assert_array_equal(seen[0], X * 0.5 + 2.0)


def test_mutated_argument_is_written_back():
    x, y = np.arange(6.0), np.full(6, 2.0)
    fut = jitc.jit(bump).submit(x, y)
    expect = np.arange(6.0) + 2.0
    assert fut.result() == expect.sum()
    np.testing.assert_array_equal(x, expect)


def test_sixteen_threads_of_a_thousand_calls_match_numpy():
    f = AFFINE["cpu"]
    outcome = {}

    def caller(k):
        c = float(k)
        futures, fut = [], X + k
        for _ in range(1000):
            fut = f.submit(fut, c)
            futures.append(fut)
        value, ok = X + k, True
        for fut in futures:
            value = value * 0.5 + c
            ok &= np.array_equal(fut.result(), value)
        outcome[k] = ok

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcome == {k: True for k in range(16)}


@pytest.fixture
def check_async(monkeypatch):
    monkeypatch.setattr(config, "CHECK_ASYNC", True)


def test_check_async_catches_a_change_before_the_call(check_async):
    y = np.ones(8)
    gate = cf.Future()
    fut = AFFINE["cpu"].submit(gate, y)
    y[3] = 7.0
    gate.set_result(X)
    with pytest.raises(
        JitcError,
        match=r"affine.submit at .*test_async.py:\d+: argument 'y' "
        r"was changed by the caller before the call started",
    ):
        fut.result()


def test_check_async_catches_a_change_while_the_call_runs(check_async, monkeypatch):
    f = jitc.jit(affine)
    f(X, X.copy())  # compiled: the check knows what the function writes
    started, release = threading.Event(), threading.Event()
    run = f._fast

    def held(*args):  # the compiled call, started but held until the caller has written
        started.set()
        release.wait()
        return run(*args)

    monkeypatch.setattr(f, "_fast", held)
    y = np.ones(8)
    fut = f.submit(X, y)
    started.wait()
    y[0] = 5.0
    release.set()
    with pytest.raises(
        JitcError, match="argument 'y' was changed by the caller while the call ran"
    ):
        fut.result()


def test_check_async_passes_the_function_own_writes(check_async):
    x, y = np.arange(6.0), np.full(6, 2.0)
    assert jitc.jit(bump).submit(x, y).result() == (np.arange(6.0) + 2.0).sum()


def test_submit_inside_a_jitted_function_is_refused():
    inner = AFFINE["cpu"]

    @jitc.jit
    def outer(x):
        return inner.submit(x, 1.0)

    with pytest.raises(UnsupportedError, match="affine.submit inside a jitted function"):
        outer(X)
