"""Tiered execution: a first call does not wait for its kernels to compile.

numba compiles a new function's kernels in 0.3-3 s. When they are not in the persistent
cache, the first call (JITC_COMPILE=tiered, the default) returns what the reference tier
computes from the optimized graph, NumPy op by op (the reference backend, about NumPy's
time and NumPy's bits), while jitc's background compile thread compiles the kernels
(backends/native/background.py); the calls after it is done run the compiled tier. Both
tiers run through Compiled.call_flat, so arguments are checked and written back the same
way. JITC_COMPILE=sync compiles the kernels on the calling thread. Only the cpu backend is
tiered; the others compile on the calling thread.

A function with a loop runs the reference tier for at most LOOP_BUDGET_S: the reference
tier runs a loop's steps op by op in Python, which suits a loop of array steps (a
conjugate gradient on 2000x2000: 0.18 s, against 3-4 s to compile it) but not one of
scalar steps (a Levinson recursion of N = 1000: over 10 minutes). A call whose loop is
still running then waits for the kernels and runs the compiled tier (dispatch.py); the
reference tier wrote nothing back, so the call starts afresh.
"""

from __future__ import annotations

import logging
import threading
import time

from jitc import backends
from jitc.backends.native.background import kernels_pending, submit, wait
from jitc.core import config
from jitc.core.errors import JitcError
from jitc.stages import Compiled, optimized

__all__ = ["compile", "finished", "Tiered", "wait", "kernels_pending"]

log = logging.getLogger("jitc")
MODES = ("tiered", "sync")
TIERED_BACKENDS = ("cpu",)
LOOP_BUDGET_S = 0.5


def compile(lowered):
    """A Compiled for `lowered`, or a Tiered when its kernels are not cached yet."""
    if config.COMPILE not in MODES:
        raise JitcError(
            f"JITC_COMPILE={config.COMPILE!r} is not a compile mode; choose one "
            f"of {', '.join(MODES)}"
        )
    backend = lowered.function.backend
    if config.COMPILE == "sync" or backend not in TIERED_BACKENDS:
        return lowered.compile()
    graph = optimized(lowered)
    if backends.get(backend).cached(graph):
        log.info("%s: kernels cached: compiled tier", lowered.function.name)
        return Compiled(lowered, backend, graph)
    if any(n.op == "while" for n in graph.nodes):
        log.info(
            "%s: a loop: the reference tier runs it for up to %.1f s while its kernels compile",
            lowered.function.name,
            LOOP_BUDGET_S,
        )
        return Tiered(lowered, graph, loop_budget=LOOP_BUDGET_S)
    return Tiered(lowered, graph)


def finished(compiled):
    """`compiled` once its kernels are built: a Tiered waits for its background compile."""
    if type(compiled) is Tiered:
        compiled.ready.wait()
    return compiled


class Tiered:
    """One signature whose kernels compile in the background: `current()` is the Compiled a
    call runs, the reference tier's until the compiled tier is ready."""

    def __init__(self, lowered, graph, loop_budget=None):
        self.name = lowered.function.name
        self.reference = Compiled(lowered, "reference", graph)
        self.reference.executable.loop_budget = loop_budget
        self.compiled = None
        self.error = None
        self.ready = threading.Event()
        log.info(
            "%s: kernels not cached: the reference tier (NumPy) runs until they compile "
            "in the background",
            self.name,
        )
        uncached = backends.get(lowered.function.backend).uncached
        submit(
            self._build,
            lowered,
            graph.copy(),  # the reference tier reads `graph`
            leftover=lambda: uncached(graph.copy()),
        )

    def _build(self, lowered, graph):
        start = time.perf_counter()
        try:
            self.compiled = Compiled(lowered, lowered.function.backend, graph)
            # cached for the next process even if this one never calls it again
            self.compiled.executable.seal_cache()
            log.info(
                "%s: kernels compiled in the background in %.2f s",
                self.name,
                time.perf_counter() - start,
            )
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
            raise JitcError(
                f"{self.name}: compiling its kernels in the background failed "
                f"(the calls before ran the reference tier): "
                f"{type(self.error).__name__}: {self.error}"
            ) from self.error
        log.info("%s: compiled tier from now on", self.name)
        return self.compiled
