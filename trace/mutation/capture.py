"""Captured state: the arrays a jitted function reaches besides its arguments.

NumPy code keeps state in closures, module globals and objects (`self.W`, a preallocated KV
cache, a list of AdaGrad memories). While tracing, the function runs on stand-ins: a copy of
its closure cells and of its globals, and a shallow copy of each object argument (and of the
lists, tuples, dicts and objects inside them, a few levels deep), in which every array is a
Tracer. Each such array is a parameter of the graph, read again from the same place on every
call (so a later call sees the current contents, and a new array bound there); a written one
is copied back into the array at that place after the call; a place the function rebinds to
a new traced array (`self.V = self.V - lr * g`) is bound to the new array after every call,
as NumPy would. Any other change to a stand-in (a Python counter incremented, an item
appended) would happen once, at trace time, not on every call: it is an error.

An array reached another way (an attribute of a module, a function's default) is a constant
of the compiled code, unless the function writes it: then it is a parameter too, read and
written back in that same array object.
"""

from __future__ import annotations

import copy
import types
from dataclasses import dataclass

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.numpy_api.random import RefusedRandomState, is_random_state
from jitc.stages import Split, Wrapped
from jitc.trace import creation

DEPTH = 3  # containers and objects followed below a closure cell, global or argument


@dataclass(frozen=True)
class Place:
    """Where a captured array lives: `root` (a cell, a globals dict, an object, or the array
    itself), then attribute / item steps. `name` says it the way the user wrote it."""

    root: object
    keys: tuple
    name: str

    def get(self):
        value = self.root
        for kind, key in self.keys:
            value = _get(value, kind, key)
        return value

    def set(self, new):
        parent = self.root
        for kind, key in self.keys[:-1]:
            parent = _get(parent, kind, key)
        kind, key = self.keys[-1]
        if kind == "cell":
            parent.cell_contents = new
        elif kind == "attr":
            setattr(parent, key, new)
        else:
            parent[key] = new

    def child(self, kind, key, name) -> Place:
        return Place(self.root, self.keys + ((kind, key),), name)


def _get(value, kind, key):
    if kind == "cell":
        return value.cell_contents
    if kind == "attr":
        return getattr(value, key)
    return value[key]


def is_state_object(x) -> bool:
    """An instance of a user class whose attributes may hold arrays (self, a model)."""
    from jitc.numpy_api import is_tracer

    return (
        hasattr(x, "__dict__")
        and not isinstance(
            x,
            (
                type,
                types.ModuleType,
                types.FunctionType,
                types.BuiltinFunctionType,
                types.MethodType,
                np.ndarray,
                np.generic,
                Wrapped,
            ),
        )
        and not is_tracer(x)
        and not callable(getattr(x, "__array__", None))
        and not hasattr(x, "shape")
    )


def snapshot(d: dict) -> dict:
    """A copy of `d` made in one step, to read a user's dict or attributes from: iterating
    the live dict raised 'dictionary changed size during iteration' when another thread (a
    background compile importing modules) or a finalizer run by a garbage collection changed
    it meanwhile; dict.copy runs no Python code between its items."""
    return d.copy()


def _names_used(code) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names_used(c)
    return names


class Capture:
    """The stand-ins of one trace, and what the function did to them."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.places: list = []  # (Place, array, Tracer) per captured parameter
        self.by_id: dict = {}  # id(array) -> its Tracer
        # (Place of a container, {key: value given}, the stand-in, the keys to compare or
        # None for all)
        self.standins: list = []

    # -- building stand-ins
    def function(self, fn):
        """`fn` running on stand-ins of its closure cells and globals."""
        code = getattr(fn, "__code__", None)
        if code is None or not isinstance(fn, types.FunctionType):
            return fn
        cells = []
        changed = False
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell (a name bound later)
                cells.append(cell)
                continue
            new = self.value(value, Place(cell, (("cell", None),), name), DEPTH)
            changed |= new is not value
            cells.append(types.CellType(new) if new is not value else cell)
            if new is not value:
                self.standins.append(
                    (Place(cell, (), name), {("cell", None): new}, cells[-1], None)
                )
        scope = fn.__globals__
        stand_globals = None
        used = _names_used(code)
        for name in sorted(used):
            if name not in scope:
                continue
            value = scope[name]
            new = creation.standin(value, used)
            if new is value:
                new = self.value(value, Place(scope, (("item", name),), name), DEPTH)
            if new is not value:
                if stand_globals is None:
                    stand_globals = dict(scope)
                stand_globals[name] = new
        if stand_globals is not None:
            keys = {("item", k) for k in used}
            self.standins.append(
                (
                    Place(scope, (), "globals"),
                    {key: stand_globals[key[1]] for key in keys if key[1] in stand_globals},
                    stand_globals,
                    keys,
                )
            )
            changed = True
        if not changed:
            return fn
        new_fn = types.FunctionType(
            code,
            stand_globals if stand_globals is not None else scope,
            fn.__name__,
            fn.__defaults__,
            tuple(cells),
        )
        new_fn.__kwdefaults__ = fn.__kwdefaults__
        return new_fn

    def value(self, value, place: Place, depth: int):
        """`value` with the arrays inside it replaced by Tracers (itself if none are)."""
        if isinstance(value, np.ndarray):
            return self.array(value, place)
        if is_random_state(value):
            return RefusedRandomState(value, place.name)
        if depth == 0:
            return value
        if type(value) in (list, tuple) or (
            isinstance(value, tuple) and hasattr(type(value), "_fields")
        ):
            new = [
                self.value(v, place.child("item", i, f"{place.name}[{i}]"), depth - 1)
                for i, v in enumerate(value)
            ]
            if all(a is b for a, b in zip(new, value)):
                return value
            if type(value) is list:
                self.standins.append(
                    (place, {("item", i): v for i, v in enumerate(new)}, new, None)
                )
                return new
            return type(value)(*new) if hasattr(type(value), "_fields") else tuple(new)
        if type(value) is dict:
            items = snapshot(value)
            new = {
                k: self.value(v, place.child("item", k, f"{place.name}[{k!r}]"), depth - 1)
                for k, v in items.items()
            }
            if all(new[k] is items[k] for k in items):
                return value
            self.standins.append((place, {("item", k): v for k, v in new.items()}, new, None))
            return new
        if isinstance(value, types.ModuleType):
            return self._module(value, place, depth)
        if is_state_object(value):
            attrs = snapshot(vars(value))
            new = {
                k: self.value(v, place.child("attr", k, f"{place.name}.{k}"), depth - 1)
                for k, v in attrs.items()
            }
            if all(new[k] is attrs[k] for k in attrs):
                return value
            proxy = copy.copy(value)
            vars(proxy).update(new)
            self.standins.append((place, {("attr", k): v for k, v in new.items()}, proxy, None))
            return proxy
        return value

    def _module(self, module, place: Place, depth: int):
        """A module whose attributes hold arrays captured already (the function writes them:
        trace/lowering.py retraced to capture them): a stand-in in which they are Tracers, so
        that the function's NumPy calls on them (`p.sum()` on a real array would run once,
        at trace time) are traced. A module's other arrays are constants."""
        if not self.by_id:
            return module
        attrs = snapshot(vars(module))
        new = {
            k: self.value(v, place.child("attr", k, f"{place.name}.{k}"), depth - 1)
            for k, v in attrs.items()
            if _holds(v, self.by_id, depth)
        }
        if not new:
            return module
        proxy = types.ModuleType(module.__name__, module.__doc__)
        vars(proxy).update(attrs)
        vars(proxy).update(new)
        # every attribute compared after the trace: one the function sets is on the proxy
        self.standins.append((place, {("attr", k): v for k, v in vars(proxy).items()}, proxy, None))
        return proxy

    def array(self, array: np.ndarray, place: Place):
        """The Tracer standing for a captured array (one per array object)."""
        from jitc.core.dtypes import SUPPORTED

        t = self.by_id.get(id(array))
        if t is not None:
            return t
        if array.dtype not in SUPPORTED:
            return array  # a constant if used: the tracer reports the dtype then
        t = self.ctx.parameter(array.shape, array.dtype, origin=("captured", len(self.places)))
        self.places.append((place, array, t))
        self.by_id[id(array)] = t
        return t

    # -- after the trace
    def effects(self):
        """(written, rebound): the captured places whose array was written (index into
        places, final node), and the places rebound to a traced value (Place, Tracer)."""
        from jitc.numpy_api import is_tracer

        written = [(k, t.buf.node) for k, (_, _, t) in enumerate(self.places) if t.buf.written]
        rebound = []
        for place, given, standin, keys in self.standins:
            now = _contents(standin)
            for key in keys if keys is not None else set(now) | set(given):
                old, new = given.get(key, _MISSING), now.get(key, _MISSING)
                if new is old:
                    continue
                where = _describe(place, key)
                if is_tracer(new):
                    rebound.append(
                        (
                            place.child(*key, where)
                            if key[0] != "cell"
                            else Place(place.root, (key,), where),
                            new,
                        )
                    )
                    continue
                raise UnsupportedError(
                    f"{where} was changed while tracing ({_short(old)} -> {_short(new)}): a "
                    f"jitted function runs its Python code once, when it is traced, so this "
                    f"change would not happen on later calls; keep such state outside the "
                    f"jitted function, or make it an array written in place"
                )
        return written, rebound


_MISSING = object()


def _holds(value, ids, depth: int) -> bool:
    """Does `value` hold one of the arrays `ids` names, `depth` containers down at most?"""
    if isinstance(value, np.ndarray):
        return id(value) in ids
    if depth == 0:
        return False
    if type(value) in (list, tuple):
        return any(_holds(v, ids, depth - 1) for v in value)
    if type(value) is dict:
        return any(_holds(v, ids, depth - 1) for v in snapshot(value).values())
    return False


def _contents(standin) -> dict:
    if isinstance(standin, types.CellType):
        try:
            return {("cell", None): standin.cell_contents}
        except ValueError:
            return {}
    if isinstance(standin, list):
        return {("item", i): v for i, v in enumerate(standin)}
    if isinstance(standin, dict):
        return {("item", k): v for k, v in standin.items()}
    return {("attr", k): v for k, v in vars(standin).items()}


def _describe(place, key) -> str:
    kind, k = key
    if kind == "cell":
        return f"the closure variable {place.name!r}"
    if place.name == "globals":
        return f"the global {k!r}"
    return f"{place.name}.{k}" if kind == "attr" else f"{place.name}[{k!r}]"


def _short(v) -> str:
    if v is _MISSING:
        return "absent"
    text = repr(v)
    return text if len(text) < 40 else text[:37] + "..."


_PLAIN = (bool, int, float, complex, str, bytes, type(None))


class Identity:
    """An object argument in the compile key: equal only to the same object with the same
    plain attributes (numbers, strings: the trace bakes them in, so a change retraces)."""

    __slots__ = ("obj", "plain")

    def __init__(self, obj):
        self.obj = obj
        self.plain = tuple((k, v) for k, v in snapshot(vars(obj)).items() if type(v) in _PLAIN)

    def __hash__(self):
        return hash((id(self.obj), self.plain))

    def __eq__(self, other):
        return isinstance(other, Identity) and other.obj is self.obj and other.plain == self.plain

    def __repr__(self):
        return f"<{type(self.obj).__name__} object at {id(self.obj):#x}>"


def split_arguments(function, args, kwargs) -> Split:
    """A call's arguments divided into traced and static ones. An object argument (`self`)
    is static by identity: its arrays are captured state, its plain attributes (numbers,
    strings) part of the key, since the trace bakes them."""
    objects = {
        i for i, a in enumerate(args) if i not in function.static_nums and is_state_object(a)
    }
    nums = function.static_nums | objects
    if not nums and not function.static_names:
        return Split(args, kwargs, (), nums)
    dyn = tuple(a for i, a in enumerate(args) if i not in nums)
    static = [(i, Identity(a) if i in objects else a) for i, a in enumerate(args) if i in nums]
    dyn_kw = {}
    for k, v in kwargs.items():
        if k in function.static_names:
            static.append((k, v))
        else:
            dyn_kw[k] = v
    try:
        static_key = tuple(static)
        hash(static_key)
    except TypeError:
        bad = next(str(k) for k, v in static if not _hashable(v))
        raise TypeError(
            f"{function.name}: static argument {bad!r} must be hashable (use a "
            f"tuple instead of a list)"
        ) from None
    return Split(dyn, dyn_kw, static_key, frozenset(nums))


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False
