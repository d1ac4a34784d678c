"""jitc: a fusing JIT and ahead-of-time compiler for plain NumPy code."""

from jitc import backends
from jitc.api import Compiled, Jitted, Lowered, jit
from jitc.core.errors import JitcError, ShapeError, TracerError, UnsupportedError, VerifyError
from jitc.core.specs import ShapeDtype, spec

__all__ = [
    "jit",
    "Jitted",
    "Lowered",
    "Compiled",
    "ShapeDtype",
    "spec",
    "backends",
    "JitcError",
    "UnsupportedError",
    "TracerError",
    "ShapeError",
    "VerifyError",
    "cond",
    "fori_loop",
    "scan",
    "while_loop",
]
__version__ = "0.1.0"


# names of modules that moved, kept for the code that used them (issue 34's re-layering)
_MOVED = {"tiered": "jitc.runtime.tiered"}


def __getattr__(name):
    if name in ("aot", "fusion"):  # imported on first use: `import jitc` stays light
        import importlib

        return importlib.import_module(f"jitc.{name}")
    if name in ("cond", "fori_loop", "scan", "while_loop"):
        from jitc.trace import control

        return getattr(control, name)
    if name in _MOVED:
        import importlib
        import warnings

        warnings.warn(f"jitc.{name} is now {_MOVED[name]}", DeprecationWarning, stacklevel=2)
        return importlib.import_module(_MOVED[name])
    raise AttributeError(f"module 'jitc' has no attribute {name!r}")
