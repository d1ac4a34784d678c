"""Jitted.submit's native path (runtime/native.py, backends/cpu/worker.py): a compiled
signature's calls run on a native worker thread that never takes the GIL. NumPy computes
every expected value; tests/test_async.py covers what both paths share."""

import concurrent.futures as cf
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jitc
from jitc.runtime.native import NativeFuture

WAIT = 120  # seconds a held worker may take on a loaded 2-core machine
X = np.linspace(-1.0, 1.0, 8)


def affine(x, y):
    return x * 0.5 + y


def pick(x, i):
    return x[i]  # PICK_LINE


PICK_LINE = pick.__code__.co_firstlineno + 1


def heavy(x):
    return np.sin(np.sin(np.sin(np.sin(x))))


BIG = np.linspace(0.0, 1.0, 3_000_000).reshape(1, -1)  # one row: one thread


def hold_worker(jobs=8):
    """Keep the worker busy for a while (a chain of ~0.1-0.3 s jobs, each on one thread as
    the worker runs them): the calls submitted next wait in its ring."""
    HEAVY = compiled(heavy, BIG)
    fut = BIG
    for _ in range(jobs):
        fut = HEAVY.submit(fut)
    assert type(fut) is NativeFuture and not fut.done()
    return fut


def compiled(fun, *args):
    f = jitc.jit(fun)
    # the signature the native path serves (sin: within an ulp of NumPy's, as jitc's vmath)
    np.testing.assert_allclose(f(*args), fun(*args), rtol=1e-15, atol=0)
    assert type(f.submit(*args)) is NativeFuture  # its collectors loaded (compiled once)
    return f


def test_a_chain_of_native_calls_matches_numpy_and_behaves_as_a_future():
    f = compiled(affine, X, 1.0)
    first = f.submit(X, 1.0)
    chained = f.submit(first, 2.0)  # a pending future stands for its arrays
    assert type(first) is NativeFuture and type(chained) is NativeFuture
    assert isinstance(first, cf.Future)
    expect_first = X * 0.5 + 1.0
    expect_chained = expect_first * 0.5 + 2.0
    done, not_done = cf.wait([chained], timeout=WAIT)
    assert done == {chained} and not not_done
    np.testing.assert_array_equal(chained.result(), expect_chained)
    np.testing.assert_array_equal(
        next(cf.as_completed([first], timeout=WAIT)).result(), expect_first
    )
    called = threading.Event()
    later = f.submit(chained, 2.0)
    later.add_done_callback(lambda fut: called.set())  # nobody asks: the watcher settles it
    assert called.wait(WAIT) and later.done() and not later.running()
    np.testing.assert_array_equal(later.result(), expect_chained * 0.5 + 2.0)
    assert later.exception() is None and not later.cancel()


def test_a_kernel_failure_names_the_user_line_and_fails_its_native_dependents():
    f = compiled(pick, X, np.array([1, 2]))
    g = compiled(affine, X[:2], 1.0)
    hold = hold_worker()
    failed = f.submit(X, np.array([1, 99]))
    dependent = g.submit(failed, 1.0)  # posted behind it, reading its result
    grand = g.submit(dependent, 1.0)
    assert type(dependent) is NativeFuture and not failed.done()
    with pytest.raises(IndexError, match=rf"test_native_submit.py:{PICK_LINE}") as info:
        failed.result()
    assert any("pick.submit at" in n and "test_native_submit.py" in n for n in info.value.__notes__)
    assert dependent.exception() is failed.exception()
    assert grand.exception() is failed.exception()
    want = BIG
    for _ in range(8):
        want = heavy(want)
    np.testing.assert_allclose(hold.result(), want, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(f.submit(X, np.array([3, 4])).result(), X[[3, 4]])


def test_cancel_before_the_worker_starts_the_call():
    f = compiled(affine, X, 1.0)
    hold = hold_worker()
    queued = f.submit(X, 1.0)
    dependent = f.submit(queued, 1.0)
    assert not queued.running() and queued.cancel() and queued.cancelled()
    with pytest.raises(cf.CancelledError):
        dependent.result()  # its input was cancelled
    assert dependent.cancelled() and hold.done()
    later = hold_worker(jobs=2)
    assert later.exception(timeout=WAIT) is None  # a wait with a timeout: the watcher's
    assert later.done()
    done = f.submit(X, 1.0)
    np.testing.assert_array_equal(done.result(), X * 0.5 + 1.0)
    assert not done.cancel()


def test_a_full_ring_waits_for_its_oldest_job():
    from jitc.backends.cpu.worker import RING_JOBS

    f = compiled(affine, X, 1.0)
    hold = hold_worker(jobs=2)
    futures = [f.submit(X, float(k)) for k in range(RING_JOBS + 100)]
    assert all(type(fut) is NativeFuture for fut in futures)
    assert hold.done()  # the last posts waited for the held jobs' slots in the ring
    for k, fut in enumerate(futures):
        np.testing.assert_array_equal(fut.result(), X * 0.5 + k)


def test_a_python_executor_call_waits_for_a_native_input():
    f = compiled(affine, X, 1.0)
    hold = hold_worker()
    native = f.submit(X, 1.0)
    by_name = f.submit(x=native, y=X)  # keyword arguments: the Python executor's call
    assert type(by_name) is not NativeFuture
    np.testing.assert_array_equal(by_name.result(), (X * 0.5 + 1.0) * 0.5 + X)
    assert hold.done()


def test_other_shapes_and_calls_whose_kernels_split_take_the_python_executor():
    f = compiled(affine, X, 1.0)
    other = f.submit(X[:4], 1.0)  # the worker refuses the table: not the compiled shapes
    assert type(other) is not NativeFuture
    np.testing.assert_array_equal(other.result(), X[:4] * 0.5 + 1.0)
    wide = np.linspace(0.0, 1.0, 1_000_000)  # rows enough to split over numba's threads
    g = jitc.jit(heavy)
    np.testing.assert_allclose(g(wide), heavy(wide), rtol=1e-15, atol=0)
    fut = g.submit(wide)
    assert type(fut) is not NativeFuture
    np.testing.assert_allclose(fut.result(), heavy(wide), rtol=1e-15, atol=0)


EXIT_CHILD = textwrap.dedent("""
    import numpy as np
    import jitc

    heavy = jitc.jit(lambda x: np.sin(np.sin(x)))
    big = np.linspace(0.0, 1.0, 2_000_000).reshape(1, -1)  # one row: the native worker's
    heavy(big)
    fut = big
    for _ in range(8):
        fut = heavy.submit(fut)
    print(type(fut).__name__, fut.done())
""")  # and exit with the jobs in flight


def script_output(tmp_path, source) -> list:
    """The words `source` prints, run as a script in a new process (it must succeed)."""
    script = tmp_path / "child.py"
    script.write_text(source)
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, JITC_COMPILE="sync"),
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_a_process_exits_cleanly_with_native_jobs_in_flight(tmp_path):
    assert script_output(tmp_path, EXIT_CHILD) == ["NativeFuture", "False"]


FORK_CHILD = textwrap.dedent("""
    import os
    import sys
    import numpy as np
    import jitc

    step = jitc.jit(lambda x, c: x * 0.5 + c)
    x = np.linspace(-1.0, 1.0, 8)
    step(x, 1.0)
    pending = [step.submit(x, float(k)) for k in range(50)]
    heavy = jitc.jit(lambda y: np.sin(np.sin(y)))
    big = np.linspace(0.0, 1.0, 2_000_000).reshape(1, -1)
    heavy(big)
    held = big
    for _ in range(8):  # in flight at the fork: the parent's worker is busy for a while
        held = heavy.submit(held)
    in_flight = not held.done()
    pid = os.fork()
    if pid == 0:
        fut = x
        for _ in range(20):
            fut = step.submit(fut, 2.0)
        want = x
        for _ in range(20):
            want = want * 0.5 + 2.0
        if type(fut).__name__ != "NativeFuture" or not np.array_equal(fut.result(), want):
            os._exit(1)
        for k in range(50):  # left in flight: this child's exit waits for its own worker
            step.submit(x, float(k))
        sys.exit(0)  # at-exit handlers run, the parent's worker's among them
    _, status = os.waitpid(pid, 0)
    print(status, all(np.array_equal(f.result(), x * 0.5 + k) for k, f in enumerate(pending)),
          in_flight)
""")


def test_a_forked_child_gets_a_native_worker_of_its_own(tmp_path):
    assert script_output(tmp_path, FORK_CHILD) == ["0", "True", "True"]


def test_a_full_ring_keeps_the_status_a_queued_job_will_read():
    """A job reads its input's status when it starts: the input's slot in the ring must not
    go to a new job before then, even once the input's own status has been read (here the
    input ends, then the ring fills while another long job runs before its dependent)."""
    from jitc.backends.cpu.worker import RING_JOBS

    f = compiled(affine, X, 1.0)
    HEAVY = compiled(heavy, BIG)
    first = HEAVY.submit(BIG)
    between = HEAVY.submit(BIG)  # runs between `first` and its dependent
    dependent = HEAVY.submit(first)
    futures = [f.submit(X, float(k)) for k in range(RING_JOBS + 100)]
    np.testing.assert_allclose(dependent.result(), heavy(heavy(BIG)), rtol=1e-14, atol=0)
    np.testing.assert_allclose(between.result(), heavy(BIG), rtol=1e-14, atol=0)
    for k, fut in enumerate(futures):
        np.testing.assert_array_equal(fut.result(), X * 0.5 + k)
