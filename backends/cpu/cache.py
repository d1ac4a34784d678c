"""The persistent compile cache: generated modules stored by content hash, compiled by numba
with cache=True so a new process loads machine code instead of recompiling.

The directory is created private (0700); jitc refuses a cache directory other users can
write to, because cached code is code that will run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import sys
import tempfile

import llvmlite
import numba

from jitc.errors import JitcError

_VERSION_TAG = f"numba{numba.__version__}-llvmlite{llvmlite.__version__}-py{sys.version_info[:2]}"


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


def load_module(source: str):
    """Import generated `source` from the cache directory (written atomically once)."""
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
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def _intact(path: str, source: str) -> bool:
    try:
        with open(path) as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def forget(module) -> None:
    """Remove a module's numba cache files (after they failed to load) so they are rebuilt."""
    directory = os.path.join(os.path.dirname(module.__file__), "__pycache__")
    stem = os.path.splitext(os.path.basename(module.__file__))[0]
    if os.path.isdir(directory):
        for entry in os.listdir(directory):
            if entry.startswith(stem + "."):
                try:
                    os.remove(os.path.join(directory, entry))
                except OSError:
                    pass
