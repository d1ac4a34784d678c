"""The backend registry: a backend turns a (fused) Graph into an Executable.

An Executable is `__call__(*flat_arrays) -> list of arrays` plus `stats() -> dict`.
Each backend module exposes `is_available() -> (bool, reason)` and `compile(graph) -> Executable`.
The registry is this explicit table: adding a device is one new folder and one line here.
"""

from __future__ import annotations

import importlib

from jitc.core import interrupts
from jitc.core.errors import JitcError

BACKENDS = {
    "reference": "jitc.backends.reference",
    "cpu": "jitc.backends.cpu",
    "cuda": "jitc.backends.cuda",
}


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
        if not hasattr(mod, "is_available"):
            return False, "not built yet"
        return mod.is_available()


def available() -> list[str]:
    """Names of the backends that can run here, e.g. ["reference", "cpu"]."""
    return [name for name in BACKENDS if _status(name)[0]]


def get(name: str):
    """The backend module `name`, or a JitcError saying why it cannot run here."""
    ok, reason = _status(name)
    if not ok:
        raise JitcError(f"backend {name!r} is not available: {reason}")
    return _module(name)
