"""Loops traced once: `jitc.while_loop`, `fori_loop`, `cond` and `scan` (JAX's semantics;
a branch is a loop of at most one step, a scan a fori_loop stacking its ys).

Under a trace, the loop's body runs once on stand-ins of its carried values, recording a
step graph: one `while` node holds it (core/ops.py NESTED), its operands the first test's
flag, the carried values' first versions and the values of the code around the loop that
the body reads (brought in as parameters by LoopContext.imported). The test runs twice:
once before the loop, in the code around it, and once at the end of the step, whose last
output is the next flag; so the step is one graph and a backend runs `while flag: step`.

Outside a trace the same calls are plain Python loops, so a function written with them runs
under NumPy unchanged (NumPy is the oracle the tests compare with).
"""

from __future__ import annotations

import numpy as np

from jitc.core.errors import JitcError
from jitc.core.pytree import flatten, leaf_paths, unflatten
from jitc.core.source import user_loc, where
from jitc.numpy_api.core import lift
from jitc.trace import lax, ranges
from jitc.trace.mutation.functional import assign
from jitc.trace.rebind import current_ctx, tracing_in_this_thread
from jitc.trace.tracer import TraceContext, Tracer


class LoopError(JitcError, TypeError):
    """A loop's functions do not fit its carried values."""


class LoopContext(TraceContext):
    """The trace of a loop body inside the trace `parent`. A value of an enclosing trace
    that the body reads becomes a parameter of the step after the carried ones (an
    invariant); arrays the function captures stay the function's parameters."""

    def __init__(self, parent: TraceContext, name: str):
        super().__init__(name)
        self.parent = parent
        self.depth = parent.depth + 1
        self.captured = parent.captured
        self.baked, self.reached = parent.baked, parent.reached
        self.imports: dict = {}  # node of the enclosing trace -> its parameter here
        self.invariants: list = []  # Tracers of the enclosing trace, in parameter order

    def imported(self, t: Tracer) -> Tracer:
        if t.ctx is self:
            return t
        outer = self.parent.imported(t)
        param = self.imports.get(outer.node)
        if param is None:
            param = self.graph.add_parameter(outer.shape, outer.dtype, outer.node.loc)
            self.imports[outer.node] = param
            self.invariants.append(outer)
        return Tracer(self, param, weak=outer.weak, scalar=outer.scalar)

    def constant(self, value) -> Tracer:
        return self.imported(super().constant(value))

    def capture(self, array, write=False) -> Tracer:
        return self.imported(self.parent.capture(array, write))

    def narrowed(self, node, dtype) -> None:
        outer = next((o for o, p in self.imports.items() if p is node), None)
        if outer is not None:
            self.parent.narrowed(outer, dtype)


def while_loop(cond_fun, body_fun, init_val):
    """`val = init_val; while cond_fun(val): val = body_fun(val); return val`, with
    body_fun and cond_fun traced once; `val` is a pytree of arrays and scalars whose shapes
    and dtypes the body keeps."""
    for name, fn in (("cond_fun", cond_fun), ("body_fun", body_fun)):
        if not callable(fn):
            raise LoopError(f"while_loop: {name} must be callable, not {type(fn).__name__}")
    ctx = current_ctx()
    if ctx is None:  # not tracing: NumPy runs it
        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val
    names = leaf_paths(flatten(init_val)[1], "val")
    return _traced(ctx, cond_fun, body_fun, init_val, names, "while_loop: body_fun")


def _traced(ctx, cond_fun, body_fun, init_val, names: list, what: str, stops="values"):
    """while_loop under the trace `ctx`; `names`: the carried leaves' names and `what`: the
    function stepping them, for errors; `stops`: how the loop stops (WHILE_STOPS)."""
    loc = user_loc()
    leaves, tree = flatten(init_val)
    init = [lift(ctx, x) for x in leaves]
    flag = _flag(ctx, cond_fun(unflatten(tree, init)), loc)
    step = LoopContext(ctx, f"{ctx.graph.name}_loop")
    mark = len(ctx.graph.nodes)  # what the body's trace records around the loop comes after
    carried = [
        Tracer(step, step.graph.add_parameter(x.shape, x.dtype, loc), weak=x.weak, scalar=x.scalar)
        for x in init
    ]
    with tracing_in_this_thread(step):
        out = body_fun(unflatten(tree, carried))
        new = _carried_out(step, out, tree, init, names, what, loc)
        kept = _kept(flatten(out)[0], carried, names, what, loc)
        next_flag = _flag(step, cond_fun(unflatten(tree, new)), loc)
    step.closed = True
    graph = step.graph
    graph.outputs = [t.node for t in new] + [next_flag.node]
    graph.nodes = graph.params + [n for n in graph.nodes if n.op != "parameter"]
    operands = [flag.node] + [x.node for x in init] + [t.node for t in step.invariants]
    types = tuple((x.shape, x.dtype) for x in init)
    attrs = {"carried": len(init), "stops": stops}
    node = ctx.graph.add("while", operands, attrs, None, None, loc, graph, types)
    results = [
        Tracer(
            ctx,
            ctx.graph.add("get", [node], {"index": k}, x.shape, x.dtype, loc),
            weak=x.weak,
            scalar=x.scalar,
        )
        for k, x in enumerate(init)
    ]
    for k in kept:  # the caller's array itself, written by every step (as under NumPy)
        dest = _array_of(ctx, leaves[k])
        if dest is None:
            continue
        if carried[k].buf is not None and carried[k].buf.written:
            _refuse_read_around(step, ctx.graph.nodes[mark:], dest, names[k], what, loc)
            assign(dest, results[k])
        results[k] = dest  # unwritten: the array as it was (a branch passing it on)
    return unflatten(tree, results)


def fori_loop(lower, upper, body_fun, init_val):
    """`val = init_val; for i in range(lower, upper): val = body_fun(i, val)`, with the
    body traced once and `i` a traced int64 scalar, weakly typed as the Python int that
    range() gives is."""
    if not callable(body_fun):
        raise LoopError(f"fori_loop: body_fun must be callable, not {type(body_fun).__name__}")
    return range_loop(lower, upper, 1, body_fun, init_val, "fori_loop", ("lower", "upper"))


def range_loop(start, stop, step, body_fun, init_val, what="range", bound_names=None):
    """fori_loop over range(start, stop, step): `step` a nonzero Python int, the bounds
    Python or traced ints (a `for` loop that trace/autograph.py rewrote runs here)."""
    ctx = current_ctx()
    if ctx is None:
        val = init_val
        for i in range(start, stop, step):
            val = body_fun(i, val)
        return val
    lo_name, hi_name = bound_names or ("start", "stop")
    lo, hi = (_bound(ctx, b, name, what) for b, name in ((start, lo_name), (stop, hi_name)))
    lo = Tracer(ctx, lo.node, weak=True, scalar=True)

    def cond(state):
        return state[0] < hi if step > 0 else state[0] > hi

    first, last = ranges.range_of(start, stop, step)

    def body(state):
        i, val = state
        ranges.note_index(i, first, last)
        return i + step, body_fun(i, val)

    names = ["the loop index"] + leaf_paths(flatten(init_val)[1], "val")
    return _traced(ctx, cond, body, (lo, init_val), names, f"{what}: body_fun", "count")[1]


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands) if pred else false_fun(*operands)`, with a traced bool scalar
    `pred`: both functions are traced, one runs; their results must agree in structure,
    shapes and dtypes."""
    for name, fn in (("true_fun", true_fun), ("false_fun", false_fun)):
        if not callable(fn):
            raise LoopError(f"cond: {name} must be callable, not {type(fn).__name__}")
    ctx = current_ctx()
    if ctx is None or not isinstance(pred, Tracer):  # a Python or NumPy bool: one branch
        return true_fun(*operands) if pred else false_fun(*operands)
    tree, types = _result_types(ctx, lambda: true_fun(*operands))
    result = unflatten(tree, [lax.full(ctx, shape, 0, dtype) for shape, dtype in types])
    return branches(
        pred,
        lambda _: true_fun(*operands),
        lambda _: false_fun(*operands),
        result,
        leaf_paths(tree, "result"),
        "cond",
    )


def branches(pred, true_fun, false_fun, init_val, names, what):
    """`true_fun(init_val) if pred else false_fun(init_val)` for a traced bool scalar
    `pred`: each a loop of at most one step (the first's flag is `pred`, the second's
    `not pred`), so every backend that runs loops runs branches. Both keep init_val's
    structure, shapes and dtypes; `names` its leaves' names, for errors."""
    ctx = current_ctx()
    loc = user_loc()
    taken = Tracer(ctx, _flag(ctx, pred, loc, f"{what}: pred must be").node)  # not Python's
    val = init_val
    for fn, name, flag in (
        (true_fun, "true_fun", taken),
        (false_fun, "false_fun", np.logical_not(taken)),
    ):
        val = _traced(ctx, _once(flag), fn, val, names, f"{what}: {name}", "once")
    return val


def scan(f, init, xs=None, length=None):
    """`carry = init; for x in xs: carry, y = f(carry, x); ys.append(y)`, returning
    `(carry, ys)` with the ys stacked along a new first axis (JAX's lax.scan); `xs` a
    pytree of arrays scanned along their first axis (None: `length` steps of x = None)."""
    if not callable(f):
        raise LoopError(f"scan: f must be callable, not {type(f).__name__}")
    x_leaves = flatten(xs)[0]
    n = length if not x_leaves else len(x_leaves[0])
    if n is None or any(len(x) != n for x in x_leaves):
        raise LoopError(f"scan: xs must share their first axis, or give length{where()}")
    if n == 0:
        raise LoopError(f"scan: no steps to scan (xs of length 0){where()}")
    ctx = current_ctx()
    if ctx is None:
        carry, ys = init, []
        for i in range(n):
            carry, y = f(carry, _row(xs, i))
            ys.append(flatten(y))
        stacked = [np.stack([y[0][k] for y in ys]) for k in range(len(ys[0][0]))]
        return carry, unflatten(ys[0][1], stacked)
    first = _row(xs, 0)
    tree, types = _result_types(ctx, lambda: f(init, first)[1])
    stacked = [lax.full(ctx, (n,) + shape, 0, dtype) for shape, dtype in types]

    def step(i, state):
        carry, ys = state
        carry, y = f(carry, _row(xs, i))
        for into, value in zip(ys, flatten(y)[0]):
            into[i] = value
        return carry, ys

    carry, ys = fori_loop(0, n, step, (init, stacked))
    return carry, unflatten(tree, ys)


def _row(xs, i):
    leaves, tree = flatten(xs)
    return unflatten(tree, [x[i] for x in leaves])


def _once(flag):
    """A loop test true the first time where `flag` is (the flag around the loop), then
    false: the loop runs one step or none."""
    tests = []

    def test(_):
        tests.append(None)
        return flag if len(tests) == 1 else False

    return test


def _result_types(ctx, fn) -> tuple:
    """(treedef, [(shape, dtype)]) of what fn() returns, traced in a scratch loop body
    (its ops are dead code there; what it reads around it is recorded there and unused)."""
    scratch = LoopContext(ctx, f"{ctx.graph.name}_types")
    with tracing_in_this_thread(scratch):
        leaves, tree = flatten(fn())
        types = [(t.shape, t.dtype) for t in (lift(scratch, x) for x in leaves)]
    scratch.closed = True
    return tree, types


def _bound(ctx, b, name, what):
    """A loop bound as a traced int64 scalar."""
    t = lift(ctx, b)
    if t.shape != () or t.dtype.kind not in "iub":
        raise LoopError(
            f"{what}: {name} must be an integer scalar, not {t.node.type_str()}{where()}"
        )
    t = lax.convert(t, np.dtype(np.int64)) if t.dtype != np.int64 else t
    return Tracer(ctx, t.node, scalar=True)  # strong: two weak ints have no NumPy dtype


def _flag(ctx, value, loc, what="while_loop: cond_fun must return") -> Tracer:
    """A loop's test: a bool scalar."""
    t = lift(ctx, value)
    if t.shape != () or t.dtype != np.bool_:
        raise LoopError(f"{what} a bool scalar, not {t.node.type_str()}{where(loc)}")
    return t


def _carried_out(step, out, tree, init, names, what, loc) -> list:
    """body_fun's result as Tracers of the step, checked against the carried values."""
    leaves, out_tree = flatten(out)
    if out_tree != tree:
        raise LoopError(
            f"{what} must return its carried values' structure {_shown(tree)}, "
            f"not {_shown(out_tree)}{where(loc)}"
        )
    new = [lift(step, x) for x in leaves]
    for path, x, y in zip(names, init, new):
        if (x.shape, x.dtype) != (y.shape, y.dtype):
            raise LoopError(
                f"{what} changes {path} from {x.node.type_str()} to "
                f"{y.node.type_str()}{where(loc)}; a carried value keeps its shape and dtype"
            )
    return new


def _kept(out_leaves, carried, paths, what, loc) -> list:
    """The carried values the body returns as the very arrays it was given, written or
    not: under NumPy they stay the init_val's own arrays, whose contents the loop changes.
    A body that writes its carried array and returns another one changes the init_val's
    array in the first iteration alone: refused."""
    kept = []
    for k, (y, x) in enumerate(zip(out_leaves, carried)):
        same = y is x or (
            isinstance(y, Tracer) and y.buf is not None and y.buf is x.buf and not y.view
        )
        if same:
            kept.append(k)
        elif x.buf is not None and x.buf.written:
            raise LoopError(
                f"{what} writes into {paths[k]} and returns another array in "
                f"its place{where(loc)}; under NumPy that write changes the initial array "
                "in the first iteration only: return the array it wrote, or write into a copy"
            )
    return kept


def _array_of(ctx, leaf):
    """The array of the code around the loop that an init_val leaf is (None: a Python
    scalar, which no write changes)."""
    if isinstance(leaf, Tracer):
        return None if leaf.weak else ctx.imported(leaf)
    if isinstance(leaf, np.ndarray):
        return ctx.capture(leaf, write=True)
    return None


def _refuse_read_around(step, hoisted, dest, path, what, loc):
    """Under NumPy a body reading its carried array from the code around the loop too
    sees each step's writes; here it would read the array as it was before the loop. The
    body's reads of the code around it are its invariants, and the ops on them alone that
    its trace recorded there (`hoisted`)."""
    hoisted, seen = set(hoisted), set()
    stack = [t.node for t in step.invariants]
    while stack:
        n = stack.pop()
        if dest.buf is not None and n is dest.buf.node:
            raise LoopError(
                f"{what} reads {path} both as its carried value and from the "
                f"code around the loop{where(loc)}; read it through the carried value"
            )
        if n in hoisted and n not in seen:
            seen.add(n)
            stack += n.operands


def _shown(tree) -> str:
    return str(leaf_paths(tree, "val"))
