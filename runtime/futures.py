"""`Jitted.submit`: a call that returns a future at once and runs on jitc's executor thread.

Futures (any `concurrent.futures.Future`) among the arguments, at any depth of the argument
tree, stand for their results: the call waits for them without blocking the caller (each
input's done-callback counts down; the last one queues the call), so a loop can chain
steps through futures and keep preparing the next input while the previous step computes.
A call fails with its input's very exception when an input fails, and is cancelled when an
input is cancelled. An error of the call itself gets a note naming the `submit` line.

The caller must not change an argument array until the future is done (the call reads it
then, and writes it back if the function mutates it); JITC_CHECK_ASYNC=1 checks that
(runtime/guard.py).
"""

from __future__ import annotations

import functools
import sys
import threading
from concurrent.futures import Future
from concurrent.futures._base import FINISHED

from jitc.core import config
from jitc.core.errors import UnsupportedError
from jitc.core.pytree import flatten, unflatten
from jitc.runtime import executor
from jitc.trace.rebind import TRACES_ACTIVE, current_ctx

_CONTAINERS = (tuple, list, dict)


def submit(jitted, args: tuple, kwargs: dict, depth: int = 2) -> Future:
    """Queue `jitted(*args, **kwargs)` and return its future; `depth`: the frames between
    the user's `submit` line and here."""
    name = jitted.function.name
    if TRACES_ACTIVE[0] and current_ctx() is not None:
        raise UnsupportedError(
            f"{name}.submit inside a jitted function: call {name}(...) there (the trace inlines it)"
        )
    frame = sys._getframe(depth)
    site = (frame.f_code.co_filename, frame.f_lineno)
    if not kwargs and jitted.last_compiled is not None:  # a signature it has compiled
        future = _native().submit(jitted, args, site)
        if future is not None:
            return future
    call = _Call(jitted, args, kwargs, site)
    call.wait_for_inputs()
    return call.future


@functools.cache
def _native():
    """runtime/native.py, imported on first use (it imports numba)."""
    from jitc.runtime import native

    return native


class CallFuture(Future):
    """A submitted call's future. `queued`: its call is in the executor's queue, so a call
    queued after it runs after it (one runner, in order) and need not wait for it. Waiting
    for it without a timeout runs queued calls meanwhile (executor.help_until)."""

    queued = False

    def result(self, timeout=None):
        if timeout is None and not self.done():
            executor.help_until(self)
        return super().result(timeout)

    def exception(self, timeout=None):
        if timeout is None and not self.done():
            executor.help_until(self)
        return super().exception(timeout)


class _Call:
    """One submitted call: its arguments, its pending inputs and its future."""

    __slots__ = (
        "jitted",
        "site",
        "future",
        "leaves",
        "tree",
        "inputs",
        "guard",
        "_lock",
        "_pending",
    )

    def __init__(self, jitted, args, kwargs, site):
        self.jitted, self.site = jitted, site
        self.future = CallFuture()
        self.tree = None  # the common case, cheaply: plain positional arguments
        self.leaves = args
        if kwargs or any(isinstance(a, _CONTAINERS) for a in args):
            self.leaves, self.tree = flatten((args, kwargs))
        self.inputs = [x for x in self.leaves if isinstance(x, Future)]
        self.guard = None
        if config.CHECK_ASYNC:
            from jitc.runtime.guard import Guard

            self.guard = Guard(jitted, args, kwargs, "{}:{}".format(*site))

    def wait_for_inputs(self):
        """Queue the call now, or when the last pending input is done."""
        pending = [f for f in self.inputs if not (getattr(f, "queued", False) or f.done())]
        if not pending:
            self._queue()
            return
        self._lock = threading.Lock()
        self._pending = len(pending) + 1  # +1: no input may queue it before all are counted
        for f in pending:
            f.add_done_callback(self._input_done)
        self._input_done(None)

    def _input_done(self, f):
        with self._lock:
            self._pending -= 1
            ready = self._pending == 0
        if ready:
            self._queue()

    def _queue(self):
        executor.run(self.run)
        self.future.queued = True  # after the put: a call seeing it is queued behind this

    def run(self):
        """On the executor thread: the call, or its inputs' failure, into the future."""
        future = self.future
        values = self.leaves
        if self.inputs:
            # every input is done: it ran before this call, or queued this call when done
            if any(f.cancelled() for f in self.inputs):
                future.cancel()
                return
            for f in self.inputs:
                error = f._exception if f._state == FINISHED else f.exception()
                if error is not None:
                    if future.set_running_or_notify_cancel():
                        future.set_exception(error)
                    return
            values = [x._result if isinstance(x, Future) else x for x in values]
        if not future.set_running_or_notify_cancel():
            return  # cancelled before it started
        self.leaves = self.inputs = ()  # the inputs' callbacks may keep this object alive
        try:
            if self.tree is None:
                args, kwargs = tuple(values), {}
            else:
                args, kwargs = unflatten(self.tree, values)
            if self.guard is not None:
                self.guard.before(args, kwargs)
            # `args` begin with a bound method's object, which the call passes itself
            result = self.jitted(*args[len(self.jitted.function.bound) :], **kwargs)
            if self.guard is not None:
                self.guard.after(args, kwargs)
        except BaseException as e:
            e.add_note("(in {}.submit at {}:{})".format(self.jitted.function.name, *self.site))
            future.set_exception(e)  # Ctrl-C too: its dependents fail with it
        else:
            future.set_result(result)
