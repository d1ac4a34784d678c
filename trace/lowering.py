"""Turn a call of the user's function into a Lowered stage: the traced graph, and how the
call's arguments, results and writes map onto it (stages.py's records)."""

from __future__ import annotations

import numpy as np

from jitc.core.device_arrays import has_cuda_array_interface
from jitc.core.dtypes import WEAK_DTYPES, check_rank, check_supported
from jitc.core.errors import UnsupportedError
from jitc.core.pytree import flatten, leaf_paths
from jitc.core.specs import ShapeDtype
from jitc.numpy_api import is_tracer
from jitc.numpy_api.random import RefusedRandomState, is_random_state
from jitc.stages import (
    ArgType,
    ArgumentResult,
    CapturedArray,
    GraphResult,
    Lowered,
    SizedResult,
    StaticResult,
    WriteBack,
)
from jitc.trace.masked import Masked
from jitc.trace.mutation.capture import DEPTH, Place, is_state_object, split_arguments
from jitc.trace.mutation.leaks import argument_containers, check_no_leaks, check_unchanged
from jitc.trace.rebind import tracing_in_this_thread
from jitc.trace.statements import Undefined, converted
from jitc.trace.tracer import Retrace, TraceContext


def _abstract(leaf, name):
    """(shape, dtype, weak, scalar) of one argument leaf, or a clear error naming it."""
    t = type(leaf)
    if t in WEAK_DTYPES:
        return (), WEAK_DTYPES[t], True, True
    what = f"argument {name!r}"
    if isinstance(leaf, ShapeDtype):
        return check_rank(leaf.shape, what), leaf.dtype, False, False
    if isinstance(leaf, np.generic):
        return (), check_supported(leaf.dtype, what), False, True
    if has_cuda_array_interface(leaf):  # a device array (CuPy): no host copy
        shape = check_rank(tuple(leaf.shape), what)
        return shape, check_supported(leaf.dtype, what), False, False
    _refuse_other_array_semantics(leaf, what)
    if isinstance(leaf, np.ndarray) or hasattr(leaf, "__array__"):
        a = np.asarray(leaf)
        return check_rank(a.shape, what), check_supported(a.dtype, what), False, False
    raise TypeError(
        f"argument {name!r} is a {type(leaf).__name__}, not an array or scalar; "
        "mark it static (jitc.jit(..., static_argnames=...)) if it configures "
        "the computation"
    )


# ndarray subclasses that only change where the data lives, not what operations mean
_PLAIN_SUBCLASSES = (np.memmap,)


def _refuse_other_array_semantics(leaf, what):
    """An array type whose operations mean something else than ndarray's (np.matrix's `*`
    is a matrix product, a masked array skips masked elements, an __array_function__ type
    runs its own code): computing on its plain data would silently change the answer."""
    t = type(leaf)
    if isinstance(leaf, np.ndarray):
        if t is np.ndarray or isinstance(leaf, _PLAIN_SUBCLASSES):
            return
        kind = "an ndarray subclass with its own semantics"
    elif hasattr(t, "__array_function__"):
        kind = "an array type that implements NumPy functions itself (__array_function__)"
    else:
        return
    extra = " (its mask would be lost)" if isinstance(leaf, np.ma.MaskedArray) else ""
    raise TypeError(
        f"{what} is a {t.__module__}.{t.__qualname__}, {kind}; jitc computes "
        f"with plain ndarrays{extra}: pass np.asarray(...) if plain NumPy "
        "semantics are what you want"
    )


def _names(function, args, kwargs, static_nums):
    """Readable names of the dynamic leaves, in flatten((dyn_args, dyn_kwargs)) order."""
    names = []
    for i, a in enumerate(args):
        if i in static_nums:
            continue
        names += [function.arg_name(i) + p for p in leaf_paths(flatten(a)[1])]
    for k in kwargs:  # the order pytree.flatten gives their leaves
        if k in function.static_names:
            continue
        names += [k + p for p in leaf_paths(flatten(kwargs[k])[1])]
    return names


def traced_function(function):
    """What a trace runs: the function with its loops and branches rewritten to compile as
    loops and branches (trace/autograph.py), or as written where it unrolls them."""
    if function.unroll:
        return function.fun
    return converted(function.fun)


def lower(function, args, kwargs, keep_arguments: bool = False) -> Lowered:
    """`function` (a stages.Function) traced for these arguments (the bound object first,
    where it has one). `keep_arguments`: the Lowered holds the traced arguments' values
    (`example_leaves`, unless some are specs) for the report to time the kernels on them;
    the explicit `lower()` only, as a jit's own call must not keep its caller's arrays alive."""
    split = split_arguments(function, args, kwargs)
    lowered = trace(
        function, args, kwargs, split.dynamic, split.dynamic_kwargs, split.static_positions
    )
    if keep_arguments:
        leaves = flatten((split.dynamic, split.dynamic_kwargs))[0]
        if not any(isinstance(leaf, ShapeDtype) for leaf in leaves):
            lowered.example_leaves = leaves
    return lowered


def trace(function, args, kwargs, dyn, dyn_kw, static_nums) -> Lowered:
    """Run the user's function on Tracers; traced again, capturing it from the start, each
    time it turns out to write an array it had already read as a constant. Each retrace
    captures one more array the function reaches, so this ends, unless the function makes
    that array anew on every trace (NumPy's np.arange inside it): then the array captured
    last time is not used, and that is an error."""
    forced: list = []
    while True:
        try:
            return _trace(function, args, kwargs, dyn, dyn_kw, static_nums, forced)
        except Retrace as r:
            if any(id(a) not in r.reached for a in forced):
                raise UnsupportedError(
                    f"{function.name}: the array written{r.where} was read as a constant "
                    f"before, and it is made anew by NumPy on every trace (np.arange, "
                    f"np.linspace, np.array of numbers, ...): such arrays are constants of "
                    f"the compiled code. Make it a traced array to write it: np.zeros, "
                    f"np.empty, np.full, or add it to one (np.zeros(n) + np.arange(n))"
                ) from None
            forced.append(r.array)


def _trace(function, args, kwargs, dyn, dyn_kw, static_nums, forced) -> Lowered:
    leaves, in_tree = flatten((dyn, dyn_kw))
    names = _names(function, args, kwargs, static_nums)
    ctx = TraceContext(function.name)
    types, tracers = [], []
    first_of: dict = {}  # id(array) -> its first leaf index
    repeats = []
    for i, (leaf, name) in enumerate(zip(leaves, names)):
        shape, dtype, weak, scalar = _abstract(leaf, name)
        types.append(ArgType(shape, dtype, weak))
        t = ctx.parameter(shape, dtype, weak=weak, scalar=scalar, origin=("arg", i))
        if isinstance(leaf, np.ndarray):  # one array passed twice is one buffer, as in NumPy
            first = first_of.setdefault(id(leaf), i)
            if first != i:
                t.buf = tracers[first].buf
                repeats.append((i, first))
        tracers.append(t)
    capture = ctx.captured
    for array in forced:
        ctx.capture(array, write=True)
    name = function.arg_name
    try:
        with tracing_in_this_thread(ctx):  # before the stand-ins: it binds NumPy's names
            it = iter(tracers)
            call_args = [
                capture.value(a, Place(a, (), name(i)), DEPTH)
                if is_state_object(a)
                else _static(a, name(i))
                if i in static_nums
                else _replace(a, it)
                for i, a in enumerate(args)
            ]
            call_kw = {
                k: _static(v, k) if k in function.static_names else _replace(v, it)
                for k, v in kwargs.items()
            }
            fun = capture.function(traced_function(function))
            copies = argument_containers(
                {name(i): a for i, a in enumerate(call_args) if a is not args[i]}
                | {k: v for k, v in call_kw.items() if v is not kwargs[k]}
            )
            out = fun(*call_args, **call_kw)
    except (AttributeError, TypeError) as e:
        _note_sequence_arguments(e, function, args, kwargs)
        raise
    written_places, rebound = capture.effects()
    check_unchanged(copies)
    check_no_leaks(function.fun, args, kwargs, function.param_names, ctx)
    out_leaves, out_tree = flatten(out)
    output_of: dict = {}  # node -> its graph output: a value returned twice is one array

    def output(node):
        if node not in output_of:
            output_of[node] = len(ctx.graph.outputs)
            ctx.graph.outputs.append(node)
        return output_of[node]

    writebacks = [WriteBack("arg", i, output(node)) for i, node in _writebacks(tracers)]
    writebacks += [WriteBack("captured", k, output(node)) for k, node in written_places]
    writebacks += [WriteBack("rebind", place, output(t.node)) for place, t in rebound]
    specs = []
    for leaf in out_leaves:
        if isinstance(leaf, Masked):  # its size is known only at run time
            values, axis, start, stop = leaf.sized()
            start, stop = (b if is_tracer(b) else ctx.constant(np.array(b)) for b in (start, stop))
            bounds = output(values.node), output(start.node), output(stop.node)
            specs.append(SizedResult(*bounds, axis, leaf.describe()))
            continue
        if isinstance(leaf, Undefined):  # a name a compiled branch or loop left unbound
            leaf._refuse()
        if isinstance(leaf, np.ndarray):  # made by NumPy at trace time (np.eye(3)): a
            leaf = ctx.constant(leaf)  # constant, returned as a fresh array on every call
        if not is_tracer(leaf):
            specs.append(StaticResult(leaf))
            continue
        arg = _argument_view(leaf, leaves)
        specs.append(arg if arg is not None else GraphResult(output(leaf.node), _scalar_kind(leaf)))
    captured = [
        CapturedArray(place, array.shape, array.dtype) for place, array, _ in capture.places
    ]
    int_ranges = {
        i: ctx.int_ranges.get(t.node, (np.dtype(np.int64),))
        for i, (t, a) in enumerate(zip(tracers, types))
        if a.weak and a.dtype.kind == "i"
    }
    return Lowered(
        function,
        ctx.graph,
        in_tree,
        names,
        types,
        out_tree,
        specs,
        writebacks,
        captured,
        repeats,
        int_ranges,
    )


def _static(value, name):
    """A static argument as the function sees it: a random state refuses its methods."""
    return RefusedRandomState(value, f"argument {name!r}") if is_random_state(value) else value


def _note_sequence_arguments(error, function, args, kwargs) -> None:
    """A list or tuple argument is a container of traced scalars, not an array (as without
    jitc, where `xs.sum()` fails the same way): say so when the trace fails on one."""
    named = {function.arg_name(i): a for i, a in enumerate(args)} | kwargs
    for name, value in named.items():
        if (
            isinstance(value, (list, tuple))
            and value
            and not any(isinstance(v, np.ndarray) for v in value)
        ):
            error.add_note(
                f"jitc: argument {name!r} is a {type(value).__name__}: jitc traces "
                f"it as a container of {len(value)} scalars (arguments are "
                f"pytrees), where NumPy would convert it to an array; pass "
                f"np.asarray({name}) to use it as one"
            )


def _writebacks(tracers):
    """(leaf index, final node) for every argument buffer the function wrote."""
    out, seen = [], set()
    for i, t in enumerate(tracers):
        buf = t.buf
        if buf is None or not buf.written or id(buf) in seen:
            continue
        seen.add(id(buf))
        if t.weak or t.scalar:
            continue
        out.append((i, buf.node))
    return out


def _argument_view(leaf, leaves) -> ArgumentResult | None:
    """The argument a returned value is (or a view of), as it is now: NumPy returns that
    very object (or a view of it), not a copy."""
    buf = leaf.buf
    if buf is None or buf.origin is None or buf.origin[0] != "arg" or leaf.weak or leaf.scalar:
        return None
    if not isinstance(leaves[buf.origin[1]], (np.ndarray, ShapeDtype)):
        return None
    leaf.node  # noqa: B018 (brings the view up to the buffer's last version)
    return ArgumentResult(buf.origin[1], tuple(leaf.view))


_PYTHON_TYPES = {"b": bool, "i": int, "f": float, "c": complex}


def _scalar_kind(leaf):
    """How a result leaf comes back: False (an array), True (a NumPy scalar), or the Python
    type of a Python scalar (s * 2 on a Python int argument is a Python int in NumPy code)."""
    if leaf.weak and leaf.node.shape == ():
        return _PYTHON_TYPES[leaf.dtype.kind]
    return leaf.scalar


def _replace(tree, tracers):
    """`tree` with each leaf replaced by the next tracer."""
    from jitc.core.pytree import unflatten

    leaves, treedef = flatten(tree)
    return unflatten(treedef, [next(tracers) for _ in leaves])
