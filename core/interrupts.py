"""Ctrl-C held back while jitc changes state that an interrupt would leave half made.

A KeyboardInterrupt raised inside `import numba`, inside numba's first compile (which loads
its typing registries) or inside a kernel's compile broke the process for good: the next
call failed with "module 'numba' has no attribute 'core'", a TypingError for `p_[2:]`, or
"no compiled object yet for <Library 'kernel'>". Worse, one inside any LLVM call of the
main thread (numba makes a dispatcher, `import numba`) can leave llvmlite's global lock
held, and the compile thread's next LLVM call then waits forever. So jitc runs those
steps with SIGINT deferred: a Ctrl-C meanwhile is delivered as soon as the step is done (a
kernel's compile takes 0.1-3 s), and what the step built stays built for the next call.

Python runs signal handlers in the main thread only; elsewhere (jitc's compile thread)
there is nothing to defer.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_depth = [0]  # main thread only


@contextlib.contextmanager
def deferred():
    """Hold back SIGINT until the block ends, then deliver it to the handler it had."""
    if threading.current_thread() is not threading.main_thread() or _depth[0]:
        yield
        return
    received = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *signal_frame: received.append(signal_frame))
    except ValueError:  # not the main interpreter
        yield
        return
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        signal.signal(signal.SIGINT, previous)
        if received and callable(previous):
            previous(*received[0])  # default_int_handler raises KeyboardInterrupt
        elif received and previous == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)
