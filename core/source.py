"""Find the user's file:line for an op: the first frame outside jitc and NumPy."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading

import numpy as np

from jitc.core.ir import Loc

# jitc's packages: each a folder of its own (pyproject.toml maps them), and NumPy's
PACKAGES = (
    "jitc",
    "jitc.core",
    "jitc.trace",
    "jitc.numpy_api",
    "jitc.runtime",
    "jitc.fusion",
    "jitc.backends",
    "jitc.aot",
    "jitc.chunked",
    "jitc.report",
)


def package_folders() -> list[str]:
    """The folders jitc's code lives in (the repository's, or site-packages' jitc/)."""
    folders = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        folders += [os.path.abspath(p) for p in spec.submodule_search_locations]
    return folders


INTERNAL = tuple(f + os.sep for f in package_folders())
INTERNAL += (os.path.dirname(os.path.abspath(np.__file__)) + os.sep,)


_CALL = threading.local()


@contextlib.contextmanager
def calling(api: str):
    """Record `api` (np.take, x[...]) as the NumPy call the user made, for the nodes traced
    inside it: the outermost call wins (np.bincount, not the np.add.at it runs)."""
    if getattr(_CALL, "api", ""):
        yield
        return
    _CALL.api = api
    try:
        yield
    finally:
        _CALL.api = ""


def user_loc() -> Loc | None:
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(INTERNAL) and not filename.startswith("<frozen"):
            return Loc(filename, frame.f_lineno, frame.f_code.co_name, getattr(_CALL, "api", ""))
        frame = frame.f_back
    return None


def where(loc: Loc | None = None) -> str:
    """' (at file:line)' for error messages; computed from the stack when loc is None."""
    loc = loc or user_loc()
    return f" (at {loc.file}:{loc.line})" if loc else ""
