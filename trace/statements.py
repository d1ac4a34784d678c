"""What a function's loops and branches call once trace/autograph.py has rewritten them.

Each statement decides when it runs, at trace time: a test or range that Python can decide
runs as Python does, and a short static range too (its index stays a literal, so W12's four
slab writes keep their packed store). A traced test, a traced bound or a long range
compiles as one loop or branch (trace/control.py) carrying the names the statement
assigns. A long static range whose body cannot be carried (it changes a value's shape,
keeps a Python list, prints) is unrolled as before, up to UNROLL_BUDGET iterations; a
traced one cannot be, and says why. `JITC_LOG=compiles` names each decision.
"""

from __future__ import annotations

import builtins
import logging
import sys
import types

import numpy as np

from jitc.core.errors import JitcError, TracerError
from jitc.core.pytree import flatten, leaf_paths, unflatten
from jitc.core.source import user_loc, where
from jitc.numpy_api.core import lift
from jitc.trace import autograph, control, ranges
from jitc.trace.control import LoopContext, LoopError
from jitc.trace.rebind import current_ctx, standin, tracing_in_this_thread
from jitc.trace.tracer import Tracer

log = logging.getLogger("jitc")

UNROLL_AT_MOST = 8  # a static range this short runs as Python: its index stays a literal
UNROLL_BUDGET = 4096  # iterations a static range that cannot compile as one loop may unroll
_CARRIABLE = (Tracer, np.ndarray, np.generic, bool, int, float, complex)


class Undefined:
    """The value of a name a compiled loop or branch leaves without one: any use says so."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why

    def _refuse(self, *args, **kwargs):
        raise TracerError(f"{self.name} has no value here: {self.why}")

    def __getattr__(self, attr):
        self._refuse()

    def __repr__(self):
        return f"<{self.name}: no value ({self.why})>"


for _method in (
    "__bool__ __array__ __len__ __iter__ __getitem__ __setitem__ __call__ __index__ __int__ "
    "__float__ __neg__ __pos__ __abs__ __invert__ __lt__ __le__ __gt__ __ge__ __matmul__ "
    "__add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __pow__ __and__ __or__ __xor__ "
    "__radd__ __rsub__ __rmul__ __rtruediv__ __rfloordiv__ __rmod__ __rpow__ __rmatmul__"
).split():
    setattr(Undefined, _method, Undefined._refuse)


def converted(fun):
    """`fun` rewritten to run its loops and branches here (trace/autograph.py)."""
    return autograph.converted(fun, sys.modules[__name__])


def callee(fn):
    """What a call in converted code calls: a function of the user's converted too, so
    its loops and branches compile as the caller's do (a method's function, bound again);
    a function jitc traces in its wrapper (`from scipy.linalg.lapack import dgtsv` in a
    module of the user's: the name holds SciPy's own); anything else as it is. The call
    itself is made in the caller's frame."""
    if isinstance(fn, types.MethodType) and autograph.users_function(fn.__func__):
        return types.MethodType(converted(fn.__func__), fn.__self__)
    return converted(fn) if autograph.users_function(fn) else standin(fn)


def values(scope: dict, names: tuple) -> tuple:
    """Each name's value in `scope` (the caller's locals()), Undefined where unbound."""
    return tuple(
        scope[n] if n in scope else Undefined(n, "it is unbound before the statement")
        for n in names
    )


def _at(loc) -> str:
    return f"{loc.file}:{loc.line}" if loc else "?"


def _note(ctx, message, *args) -> None:
    """Log a decision, once: not from the dry runs that find a loop's carried types."""
    while ctx is not None:
        if getattr(ctx, "dry", False):
            return
        ctx = getattr(ctx, "parent", None)
    log.info(message, *args)


def for_range(range_fn, bounds, body, vals, names, effects, written, index_name, index):
    """`for i in range(*bounds): vals = body(i, vals)`, as Python or as one loop:
    (vals, i after the loop). `index`: (i before the loop,)."""
    ctx = current_ctx()
    traced = any(isinstance(b, Tracer) for b in bounds)
    if ctx is None or range_fn is not builtins.range:
        return _python_for(range_fn(*bounds), body, vals, index[0])
    trips = None if traced else len(range(*bounds))
    if trips is not None and trips <= UNROLL_AT_MOST:
        return _python_for(range(*bounds), body, vals, index[0])
    loc = user_loc()
    why = _why_python(vals, names, effects, written)
    if why is None:
        try:
            out = _compiled_for(ctx, bounds, body, vals, names, loc)
        except Exception as e:  # noqa: BLE001 - unrolled, a genuine error comes again
            if trips is None:
                e.add_note(f"jitc: the for loop at {_at(loc)} has traced bounds: one loop")
                raise
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        else:
            _note(ctx, "%s: the for loop compiles as one loop", _at(loc))
            why = f"it is the index of the loop at {_at(loc)}, which compiled as one loop"
            return out, Undefined(index_name, why)
    if trips is None:
        raise LoopError(
            f"the for loop at {_at(loc)} has traced bounds, so it must compile as one loop, "
            f"but {why}"
        )
    if trips > UNROLL_BUDGET:
        raise LoopError(
            f"the for loop at {_at(loc)} cannot compile as one loop ({why}), and its {trips} "
            f"iterations are more than the {UNROLL_BUDGET} it may unroll: change the body, "
            "or unroll it anyway with jitc.jit(f, unroll=True)"
        )
    _note(ctx, "%s: the for loop is unrolled, %d iterations: %s", _at(loc), trips, why)
    return _python_for(range(*bounds), body, vals, index[0])


def _python_for(iterable, body, vals, i):
    for i in iterable:  # noqa: B020 - i after the loop is Python's: the last index
        vals = body(i, vals)
    return vals, i


def _compiled_for(ctx, bounds, body, vals, names, loc):
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    if isinstance(step, Tracer):
        raise LoopError("its step is traced; a compiled range() takes a Python int step")
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    carry = _Carry(vals, names)

    def step_fn(i, carried):
        return carry.leaves_of(body(i, carry.merge(carried)))

    index = ranges.range_of(start, stop, step)
    init = _settled(ctx, step_fn, carry.leaves, carry.names, loc, index)
    out = control.range_loop(start, stop, step, step_fn, tuple(init), "for")
    return carry.result(names, out, f"it is assigned only inside the loop at {_at(loc)}")


def while_stmt(test, body, vals, names, effects, written):
    """`while test(vals): vals = body(vals)`: as Python while the test is Python's, then
    as one loop from the first test that is traced."""
    ctx = current_ctx()
    while True:
        flag = test(vals)
        if ctx is not None and isinstance(flag, Tracer):
            break
        if not flag:
            return vals
        vals = body(vals)
    loc = user_loc()
    why = _why_python(vals, names, effects, written)
    if why is not None:
        raise LoopError(
            f"the while loop at {_at(loc)} tests a traced value, so it must compile as one "
            f"loop, but {why}"
        )
    carry = _Carry(vals, names)

    def step_fn(carried):
        return carry.leaves_of(body(carry.merge(carried)))

    try:
        init = _settled(ctx, step_fn, carry.leaves, carry.names, loc)
        out = control.while_loop(lambda c: test(carry.merge(c)), step_fn, tuple(init))
    except JitcError as e:
        e.add_note(f"jitc: the while loop at {_at(loc)} tests a traced value: one loop")
        raise
    _note(ctx, "%s: the while loop compiles as one loop", _at(loc))
    return carry.result(names, out, f"it is assigned only inside the loop at {_at(loc)}")


def if_stmt(pred, yes, no, vals, names, effects, written):
    """`yes(vals) if pred else no(vals)`: Python's choice, or both branches compiled."""
    ctx = current_ctx()
    if ctx is None or not isinstance(pred, Tracer):
        return yes(vals) if pred else no(vals)
    loc = user_loc()
    why = _why_python(vals, names, effects, written, trees=False)
    if why is not None:
        raise LoopError(
            f"the if at {_at(loc)} tests a traced value, so both branches compile, but {why}"
        )
    defined = [k for k, v in enumerate(vals) if not isinstance(v, Undefined)]
    given = [vals[k] for k in defined]

    def branch(fn):
        def run(carried):
            full = list(vals)
            for k, v in zip(defined, carried):
                full[k] = v
            return fn(tuple(full))

        return run

    try:
        outs = [_dry(ctx, branch(fn), given, loc) for fn in (yes, no)]
        keep = [k for k in range(len(vals)) if all(o[k] is not None for o in outs)]
        types = [_joined(names[k], outs[0][k], outs[1][k]) for k in keep]
        init = [
            _as_type(ctx, vals[k], t) if k in defined else _zeros(ctx, t)
            for k, t in zip(keep, types)
        ]

        def run(fn):
            def step(carried):
                full = list(vals)
                for k, v in zip(keep, carried):
                    full[k] = v
                out = fn(tuple(full))
                return tuple(_as_type(current_ctx(), out[k], t) for k, t in zip(keep, types))

            return step

        out = control.branches(pred, run(yes), run(no), tuple(init), [names[k] for k in keep], "if")
    except JitcError as e:
        e.add_note(f"jitc: the if at {_at(loc)} tests a traced value: both branches compile")
        raise
    _note(ctx, "%s: the if compiles both branches", _at(loc))
    why = f"only one branch of the if at {_at(loc)} assigns it"
    full = [Undefined(n, why) for n in names]
    for k, v in zip(keep, out):
        full[k] = v
    return tuple(full)


def python_test(value, statement: str, why: str):
    """The test of a statement left as Python wrote it: a traced one is refused, saying
    what kept the statement from compiling."""
    if isinstance(value, Tracer):
        raise LoopError(
            f"this {statement} tests a traced value{where()}, but it holds {why}, so it "
            "cannot compile as a loop or branch: assign the results to names and leave them "
            "after the statement, or use np.where(cond, a, b)"
        )
    return value


def python_range(*args):
    """range(*bounds) for a loop left as Python wrote it (args end with the reason): a
    traced bound is refused, saying why."""
    *bounds, why = args
    if any(isinstance(b, Tracer) for b in bounds):
        raise LoopError(
            f"this for loop has a traced bound{where()}, but it holds {why}, so it cannot "
            "compile as one loop"
        )
    return range(*bounds)


def if_exp(pred, yes, no):
    """`yes() if pred else no()`; both evaluated and chosen by np.where when traced."""
    if not isinstance(pred, Tracer):
        return yes() if pred else no()
    return np.where(pred, yes(), no())


def and_(*thunks):
    """Python's `and` over thunks; a traced bool scalar combines with np.logical_and."""
    value = thunks[0]()
    for thunk in thunks[1:]:
        if _traced_scalar(value):
            value = np.logical_and(value, thunk())
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*thunks):
    """Python's `or` over thunks; a traced bool scalar combines with np.logical_or."""
    value = thunks[0]()
    for thunk in thunks[1:]:
        if _traced_scalar(value):
            value = np.logical_or(value, thunk())
        elif value:
            return value
        else:
            value = thunk()
    return value


def not_(value):
    return np.logical_not(value) if _traced_scalar(value) else not value


def max_(fn, *args):
    """Python's max of scalars, some traced: the first of the largest, as max() picks."""
    if fn is not builtins.max or not any(_traced_scalar(a) for a in args):
        return fn(*args)
    best = args[0]
    for a in args[1:]:
        best = np.where(a > best, a, best)
    return best


def min_(fn, *args):
    """Python's min of scalars, some traced: the first of the smallest."""
    if fn is not builtins.min or not any(_traced_scalar(a) for a in args):
        return fn(*args)
    best = args[0]
    for a in args[1:]:
        best = np.where(a < best, a, best)
    return best


def _traced_scalar(value) -> bool:
    return isinstance(value, Tracer) and value.shape == ()


def _why_python(vals, names, effects, written=(), trees=True) -> str | None:
    """Why the statement cannot compile as one loop or branch (None: it can). `written`:
    the names whose items it assigns; `trees`: may a value be a tuple, list or dict of
    arrays and scalars?"""
    if effects:
        return "its body sets an attribute, changes a Python list, dict or set, or prints"
    for name, v in zip(names, vals):
        if name in written and isinstance(v, (list, dict)):
            return f"it assigns items of the Python {type(v).__name__} {name}"
        leaves = flatten(v)[0] if trees and not isinstance(v, Undefined) else [v]
        for leaf in leaves:
            if not isinstance(leaf, (Undefined, *_CARRIABLE)):
                kind = type(leaf).__name__
                return f"{name} holds a {kind}, which it cannot carry (arrays and scalars)"
    return None


class _Carry:
    """What a compiled loop carries, as leaves: the values of the names bound before it
    (a name unbound there is the body's own), each an array, a scalar, or a tuple, list
    or dict of them (an LSTM's state)."""

    def __init__(self, vals, names):
        self.vals = vals
        self.keep = [k for k, v in enumerate(vals) if not isinstance(v, Undefined)]
        self.leaves, self.tree = flatten([vals[k] for k in self.keep])
        self.names = [p for k in self.keep for p in leaf_paths(flatten(vals[k])[1], names[k])]

    def merge(self, leaves) -> tuple:
        """Every value, the carried ones made of `leaves`."""
        full = list(self.vals)
        for k, v in zip(self.keep, unflatten(self.tree, list(leaves))):
            full[k] = v
        return tuple(full)

    def leaves_of(self, out) -> tuple:
        """The carried leaves of the body's values `out`."""
        leaves, tree = flatten([out[k] for k in self.keep])
        if tree != self.tree:
            raise LoopError(
                f"the body changes the structure of {', '.join(self.names)}; a value a "
                "compiled loop carries keeps its tuples, lists and dicts"
            )
        return tuple(leaves)

    def result(self, names, leaves, why) -> tuple:
        """The statement's values after it: the carried ones, the rest Undefined."""
        full = [Undefined(n, why) for n in names]
        for k, v in zip(self.keep, unflatten(self.tree, list(leaves))):
            full[k] = v
        return tuple(full)


def _settled(ctx, step_fn, init, names, loc, index=None) -> list:
    """`init` as Tracers of the types the step keeps them in: a name the body rebinds to
    another dtype (`s = 0` then `s += x[i]`) is carried in the dtype it has after the first
    step, as NumPy's value has; a changed shape cannot be carried. The types only rise (a
    dtype to a common one, weak to strong), so the dry traces end. `index`: a for loop's
    (lo, hi) of its index (step_fn takes the index first)."""
    types = [_type(lift(ctx, x)) for x in init]
    while True:
        out = _dry(ctx, step_fn, init, loc, types, index)
        if out == types:
            return [_as_type(ctx, x, t) for x, t in zip(init, types)]
        new = []
        for name, before, after in zip(names, types, out):
            if after is None:
                raise LoopError(f"the body leaves {name} without a value")
            if before[0] != after[0]:
                raise LoopError(
                    f"{name} changes shape from {before[0]} to {after[0]} in the body; "
                    "a value a compiled loop carries keeps its shape"
                )
            new.append((after[0], _risen(before, after), before[2] and after[2]))
        types = new


_WEAK = {"b": False, "i": 0, "f": 0.0, "c": 0j}  # a Python scalar of each kind


def _risen(before, after) -> np.dtype:
    """The dtype a carried value keeps across steps that make it `after` from `before`
    (each (shape, dtype, weak)): a weak one (a Python scalar) takes the body's dtype, a
    Python scalar the body gives meets the strong one as NumPy 2 promotes them."""
    if before[2]:
        return after[1]
    if after[2]:
        return np.result_type(before[1], _WEAK[after[1].kind])
    return np.result_type(before[1], after[1])


def _type(t: Tracer) -> tuple:
    return (t.shape, t.dtype, t.weak)


def _dry(ctx, fn, init, loc, types=None, index=None) -> list:
    """The (shape, dtype, weak) of each value fn returns (None: Undefined), fn traced on
    stand-ins of `init` (of `types` where given) in a scratch loop body: its ops are dead
    code there."""
    scratch = LoopContext(ctx, f"{ctx.graph.name}_types")
    scratch.dry = True
    try:
        with tracing_in_this_thread(scratch):
            given = types or [_type(lift(ctx, x)) for x in init]
            stand = [
                Tracer(scratch, scratch.graph.add_parameter(s, d, loc), weak=w, scalar=s == ())
                for s, d, w in given
            ]
            if index is not None:
                i = scratch.graph.add_parameter((), np.dtype(np.int64), loc)
                i = Tracer(scratch, i, weak=True, scalar=True)
                ranges.note_index(i, *index)
                out = fn(i, tuple(stand))
            else:
                out = fn(tuple(stand))
            for v in out:
                if not isinstance(v, (Undefined, *_CARRIABLE)):
                    raise LoopError(
                        f"the body makes a {type(v).__name__} of a value it carries "
                        "(arrays and scalars)"
                    )
            return [None if isinstance(v, Undefined) else _type(lift(scratch, v)) for v in out]
    finally:
        scratch.closed = True


def _joined(name, a, b) -> tuple:
    """The type a name has after a branch whose two sides give it types a and b."""
    if a[0] != b[0]:
        raise LoopError(
            f"{name} has shape {a[0]} in one branch and {b[0]} in the other; "
            "a name both branches of a compiled if assign keeps one shape"
        )
    if a[2] and b[2]:
        return (a[0], np.dtype(np.result_type(a[1], b[1])), True)
    dtype = b[1] if a[2] else a[1] if b[2] else np.result_type(a[1], b[1])
    return (a[0], np.dtype(dtype), False)


def _as_type(ctx, x, t) -> Tracer:
    shape, dtype, weak = t
    if isinstance(x, np.ndarray) and x.dtype == dtype:
        return x  # the array itself: a loop writing it writes it back (control._array_of)
    v = lift(ctx, x)
    if v.dtype != dtype:
        v = lift(ctx, v, dtype)
    return Tracer(ctx, v.node, weak=weak, scalar=v.scalar or shape == ()) if v.weak != weak else v


def _zeros(ctx, t) -> Tracer:
    from jitc.trace import lax

    shape, dtype, weak = t
    z = lax.full(ctx, shape, 0, dtype)
    return Tracer(ctx, z.node, weak=weak, scalar=shape == ())
