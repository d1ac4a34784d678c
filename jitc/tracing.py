"""Turn a call of the user's function into a Lowered graph."""

from __future__ import annotations

import threading

import numpy as np

from jitc.api import _WEAK_DTYPES, TRACES_ACTIVE, Lowered
from jitc.dtypes import check_supported
from jitc.numpy_api import is_tracer
from jitc.pytree import flatten, leaf_paths
from jitc.specs import ShapeDtype
from jitc.trace import TraceContext

_ACTIVE_LOCK = threading.Lock()


def _abstract(leaf, name):
    """(shape, dtype, weak, scalar) of one argument leaf, or a clear error naming it."""
    t = type(leaf)
    if t in _WEAK_DTYPES:
        return (), _WEAK_DTYPES[t], True, True
    if isinstance(leaf, ShapeDtype):
        return leaf.shape, leaf.dtype, False, False
    if isinstance(leaf, np.generic):
        return (), check_supported(leaf.dtype, f"argument {name!r}"), False, True
    if hasattr(leaf, "__cuda_array_interface__"):  # a device array (CuPy): no host copy
        return tuple(leaf.shape), check_supported(leaf.dtype, f"argument {name!r}"), False, False
    if isinstance(leaf, np.ndarray) or hasattr(leaf, "__array__"):
        a = np.asarray(leaf)
        return a.shape, check_supported(a.dtype, f"argument {name!r}"), False, False
    raise TypeError(f"argument {name!r} is a {type(leaf).__name__}, not an array or scalar; "
                    "mark it static (jitc.jit(..., static_argnames=...)) if it configures "
                    "the computation")


def _names(jitted, args, kwargs):
    """Readable names of the dynamic leaves, in flatten((dyn_args, dyn_kwargs)) order."""
    names = []
    pos = jitted._param_names
    for i, a in enumerate(args):
        if i in jitted._static_nums:
            continue
        base = pos[i] if i < len(pos) else f"args[{i}]"
        names += [base + p for p in leaf_paths(flatten(a)[1])]
    for k in sorted(kwargs):
        if k in jitted._static_names:
            continue
        names += [k + p for p in leaf_paths(flatten(kwargs[k])[1])]
    return names


def trace(jitted, args, kwargs, dyn, dyn_kw) -> Lowered:
    leaves, in_tree = flatten((dyn, dyn_kw))
    names = _names(jitted, args, kwargs)
    ctx = TraceContext(jitted.__name__)
    types, tracers = [], []
    for leaf, name in zip(leaves, names):
        shape, dtype, weak, scalar = _abstract(leaf, name)
        types.append((shape, dtype, weak))
        tracers.append(ctx.parameter(shape, dtype, weak=weak, scalar=scalar))
    it = iter(tracers)
    call_args = [a if i in jitted._static_nums else _replace(a, it) for i, a in enumerate(args)]
    call_kw = {k: v if k in jitted._static_names else _replace(v, it)
               for k, v in sorted(kwargs.items())}
    with _ACTIVE_LOCK:
        TRACES_ACTIVE[0] += 1
    try:
        out = jitted.fun(*call_args, **call_kw)
    finally:
        with _ACTIVE_LOCK:
            TRACES_ACTIVE[0] -= 1
    out_leaves, out_tree = flatten(out)
    specs = []
    output_of: dict = {}  # id(tracer) -> its graph output: a value returned twice is one
    for leaf in out_leaves:  # array returned twice, as in NumPy, not a copy
        if is_tracer(leaf):
            if id(leaf) not in output_of:
                output_of[id(leaf)] = len(ctx.graph.outputs)
                ctx.graph.outputs.append(leaf.node)
            specs.append(("graph", output_of[id(leaf)], _scalar_kind(leaf)))
        else:
            specs.append(("static", leaf))
    return Lowered(jitted, ctx.graph, in_tree, names, types, out_tree, specs)


_PYTHON_TYPES = {"b": bool, "i": int, "f": float}


def _scalar_kind(leaf):
    """How a result leaf comes back: False (an array), True (a NumPy scalar), or the Python
    type of a Python scalar (s * 2 on a Python int argument is a Python int in NumPy code)."""
    if leaf.weak and leaf.node.shape == ():
        return _PYTHON_TYPES[leaf.dtype.kind]
    return leaf.scalar


def _replace(tree, tracers):
    """`tree` with each leaf replaced by the next tracer."""
    from jitc.pytree import unflatten

    leaves, treedef = flatten(tree)
    return unflatten(treedef, [next(tracers) for _ in leaves])
