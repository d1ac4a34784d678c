"""Arrays the function creates: np.zeros and friends give Tracers while a trace runs.

NumPy code preallocates and fills (`out = np.zeros((n, m)); out[:, 0] = x`). np.zeros takes
no array argument, so NumPy never asks a Tracer to handle it, and the Python-level array it
would return cannot hold traced values. While a trace runs in this thread, the NumPy module's
creation functions are wrapped so that they return a traced array of the same shape, dtype and
contents instead: a fresh buffer on every call of the compiled function, written like any
other. Other threads keep NumPy's own functions (the wrappers check the thread), and the
wrappers are removed when the last trace ends.
"""

from __future__ import annotations

import functools
import sys
import threading

import numpy as np

from jitc.source import INTERNAL

_local = threading.local()
_lock = threading.Lock()
_active = [0]
_ORIGINAL: dict = {}
_FILLS = {"zeros": 0, "ones": 1, "empty": 0}


def current_ctx():
    return getattr(_local, "ctx", None)


def _make(name, original):
    @functools.wraps(original)
    def create(*args, **kwargs):
        ctx = current_ctx()
        if ctx is None or sys._getframe(1).f_code.co_filename.startswith(INTERNAL):
            return original(*args, **kwargs)  # another thread, or jitc's (or NumPy's) own
        return _traced(ctx, name, original, args, kwargs)

    return create


def _traced(ctx, name, original, args, kwargs):
    """The traced array np.NAME(*args, **kwargs) would make: a broadcast constant."""
    from jitc import lax
    from jitc.dtypes import check_supported
    from jitc.numpy_api import find_ctx
    from jitc.source import where

    if find_ctx(list(args) + list(kwargs.values())) is not None:
        return original(*args, **kwargs)  # NumPy hands calls on Tracers to jitc already
    if kwargs.get("like") is not None:
        return original(*args, **kwargs)
    like = name.endswith("_like")
    params = (("a",) if like else ("shape",)) + (("fill_value",) if "full" in name else ()) \
        + ("dtype",)
    bound = dict(zip(params, args))
    bound.update((k, v) for k, v in kwargs.items() if k in params or k == "shape")
    fill = bound.get("fill_value", _FILLS.get(name.removesuffix("_like"), 0))
    if np.ndim(fill) != 0:
        return original(*args, **kwargs)
    dtype = bound.get("dtype")
    if like:
        source = np.asarray(bound["a"]) if not hasattr(bound["a"], "dtype") else bound["a"]
        dtype = source.dtype if dtype is None else dtype
        shape = bound.get("shape", np.shape(source))
    else:
        shape = bound["shape"]
        if dtype is None:
            dtype = np.asarray(fill).dtype if "full" in name else np.float64
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    dtype = check_supported(dtype, f"np.{name}(...){where()}")
    return lax.full(ctx, shape, np.asarray(fill).astype(dtype), dtype)


WRAPPED = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
           "full_like")


class creating_traced_arrays:
    """While active in this thread, np.zeros & co. return Tracers of `ctx`."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        self.previous = current_ctx()
        _local.ctx = self.ctx
        with _lock:
            if _active[0] == 0:
                for name in WRAPPED:
                    _ORIGINAL[name] = getattr(np, name)
                    setattr(np, name, _make(name, _ORIGINAL[name]))
            _active[0] += 1
        return self

    def __exit__(self, *exc):
        _local.ctx = self.previous
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                for name in WRAPPED:
                    setattr(np, name, _ORIGINAL.pop(name))
        return False
