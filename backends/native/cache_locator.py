"""Where numba caches jitc's generated code: beside the module, in jitc's private cache.

numba picks a cache directory per function from a list of locators: NUMBA_CACHE_DIR first,
then the source's own __pycache__, then ~/.cache/numba, or whatever
NUMBA_CACHE_LOCATOR_CLASSES names. Any of those may be a directory other users can write,
and numba unpickles what it finds there. While jitc loads a generated module, a locator of
its own comes first and the override is off, so the module's cache files go to the
module's __pycache__ (which cache.py checked is private) and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

from numba.core import caching, config

_loading = threading.local()


class BesideTheModule(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's in-tree locator, for exactly the generated module jitc is loading."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(os.path.dirname(py_file), "__pycache__")

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if py_file != getattr(_loading, "path", None):
            return None
        return cls(py_func, py_file)


def _put_first(impl) -> None:
    if impl._locator_classes[0] is not BesideTheModule:
        impl._locator_classes = [BesideTheModule] + list(impl._locator_classes)


@contextlib.contextmanager
def only_ours(path: str | None):
    """While numba decorates the functions of the module at `path`, cache them beside it.
    The override is process-wide: a compile of the user's own numba code in another thread
    at that moment uses numba's default locators."""
    _put_first(caching.CacheImpl)
    cuda_caching = sys.modules.get("numba.cuda.core.caching")  # imported by the cuda backend
    if cuda_caching is not None:
        _put_first(cuda_caching.CacheImpl)
    override, config.CACHE_LOCATOR_CLASSES = config.CACHE_LOCATOR_CLASSES, ""
    _loading.path = path
    try:
        yield
    finally:
        _loading.path = None
        config.CACHE_LOCATOR_CLASSES = override
