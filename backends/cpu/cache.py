"""The persistent compile cache: generated modules stored by content hash, compiled by numba
with cache=True so a new process loads machine code instead of recompiling.

The directory is created private (0700); jitc refuses a cache directory other users can
write to, because cached code is code that will run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
import tempfile
import threading

import llvmlite
import numba

from jitc.errors import JitcError


def _backend_digest() -> str:
    """Generated modules import helpers from these files: a change to them is a new key."""
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()[:16]


_VERSION_TAG = (f"numba{numba.__version__}-llvmlite{llvmlite.__version__}"
                f"-py{sys.version_info[:2]}-cpu{_backend_digest()}")


def cache_dir() -> str:
    path = os.environ.get("JITC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "jitc")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise JitcError(
            f"refusing to use the jitc cache directory {path}: other users can write to it "
            f"(mode {stat.S_IMODE(st.st_mode):o}), so code loaded from it could be someone "
            f"else's. Run `chmod 700 {path}` or set JITC_CACHE_DIR to a private directory.")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise JitcError(f"refusing to use the jitc cache directory {path}: it belongs to "
                        f"another user (uid {st.st_uid}); set JITC_CACHE_DIR")
    return path


# One import at a time: a module is in sys.modules before it has run (numba needs that), so
# a second thread must not find it there half-executed.
_LOADING = threading.RLock()


def load_module(source: str):
    """Import generated `source` from the cache directory (written atomically once)."""
    with _LOADING:
        return _load_module(source)


def _load_module(source: str):
    digest = hashlib.sha256((_VERSION_TAG + source).encode()).hexdigest()[:24]
    name = f"jitc_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    directory = cache_dir()
    path = os.path.join(directory, name + ".py")
    if not _intact(path, source):
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    _clear_unless_sealed(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # registered before it runs: a cfunc compiles while the module executes, and numba
    # names the module of its cached environment from sys.modules
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _intact(path: str, source: str) -> bool:
    try:
        with open(path) as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def _numba_files(path: str) -> list[str]:
    """numba's cache files (index and data) for the generated module at `path`."""
    directory = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.splitext(os.path.basename(path))[0] + "."
    try:
        return sorted(os.path.join(directory, e) for e in os.listdir(directory)
                      if e.startswith(stem) and not e.endswith(".tmp"))
    except FileNotFoundError:
        return []


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _clear_unless_sealed(path: str) -> None:
    """Delete numba's files for `path` unless they match the manifest sealed after they
    last worked: a truncated or corrupted entry is rebuilt instead of crashing numba."""
    files = _numba_files(path)
    if not files:
        return
    try:
        with open(path + ".sealed") as f:
            sealed = json.load(f)
        if sealed == {os.path.basename(p): _digest(p) for p in files}:
            return
    except (OSError, ValueError):
        pass
    for p in files:
        try:
            os.remove(p)
        except OSError:
            pass


def seal(module) -> None:
    """Record the digests of a module's numba files once it has compiled and run."""
    path = module.__file__
    manifest = {os.path.basename(p): _digest(p) for p in _numba_files(path)}
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(manifest, f)
    os.replace(tmp, path + ".sealed")
