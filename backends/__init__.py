"""The backend registry, and what a backend is: a module turning a fused Graph into an
Executable.

Every hook the rest of jitc uses is declared here, with its default: a backend module is a
`Backend`, and its executables subclass `Executable`, overriding what they provide (the cpu
backend times launches, checks its own arguments, posts to the native worker; the
reference backend only evaluates). Adding a device is one new folder and one line in
BACKENDS. Backends import jitc.core and jitc.backends.native only.
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from jitc.core import interrupts
from jitc.core.errors import JitcError

BACKENDS = {
    "reference": "jitc.backends.reference",
    "cpu": "jitc.backends.cpu",
    "cuda": "jitc.backends.cuda",
}


class Executable(Protocol):
    """A compiled graph. `__call__(*arrays)` takes the graph's parameters (argument leaves,
    then captured arrays) and returns its outputs as a list; the rest are optional, with
    these defaults."""

    # (shape, dtype) per output: the fast path allocates them for checked_run
    results: list = []
    # run(*arrays, *results) that fills `results` and raises SignatureMiss (or a TypeError)
    # for arrays of another signature; None: calls go through __call__
    checked_run = None
    # (outputs, [(launch index, start ns, end ns)]) of one call, every launch timed; None:
    # the backend does not time launches (report/, runtime/chrome_trace.py)
    profiled_call = None
    # per launch, the program kernels it runs (what profiled_call's launch index means)
    launch_kernels: list = []
    # run(*arrays, *results) that posts the call to jitc's native worker
    # (runtime/native.py); None: submit runs the call on the executor thread
    posting_run = None

    def __call__(self, *arrays) -> list: ...

    def stats(self) -> dict:
        """At least: ops, fusions, kernels (launches per call), temp_bytes."""
        ...

    def failure(self, error: Exception, failed_at: int | None = None) -> Exception | None:
        """The exception to raise for a kernel's `error`, naming the NumPy call and line;
        None: not a kernel failure (raise `error` itself)."""
        return None

    def can_write_into(self, param_index: int, output_index: int) -> bool:
        """May the caller pass parameter `param_index`'s array as the buffer of output
        `output_index`, to be written in place?"""
        return False

    def as_text(self, stage: str) -> str:
        """A stage of the backend's own (cuda: "ptx", "kernels")."""
        raise ValueError(f"{type(self).__name__} has no stage {stage!r}")

    def seal_cache(self) -> None:
        """Mark the compiled code on disk as complete, once it ran (backends/native)."""

    def runs_on_one_thread(self) -> bool:
        """Does no kernel of a call split over threads (the native worker serves those)?"""
        return False


@runtime_checkable
class Backend(Protocol):
    """A backend module."""

    def is_available(self) -> tuple[bool, str]:
        """(can it run here, why not)."""
        ...

    def compile(self, graph) -> Executable: ...

    def refuse_dtypes(self, graph, arg_names=()) -> None:
        """Raise UnsupportedError naming the argument for a dtype the backend cannot
        compute in (cuda: complex); a no-op where it computes every jitc dtype."""
        ...

    def cached(self, graph) -> bool:
        """Is everything a first call of `graph` waits for compiled on disk (tiered
        execution then skips the reference tier)? True where nothing is cached."""
        ...

    def uncached(self, graph) -> list:
        """What of `graph` is not compiled on disk, for a process that exits before its
        background compile is done to hand on (backends/native/background.py)."""
        ...


def _module(name: str):
    if name not in BACKENDS:
        raise JitcError(f"unknown backend {name!r}; choose one of {sorted(BACKENDS)}")
    return importlib.import_module(BACKENDS[name])


def _status(name: str) -> tuple[bool, str]:
    with interrupts.deferred():  # a Ctrl-C inside `import numba` would break it for good
        try:
            mod = _module(name)
        except ImportError as e:
            return False, f"cannot import it: {e}"
        return mod.is_available()


def available() -> list[str]:
    """Names of the backends that can run here, e.g. ["reference", "cpu"]."""
    return [name for name in BACKENDS if _status(name)[0]]


def get(name: str) -> Backend:
    """The backend module `name`, or a JitcError saying why it cannot run here."""
    ok, reason = _status(name)
    if not ok:
        raise JitcError(f"backend {name!r} is not available: {reason}")
    return _module(name)
