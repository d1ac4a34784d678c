"""NumPy names rebound while a trace runs: the calls NumPy never hands to a Tracer.

NumPy gives a call to jitc (through __array_function__) only when an argument is a Tracer.
Three kinds of calls never reach jitc that way, so while a trace runs in some thread the
numpy modules' names for them are bound to wrappers:
- constructors that take no array (np.zeros(n), np.eye(n)): in the tracing thread they
  return traced arrays the function may write (trace/creation.py);
- np.asarray, np.array, np.asanyarray, np.ascontiguousarray, np.asfortranarray, which NumPy
  runs in C without dispatch: on traced arrays they do what NumPy's do on an ndarray
  (trace/creation.py);
- np.random's functions, which draw new numbers on every call: refused, naming the call
  (numpy_api/random.py).
Other threads, and calls made by NumPy's own code or by compiled extensions (np.random's
Cython code calls np.empty and casts the result unchecked: a Tracer there crashed the
interpreter), run NumPy's own functions: a wrapper acts only where the user's Python frame
is making the very call (`user_call`). The last trace to end restores NumPy's names.

Limits: a name taken from NumPy before the trace (`from numpy import zeros` at import)
is NumPy's own function, except among the jitted function's own globals, which the trace
rebinds (`standin`); code that compares `np.zeros is ...` during a trace sees the wrapper.
"""

from __future__ import annotations

import ast
import builtins
import functools
import linecache
import sys
import threading
import types

from jitc.core.source import INTERNAL

_local = threading.local()
_lock = threading.Lock()
# Traces in progress (any thread). While one runs, calls skip their fast path: a Tracer has
# a shape and dtype too, and a jitted function called inside a trace must be inlined.
TRACES_ACTIVE = [0]
_BINDINGS: list = []  # (module, name, make_wrapper(original) -> wrapper)
_saved: list = []  # (module, name, original) while bound
_wrapper_of: dict = {}  # id(original) -> its wrapper, while bound


def rebind(module, name: str, make_wrapper) -> None:
    """Bind `module.name` to make_wrapper(original) while traces run; `module` may be a
    module's name (SciPy's, which jitc does not import): bound when a trace starts if the
    program has imported it by then."""
    _BINDINGS.append((module, name, make_wrapper))


def current_ctx():
    """The TraceContext of the trace running in this thread, or None."""
    return getattr(_local, "ctx", None)


class tracing_in_this_thread:
    """While active, this thread traces into `ctx` and NumPy's names are rebound."""

    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        self.previous = current_ctx()
        _local.ctx = self.ctx
        with _lock:
            if TRACES_ACTIVE[0] == 0:
                for module, name, make in _BINDINGS:
                    if isinstance(module, str):
                        module = sys.modules.get(module)
                        if module is None or not hasattr(module, name):
                            continue
                    original = getattr(module, name)
                    wrapper = make(original)
                    _saved.append((module, name, original))
                    _wrapper_of[id(original)] = wrapper
                    setattr(module, name, wrapper)
            TRACES_ACTIVE[0] += 1
        return self

    def __exit__(self, *exc):
        _local.ctx = self.previous
        with _lock:
            TRACES_ACTIVE[0] -= 1
            if TRACES_ACTIVE[0] == 0:
                for module, name, original in reversed(_saved):
                    setattr(module, name, original)
                _saved.clear()
                _wrapper_of.clear()
        return False


def standin(value):
    """The wrapper to bind where the jitted function's globals hold NumPy's own `value`
    (`from numpy import zeros` at import), else `value`; while a trace is active."""
    return _wrapper_of.get(id(value), value)


def user_call(wrapper, depth: int = 2) -> bool:
    """Is the user's code calling `wrapper` itself: the Python frame `depth` levels up is
    outside jitc and NumPy, and the call it is making names `wrapper`? A compiled
    extension called from that frame (np.random.rand) that calls `wrapper` in turn runs no
    Python frame of its own, so only the call's text tells the two apart."""
    frame = sys._getframe(depth)
    if frame.f_code.co_filename.startswith(INTERNAL):
        return False
    callee = _callee(frame)
    if callee is None:  # no source to read (code made by exec): judge by the names it uses
        return wrapper.__name__ in frame.f_code.co_names
    resolved = _resolve(callee, frame)
    if resolved is not _UNKNOWN:  # the wrapper, or the original it stands in for
        return resolved is wrapper or _wrapper_of.get(id(resolved)) is wrapper
    last = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
    return last == wrapper.__name__


def _callee(frame):
    """The function expression of the call `frame` is making, or None."""
    code = frame.f_code
    positions = getattr(code, "co_positions", None)  # Python >= 3.11
    if positions is None:
        return None
    try:
        line, end_line, col, end_col = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return None
    return _parse_call(code.co_filename, line, end_line, col, end_col, frame.f_globals)


def _parse_call(filename, line, end_line, col, end_col, module_globals):
    if None in (line, end_line, col, end_col):
        return None
    lines = linecache.getlines(filename, module_globals)
    if not lines or end_line > len(lines):
        return None
    return _call_function(tuple(lines[line - 1 : end_line]), col, end_col)


@functools.lru_cache(maxsize=1024)
def _call_function(lines: tuple, col: int, end_col: int):
    text = [line.encode() for line in lines]
    text[-1] = text[-1][:end_col]
    text[0] = text[0][col:]
    try:
        node = ast.parse(b"".join(text).decode().strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    return node.func if isinstance(node, ast.Call) else None


_UNKNOWN = object()


def _resolve(node, frame):
    """The object `node` (a name, or attributes of modules and classes) stands for in
    `frame`, without running any of the user's code; _UNKNOWN where that would."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in scope:
                return scope[node.id]
        return _UNKNOWN
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, frame)
        if isinstance(owner, (types.ModuleType, type)):
            return getattr(owner, node.attr, _UNKNOWN)
    return _UNKNOWN
