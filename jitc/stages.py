"""The stages of a jitted function and what crosses between them, as JAX's stages are.

    Function   a Python function as jitc compiles it (names, static arguments, a bound
               method's object): what trace/lowering.py needs to call it
    Lowered    the traced graph and how the call maps onto it (trace/lowering.py makes it)
    Compiled   the optimized graph bound to one backend's Executable, for one signature

What a stage hands on is a frozen dataclass with named fields (ArgType, GraphResult,
SizedResult, StaticResult, ArgumentResult, WriteBack, CapturedArray, Split), never a
positional tuple.
The host call path that caches Compiled objects per signature is runtime/dispatch.py; the
front door, jitc.jit, is jitc/api.py. This module imports neither.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from jitc.core import config
from jitc.core.device_arrays import has_cuda_array_interface, is_device_array
from jitc.core.dtypes import SUPPORTED, WEAK_DTYPES, type_str
from jitc.core.errors import StaleCapture
from jitc.core.pytree import flatten, unflatten
from jitc.core.specs import ShapeDtype
from jitc.trace.mutation import writeback

# ---------------------------------------------------------------- records between stages


@dataclass(frozen=True)
class ArgType:
    """One argument leaf as the trace saw it; `weak`: a Python scalar (NEP 50), passed to
    the executable as a 0-d array of `dtype`."""

    shape: tuple
    dtype: np.dtype
    weak: bool = False


@dataclass(frozen=True)
class GraphResult:
    """A returned value the graph computes: its output `index`. `scalar`: False (an array),
    True (a NumPy scalar), or the type of a Python scalar result (s * 2 of a Python int)."""

    index: int
    scalar: bool | type = False


@dataclass(frozen=True)
class SizedResult:
    """A returned value whose size along `axis` is known only at run time (x[mask],
    np.nonzero, np.unique, x[a:b] with traced bounds): graph output `index` holds it padded
    to the static bound, outputs `start` and `stop` (0-d integers) the positions it keeps;
    `what`: the value and the user's line, for the stages that cannot return it."""

    index: int
    start: int
    stop: int
    axis: int
    what: str


def sized_value(padded, start, stop, axis: int):
    """The caller's array: `padded[start:stop]` along `axis`, as an array of its own (as
    NumPy's x[mask] and np.unique return fresh arrays, not views of a larger buffer)."""
    key = (slice(None),) * axis + (slice(int(start), int(stop)),)
    return padded[key].copy()


@dataclass(frozen=True)
class StaticResult:
    """A returned value the trace knew (a Python value that depends on no argument)."""

    value: object


@dataclass(frozen=True)
class ArgumentResult:
    """The caller's own argument array `leaf` returned (or the view `view` of it, as view
    steps): NumPy returns that very object, not a copy."""

    leaf: int
    view: tuple = ()


OutSpec = GraphResult | SizedResult | StaticResult | ArgumentResult


@dataclass(frozen=True)
class WriteBack:
    """What the function wrote, put back after every call: graph output `output` holds the
    new contents of argument leaf `target` (kind "arg") or of captured array `target`
    ("captured"), copied into that array; or is bound to the Place `target` ("rebind":
    `self.V = self.V - lr * g`)."""

    kind: str
    target: object
    output: int


@dataclass(frozen=True)
class CapturedArray:
    """An array the function reaches besides its arguments (trace/mutation/capture.py): a
    parameter after the leaves, read from `place` on every call."""

    place: object
    shape: tuple
    dtype: np.dtype


@dataclass(frozen=True)
class Split:
    """A call's arguments divided: the dynamic ones (traced), the static key (values the
    trace bakes in, objects by identity) and the positions taken as static."""

    dynamic: tuple
    dynamic_kwargs: dict
    static_key: tuple
    static_positions: frozenset


# ---------------------------------------------------------------- the function


@dataclass(frozen=True, eq=False)
class Function:
    """A Python function as jitc compiles it. `bound`: a bound method's object, passed as
    the first argument of every call (jitc.jit(model.update) is Model.update on model, its
    arrays captured, re-read and written back as for `self` passed explicitly)."""

    fun: Callable
    name: str
    backend: str
    param_names: tuple  # positional parameters, in order (`self` first for a bound method)
    static_nums: frozenset
    static_names: frozenset
    bound: tuple = ()
    unroll: bool = False  # trace Python's loops and branches as Python runs them

    @classmethod
    def of(cls, fun, backend=None, static_argnums=(), static_argnames=(), unroll=False) -> Function:
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = None
        nums, names = _static_parameters(fun, params, static_argnums, static_argnames)
        positional = [
            p.name for p in params or () if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        name = getattr(fun, "__name__", type(fun).__name__)
        bound = ()
        if inspect.ismethod(fun) and not isinstance(fun.__self__, type):
            bound = (fun.__self__,)
            positional = [next(iter(inspect.signature(fun.__func__).parameters))] + positional
            nums = {n + 1 for n in nums}
            fun = fun.__func__
        for n in nums:
            if n < len(positional):
                names.add(positional[n])
        for n in names:
            if n in positional:
                nums.add(positional.index(n))
        return cls(
            fun,
            name,
            backend or config.DEFAULT_BACKEND,
            tuple(positional),
            frozenset(nums),
            frozenset(names),
            bound,
            bool(unroll),
        )

    def arg_name(self, i: int) -> str:
        return self.param_names[i] if i < len(self.param_names) else f"args[{i}]"


def _static_parameters(fun, params, static_argnums, static_argnames) -> tuple[set, set]:
    """The static positions and names asked for, each checked against `fun`'s parameters
    (`params`, None where Python cannot tell them): a misspelt name or a position past
    them would leave the argument traced and fail far from the cause."""
    nums = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    names = {static_argnames} if isinstance(static_argnames, str) else set(static_argnames)
    if params is None:
        return nums, names
    name = getattr(fun, "__qualname__", repr(fun))
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kinds = {p.kind for p in params}
    for n in sorted(nums):
        if not -len(positional) <= n < len(positional) and (
            n < 0 or inspect.Parameter.VAR_POSITIONAL not in kinds
        ):
            raise ValueError(
                f"jitc.jit({name}): static_argnums={n} is out of range: "
                f"{name} takes {len(positional)} positional parameters "
                f"({', '.join(positional) or 'none'})"
            )
    keywords = {
        p.name
        for p in params
        if p.kind != p.POSITIONAL_ONLY and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    for n in sorted(names):
        if n not in keywords and inspect.Parameter.VAR_KEYWORD not in kinds:
            raise ValueError(
                f"jitc.jit({name}): static_argnames names {n!r}, which is not "
                f"a parameter of {name} (its parameters: "
                f"{', '.join(p.name for p in params) or 'none'})"
            )
    return {n % len(positional) if n < 0 else n for n in nums}, names


class Wrapped:
    """What jitc.jit returns (jitc/api.py's Jitted): a callable with a `function`. Captured
    state (trace/mutation/capture.py) tells it from a user's object by this class."""

    function: Function


# ---------------------------------------------------------------- the signature key


def leaf_signature(leaf):
    """What the compile cache keys on for one argument leaf (cheap: no validation)."""
    t = type(leaf)
    if t is np.ndarray:
        return leaf.shape, leaf.dtype
    if t in WEAK_DTYPES:
        return t
    if isinstance(leaf, np.generic):
        return "scalar", leaf.dtype
    if isinstance(leaf, ShapeDtype):
        return leaf.shape, leaf.dtype
    if isinstance(leaf, np.ndarray):  # a subclass: compiled (or refused) for its own type
        return leaf.shape, leaf.dtype, t
    if has_cuda_array_interface(leaf):
        return tuple(leaf.shape), np.dtype(leaf.dtype)
    if hasattr(leaf, "__array__"):
        a = np.asarray(leaf)
        return tuple(a.shape), np.dtype(a.dtype)
    return ("object", t)


def repeats(leaves) -> tuple:
    """(j, i) for every array passed again as leaf j after leaf i: one buffer in the trace."""
    if len(leaves) < 2:
        return ()
    first: dict = {}
    return tuple(
        (j, first.setdefault(id(a), j))
        for j, a in enumerate(leaves)
        if isinstance(a, np.ndarray) and first.setdefault(id(a), j) != j
    )


def signature_key(tree, static_key, leaves) -> tuple:
    """The key one Compiled serves: the argument tree, the static values, each leaf's
    shape and dtype (or Python type), and which leaves are the same array."""
    return tree, static_key, tuple(map(leaf_signature, leaves)), repeats(leaves)


_SUPPORTED = set(SUPPORTED)


def describe_leaf(signature) -> str:
    """A leaf_signature as JITC_LOG=compiles names it."""
    if isinstance(signature, type):
        return f"Python {signature.__name__}"
    if signature[0] == "scalar":
        return f"{signature[1]} scalar"
    if signature[0] == "object":
        return signature[1].__name__
    shape, dtype = signature[0], signature[1]
    return type_str(shape, dtype) if np.dtype(dtype) in _SUPPORTED else f"{dtype}{shape}"


# ---------------------------------------------------------------- stages


class Lowered:
    """A traced function: the graph before optimization, and how a call maps onto it."""

    def __init__(
        self,
        function: Function,
        graph,
        in_tree,
        arg_names,
        arg_types,
        out_tree,
        out_specs,
        writebacks=(),
        captured=(),
        repeats=(),
        int_ranges=None,
    ):
        self.function = function
        self.graph = graph
        self.in_tree = in_tree
        self.arg_names = list(arg_names)
        self.arg_types: tuple[ArgType, ...] = tuple(arg_types)
        self.out_tree = out_tree
        self.out_specs: tuple[OutSpec, ...] = tuple(out_specs)  # per result leaf
        self.writebacks: tuple[WriteBack, ...] = tuple(writebacks)
        self.captured: tuple[CapturedArray, ...] = tuple(captured)
        # (j, i): leaf j is the very array passed as leaf i, one buffer in the trace
        self.repeats = tuple(repeats)
        # leaf -> the integer dtypes a Python int leaf's value must fit (NumPy 2 raises
        # OverflowError where an int32 array meets 2**40; int64 is jitc's widest)
        self.int_ranges = dict(int_ranges or {})
        # the traced arguments' values, where `lower()` was given them (the report's timing)
        self.example_leaves = None

    def as_text(self) -> str:
        return str(self.graph)

    def with_arguments_computed(self, keep=()) -> Lowered:
        """This function with every returned argument (or view of one) computed into an
        output of its own (its contents after the call's writes), for callers that must
        produce every result (AOT); arguments in `keep` returned whole stay returned as
        the caller's own array."""
        from jitc.trace.mutation.views import view_node

        graph = self.graph.copy()
        final = {w.target: graph.outputs[w.output] for w in self.writebacks if w.kind == "arg"}
        specs = []
        for s in self.out_specs:
            if isinstance(s, ArgumentResult) and not (s.leaf in keep and not s.view):
                base = final.get(s.leaf, graph.params[s.leaf])
                graph.outputs.append(view_node(graph, base, s.view))
                s = GraphResult(len(graph.outputs) - 1)
            specs.append(s)
        return Lowered(
            self.function,
            graph,
            self.in_tree,
            self.arg_names,
            self.arg_types,
            self.out_tree,
            specs,
            self.writebacks,
            self.captured,
            self.repeats,
        )

    def with_captures_baked(self) -> Lowered:
        """This function with each captured array a constant of its current contents, for a
        standalone module (AOT), which has no Python objects to read them from."""
        from jitc.core.ir import Graph

        n_leaves = len(self.arg_types)
        graph, mapping = Graph(self.graph.name), {}
        for node in self.graph.nodes:
            if node.op == "parameter" and node.attrs["index"] >= n_leaves:
                value = np.array(self.captured[node.attrs["index"] - n_leaves].place.get())
                value.flags.writeable = False
                new = graph.add("constant", (), {"value": value}, node.shape, node.dtype, node.loc)
            else:
                new = graph.add(
                    node.op,
                    [mapping[o] for o in node.operands],
                    dict(node.attrs),
                    node.shape,
                    node.dtype,
                    node.loc,
                    node.subgraph,
                    node.tuple_types,
                )
            mapping[node] = new
        graph.outputs = [mapping[o] for o in self.graph.outputs]
        return Lowered(
            self.function,
            graph,
            self.in_tree,
            self.arg_names,
            self.arg_types,
            self.out_tree,
            self.out_specs,
            self.writebacks,
            (),
            self.repeats,
        )

    def compile(self, backend: str | None = None) -> Compiled:
        return Compiled(self, backend or self.function.backend)


def optimized(lowered: Lowered):
    """The optimized graph of `lowered`, its written arguments aliased to their outputs."""
    from jitc.core import interrupts

    with interrupts.deferred():  # a Ctrl-C inside an import can leave its module lock held,
        from jitc.fusion import optimize  # and the compile thread importing it waits forever

    n = len(lowered.arg_types)
    aliases = {
        w.output: w.target if w.kind == "arg" else n + w.target
        for w in lowered.writebacks
        if w.kind in ("arg", "captured")
    }
    return optimize(lowered.graph, aliases=aliases)


class Compiled:
    """An optimized graph bound to one backend's executable, for one exact signature."""

    def __init__(self, lowered: Lowered, backend: str, graph=None):
        from jitc import backends

        self.lowered = lowered
        self.backend = backend
        self.graph = optimized(lowered) if graph is None else graph
        module = backends.get(backend)
        module.refuse_dtypes(self.graph, lowered.arg_names)
        self.executable = module.compile(self.graph)
        # the runtime's calls of this stage, made once (runtime/fastpath.py, native.py)
        self.fast_call = None  # (the executable's checked run, the fast call made of it)
        self.native_call = None  # the native worker's fast call, False where none serves

    @property
    def name(self) -> str:
        return self.lowered.function.name

    def call_flat(self, leaves):
        """The call for these argument leaves (flattened, static ones left out)."""
        arrays, captured = self.inputs(leaves)
        return self.run(self.executable, arrays, captured, leaves)

    def inputs(self, leaves) -> tuple[list, list]:
        """(the leaves as the executable takes them, the captured arrays read now), once
        checked: a Python int's range, a captured place's type, written arguments that
        overlap others."""
        lowered = self.lowered
        for i, dtypes in lowered.int_ranges.items():
            _check_int_range(leaves[i], dtypes, lowered.arg_names[i])
        arrays = [
            leaf
            if type(leaf) is np.ndarray or is_device_array(leaf)
            else np.asarray(leaf, dtype=t.dtype)
            for leaf, t in zip(leaves, lowered.arg_types)
        ]
        captured = [c.place.get() for c in lowered.captured]
        for array, c in zip(captured, lowered.captured):
            if (
                not (isinstance(array, np.ndarray) or is_device_array(array))
                or array.shape != c.shape
                or array.dtype != c.dtype
            ):
                raise StaleCapture()
        if lowered.writebacks:
            writeback.check_overlap(lowered, leaves)
        return arrays, captured

    def run(self, run, arrays, captured, leaves):
        """`run` (the executable, or a wrapper of it) on `inputs`' arrays; the written
        arrays written back, and the function's result."""
        outs = run(*arrays, *captured)
        for w in self.lowered.writebacks:
            if w.kind == "arg":
                writeback.write_back(leaves[w.target], outs[w.output])
            elif w.kind == "captured":
                writeback.write_back(captured[w.target], outs[w.output])
            else:
                w.target.set(outs[w.output])
        return self._finish(outs, leaves)

    def _finish(self, outs, leaves):
        """The function's result (its tree, NumPy or Python scalars) from the outputs."""
        from jitc.trace.mutation.views import numpy_view

        results = []
        for spec in self.lowered.out_specs:
            if isinstance(spec, GraphResult):
                value = outs[spec.index]
                if spec.scalar:
                    value = value[()] if spec.scalar is True else spec.scalar(value[()])
                results.append(value)
            elif isinstance(spec, SizedResult):
                results.append(
                    sized_value(outs[spec.index], outs[spec.start], outs[spec.stop], spec.axis)
                )
            elif isinstance(spec, ArgumentResult):
                results.append(numpy_view(leaves[spec.leaf], spec.view))
            else:
                results.append(spec.value)
        return unflatten(self.lowered.out_tree, results)

    def __call__(self, *args, **kwargs):
        leaves, tree = flatten((args, kwargs))
        names = self.lowered.arg_names
        if tree != self.lowered.in_tree:
            raise TypeError(
                f"{self.name}: arguments do not match the compiled signature "
                f"({', '.join(names)}); pass the non-static arguments only, with "
                f"the same structure"
            )
        for leaf, name, t in zip(leaves, names, self.lowered.arg_types):
            if t.weak:
                if not isinstance(leaf, (bool, int, float, np.generic, np.ndarray)):
                    raise TypeError(
                        f"argument {name!r}: expected a Python scalar, got {type(leaf).__name__}"
                    )
                continue
            on_host = not (isinstance(leaf, np.ndarray) or is_device_array(leaf))
            got = np.asarray(leaf) if on_host else leaf
            if got.dtype != t.dtype:
                raise TypeError(
                    f"argument {name!r}: expected dtype {t.dtype}, got {got.dtype} "
                    f"(compiled for {type_str(t.shape, t.dtype)})"
                )
            if got.shape != t.shape:
                raise ValueError(
                    f"argument {name!r}: expected shape {t.shape}, got "
                    f"{got.shape} (compiled for {type_str(t.shape, t.dtype)})"
                )
        return self.call_flat(leaves)

    def as_text(self, stage: str = "optimized") -> str:
        """The optimized graph, or a stage of the backend's own (cuda: "ptx", "kernels")."""
        if stage == "optimized":
            return str(self.graph)
        return self.executable.as_text(stage)

    def stats(self) -> dict:
        return self.executable.stats()

    def report(self, path: str) -> str:
        """Write an offline HTML page to `path`: the fused graph, the time each kernel takes
        (cpu), see report/. Returns the path."""
        from jitc import report

        return report.write(self, path)

    def fusion_report(self) -> str:
        from jitc.fusion import fusion_report

        return fusion_report(self.lowered.graph, self.graph)


def _check_int_range(value, dtypes, name) -> None:
    """A Python int argument must fit every integer dtype it was converted to (NumPy 2
    raises OverflowError where uint8 meets -1 or 256); int64 always, as jitc's widest."""
    if type(value) is not int:
        return
    for dtype in (np.dtype(np.int64), *dtypes):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            widest = (
                " (int64 is the widest integer jitc computes in: pass a float or an array)"
                if dtype == np.int64
                else ""
            )
            raise OverflowError(
                f"argument {name!r}: Python integer {value} out of bounds for {dtype}{widest}"
            )
