"""A function's calls on host (NumPy or device) arrays: one Compiled per signature.

A call flattens its arguments, keys a cache on their signature (stages.signature_key),
traces and compiles on a miss (tiered: the reference tier runs meanwhile, runtime/tiered.py)
and runs the Compiled. The last signature's self-checking fast call (runtime/fastpath.py)
serves the next call without any of that; anything it cannot serve it refuses with one of
fastpath.MISSES, and the call takes this slow path. jitc.jit's Jitted (jitc/api.py) is a
HostCalls with dispatch by argument kind in front (plain Python, a call inside a trace, dask
arrays); chunked/ compiles its combining kernels as HostCalls directly.
"""

from __future__ import annotations

import logging
import threading

from jitc.backends.reference.interpreter import OutOfTime
from jitc.core import config
from jitc.core.errors import SignatureMiss, StaleCapture
from jitc.core.failures import KERNEL_FAILURES
from jitc.core.pytree import flatten
from jitc.runtime import tiered
from jitc.runtime.fastpath import MISSES, fast_call_of
from jitc.stages import Wrapped, describe_leaf, signature_key
from jitc.trace.lowering import lower
from jitc.trace.mutation.capture import split_arguments
from jitc.trace.rebind import TRACES_ACTIVE

log = logging.getLogger("jitc")


def _no_failure(error):
    return None


def _no_fast_call(*args):
    raise SignatureMiss()


def call_compiled(compiled, leaves):
    """`compiled`'s call on these leaves, recorded as Chrome trace events under JITC_TRACE
    (runtime/chrome_trace.py)."""
    if config.TRACE:
        from jitc.runtime import chrome_trace

        return chrome_trace.traced_call(compiled, leaves)
    return compiled.call_flat(leaves)


class HostCalls(Wrapped):
    """The compiled signatures of `function` (a stages.Function) and the fast path of the
    last one."""

    def __init__(self, function):
        self.function = function
        self._cache: dict = {}
        self._fast = _no_fast_call  # the last signature's self-checking call, see __call__
        self._fast_failure = _no_failure  # its executable's kernel failure, located
        self.last_compiled = None  # the last signature's Compiled: submit's native path
        self._signatures: dict = {}  # key -> per-argument description, for JITC_LOG reasons
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        if not kwargs and not TRACES_ACTIVE[0]:
            try:  # the last signature's executable checks its arguments itself
                return self._fast(*args)
            except MISSES:
                pass
            except KERNEL_FAILURES as e:  # name the NumPy call and line (core/failures.py)
                located = self._fast_failure(e)
                if located is None:
                    raise
                raise located from None
        return self.host_call(args, kwargs)

    def host_call(self, args, kwargs):
        """The call, compiled for its signature on a miss (the slow path)."""
        split = split_arguments(self.function, args, kwargs)
        leaves, tree = flatten((split.dynamic, split.dynamic_kwargs))
        key = signature_key(tree, split.static_key, leaves)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._compile(args, kwargs, key)
        compiled = self._tier(compiled, key)
        try:
            result = call_compiled(compiled, leaves)
        except StaleCapture:  # a captured place now holds an array of another type
            with self._lock:
                self._cache.pop(key, None)
            compiled = self._tier(self._compile(args, kwargs, key), key)
            result = call_compiled(compiled, leaves)
        except OutOfTime:  # the reference tier's loop ran past its budget: the kernels, then
            log.info("%s: the loop ran past the reference tier's budget", self.function.name)
            compiled = self._tier(tiered.finished(self._cache[key]), key)
            result = call_compiled(compiled, leaves)
        if not kwargs and not split.static_key and not config.TRACE:  # traced: this path
            self._fast = fast_call_of(compiled) or _no_fast_call
            self._fast_failure = compiled.executable.failure
            self.last_compiled = compiled
        return result

    def compiled_for(self, args, kwargs):
        """The Compiled that serves these arguments, None if none is yet."""
        split = split_arguments(self.function, tuple(args), kwargs)
        leaves, tree = flatten((split.dynamic, split.dynamic_kwargs))
        return self._cache.get(signature_key(tree, split.static_key, leaves))

    def _tier(self, compiled, key):
        """The Compiled a call runs: while `key`'s kernels compile in the background, the
        reference tier, then (from now on) the compiled one (runtime/tiered.py)."""
        if type(compiled) is not tiered.Tiered:
            return compiled
        current = compiled.current()
        if current is not compiled.reference:
            self._cache[key] = current
        return current

    def _compile(self, args, kwargs, key):
        with self._lock:
            compiled = self._cache.get(key)
            if compiled is None:
                lowered = lower(self.function, args, kwargs)
                self._log_compile(key, lowered)
                compiled = tiered.compile(lowered)
                self._cache[key] = compiled
            return compiled

    def _log_compile(self, key, lowered):
        described = dict(zip(lowered.arg_names, map(describe_leaf, key[2])))
        described.update({f"static {k}": repr(v) for k, v in key[1]})
        if log.isEnabledFor(logging.INFO):
            if not self._signatures:
                reason = "first call"
            else:
                last = list(self._signatures.values())[-1]
                changed = [
                    f"{n}: {last.get(n, 'absent')} -> {d}"
                    for n, d in described.items()
                    if last.get(n) != d
                ]
                changed += [f"{n}: {d} -> absent" for n, d in last.items() if n not in described]
                reason = "new " + "; ".join(changed) if changed else "new argument structure"
            log.info(
                "compiling %s for %s (%s)",
                self.function.name,
                ", ".join(f"{n}={d}" for n, d in described.items()),
                reason,
            )
        self._signatures[key] = described
