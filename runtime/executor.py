"""The one thread that runs submitted calls, in submission order once their inputs are ready.

One thread, not a pool: the kernels of a call already split over numba's thread pool where
they are large enough, so a second runner would only oversubscribe the cores; and a chain
of calls (each step's future passed to the next) runs in order without waiting for one.
The thread never blocks on a future: a call with pending inputs is queued here only when
the last of them is done (runtime/futures.py).

A caller about to wait for a future runs the queued calls itself (`help_until`) when the
executor thread is not running one: on a busy machine the thread may wait milliseconds for
a core (and for the GIL), while the caller already has both. One runner at a time (the
`_runner` lock), always from the head of the queue, keeps the order. Started on first use
and again in a forked child, which has no copy of it.
"""

from __future__ import annotations

import collections
import os
import queue
import threading

_calls: collections.deque = collections.deque()
_wakeups: queue.SimpleQueue = queue.SimpleQueue()  # one per queued call
_runner = threading.Lock()  # held by whoever runs queued calls
_thread: threading.Thread | None = None
_start_lock = threading.Lock()
_owner = [None]  # the thread holding _runner


def _serve():
    while True:
        _wakeups.get()
        with _runner:
            _drain(None)


def _drain(future) -> None:
    """Run queued calls (holding _runner) until none is left or `future` is done."""
    outer, _owner[0] = _owner[0], threading.get_ident()
    try:
        while _calls and (future is None or not future.done()):
            _calls.popleft()()
    finally:
        _owner[0] = outer


def run(task) -> None:
    """Run `task()` (which catches its own errors) on the executor thread."""
    global _thread
    if _thread is None:
        with _start_lock:
            if _thread is None:
                thread = threading.Thread(target=_serve, name="jitc-executor", daemon=True)
                thread.start()
                _thread = thread
    _calls.append(task)
    _wakeups.put(None)


def help_until(future) -> None:
    """Run queued calls on this thread until `future` is done, unless another thread is
    running them (then the caller waits for the future as usual). The thread running them
    may wait too, in a done-callback: it goes on running them rather than wait for itself."""
    if _owner[0] == threading.get_ident():
        _drain(future)
    elif _runner.acquire(blocking=False):
        try:
            _drain(future)
        finally:
            _runner.release()


def _forget_after_fork():
    """A forked child has neither the thread nor its queue's waiters: start afresh."""
    global _calls, _wakeups, _runner, _thread, _start_lock
    _calls, _wakeups, _runner = collections.deque(), queue.SimpleQueue(), threading.Lock()
    _thread, _start_lock, _owner[0] = None, threading.Lock(), None


os.register_at_fork(after_in_child=_forget_after_fork)
