"""jitc's native worker: one thread that runs submitted calls' launches without the GIL.

A Python thread cannot overlap a caller that keeps running Python: it needs the GIL to
start each call, and a caller that never blocks holds it for the interpreter's whole switch
interval (5 ms), so a chain of 10 µs steps submitted to a Python executor ran 1.35-1.7x
slower than calling them in turn. This worker is a numba cfunc looping on a ring of jobs in
plain memory; the caller posts a job (a state vector and a table of its arrays' pointers
and shapes, as the wide driver takes them: wide.py) and goes on, and the worker runs it
with WIDE_JOB_LINES, the wide driver's own launch loop, which returns failures instead of
raising. Jobs run one at a time, in posting order: a job that reads another's results is
posted after it. The thread is a Python thread spent in one foreign call (ctypes releases
the GIL for it), so it never asks for the GIL again.

It serves calls whose kernels run on one thread each (small calls, where the cost of a
dispatch counts: runtime/native.py); a larger call keeps jitc's Python executor,
whose kernels split over numba's pool. Parallel regions launched from this thread too,
against a caller's busy core and the pool's other arena, made a 100 µs LSTM step 1.5x
slower.

The control block (int64 words, CONTROL) and the ring (CAPACITY jobs of JOB words) are
numpy arrays that live as long as the process. A job's STATUS goes QUEUED -> RUNNING -> its
result (0, a failure kind, MISSED, INPUT_FAILED) or QUEUED -> CANCELLED; a job whose input
job (DEP0, DEP1) did not end with 0 is not run and ends INPUT_FAILED or CANCELLED. The
worker spins SPINS pauses before it sleeps on a futex (atomics.py), and a poster wakes it
only if it sleeps.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading

import numpy as np

from jitc.backends.cpu import atomics
from jitc.backends.cpu.driver import DRIVER_HEADER, FAILED, WIDE, WIDE_JOB_LINES

# control words: each word one side writes on a cache line of its own (8 words), so that
# the worker's spinning loads of SUBMITTED do not fight the poster for DONE's line
SUBMITTED, DONE, SLEEPING, WAITERS = 0, 8, 16, 24
SYSCALL, TIMEOUT_S, TIMEOUT_NS, RING, CAPACITY, STOP = range(32, 38)
CONTROL = 40
# a job's words
STATE, STATE_LENGTH, TABLE, TABLE_LENGTH, DEP0, DEP1, STATUS, FAILED_AT = range(8)
JOB = 8
RING_JOBS = 1024
QUEUED, RUNNING, CANCELLED, INPUT_FAILED = 1 << 20, (1 << 20) + 1, -3, -2
SPINS = 20_000  # pauses before sleeping: under ~1 ms (a pause takes tens of cycles to ~140)
FULL, REFUSED = -1, -2  # post's answers other than a job number

SOURCE = (
    DRIVER_HEADER
    + """\
from numba import cfunc
from jitc.backends.cpu.abi import array_at, set_thread_count
from jitc.backends.cpu.atomics import (FUTEX_WAIT, FUTEX_WAKE, atomic_add, atomic_load,
                                       atomic_store, compare_exchange, futex, spin_pause)


@njit(nogil=True, cache=persistent())
def run_job(n, t):
"""
    + "".join(f"    {line}\n" for line in WIDE_JOB_LINES)
    + f"""

@njit(nogil=True, cache=persistent())
def _sleep_on(c, word, seen):
    futex(c[{SYSCALL}], c.ctypes.data + 8 * word, FUTEX_WAIT, seen, c.ctypes.data + 8 * {TIMEOUT_S})


@njit(nogil=True, cache=persistent())
def _input_status(ring, capacity, dep):
    at = ring.ctypes.data + 8 * ((dep % capacity) * {JOB} + {STATUS})
    return 0 if dep < 0 else atomic_load(at)


@cfunc("int64(int64)", nogil=True, cache=persistent())
def serve(control):
    c = array_at(control, np.int64, ({CONTROL},))
    capacity = c[{CAPACITY}]
    ring = array_at(c[{RING}], np.int64, (capacity * {JOB},))
    at = c.ctypes.data
    job = atomic_load(at + 8 * {DONE})
    set_thread_count(1)  # its calls' kernels do not split (runtime/native.py)
    while True:
        spins = 0
        while atomic_load(at + 8 * {SUBMITTED}) <= job:
            if atomic_load(at + 8 * {STOP}):
                return job
            spins += 1
            spin_pause()
            if spins > {SPINS}:
                atomic_store(at + 8 * {SLEEPING}, 1)
                if atomic_load(at + 8 * {SUBMITTED}) <= job:
                    _sleep_on(c, {SUBMITTED}, job)
                atomic_store(at + 8 * {SLEEPING}, 0)
                spins = 0
        j = (job % capacity) * {JOB}
        status_at = ring.ctypes.data + 8 * (j + {STATUS})
        if compare_exchange(status_at, {QUEUED}, {RUNNING}) == {QUEUED}:
            status = 0
            for d in (ring[j + {DEP0}], ring[j + {DEP1}]):
                s = _input_status(ring, capacity, d)
                if s != 0 and status == 0:
                    status = {CANCELLED} if s == {CANCELLED} else {INPUT_FAILED}
            if status == 0:
                n = array_at(ring[j + {STATE}], np.int64, (ring[j + {STATE_LENGTH}],))
                t = array_at(ring[j + {TABLE}], np.int64, (ring[j + {TABLE_LENGTH}],))
                status = run_job(n, t)
                if status > 0:
                    ring[j + {FAILED_AT}] = n[{FAILED}]
            atomic_store(status_at, status)
        job += 1
        atomic_store(at + 8 * {DONE}, job)
        if atomic_load(at + 8 * {WAITERS}) > 0:
            futex(c[{SYSCALL}], at + 8 * {DONE}, FUTEX_WAKE, 1 << 30, 0)


@cfunc("int64(int64, int64)", nogil=True, cache=persistent())
def wait_done(control, target):
    c = array_at(control, np.int64, ({CONTROL},))
    at = c.ctypes.data
    spins = 0
    while True:
        done = atomic_load(at + 8 * {DONE})
        if done >= target:
            return done
        spins += 1
        spin_pause()
        if spins > {SPINS}:
            atomic_add(at + 8 * {WAITERS}, 1)
            if atomic_load(at + 8 * {DONE}) == done:
                _sleep_on(c, {DONE}, done)
            atomic_add(at + 8 * {WAITERS}, -1)
            spins = 0


@njit(cache=persistent())
def post(c, ring, limit, state, table, dep0, dep1):
    w = state[{WIDE}]
    checks = w + 1 + state[w]
    for e in range(checks + 1, checks + 1 + 2 * state[checks], 2):
        if table[state[e]] != state[state[e + 1]]:
            return {REFUSED}
    at = c.ctypes.data
    job = c[{SUBMITTED}]
    if job >= limit:
        return {FULL}
    j = (job % c[{CAPACITY}]) * {JOB}
    ring[j + {STATE}] = state.ctypes.data
    ring[j + {STATE_LENGTH}] = state.shape[0]
    ring[j + {TABLE}] = table.ctypes.data
    ring[j + {TABLE_LENGTH}] = table.shape[0]
    ring[j + {DEP0}] = dep0
    ring[j + {DEP1}] = dep1
    ring[j + {FAILED_AT}] = -1
    atomic_store(ring.ctypes.data + 8 * (j + {STATUS}), {QUEUED})
    atomic_store(at + 8 * {SUBMITTED}, job + 1)
    if atomic_load(at + 8 * {SLEEPING}):
        futex(c[{SYSCALL}], at + 8 * {SUBMITTED}, FUTEX_WAKE, 1, 0)
    return job


@njit(cache=persistent())
def cancel(ring, capacity, job):
    at = ring.ctypes.data + 8 * ((job % capacity) * {JOB} + {STATUS})
    return compare_exchange(at, {QUEUED}, {CANCELLED}) == {QUEUED}
"""
)


class Worker:
    """The process's worker thread and its ring; `post` from Python threads holding the
    GIL (numba's `post` runs under it, so posts never interleave)."""

    def __init__(self, module, syscall: int):
        self.control = _cache_aligned(CONTROL)
        self.ring = _cache_aligned(RING_JOBS * JOB)  # a job's words: one cache line
        self.control[[SYSCALL, TIMEOUT_S, TIMEOUT_NS, RING, CAPACITY]] = [
            syscall,
            0,
            atomics.TIMEOUT_NS,
            self.ring.ctypes.data,
            RING_JOBS,
        ]
        self._post, self._cancel = module.post, module.cancel
        self._wait = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(
            module.wait_done.address
        )
        serve = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(module.serve.address)
        self.thread = threading.Thread(
            target=serve, args=(self.control.ctypes.data,), name="jitc-native-worker", daemon=True
        )
        self.thread.start()
        self.pid = os.getpid()

    def post(self, limit: int, state, table, dep0: int, dep1: int) -> int:
        """Post a job; its number, FULL if job `limit` would be reached (the ring's oldest
        slots still hold statuses nobody has read: see runtime/native.py), REFUSED if
        the table's parameter shapes are not the state's (those the driver compiled for)."""
        return self._post(self.control, self.ring, limit, state, table, dep0, dep1)

    def done(self) -> int:
        """How many jobs have ended (ran, failed, or were skipped)."""
        return int(self.control[DONE])

    def wait(self, job: int) -> None:
        """Block (without the GIL) until job `job` has ended."""
        self._wait(self.control.ctypes.data, job + 1)

    def status(self, job: int) -> int:
        """Job `job`'s status; read it before job `job + RING_JOBS` is posted."""
        return int(self.ring[(job % RING_JOBS) * JOB + STATUS])

    def running(self, job: int) -> bool:
        return self.status(job) == RUNNING

    def submitted(self) -> int:
        return int(self.control[SUBMITTED])

    def failed_at(self, job: int) -> int:
        return int(self.ring[(job % RING_JOBS) * JOB + FAILED_AT])

    def cancel(self, job: int) -> bool:
        """Cancel job `job` if it has not started; did it?"""
        return bool(self._cancel(self.ring, RING_JOBS, job))

    def finish(self) -> None:
        """At exit: wait for every posted job, then end the thread's loop, so that no
        native code reads the ring while the interpreter frees it. Not in a forked child,
        which inherits this handler but not the thread."""
        if os.getpid() != self.pid:
            return
        submitted = int(self.control[SUBMITTED])
        if submitted:
            self.wait(submitted - 1)
        self.control[STOP] = 1  # seen within its spin, or its futex wait's timeout
        self.thread.join(1.0)


def _cache_aligned(words: int) -> np.ndarray:
    """Zeroed int64 words starting on a 64-byte boundary."""
    raw = np.zeros(words + 8, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip : skip + words]


_worker: list = []
_lock = threading.Lock()


def worker() -> Worker | None:
    """The process's worker, started on first use; None where futexes are not available."""
    if _worker:
        return _worker[0]
    with _lock:
        if not _worker:
            syscall = atomics.syscall_address()
            if syscall is None:
                _worker.append(None)
            else:
                from jitc.backends.cpu.threads import start_thread_pool
                from jitc.backends.native.cache import load_module

                start_thread_pool()  # registers set_num_threads, which the worker links
                _worker.append(Worker(load_module(SOURCE, runtime=True), syscall))
                atexit.register(_worker[0].finish)
    return _worker[0]


def _forget_after_fork():
    """A forked child has no worker thread: it starts its own on first use."""
    global _lock
    _worker.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
