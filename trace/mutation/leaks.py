"""Traced values left in Python state after a trace: an error at the end of the trace.

A jitted function runs its Python once, on Tracers. A Tracer it stores where it outlives the
trace (appended to a module's list, set as a module attribute, kept in a default argument or
in an argument's list) would be a placeholder there, not an array, and every later call would
skip the store. Places reached through stand-ins (closure cells, globals and objects holding
arrays: trace/mutation/capture.py) are written back or refused there; this scans the real state the
function could reach: its globals (and attributes of modules it names), closure, defaults,
the arguments, and the modules whose code made traced values.
"""

from __future__ import annotations

import sys
import types

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import INTERNAL, where
from jitc.trace.mutation.capture import _names_used, is_state_object, snapshot

DEPTH = 3  # containers and objects followed below each place
MAX_ITEMS = 10_000  # a larger container is not looked into (a trace must stay cheap)


def check_no_leaks(fn, args, kwargs, param_names, ctx) -> None:
    """Raise UnsupportedError naming the first place outside the trace holding a Tracer of
    `ctx`, and the user's line that made it."""
    seen: set = set()
    for name, value in _places(fn, args, kwargs, param_names, ctx):
        _scan(value, name, DEPTH, seen, ctx)


def argument_containers(named: dict) -> list:
    """(name, container, its items) for each list and dict in the traced arguments: the
    function runs on copies of them (pytree), so a change to one would not reach the caller."""
    found = []

    def walk(value, name, depth):
        if isinstance(value, list):
            found.append((name, value, list(value)))
            items = enumerate(found[-1][2])
        elif isinstance(value, dict):
            found.append((name, value, snapshot(value)))
            items = found[-1][2].items()
        elif isinstance(value, tuple):
            items = enumerate(value)
        else:
            return
        for k, v in items if depth else ():
            walk(v, f"{name}[{k!r}]", depth - 1)

    for name, value in named.items():
        walk(value, f"argument {name!r}", DEPTH)
    return found


def check_unchanged(containers: list) -> None:
    """Raise UnsupportedError naming an argument list or dict the function changed."""
    for name, container, items in containers:
        if isinstance(container, dict):
            same = container.keys() == items.keys() and all(container[k] is items[k] for k in items)
        else:
            same = len(container) == len(items) and all(a is b for a, b in zip(container, items))
        if not same:
            raise UnsupportedError(
                f"{name} was changed while tracing: a jitted function gets a copy of each "
                f"list or dict argument, so the change would not reach the caller's, and it "
                f"would happen once, not on every call; return the new values instead"
            )


def _places(fn, args, kwargs, param_names, ctx):
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if isinstance(fn, types.FunctionType) and code is not None:
        scope = fn.__globals__
        used = _names_used(code)
        for name in sorted(used):
            if name not in scope:
                continue
            value = scope[name]
            if isinstance(value, types.ModuleType):
                attrs = snapshot(vars(value))
                for attr in sorted(used & set(attrs)):
                    yield f"{name}.{attr}", attrs[attr]
            else:
                yield f"the global {name!r}", value
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                yield f"the closure variable {name!r}", cell.cell_contents
            except ValueError:
                pass
        defaults = fn.__defaults__ or ()
        positional = code.co_varnames[: code.co_argcount]
        for name, value in zip(positional[len(positional) - len(defaults) :], defaults):
            yield f"the default of {name!r}", value
        for name, value in (fn.__kwdefaults__ or {}).items():
            yield f"the default of {name!r}", value
    for i, value in enumerate(args):
        yield f"argument {param_names[i] if i < len(param_names) else f'args[{i}]'!r}", value
    for name, value in kwargs.items():
        yield f"argument {name!r}", value
    for module in _user_modules(ctx):
        for name, value in snapshot(vars(module)).items():
            if not name.startswith("__"):
                yield f"{module.__name__}.{name}", value


def _user_modules(ctx):
    """The modules whose code made traced values (helpers the function called)."""
    files = {n.loc.file for n in ctx.graph.nodes if n.loc is not None}
    files = {f for f in files if not f.startswith(INTERNAL)}
    for module in snapshot(sys.modules).values():
        if getattr(module, "__file__", None) in files:
            yield module


def _scan(value, name: str, depth: int, seen: set, ctx) -> None:
    from jitc.trace.tracer import Tracer

    if isinstance(value, Tracer):
        if value.ctx is ctx:
            raise UnsupportedError(
                f"{name} holds a traced value{where(value.node.loc)} after the trace of "
                f"{ctx.graph.name!r}: a jitted function runs its Python once, so the value "
                f"stored there would be a placeholder, not an array, and later calls would "
                f"not store theirs; return it, or write it into an array in place "
                f"(buffer[...] = value)"
            )
        return
    if (
        depth == 0
        or isinstance(value, (np.ndarray, str, bytes, int, float, type))
        or id(value) in seen
    ):
        return
    seen.add(id(value))
    if isinstance(value, (list, tuple, set, frozenset)) and len(value) <= MAX_ITEMS:
        for i, v in enumerate(value):
            _scan(v, f"{name}[{i}]", depth - 1, seen, ctx)
    elif isinstance(value, dict) and len(value) <= MAX_ITEMS:
        for k, v in snapshot(value).items():
            _scan(v, f"{name}[{k!r}]", depth - 1, seen, ctx)
    elif is_state_object(value):
        for k, v in snapshot(vars(value)).items():
            _scan(v, f"{name}.{k}", depth - 1, seen, ctx)
