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


JITC = tuple(f + os.sep for f in package_folders())
INTERNAL = JITC + (os.path.dirname(os.path.abspath(np.__file__)) + os.sep,)
# Installed libraries (SciPy, ...): code the user calls, not the user's own
LIBRARIES = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


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


def library_call() -> tuple[str, Loc] | None:
    """(the library function the user's code called, the user's line) when the innermost
    frame outside jitc and NumPy is an installed library's: what failed is that function's
    doing, at its own line, and the user needs both. None otherwise."""
    frame, called = sys._getframe(1), None
    while frame is not None:
        filename = frame.f_code.co_filename
        if any(marker in filename for marker in LIBRARIES) and not filename.startswith(INTERNAL):
            called = frame
        elif filename.startswith(JITC) and called is not None:
            return None  # a library that jitc called (the user's function is installed)
        elif not filename.startswith(INTERNAL) and not filename.startswith("<frozen"):
            if called is None:
                return None
            module = called.f_globals.get("__name__", "?").split("._")[0]  # scipy.signal
            user = Loc(filename, frame.f_lineno, frame.f_code.co_name)
            return f"{module}.{called.f_code.co_name}", user
        frame = frame.f_back
    return None


def where(loc: Loc | None = None) -> str:
    """' (at file:line)' for error messages; computed from the stack when loc is None, and
    then naming the library function the user called when the line is inside it."""
    if loc is not None:
        return f" (at {loc.file}:{loc.line})"
    loc = user_loc()
    if loc is None:
        return ""
    called = library_call()
    if called is None:
        return f" (at {loc.file}:{loc.line})"
    function, user = called
    return f" (at {loc.file}:{loc.line} in {function}, called at {user.file}:{user.line})"
