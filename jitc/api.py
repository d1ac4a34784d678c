"""jitc.jit: the front door. A Jitted is a function's compiled calls (runtime/dispatch.py)
with dispatch by argument kind in front of them; its stages are jitc/stages.py's."""

from __future__ import annotations

import functools
import logging
import sys

from jitc.core import config
from jitc.core.errors import JitcError
from jitc.core.failures import KERNEL_FAILURES
from jitc.core.pytree import flatten
from jitc.runtime.dispatch import HostCalls
from jitc.runtime.fastpath import MISSES
from jitc.stages import Compiled, Function, Lowered
from jitc.trace.lowering import lower, traced_function
from jitc.trace.rebind import TRACES_ACTIVE, current_ctx

log = logging.getLogger("jitc")
if "compiles" in config.LOG and not log.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("jitc: %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)


def _dask_leaves(jitted, args, kwargs) -> bool:
    """Any dask array among the arguments (they run by blocks: chunked/)?"""
    return "dask.array" in sys.modules and any(
        type(x).__module__.startswith("dask.array") for x in flatten((args, kwargs))[0]
    )


def _on_dask(jitted, args, kwargs):
    from jitc import chunked

    return chunked.call(jitted, args, kwargs)


# How a call that the fast path did not serve runs, by the kind of its arguments: the first
# row whose test holds. (A jitted function called inside another's trace is inlined; dask
# arrays run block by block, lazily.)
DISPATCH = (
    (
        "disabled",
        lambda jitted, args, kwargs: config.DISABLE_JIT,
        lambda jitted, args, kwargs: jitted.function.fun(*args, **kwargs),
    ),
    (
        "inside a trace",
        lambda jitted, args, kwargs: TRACES_ACTIVE[0] and current_ctx(),
        lambda jitted, args, kwargs: traced_function(jitted.function)(*args, **kwargs),
    ),
    ("dask", _dask_leaves, _on_dask),
    ("host", lambda jitted, args, kwargs: True, HostCalls.host_call),
)


class Jitted(HostCalls):
    """A function compiled on first call per (tree, shapes, dtypes, static values)."""

    def __init__(self, fun, backend=None, static_argnums=(), static_argnames=(), unroll=False):
        super().__init__(Function.of(fun, backend, static_argnums, static_argnames, unroll))
        functools.update_wrapper(self, fun)
        self._bound = self.function.bound
        self.fun = self.function.fun
        self.backend = self.function.backend

    def __call__(self, *args, **kwargs):
        if self._bound:
            args = self._bound + args
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
        for _, applies, run in DISPATCH:
            if applies(self, args, kwargs):
                return run(self, args, kwargs)
        raise AssertionError("DISPATCH ends with a row for every call")  # pragma: no cover

    def submit(self, *args, **kwargs):
        """Start this call on jitc's executor thread and return a `concurrent.futures.Future`
        of its result at once; futures among the arguments stand for their results
        (runtime/futures.py)."""
        from jitc.runtime.futures import submit

        return submit(self, self._bound + args, kwargs)

    def lower(self, *args, **kwargs) -> Lowered:
        args = self._bound + args
        if _dask_leaves(self, args, kwargs):
            from jitc.chunked import Plan

            return Plan(self.function, args, kwargs)
        return lower(self.function, args, kwargs, keep_arguments=True)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __reduce__(self):
        """Pickled by name, as the function it wraps would be: `Pool.map(f, ...)` sends a
        jitted function to its workers this way, each compiling its own (compiled code and
        locks do not travel). One that its module does not name cannot be pickled."""
        return self.__qualname__


def jit(fun=None, *, backend=None, static_argnums=(), static_argnames=(), unroll=False):
    """Compile `fun` (plain NumPy code) into fused kernels; use as @jit or @jit(...).
    Its `for` loops over range(), `while` loops and `if`s on traced values compile as
    loops and branches (trace/autograph.py); `unroll=True` runs them as Python instead,
    unrolling every loop into the graph."""
    if fun is None:
        return functools.partial(
            jit,
            backend=backend,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            unroll=unroll,
        )
    if backend is not None:
        from jitc import backends

        if backend not in backends.BACKENDS:
            raise JitcError(
                f"unknown backend {backend!r}; choose one of {sorted(backends.BACKENDS)}"
            )
    return Jitted(fun, backend, static_argnums, static_argnames, unroll)


__all__ = ["jit", "Jitted", "Lowered", "Compiled"]
