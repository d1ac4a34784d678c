"""Tiered execution: a first call does not wait for its kernels to compile.

numba compiles a new function's kernels in 0.3-3 s. When they are not in the persistent
cache, the first call (JITC_COMPILE=tiered, the default) returns what the reference tier
computes from the optimized graph, NumPy op by op (the reference backend, about NumPy's
time and NumPy's bits), while one background thread compiles the kernels; the calls after
it is done run the compiled tier. Both tiers run through Compiled.call_flat, so arguments
are checked and written back the same way. JITC_COMPILE=sync compiles the kernels on the
calling thread. Only the cpu backend is tiered; the others compile on the calling thread.
The same thread compiles the cpu backend's per-signature drivers in both modes
(backends/cpu/executable.py).

The background thread is a daemon: a process that exits while it compiles does not wait
for it, and the cache stays whole: files are written atomically, and numba's are used only
once sealed, which the background thread does once it has compiled them all
(backends/native/cache.py). What it had left to compile is handed to a detached process that
compiles it into the cache (backends/native/precompile.py), so that the next run of a short
script finds its kernels. os.fork (multiprocessing's fork start method) waits for the
thread. A process that exits with only drivers left to compile waits for them (submit).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time

from jitc.core import config
from jitc.core.errors import JitcError

log = logging.getLogger("jitc")
MODES = ("tiered", "sync")
TIERED_BACKENDS = ("cpu",)


def compile(lowered):
    """A Compiled for `lowered`, or a Tiered when its kernels are not cached yet."""
    from jitc import backends
    from jitc.api import Compiled, optimized

    if config.COMPILE not in MODES:
        raise JitcError(f"JITC_COMPILE={config.COMPILE!r} is not a compile mode; choose one "
                        f"of {', '.join(MODES)}")
    backend = lowered.jitted.backend
    if config.COMPILE == "sync" or backend not in TIERED_BACKENDS:
        return lowered.compile()
    graph = optimized(lowered)
    if backends.get(backend).cached(graph):
        log.info("%s: kernels cached: compiled tier", lowered.jitted.__name__)
        return Compiled(lowered, backend, graph)
    return Tiered(lowered, graph)


class Tiered:
    """One signature whose kernels compile in the background: `current()` is the Compiled a
    call runs, the reference tier's until the compiled tier is ready."""

    def __init__(self, lowered, graph):
        from jitc import backends
        from jitc.api import Compiled

        self.name = lowered.jitted.__name__
        self.reference = Compiled(lowered, "reference", graph)
        self.compiled = None
        self.error = None
        self.ready = threading.Event()
        log.info("%s: kernels not cached: the reference tier (NumPy) runs until they compile "
                 "in the background", self.name)
        uncached = backends.get(lowered.jitted.backend).uncached
        submit(self._build, lowered, graph.copy(),  # the reference tier reads `graph`
               leftover=lambda: uncached(graph.copy()))

    def _build(self, lowered, graph):
        from jitc.api import Compiled

        start = time.perf_counter()
        try:
            self.compiled = Compiled(lowered, lowered.jitted.backend, graph)
            # cached for the next process even if this one never calls it again
            self.compiled.executable.seal_cache()
            log.info("%s: kernels compiled in the background in %.2f s", self.name,
                     time.perf_counter() - start)
        except Exception as e:  # noqa: BLE001 - raised by the calls that follow
            self.error = e
        finally:
            self.ready.set()

    def current(self):
        """The reference tier while compiling, then the compiled tier (or the compile's error,
        which the first call did not see)."""
        if not self.ready.is_set():
            log.info("%s: reference tier ran (kernels compiling)", self.name)
            return self.reference
        if self.error is not None:
            raise JitcError(f"{self.name}: compiling its kernels in the background failed "
                            f"(the calls before ran the reference tier): "
                            f"{type(self.error).__name__}: {self.error}") from self.error
        log.info("%s: compiled tier from now on", self.name)
        return self.compiled


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
        log.info("exit while compiling: process %d compiles what was left (sources: %d) into "
                 "the cache for the next run", pid, len(sources))


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
