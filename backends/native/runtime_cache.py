"""numba's disk cache for jitc's own numba functions (vmath's), in the runtime store.

vmath's exp costs ~0.3 s to compile in every new process that compiles a kernel using it
(its helpers are typed and lowered again each time). Cached, it loads in milliseconds and
still inlines into the kernel: numba keeps a cached library's bitcode for linking, so the
kernel's loop vectorizes as before. The files live in cache.runtime_dir() (private, one
directory per installation), are sealed after they are written and deleted unread when
they do not match their seal, as generated modules' are (cache.py).
"""

from __future__ import annotations

import os

from numba.core import caching, config

from jitc.backends.native import cache


class InRuntimeStore(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """The runtime store's __pycache__, for any function handed to `enable`. numba's stamp
    of the source file (mtime, size) still invalidates entries of an edited module."""

    directory = None  # set by enable

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self):
        return self.directory

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [InRuntimeStore]


class SealedCache(caching.FunctionCache):
    """A FunctionCache whose files are loaded only while they match their seal."""

    _impl_class = _Impl

    def _files(self):
        base = self._impl.filename_base
        try:
            names = os.listdir(self._cache_path)
        except OSError:
            return []
        return sorted(
            os.path.join(self._cache_path, e)
            for e in names
            if e.startswith(base + ".") and e.endswith((".nbi", ".nbc"))
        )

    def _manifest(self):
        return os.path.join(self._cache_path, self._impl.filename_base + ".sealed")

    def load_overload(self, sig, target_context):
        cache.clear_unless_sealed(self._files(), self._manifest())
        return super().load_overload(sig, target_context)

    def save_overload(self, sig, data):
        """Save and seal; a store that stops taking files (a full disk) is left alone."""
        try:
            super().save_overload(sig, data)
            cache.seal_files(self._files(), self._manifest())
        except OSError as e:
            if e.errno not in cache.UNWRITABLE:
                raise
            self.disable()


def enable(dispatchers) -> None:
    """Cache these numba dispatchers in the runtime store once it is resolved (nothing when
    it is unusable). Called by module code, so it never resolves the store itself: that
    takes cache.py's loading lock, which an import must not take (cache._LoadingLock)."""
    dispatchers = list(dispatchers)
    cache.when_runtime_resolved(lambda store: _cache_in(store, dispatchers))


def _cache_in(store: str | None, dispatchers: list) -> None:
    if store is None:
        return
    InRuntimeStore.directory = os.path.join(store, "__pycache__")
    override, config.CACHE_LOCATOR_CLASSES = config.CACHE_LOCATOR_CLASSES, ""
    try:
        for d in dispatchers:
            d._cache = SealedCache(d.py_func)
    finally:
        config.CACHE_LOCATOR_CLASSES = override
