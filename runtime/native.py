"""The native path of `Jitted.submit`: the caller checks the arguments and posts the call's
launches to jitc's native worker (backends/cpu/worker.py), which runs them without the
GIL while the caller goes on; no Python thread takes part, so nothing waits for the GIL.

It serves a call of the signature the function last ran (its fast path, runtime/fastpath.py,
with a `run` that posts instead of running) when every result is an array the kernels
fill, nothing is written back to the caller's arrays, nothing is read from captured places
and no kernel splits over threads (small calls: worker.py says why); every other submit
goes through jitc's Python executor (futures.py), as do calls whose inputs are futures
that are not this path's or have failed. An input future of this
path still pending stands for its result arrays, allocated at its submit and filled by the
worker before it runs the dependent job: jobs run in posting order.

A NativeFuture learns its job's end lazily: when asked (done, result, exception), or, once
something waits on it without asking (callbacks, concurrent.futures.wait, an input of a
Python-executor call), from the watcher thread, which sleeps in the worker's wait without
the GIL. Posts read the statuses of the jobs that have ended (`_reap`) every REAP_AFTER
jobs, and before a job's slot in the ring is used again.
"""

from __future__ import annotations

import collections
import os
import threading
from concurrent.futures import Future
from concurrent.futures._base import PENDING

import numpy as np

from jitc.backends.cpu.worker import CANCELLED, INPUT_FAILED, JOB, REFUSED, RING_JOBS, STATUS
from jitc.backends.cpu.worker import worker as process_worker
from jitc.core import config
from jitc.core.errors import SignatureMiss
from jitc.runtime import fastpath
from jitc.runtime.fastpath import MISSES

_lock = threading.Lock()  # posts, the in-flight queue and settling
_inflight: collections.deque = collections.deque()  # NativeFutures whose status is unread
# (job, its oldest input's job) of posted jobs with inputs, kept until they have run: the
# worker reads an input's status in the input's slot when it starts the job, so that slot
# must not be reused before (a sliding-window minimum: the oldest input comes first)
_needed: collections.deque = collections.deque()
_local = threading.local()  # the submit in progress on this thread: its future and inputs
_watched: set = set()  # NativeFutures that something waits on, not yet settled
_watch = threading.Condition(threading.Lock())
_watcher: list = []
_conditions = threading.Lock()  # making a future's Condition
MAX_INPUTS = 2  # pending native futures a job may read (the worker checks each one's status)
# Statuses are read (and the arrays a job read let go) once this many jobs are in flight, or
# when something asks: reading them at every post cost ~1.5 µs of a ~10 µs submit.
REAP_AFTER = 32


class NativeFuture(Future):
    """A call posted to the native worker. Its result (the function's result tree of arrays
    the worker fills) is known at submit; its status once the job has ended."""

    def __init__(self, worker, compiled, site, inputs):
        # Future's own fields; its Condition is made when first used (_condition): most
        # futures of a chain are passed on, never waited for
        self._state, self._result, self._exception = PENDING, None, None
        self._done_callbacks, self._waiters = [], []
        self._worker, self._compiled, self._site, self._inputs = worker, compiled, site, inputs
        self._job = None  # the job's number, once posted
        self._keep = None  # what the worker reads until the job ends
        self._status = None  # once read from the ring (_reap)
        self._error = None  # the job's failure, or its input's
        self._value = None
        self._settled = False

    # the Future interface: each first finds out whether the job has ended
    def done(self):
        self._settle_if_ended()
        return super().done()

    def running(self):
        return not self.done() and self._worker.running(self._job)

    def result(self, timeout=None):
        self._wait(timeout)
        return super().result(timeout)

    def exception(self, timeout=None):
        self._wait(timeout)
        return super().exception(timeout)

    def add_done_callback(self, fn):
        self._watch()
        super().add_done_callback(fn)

    def cancel(self):
        with _lock:
            cancelled = (
                not self._settled
                and self._status is None
                and self._job is not None
                and self._worker.cancel(self._job)
            )
            self._settled |= cancelled
        if cancelled:
            super().cancel()
            super().set_running_or_notify_cancel()  # tells concurrent.futures.wait
            return True
        self._settle_if_ended()
        return self._settled and super().cancel()  # a running job runs to its end

    @property
    def _condition(self):
        condition = self.__dict__.get("_made_condition")
        if condition is None:
            with _conditions:
                condition = self.__dict__.setdefault("_made_condition", threading.Condition())
        return condition

    @property
    def _waiters(self):  # concurrent.futures.wait and as_completed wait through these
        self._watch()
        return self.__dict__["_waiter_list"]

    @_waiters.setter
    def _waiters(self, waiters):
        self.__dict__["_waiter_list"] = waiters

    # how it learns its end
    def _wait(self, timeout):
        if not self._settled and self._status is None and timeout is None:
            self._worker.wait(self._job)  # without the GIL
        self._settle_if_ended()
        if not self._settled:
            self._watch()  # a wait with a timeout: the watcher settles it when it ends

    def _settle_if_ended(self):
        if self._settled:
            return
        if self._status is None:
            if self._job is None or self._worker.done() <= self._job:
                return
            with _lock:
                _reap(self._worker)
        self._settle()

    def _settle(self):
        """Put the job's end into the future: its result, its error or its cancel."""
        with _lock:
            if self._settled:
                return
            self._settled = True
        if self._status == CANCELLED:
            super().cancel()
            super().set_running_or_notify_cancel()
            return
        super().set_running_or_notify_cancel()
        if self._error is None:
            super().set_result(self._value)
        else:
            super().set_exception(self._error)

    def _ended(self, status: int, failed_at: int) -> None:
        """Note the job's status (holding _lock, in job order: its inputs ended before)."""
        self._status = status
        if status == INPUT_FAILED:  # the same error as the input's: its job ended first
            self._error = next(f._error for f in self._inputs if f._error is not None)
        elif status not in (0, CANCELLED):
            self._error = self._kernel_error(status, failed_at)
        self._inputs = self._keep = None  # a long chain holds no earlier step

    def _kernel_error(self, status, failed_at):
        from jitc.backends.cpu.driver import ERRORS

        name, message = ERRORS.get(status, ERRORS[3])  # else MISSED: post checked the shapes
        error = _ERROR_CLASSES[name](message)
        error = self._compiled.executable.failure(error, failed_at) or error
        error.add_note("(in {}.submit at {}:{})".format(*self._site))
        return error

    def _watch(self):
        if self._settled:
            return
        with _watch:
            _watched.add(self)
            if not _watcher:
                _watcher.append(
                    threading.Thread(target=_watch_loop, name="jitc-watcher", daemon=True)
                )
                _watcher[0].start()
            _watch.notify()


def _forget_after_fork():
    """A forked child has its own worker (backends/cpu/worker.py), numbering its jobs anew:
    the parent's in-flight calls are not its own (it cannot wait for them)."""
    global _lock, _watch, _conditions
    _inflight.clear()
    _needed.clear()
    _watched.clear()
    _watcher.clear()
    _lock, _conditions = threading.Lock(), threading.Lock()
    _watch = threading.Condition(threading.Lock())


os.register_at_fork(after_in_child=_forget_after_fork)


# the classes of the kernel failures the worker reports (driver.ERRORS names them)
_ERROR_CLASSES = {
    "IndexError": IndexError,
    "ValueError": ValueError,
    "RuntimeError": RuntimeError,
    "LinAlgError": np.linalg.LinAlgError,
}


def submit(jitted, args: tuple, site: tuple) -> NativeFuture | None:
    """`jitted(*args)` posted to the native worker, or None if this path cannot serve it
    (then the Python executor does)."""
    run = native_call_of(jitted.last_compiled)
    if run is None or config.CHECK_ASYNC or config.TRACE:
        return None
    inputs, values = [], []
    for a in args:
        if not isinstance(a, Future):
            values.append(a)
        elif type(a) is NativeFuture and a._status is None and not a._settled:
            inputs.append(a)  # pending: its arrays, filled before this job runs
            values.append(a._value)
        elif a.done() and not a.cancelled() and a.exception() is None:
            values.append(a.result())
        else:  # pending elsewhere, failed or cancelled: the Python executor's case
            return None
    if len(inputs) > MAX_INPUTS:
        return None
    future = NativeFuture(
        process_worker(), jitted.last_compiled, (jitted.function.name, *site), inputs
    )
    _local.future = future
    try:
        future._value = run(*values)
    except (*MISSES, _InputEnded):
        return None
    finally:
        _local.future = None
    return future


def post(state, table, arrays) -> None:
    """The native call's last step (its run, see submit): post the job of the future being
    submitted on this thread to this process's worker."""
    future = _local.future
    worker = future._worker
    inputs = future._inputs
    with _lock:
        if len(_inflight) >= REAP_AFTER:
            _reap(worker)
        while True:
            deps = [-1] * MAX_INPUTS
            for k, f in enumerate(inputs):
                if f._status is None:
                    deps[k] = f._job  # its slot still holds its status
                elif f._status:
                    raise _InputEnded()  # failed or cancelled since submit looked
            oldest = _inflight[0]._job if _inflight else worker.submitted()
            wait_for = oldest  # the ring is full: the oldest job's status is still unread,
            if _needed:  # or a job still to run will read an older one's
                done = worker.done()
                while _needed and _needed[0][0] < done:
                    _needed.popleft()
                if _needed and _needed[0][1] < oldest:
                    oldest, wait_for = _needed[0][1], _needed[0][0]
            job = worker.post(oldest + RING_JOBS, state, table, *deps)
            if job >= 0:
                break
            if job == REFUSED:
                raise SignatureMiss()
            worker.wait(wait_for)
            _reap(worker)
        first = min((d for d in deps if d >= 0), default=None)
        if first is not None:
            while _needed and _needed[-1][1] >= first:
                _needed.pop()
            _needed.append((job, first))
        future._job, future._keep = job, (table, arrays)
        _inflight.append(future)


class _InputEnded(Exception):
    """An input's job failed or was cancelled between submit's look and the post: the
    Python executor's call takes it from there (with the input's error)."""


def _reap(worker) -> None:
    """Read the statuses of the jobs that have ended, in order (holding _lock)."""
    done, ring = worker.done(), worker.ring
    while _inflight and _inflight[0]._job < done:
        f = _inflight.popleft()
        status = ring[(f._job % RING_JOBS) * JOB + STATUS]
        if status:
            f._ended(int(status), worker.failed_at(f._job))
        else:  # the common case, cheaply
            f._status, f._inputs, f._keep = 0, None, None


def _watch_loop():
    while True:
        with _watch:
            while not _watched:
                _watch.wait()
            pending = [f for f in _watched if not f._settled]
            _watched.clear()
            _watched.update(pending)
            if not pending:
                continue
            first = min(pending, key=lambda f: f._job)
        first._worker.wait(first._job)
        for f in pending:
            f._settle_if_ended()


def usable(compiled) -> bool:
    """Can the native path serve calls of `compiled` (see the module's docstring)?"""
    lowered = compiled.lowered
    return (
        compiled.executable.posting_run is not None  # the cpu backend's compiled tier
        and not lowered.writebacks
        and not lowered.captured
        and not lowered.int_ranges
        and all(not getattr(spec, "scalar", False) for spec in lowered.out_specs)
        and compiled.executable.runs_on_one_thread()
        and process_worker() is not None
    )


def native_call_of(compiled):
    """A fast call that posts `compiled`'s launches to the native worker, or None where
    this path cannot serve it (made once per Compiled)."""
    if compiled.native_call is None:
        compiled.native_call = (
            usable(compiled)
            and fastpath.fast_call_running(compiled, compiled.executable.posting_run(post))
            or False
        )
    return compiled.native_call or None
