"""jitc: a fusing JIT and ahead-of-time compiler for plain NumPy code."""

from jitc import backends
from jitc.api import Compiled, Jitted, Lowered, jit
from jitc.errors import JitcError, ShapeError, TracerError, UnsupportedError, VerifyError
from jitc.specs import ShapeDtype, spec

__all__ = [
    "jit", "Jitted", "Lowered", "Compiled", "ShapeDtype", "spec", "backends",
    "JitcError", "UnsupportedError", "TracerError", "ShapeError", "VerifyError",
]
__version__ = "0.1.0"


def __getattr__(name):
    if name in ("aot", "fusion"):  # imported on first use: `import jitc` stays light
        import importlib

        return importlib.import_module(f"jitc.{name}")
    raise AttributeError(f"module 'jitc' has no attribute {name!r}")
