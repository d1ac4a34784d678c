"""jitc's background compile thread: one daemon thread that compiles what calls need
later (tiered kernels, runtime/tiered.py; the cpu backend's per-signature drivers).

The thread is a daemon: a process that exits while it compiles does not wait for it, and
the cache stays whole (files are written atomically, and numba's are used only once
sealed: cache.py). What the jobs had left to compile is handed to a detached process that
compiles it into the cache (precompile.py), so that the next run of a short script finds
its kernels. A process that exits with only jobs marked finish_at_exit pending (drivers)
waits for them. os.fork (multiprocessing's fork start method) waits for the thread.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading

log = logging.getLogger("jitc")

_jobs: queue.Queue = queue.Queue()
_pending = [0]  # jobs submitted and not finished
_finish_at_exit = [0]  # of those, the ones an exiting process waits for
_unfinished: list = []  # those jobs: (fn, args, finish_at_exit, leftover)
_idle = threading.Condition()
_worker: list = []
EXIT_WAIT = 30.0  # seconds an exiting process waits for them at most


def submit(fn, *args, finish_at_exit: bool = False, leftover=None) -> None:
    """Run fn(*args) on the background compile thread (also the cpu backend's drivers).
    `finish_at_exit`: a process that exits while only such jobs are pending waits for them
    (a driver, ~0.35 s: else a short script never caches it and compiles it every run).
    `leftover()`: the (source, runtime) pieces of the cpu backend's cache that the job
    compiles and that are not cached, for a process that exits before it is done to hand on
    (`_at_exit`)."""
    job = (fn, args, finish_at_exit, leftover)
    with _idle:
        _pending[0] += 1
        _finish_at_exit[0] += finish_at_exit
        _unfinished.append(job)
        if not _worker:
            _worker.append(threading.Thread(target=_run, name="jitc-compile", daemon=True))
            _worker[0].start()
            os.register_at_fork(before=_before_fork)
            atexit.register(_at_exit)
    _jobs.put(job)


def _run() -> None:
    while True:
        job = _jobs.get()
        fn, args, finish_at_exit, _ = job
        try:
            fn(*args)
        finally:
            with _idle:
                _pending[0] -= 1
                _finish_at_exit[0] -= finish_at_exit
                _unfinished.remove(job)
                _idle.notify_all()


def _at_exit() -> None:
    """Finish the pending jobs if all of them are to be finished at exit. A kernel compile
    (tiered) may take seconds: the process leaves without it, and hands what its pending
    jobs have left to compile to a detached process (backends/native/precompile.py)."""
    with _idle:
        if not _pending[0]:
            return
        if _pending[0] == _finish_at_exit[0]:
            _idle.wait_for(lambda: _pending[0] == 0, EXIT_WAIT)
            return
        leftovers = [job[3] for job in _unfinished if job[3] is not None]
    from jitc.backends.native.precompile import hand_on  # the only tiered backend's cache

    sources: list = []
    for leftover in leftovers:
        try:
            pieces = leftover()
        except Exception as e:  # noqa: BLE001 - the next run compiles it and says why
            log.warning("exit while compiling: not handed on (%s: %s)", type(e).__name__, e)
            continue
        sources += [piece for piece in pieces if piece not in sources]
    pid = hand_on(sources)
    if pid is not None:
        log.info(
            "exit while compiling: process %d compiles what was left (sources: %d) into "
            "the cache for the next run",
            pid,
            len(sources),
        )


def kernels_pending() -> bool:
    """Is a compile whose calls run the reference tier until it is done in flight (not only
    drivers, whose calls run the compiled kernels meanwhile)? For benchmarks."""
    with _idle:
        return _pending[0] > _finish_at_exit[0]


def _before_fork() -> None:
    """A forked child has no compile thread: the compiles in flight finish first, so that the
    child inherits their kernels, not a signature that never leaves the reference tier or a
    cache lock held forever by a thread it does not have."""
    if threading.current_thread() is not _worker[0]:
        wait()


def wait(timeout: float | None = None) -> bool:
    """Wait until every background compile has finished (tests, benchmarks); False if
    `timeout` seconds passed first."""
    with _idle:
        return _idle.wait_for(lambda: _pending[0] == 0, timeout)
