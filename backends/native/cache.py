"""The persistent compile cache: generated modules stored by content hash, compiled by numba
with `cache=persistent()` so a new process loads machine code instead of recompiling.

Cached code is code that will run, so every file jitc compiles from lives under one private
directory (JITC_CACHE_DIR, else ~/.cache/jitc), and numba's cache files for it live beside
it (cache_locator.py), whatever numba's own cache settings say. The directory and each of
its subdirectories must belong to this user and be writable by no one else. numba's files
are sealed (a manifest of digests) once this process compiled and loaded them all for a
function, after its first call or on the background thread (runtime/tiered.py), and deleted
when they no longer match.

A cache that cannot be written (read-only directory or filesystem, full disk, no home) is
not an error: jitc warns once, naming the directory and the reason, and compiles from
memory for the rest of the process.

jitc's fixed runtime pieces (the launcher, vmath's functions: the same code for every user
function) are compiled once per installation into a second private directory, the runtime
store (JITC_RUNTIME_DIR, else ~/.cache/jitc-runtime), one subdirectory per installation tag,
checked and sealed like the cache. A fresh JITC_CACHE_DIR then compiles only the kernels
and drivers of its own functions (the launcher alone took ~0.7 s, vmath's exp ~0.3 s).
Where the store cannot be written, they go to the cache as before.
"""

from __future__ import annotations

import errno
import hashlib
import importlib
import importlib.util
import json
import linecache
import os
import stat
import sys
import tempfile
import threading
import warnings
from importlib import _bootstrap

import llvmlite
import numba
from numba.core.compiler_lock import global_compiler_lock

from jitc.backends.native import cache_bound, cache_locator
from jitc.core import config, interrupts
from jitc.core.errors import JitcError
from jitc.core.source import user_loc


def _backend_digest() -> str:
    """Generated modules import helpers from the cpu backend and from this folder: a change
    to them is a new key."""
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for folder in (os.path.join(os.path.dirname(here), "cpu"), here):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + f.read())
    return h.hexdigest()[:16]


_VERSION_TAG = (
    f"numba{numba.__version__}-llvmlite{llvmlite.__version__}"
    f"-py{sys.version_info[:2]}-cpu{_backend_digest()}"
)
# The runtime store's subdirectory of this installation.
_INSTALLATION = hashlib.sha256(_VERSION_TAG.encode()).hexdigest()[:16]

# Errors that mean "this disk will not take the cache", not "jitc is misconfigured".
UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOENT}


class CacheWarning(UserWarning):
    """The persistent cache is off for this process (jitc still compiles and runs)."""


class _LoadingLock:
    """jitc's loading lock: one generated module imported at a time (a module is in
    sys.modules before it has run, which numba needs, so a second thread must not find it
    there half-executed); it also guards the directory state below.

    Lock hierarchy, outermost first:
      1. this lock;
      2. Python's per-module import locks and numba's compiler lock (generated code imports
         jitc's and numba's modules and compiles while it holds this lock).
    So a thread that holds a lock of level 2 never takes this one: no jitc module takes it
    at import (vmath's runtime cache is enabled when the store is resolved, not when vmath
    is imported), and nothing numba calls while it compiles takes it. Taking it in the wrong
    order
    deadlocked a tiered process: its main thread imported vmath, whose last line resolved
    the runtime store, while the compile thread, holding this lock, executed a cached
    kernel that imported vmath. JITC_CHECK_LOCKS=1 raises where the order is broken."""

    def __init__(self):
        self._lock = threading.RLock()

    def __enter__(self):
        if config.CHECK_LOCKS and not self._lock._is_owned():
            _check_lock_order()
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()


def _check_lock_order() -> None:
    """Raise when this thread holds a lock that ranks inside the loading lock."""
    me = threading.get_ident()
    for name, ref in list(getattr(_bootstrap, "_module_locks", {}).items()):
        held = ref()
        if (
            held is not None
            and getattr(held, "owner", None) == me
            and name.partition(".")[0] in ("jitc", "numba", "llvmlite")
        ):
            raise LockOrderError(
                f"jitc's loading lock taken while importing {name}: module "
                f"code must not take it (backends/native/cache.py)"
            )
    if global_compiler_lock._lock._is_owned():
        raise LockOrderError(
            "jitc's loading lock taken inside a numba compile (backends/native/cache.py)"
        )


class LockOrderError(AssertionError):
    """JITC_CHECK_LOCKS: jitc's lock hierarchy was broken (a deadlock waiting to happen)."""


_LOADING = _LoadingLock()
_UNRESOLVED = object()
_directory = _UNRESOLVED  # the cache root once checked, None once the cache is off
_runtime = _UNRESOLVED  # this installation's runtime store once checked, None: not usable
_persistent = False  # the module being loaded lives in a directory (the runtime store's too)


def lock():
    """Held while jitc loads a generated module or decides about the cache directory."""
    return _LOADING


def _setting() -> tuple[str, str]:
    """(path, how the user chose it) of the cache root."""
    return config.cache_dir_setting()


def private_dir(path: str, setting: str, variable: str = "JITC_CACHE_DIR") -> str:
    """Create `path` (0700) and check that it is a directory only this user can write."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise JitcError(
            f"{setting}: {path} is not a directory (a file, or a link to nothing "
            f"there); point {variable} at a directory"
        ) from None
    st = os.stat(path)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise JitcError(
            f"refusing to use the jitc cache directory {path}: other users can write to it "
            f"(mode {stat.S_IMODE(st.st_mode):o}), so code loaded from it could be someone "
            f"else's. Run `chmod 700 {path}` or set {variable} to a private directory."
        )
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise JitcError(
            f"refusing to use the jitc cache directory {path}: it belongs to "
            f"another user (uid {st.st_uid}); set {variable}"
        )
    return path


def cache_dir() -> str | None:
    """The checked cache root, or None when this process compiles without a cache."""
    global _directory
    with _LOADING:
        if _directory is _UNRESOLVED:
            path, setting = _setting()
            try:
                private_dir(path, setting)
                private_dir(os.path.join(path, "__pycache__"), setting)
                tempfile.TemporaryFile(dir=path).close()  # a read-only mount passes stat
                _directory = path
            except OSError as e:
                if e.errno not in UNWRITABLE:
                    raise
                turn_off(path, e)
        return _directory


def runtime_dir() -> str | None:
    """This installation's checked runtime store, or None (then the runtime pieces are
    cached like generated code). Insecure settings raise as for the cache, whose own
    errors come first."""
    global _runtime
    with _LOADING:
        if _runtime is _UNRESOLVED:
            cache_dir()
            root = config.runtime_dir_setting()
            path = os.path.join(root, _INSTALLATION)
            try:
                for d in (root, path, os.path.join(path, "__pycache__")):
                    private_dir(d, "JITC_RUNTIME_DIR (jitc's runtime store)", "JITC_RUNTIME_DIR")
                tempfile.TemporaryFile(dir=path).close()
                _runtime = path
            except OSError as e:
                if e.errno not in UNWRITABLE:
                    raise
                _runtime = None
            for resolved_hook in _when_runtime_resolved:
                resolved_hook(_runtime)
        return _runtime


_when_runtime_resolved: list = []


def when_runtime_resolved(hook) -> None:
    """Call hook(store) once the runtime store is resolved (store None: not usable); at once
    if it is. For module code, which must not resolve it (see _LoadingLock)."""
    _when_runtime_resolved.append(hook)
    if _runtime is not _UNRESOLVED:
        hook(_runtime)


def resolved() -> tuple:
    """(cache root, runtime store) as far as this process has resolved them, None for one
    it has not or that is off; without the lock, which a compile in progress holds."""
    return tuple(None if d is _UNRESOLVED else d for d in (_directory, _runtime))


def turn_off(path: str, reason: OSError) -> None:
    """Compile from memory from now on, and say so once."""
    global _directory
    with _LOADING:
        if _directory is None:
            return
        _directory = None
    loc = user_loc()
    warnings.warn_explicit(
        f"jitc: compiling without a persistent cache: {path} cannot be written "
        f"({reason.strerror or reason}); every new process compiles again",
        CacheWarning,
        loc.file if loc else "jitc",
        loc.line if loc else 0,
    )


def persistent() -> bool:
    """`cache=` for the numba functions of a module being loaded (read by generated code)."""
    return _persistent or (_directory is not None and _directory is not _UNRESOLVED)


def load_module(source: str, subdir: str = "", name: str = "", runtime: bool = False):
    """Import generated `source` (named `name`, else by its hash) from the cache directory
    (`subdir` of it), written atomically once; from memory when the cache is off.
    `runtime`: a fixed runtime piece, kept in the runtime store where it is usable. A
    Ctrl-C meanwhile comes once it is loaded (core/interrupts.py)."""
    with interrupts.deferred(), _LOADING:
        name = name or module_name(source)
        if name in sys.modules:
            return sys.modules[name]
        # resolved before any generated code runs: vmath's functions, which a kernel
        # compiles, are cached in the store once it is (runtime_cache.enable)
        store = runtime_dir()
        store = store if runtime else None
        if store is not None:
            try:
                return _load_cached(name, source, store, bounded=False)
            except OSError as e:
                if e.errno not in UNWRITABLE:
                    raise
        directory = cache_dir()
        if directory is not None:
            try:
                return _load_cached(name, source, os.path.join(directory, subdir))
            except OSError as e:
                if e.errno not in UNWRITABLE:
                    raise
                turn_off(directory, e)
        return _load_in_memory(name, source)


def module_name(source: str) -> str:
    """The name (and cache file stem) of generated `source`: its hash with jitc's versions."""
    return "jitc_" + hashlib.sha256((_VERSION_TAG + source).encode()).hexdigest()[:24]


def is_cached(source: str, subdir: str = "", runtime: bool = False, loaded: bool = True) -> bool:
    """Would load_module(source, subdir, runtime=runtime) run compiled code without
    compiling it: the module is loaded in this process (unless not `loaded`: a module is
    in sys.modules while it compiles), or its source and sealed numba files are on disk,
    intact. Only reads files and takes no lock once the directories are resolved, so a
    caller need not wait for a compile in progress (runtime/tiered.py decides by it whether a
    first call waits for its kernels)."""
    name = module_name(source)
    if loaded and name in sys.modules:
        return True
    places = []
    if runtime:
        store = _runtime if _runtime is not _UNRESOLVED else runtime_dir()
        places.append(store)
    directory = _directory if _directory is not _UNRESOLVED else cache_dir()
    places.append(None if directory is None else os.path.join(directory, subdir))
    for place in filter(None, places):
        path = os.path.join(place, name + ".py")
        files = numba_files(path)
        if files and _intact(path, source) and _matches(files, path + ".sealed"):
            return True
    return False


def _load_cached(name: str, source: str, directory: str, bounded: bool = True):
    if directory not in (_directory, _runtime):
        private_dir(directory, "a subdirectory of the jitc cache")
        private_dir(os.path.join(directory, "__pycache__"), "a subdirectory of the jitc cache")
    path = os.path.join(directory, name + ".py")
    if _intact(path, source):
        cache_bound.touch(path)
    else:
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
        if bounded:
            cache_bound.evict(_directory, keep=sys.modules)
    _clear_unless_sealed(path)
    spec = importlib.util.spec_from_file_location(name, path)
    return _execute(name, importlib.util.module_from_spec(spec), spec.loader.exec_module, path)


def _load_in_memory(name: str, source: str):
    filename = f"<jitc generated {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, None))
    code = compile(source, filename, "exec")
    return _execute(name, module, lambda m: exec(code, m.__dict__), None)


def _execute(name: str, module, run, path: str | None):
    # registered before it runs: a cfunc compiles while the module executes, and numba
    # names the module of its cached environment from sys.modules
    global _persistent
    sys.modules[name] = module
    outer, _persistent = _persistent, path is not None
    try:
        with cache_locator.only_ours(path):
            run(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        _persistent = outer
    return module


def _intact(path: str, source: str) -> bool:
    try:
        with open(path) as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def numba_files(path: str) -> list[str]:
    """numba's cache files (index and data) for the generated module at `path`."""
    directory = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.splitext(os.path.basename(path))[0] + "."
    try:
        return sorted(
            os.path.join(directory, e)
            for e in os.listdir(directory)
            if e.startswith(stem) and not e.endswith(".tmp")
        )
    except FileNotFoundError:
        return []


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _clear_unless_sealed(path: str) -> None:
    """Delete numba's files for `path` unless they match the manifest sealed after they
    last worked: a truncated, corrupted or planted entry is rebuilt, never unpickled."""
    clear_unless_sealed(numba_files(path), path + ".sealed")


def clear_unless_sealed(files: list[str], manifest: str) -> None:
    """Delete `files` unless they are the ones `manifest` records."""
    if not files or _matches(files, manifest):
        return
    for p in files:
        try:
            os.remove(p)
        except OSError:
            pass


def _matches(files: list[str], manifest: str) -> bool:
    """Are `files` the ones `manifest` records (sealed after they last worked)?"""
    try:
        with open(manifest) as f:
            sealed = json.load(f)
        return sealed == {os.path.basename(p): _digest(p) for p in files}
    except (OSError, ValueError):
        return False


def seal(module) -> None:
    """Record the digests of a module's numba files once it has compiled and run."""
    path = getattr(module, "__file__", None)
    if path is None:  # compiled from memory
        return
    seal_files(numba_files(path), path + ".sealed")


def seal_files(files: list[str], manifest: str) -> None:
    """Record the digests of `files` in `manifest` (see clear_unless_sealed)."""
    try:
        digests = {os.path.basename(p): _digest(p) for p in files}
    except FileNotFoundError:
        # another process cleared them before they were sealed: they stay unsealed and are
        # rebuilt next time, slower, never wrong
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(manifest), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(digests, f)
        os.replace(tmp, manifest)
    except OSError as e:  # unsealed files are rebuilt next time: slower, never wrong
        if e.errno not in UNWRITABLE:
            raise
