"""The one thread that runs submitted calls, in submission order once their inputs are ready.

One thread, not a pool: the kernels of a call already split over numba's thread pool where
they are large enough, so a second runner would only oversubscribe the cores; and a chain
of calls (each step's future passed to the next) runs in order without waiting for one.
The thread never blocks on a future: a call with pending inputs is queued here only when
the last of them is done (jitc/runtime/futures.py). Started on first use and again in a
forked child, which has no copy of it.
"""

from __future__ import annotations

import os
import queue
import threading

_tasks: queue.SimpleQueue = queue.SimpleQueue()
_thread: threading.Thread | None = None
_start_lock = threading.Lock()


def _serve():
    while True:
        _tasks.get()()


def run(task) -> None:
    """Run `task()` (which catches its own errors) on the executor thread."""
    global _thread
    if _thread is None:
        with _start_lock:
            if _thread is None:
                thread = threading.Thread(target=_serve, name="jitc-executor", daemon=True)
                thread.start()
                _thread = thread
    _tasks.put(task)


def _forget_after_fork():
    """A forked child has neither the thread nor its queue's waiters: start afresh."""
    global _tasks, _thread, _start_lock
    _tasks, _thread, _start_lock = queue.SimpleQueue(), None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
