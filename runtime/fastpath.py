"""The fast call of one compiled signature: a small generated Python function.

A call of a jitted function normally flattens its argument tree, builds a cache key from
every leaf and looks it up; that costs more than the kernels of a small step function. The
fast call instead reads the leaves straight out of the arguments at fixed positions (code
generated for the compiled tree structure), checks only what the executable cannot (the
tree's containers, the Python type of every leaf), allocates the result arrays, hands
leaves and results to an executable that checks array shapes and types itself, and builds
the result tree the same way. Any mismatch raises SignatureMiss (or numba's TypeError)
before a result is written, and the caller takes the slow path.
"""

from __future__ import annotations

import numpy as np

from jitc.backends.native.recycle import allocator
from jitc.core import pytree
from jitc.core.dtypes import int_bounds
from jitc.core.errors import SignatureMiss
from jitc.stages import ArgumentResult, SizedResult, StaticResult, sized_value
from jitc.trace.mutation.writeback import donated

# What a fast call raises for arguments of another signature: the driver's own shape check,
# or a TypeError from numba's dispatcher refusing another array type.
MISSES = (SignatureMiss, TypeError)


class _Gen:
    def __init__(self):
        self.checks: list[str] = []
        self.leaves: list[str] = []
        self.values: list[str] = []  # each leaf as the caller passed it
        self.names: dict = {"np": np, "SignatureMiss": SignatureMiss}

    def bind(self, value) -> str:
        name = f"g{len(self.names)}"
        self.names[name] = value
        return name

    def arg(self, expr: str, treedef, arg_types: list):
        kind = treedef[0]
        if kind == "leaf":
            t = arg_types[len(self.leaves)]
            self.values.append(expr)
            if t.weak:  # a Python scalar: traced by its type, passed as a 0-d array
                pytype = {"b": bool, "i": int, "f": float, "c": complex}[np.dtype(t.dtype).kind]
                self.checks.append(f"type({expr}) is {self.bind(pytype)}")
                expr = f"np.asarray({expr}, {self.bind(np.dtype(t.dtype))})"
            else:  # numba's dispatch would take an ndarray subclass (np.matrix) as plain
                self.checks.append(f"type({expr}) is {self.bind(np.ndarray)}")
            self.leaves.append(expr)
        elif kind == "none":
            self.checks.append(f"{expr} is None")
        elif kind == "dict":
            keys, defs = treedef[1], treedef[2]
            # the same keys in the same order: the function may iterate the dict
            self.checks.append(
                f"type({expr}) is dict and tuple({expr}) == {self.bind(tuple(keys))}"
            )
            for k, d in zip(keys, defs):
                self.arg(f"{expr}[{k!r}]", d, arg_types)
        else:
            container = {"tuple": tuple, "list": list}.get(kind, kind)
            defs = treedef[1]
            self.checks.append(
                f"type({expr}) is {self.bind(container)} and len({expr}) == {len(defs)}"
            )
            for i, d in enumerate(defs):
                self.arg(f"{expr}[{i}]", d, arg_types)

    def result(self, treedef, specs, outs) -> str:
        kind = treedef[0]
        if kind == "leaf":
            spec = next(specs)
            if isinstance(spec, StaticResult):
                return self.bind(spec.value)
            if isinstance(spec, ArgumentResult):  # the caller's own array, or a view of it
                leaf = self.leaves[spec.leaf]
                if not spec.view:
                    return leaf
                from jitc.trace.mutation.views import numpy_view

                return f"{self.bind(numpy_view)}({leaf}, {self.bind(spec.view)})"
            if isinstance(spec, SizedResult):
                parts = (outs(spec.index), outs(spec.start), outs(spec.stop), spec.axis)
                return f"{self.bind(sized_value)}({', '.join(map(str, parts))})"
            value = outs(spec.index)
            scalar = spec.scalar
            if scalar is True:
                return f"{value}[()]"
            return f"{self.bind(scalar)}({value}[()])" if scalar else value
        if kind == "none":
            return "None"
        if kind == "dict":
            items = ", ".join(
                f"{k!r}: {self.result(d, specs, outs)}" for k, d in zip(treedef[1], treedef[2])
            )
            return "{" + items + "}"
        parts = [self.result(d, specs, outs) for d in treedef[1]]
        if kind == "list":
            return "[" + ", ".join(parts) + "]"
        if kind == "tuple":
            return "(" + "".join(f"{p}, " for p in parts) + ")"
        return f"{self.bind(kind)}({', '.join(parts)})"


def _root(a):
    """The array owning a's memory (NumPy collapses a view of a view onto the owner)."""
    return a if a.base is None else a.base


def _getter(g, place) -> str:
    """An expression reading a captured place (trace/mutation/capture.py) in the generated code."""
    expr = g.bind(place.root)
    for kind, key in place.keys:
        expr = (
            f"{expr}.cell_contents"
            if kind == "cell"
            else f"{expr}.{key}"
            if kind == "attr"
            else f"{expr}[{g.bind(key)}]"
        )
    return expr


def _allocation(g, shape: tuple, dtype: np.dtype) -> str:
    """The expression allocating a result (a large one may be one the caller dropped)."""
    return f"{g.bind(allocator(shape, dtype))}({g.bind(shape)}, {g.bind(dtype)})"


def fast_call(arg_defs, lowered, run, results, donated=()):
    """A function of the positional arguments (tree defs `arg_defs`, leaves as `lowered`
    (a stages.Lowered) types them) that allocates the results ((shape, dtype) each), calls
    `run(*leaves, *results)` to fill them, copies written arrays' new contents back into
    them (lowered.writebacks) and returns the result tree (lowered.out_specs). Captured
    arrays are read from their places and passed after the leaves. `donated`: (parameter
    index, result index) pairs whose result the driver may write straight into the
    parameter's array (numba's dispatch has already refused an array that is not
    C-contiguous and writeable, so the array given is the caller's). Leaves the trace saw as
    one array must be one; a Python int must fit the integer dtypes it met (the slow path
    raises the error). Allocating here is cheaper than boxing arrays a numba function made
    (~0.15 µs an array against ~0.4)."""
    g = _Gen()
    params = [f"a{i}" for i in range(len(arg_defs))]
    for p, d in zip(params, arg_defs):
        g.arg(p, d, lowered.arg_types)
    run_name = g.bind(run)
    result = g.result(lowered.out_tree, iter(lowered.out_specs), lambda k: f"r{k}")
    root = g.bind(_root)
    arrays = [i for i, t in enumerate(lowered.arg_types) if not t.weak]
    first = dict(lowered.repeats)  # leaf -> the leaf it repeats
    for w in lowered.writebacks:  # a written array shares memory with no other argument
        if w.kind != "arg":
            continue
        i = w.target
        g.checks += [
            f"{root}({g.leaves[i]}) is not {root}({g.leaves[j]})"
            for j in arrays
            if first.get(j, j) != first.get(i, i)
        ]
    g.checks += [f"{g.leaves[j]} is {g.leaves[i]}" for j, i in lowered.repeats]
    for i, dtypes in lowered.int_ranges.items():
        lo, hi = int_bounds(dtypes)
        g.checks.append(f"{lo} <= {g.values[i]} <= {hi}")
    lines = [f"def fast({', '.join(params)}):"]
    if g.checks:
        lines += [f"    if not ({' and '.join(g.checks)}):", "        raise SignatureMiss()"]
    captured = [c.place for c in lowered.captured]
    lines += [f"    c{k} = {_getter(g, place)}" for k, place in enumerate(captured)]
    into = {
        k: f"c{target - len(g.leaves)}" if target >= len(g.leaves) else g.leaves[target]
        for target, k in donated
    }
    lines += [
        f"    r{k} = " + (into[k] if k in into else _allocation(g, tuple(shape), np.dtype(dtype)))
        for k, (shape, dtype) in enumerate(results)
    ]
    inputs = g.leaves + [f"c{k}" for k in range(len(captured))]
    lines.append(f"    {run_name}({', '.join(inputs + [f'r{k}' for k in range(len(results))])})")
    copyto = g.bind(np.copyto)
    for w in lowered.writebacks:
        k = w.output
        if k in into:
            continue  # the driver wrote the caller's array itself
        if w.kind == "arg":
            lines.append(f"    {copyto}({g.leaves[w.target]}, r{k})")
        elif w.kind == "captured":
            lines.append(f"    {copyto}(c{w.target}, r{k})")
        else:
            lines.append(f"    {g.bind(w.target.set)}(r{k})")
    lines.append(f"    return {result}")
    namespace = dict(g.names)
    exec(compile("\n".join(lines) + "\n", "<jitc fast call>", "exec"), namespace)  # noqa: S102
    return namespace["fast"]


def fast_call_of(compiled):
    """The fast call of `compiled` (a stages.Compiled): a function of the positional
    arguments that raises one of MISSES unless they are what it was compiled for, or None
    where the backend does not check its arguments itself or the call takes keywords. Made
    once per run function of the executable (the cpu backend's changes once its own driver
    has compiled): calls that switch between signatures switch between these."""
    run = compiled.executable.checked_run  # run(*leaves, *results), or None
    made = compiled.fast_call
    if made is None or made[0] is not run:
        made = compiled.fast_call = (run, fast_call_running(compiled, run))
    return made[1]


def fast_call_running(compiled, run):
    """A fast call of `compiled` that calls `run(*leaves, *results)`, or None."""
    lowered = compiled.lowered
    arg_defs = None if run is None else pytree.positional_arguments(lowered.in_tree)
    if arg_defs is None:
        return None
    return fast_call(
        arg_defs,
        lowered,
        run,
        compiled.executable.results,
        donated(lowered, compiled.executable.can_write_into),
    )
