"""Tiered execution: a first call does not wait for its kernels to compile.

numba compiles a new function's kernels in 0.3-3 s. When they are not in the persistent
cache, the first call (JITC_COMPILE=tiered, the default) returns what the reference tier
computes from the optimized graph, NumPy op by op (the reference backend, about NumPy's
time and NumPy's bits), while one background thread compiles the kernels; the calls after
it is done run the compiled tier. Both tiers run through Compiled.call_flat, so arguments
are checked and written back the same way. JITC_COMPILE=sync compiles on the calling thread.
Only the cpu backend is tiered; the others compile on the calling thread.

The background thread is a daemon: a process that exits while it compiles does not wait
for it, and the cache stays whole: files are written atomically, and numba's are used only
once sealed, which the background thread does once it has compiled them all
(backends/cpu/cache.py). os.fork (multiprocessing's fork start method) waits for it.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time

from jitc import config
from jitc.errors import JitcError

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
        from jitc.api import Compiled

        self.name = lowered.jitted.__name__
        self.reference = Compiled(lowered, "reference", graph)
        self.compiled = None
        self.error = None
        self.ready = threading.Event()
        log.info("%s: kernels not cached: the reference tier (NumPy) runs until they compile "
                 "in the background", self.name)
        _submit(self._build, lowered, graph.copy())  # the reference tier reads `graph`

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
_idle = threading.Condition()
_worker: list = []


def _submit(fn, *args) -> None:
    with _idle:
        _pending[0] += 1
        if not _worker:
            _worker.append(threading.Thread(target=_run, name="jitc-compile", daemon=True))
            _worker[0].start()
            os.register_at_fork(before=_before_fork)
    _jobs.put((fn, args))


def _run() -> None:
    while True:
        fn, args = _jobs.get()
        try:
            fn(*args)
        finally:
            with _idle:
                _pending[0] -= 1
                _idle.notify_all()


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
