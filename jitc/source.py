"""Find the user's file:line for an op: the first frame outside jitc and NumPy."""

from __future__ import annotations

import os
import sys

import numpy as np

from jitc.ir import Loc

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
INTERNAL = tuple(os.path.join(_ROOT, d) + os.sep for d in ("jitc", "fusion", "backends", "aot"))
INTERNAL += (os.path.dirname(os.path.abspath(np.__file__)) + os.sep,)


def user_loc() -> Loc | None:
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(INTERNAL) and not filename.startswith("<frozen"):
            return Loc(filename, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back
    return None


def where(loc: Loc | None = None) -> str:
    """' (at file:line)' for error messages; computed from the stack when loc is None."""
    loc = loc or user_loc()
    return f" (at {loc.file}:{loc.line})" if loc else ""
