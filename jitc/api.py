"""jitc.jit and its stages: Jitted -> Lowered (traced graph) -> Compiled (fused, executable)."""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading

import numpy as np

from jitc.core import config
from jitc.core.device_arrays import has_cuda_array_interface, is_device_array
from jitc.core.dtypes import SUPPORTED, type_str
from jitc.core.errors import JitcError, SignatureMiss, StaleCapture, UnsupportedError
from jitc.core.failures import KERNEL_FAILURES
from jitc.core.pytree import flatten, unflatten
from jitc.core.specs import ShapeDtype
from jitc.runtime import tiered

log = logging.getLogger("jitc")
if "compiles" in config.LOG and not log.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("jitc: %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)

_WEAK_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
                complex: np.dtype(np.complex128)}
# What a fast call raises for arguments of another signature: the driver's own shape check,
# or a TypeError from numba's dispatcher refusing another array type.
FAST_PATH_MISSES = (SignatureMiss, TypeError)
# Traces in progress (any thread). While one runs, calls skip the fast path: a Tracer has a
# shape and dtype too, and a jitted function called inside a trace must be inlined.
TRACES_ACTIVE = [0]


def _leaf_signature(leaf):
    """What the compile cache keys on for one argument leaf (cheap: no validation)."""
    t = type(leaf)
    if t is np.ndarray:
        return leaf.shape, leaf.dtype
    if t in _WEAK_DTYPES:
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


def _describe(sig) -> str:
    if isinstance(sig, type):
        return f"Python {sig.__name__}"
    if sig[0] == "scalar":
        return f"{sig[1]} scalar"
    if sig[0] == "object":
        return sig[1].__name__
    return type_str(sig[0], sig[1]) if np.dtype(sig[1]) in _SUPPORTED else f"{sig[1]}{sig[0]}"


_SUPPORTED = set(SUPPORTED)


def _no_failure(error):
    return None


def _no_fast_call(*args):
    raise SignatureMiss()


class Jitted:
    """A function compiled on first call per (tree, shapes, dtypes, static values)."""

    def __init__(self, fun, backend=None, static_argnums=(), static_argnames=()):
        functools.update_wrapper(self, fun)
        self.backend = backend or config.DEFAULT_BACKEND
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = None
        nums, names = _static_parameters(fun, params, static_argnums, static_argnames)
        positional = [p.name for p in params or ()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        # jitc.jit(obj.method): `obj` is the first argument of every call, an object
        # argument as `self` passed explicitly is (captured, re-read and written back)
        self._bound = ()
        if inspect.ismethod(fun) and not isinstance(fun.__self__, type):
            self._bound = (fun.__self__,)
            positional = [next(iter(inspect.signature(fun.__func__).parameters))] + positional
            nums = {n + 1 for n in nums}
            fun = fun.__func__
        self.fun = fun
        self._param_names = positional
        for n in nums:
            if n < len(positional):
                names.add(positional[n])
        for name in names:
            if name in positional:
                nums.add(positional.index(name))
        self._static_nums = frozenset(nums)
        self._static_names = frozenset(names)
        self._cache: dict = {}
        self._fast = _no_fast_call  # the last signature's self-checking call, see __call__
        self._fast_failure = _no_failure  # its executable's kernel failure, located
        self._last_compiled = None  # the last signature's Compiled: submit's native path
        self._signatures: dict = {}  # key -> per-argument description, for JITC_LOG reasons
        self._lock = threading.Lock()

    # -- the call path
    def _split(self, args, kwargs):
        """(dynamic args, dynamic kwargs, the static key, the static positions). An object
        argument (`self`) is static by identity: its arrays are captured state (capture.py),
        its plain attributes (numbers, strings) part of the key, since the trace bakes them."""
        from jitc.trace.mutation.capture import Identity, is_state_object

        objects = {i for i, a in enumerate(args) if i not in self._static_nums
                   and is_state_object(a)}
        nums = self._static_nums | objects
        if not nums and not self._static_names:
            return args, kwargs, (), nums
        dyn = tuple(a for i, a in enumerate(args) if i not in nums)
        static = [(i, Identity(a) if i in objects else a) for i, a in enumerate(args)
                  if i in nums]
        dyn_kw = {}
        for k, v in kwargs.items():
            if k in self._static_names:
                static.append((k, v))
            else:
                dyn_kw[k] = v
        try:
            static_key = tuple(static)
            hash(static_key)
        except TypeError:
            bad = next(str(k) for k, v in static if not _hashable(v))
            raise TypeError(f"{self.__name__}: static argument {bad!r} must be hashable "
                            f"(use a tuple instead of a list)") from None
        return dyn, dyn_kw, static_key, nums

    def __call__(self, *args, **kwargs):
        if self._bound:
            args = self._bound + args
        if not kwargs and not TRACES_ACTIVE[0]:
            try:  # the last signature's executable checks its arguments itself
                return self._fast(*args)
            except FAST_PATH_MISSES:
                pass
            except KERNEL_FAILURES as e:  # name the NumPy call and line (core/failures.py)
                located = self._fast_failure(e)
                if located is None:
                    raise
                raise located from None
        return self._call(args, kwargs)

    def submit(self, *args, **kwargs):
        """Start this call on jitc's executor thread and return a `concurrent.futures.Future`
        of its result at once; futures among the arguments stand for their results
        (runtime/futures.py)."""
        return _submit(self, self._bound + args, kwargs)

    def _call(self, args, kwargs):
        if config.DISABLE_JIT:
            return self.fun(*args, **kwargs)
        if TRACES_ACTIVE[0]:
            from jitc.trace.rebind import current_ctx

            if current_ctx() is not None:  # called inside another trace: inline
                return self.fun(*args, **kwargs)
        dyn, dyn_kw, static, _ = self._split(args, kwargs)
        leaves, tree = flatten((dyn, dyn_kw))
        if _has_dask(leaves):
            from jitc import chunked

            return chunked.call(self, args[len(self._bound):], kwargs)
        key = (tree, static, tuple(map(_leaf_signature, leaves)), _repeats(leaves))
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._compile(args, kwargs, key)
        compiled = self._tier(compiled, key)
        try:
            result = compiled.call_flat(leaves)
        except StaleCapture:  # a captured place now holds an array of another type
            with self._lock:
                self._cache.pop(key, None)
            compiled = self._tier(self._compile(args, kwargs, key), key)
            result = compiled.call_flat(leaves)
        if not kwargs and not static and not config.TRACE:  # traced calls take call_flat
            self._fast = compiled.fast_call or _no_fast_call
            self._fast_failure = getattr(compiled.executable, "failure", _no_failure)
            self._last_compiled = compiled
        return result

    def _tier(self, compiled, key):
        """The Compiled a call runs: while `key`'s kernels compile in the background, the
        reference tier, then (from now on) the compiled one (runtime/tiered.py)."""
        if type(compiled) is not tiered.Tiered:
            return compiled
        current = compiled.current()
        if current is not compiled.reference:
            self._cache[key] = current
        return current

    def _compile(self, args, kwargs, key):
        with self._lock:
            compiled = self._cache.get(key)
            if compiled is None:
                lowered = self._lower(args, kwargs)
                self._log_compile(key, lowered)
                compiled = tiered.compile(lowered)
                self._cache[key] = compiled
            return compiled

    def _log_compile(self, key, lowered):
        described = dict(zip(lowered.arg_names, map(_describe, key[2])))
        described.update({f"static {k}": repr(v) for k, v in key[1]})
        if log.isEnabledFor(logging.INFO):
            if not self._signatures:
                reason = "first call"
            else:
                last = list(self._signatures.values())[-1]
                changed = [f"{n}: {last.get(n, 'absent')} -> {d}" for n, d in described.items()
                           if last.get(n) != d]
                changed += [f"{n}: {d} -> absent" for n, d in last.items() if n not in described]
                reason = "new " + "; ".join(changed) if changed else "new argument structure"
            log.info("compiling %s for %s (%s)", self.__name__, ", ".join(
                f"{n}={d}" for n, d in described.items()), reason)
        self._signatures[key] = described

    # -- staging
    def lower(self, *args, **kwargs) -> Lowered:
        return self._lower(self._bound + args, kwargs)

    def _lower(self, args, kwargs):
        from jitc.trace.lowering import trace

        dyn, dyn_kw, _, static_nums = self._split(args, kwargs)
        if _has_dask(flatten((dyn, dyn_kw))[0]):
            from jitc.chunked import Plan

            return Plan(self, args[len(self._bound):], kwargs)
        return trace(self, args, kwargs, dyn, dyn_kw, static_nums)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __reduce__(self):
        """Pickled by name, as the function it wraps would be: `Pool.map(f, ...)` sends a
        jitted function to its workers this way, each compiling its own (compiled code and
        locks do not travel). One that its module does not name cannot be pickled."""
        return self.__qualname__


def _static_parameters(fun, params, static_argnums, static_argnames) -> tuple[set, set]:
    """The static positions and names asked for, each checked against `fun`'s parameters
    (`params`, None where Python cannot tell them): a misspelt name or a position past
    them would leave the argument traced and fail far from the cause."""
    nums = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    names = {static_argnames} if isinstance(static_argnames, str) else set(static_argnames)
    if params is None:
        return nums, names
    name = getattr(fun, "__qualname__", repr(fun))
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    kinds = {p.kind for p in params}
    for n in sorted(nums):
        if not -len(positional) <= n < len(positional) and (
                n < 0 or inspect.Parameter.VAR_POSITIONAL not in kinds):
            raise ValueError(f"jitc.jit({name}): static_argnums={n} is out of range: "
                             f"{name} takes {len(positional)} positional parameters "
                             f"({', '.join(positional) or 'none'})")
    keywords = {p.name for p in params if p.kind != p.POSITIONAL_ONLY
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    for n in sorted(names):
        if n not in keywords and inspect.Parameter.VAR_KEYWORD not in kinds:
            raise ValueError(f"jitc.jit({name}): static_argnames names {n!r}, which is not "
                             f"a parameter of {name} (its parameters: "
                             f"{', '.join(p.name for p in params) or 'none'})")
    return {n % len(positional) if n < 0 else n for n in nums}, names


def _has_dask(leaves) -> bool:
    """Any dask array among the leaves (they run by blocks: chunked)."""
    return "dask.array" in sys.modules and any(
        type(x).__module__.startswith("dask.array") for x in leaves)


def _repeats(leaves) -> tuple:
    """(j, i) for every array passed again as leaf j after leaf i: one buffer in the trace."""
    if len(leaves) < 2:
        return ()
    first: dict = {}
    return tuple((j, first.setdefault(id(a), j)) for j, a in enumerate(leaves)
                 if isinstance(a, np.ndarray) and first.setdefault(id(a), j) != j)


def _check_overlap(lowered, leaves):
    """A written argument must not partly overlap another (the trace saw separate buffers)."""
    for (kind, i), _k in lowered.writebacks:
        if kind != "arg":
            continue
        for j, other in enumerate(leaves):
            if j != i and other is not leaves[i] and isinstance(other, np.ndarray) \
                    and np.may_share_memory(leaves[i], other):
                names = lowered.arg_names
                raise UnsupportedError(
                    f"{lowered.jitted.__name__}: arguments {names[i]!r} and {names[j]!r} "
                    f"share memory and {names[i]!r} is written; pass the same array object "
                    f"twice, or copies")


def write_back(dst, value):
    """Copy a written argument's new contents into the caller's array (NumPy or device)."""
    if dst is value:
        return
    if isinstance(dst, np.ndarray):
        np.copyto(dst, value, casting="no")
    elif is_device_array(dst):
        dst[...] = value


def int_bounds(dtypes) -> tuple[int, int]:
    """The values every integer dtype in `dtypes` holds (uint8 and int8: 0..127), and int64,
    jitc's Python ints."""
    infos = [np.iinfo(d) for d in (np.int64, *dtypes)]
    return max(i.min for i in infos), min(i.max for i in infos)


def _check_int_range(value, dtypes, name) -> None:
    """A Python int argument must fit every integer dtype it was converted to (NumPy 2
    raises OverflowError where uint8 meets -1 or 256); int64 always, as jitc's widest."""
    if type(value) is not int:
        return
    for dtype in (np.dtype(np.int64), *dtypes):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            widest = (" (int64 is the widest integer jitc computes in: pass a float or an "
                      "array)" if dtype == np.int64 else "")
            raise OverflowError(f"argument {name!r}: Python integer {value} out of bounds for "
                                f"{dtype}{widest}")


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


class Lowered:
    """A traced function: the graph before optimization."""

    def __init__(self, jitted, graph, in_tree, arg_names, arg_types, out_tree, out_specs,
                 writebacks=(), captured=(), repeats=(), int_ranges=None):
        self.jitted = jitted
        self.graph = graph
        self.in_tree = in_tree
        self.arg_names = arg_names
        self.arg_types = arg_types  # (shape, dtype, weak) per leaf
        self.out_tree = out_tree
        # per output leaf: ("graph", index, scalar) | ("static", v) | ("arg", leaf, view
        # steps); scalar is False (an array), True (a NumPy scalar) or the type of a Python
        # scalar result; "arg" returns the caller's own array (or that view of it)
        self.out_specs = out_specs
        # (target, graph output index): what the function wrote, and its new contents, put
        # back after every call. Targets: ("arg", leaf index) and ("captured", k), arrays
        # copied into; ("rebind", Place), a place bound to the new array (trace/mutation/capture.py)
        self.writebacks = list(writebacks)
        # (Place, (shape, dtype)) per captured array: parameters after the leaves, read
        # from their place on every call
        self.captured = list(captured)
        # (j, i): leaf j is the very array passed as leaf i, one buffer in the trace
        self.repeats = tuple(repeats)
        # leaf -> the integer dtype a Python int leaf's value must fit (NumPy 2 raises
        # OverflowError where an int32 array meets 2**40; int64 is jitc's widest)
        self.int_ranges = dict(int_ranges or {})

    def as_text(self) -> str:
        return str(self.graph)

    def with_arguments_computed(self, keep=()) -> Lowered:
        """This function with every returned argument (or view of one) computed into an
        output of its own (its contents after the call's writes), for callers that must
        produce every result (AOT); arguments in `keep` returned whole stay returned as
        the caller's own array."""
        from jitc.trace.mutation.functional import view_node

        graph = self.graph.copy()
        final = {t[1]: graph.outputs[k] for t, k in self.writebacks if t[0] == "arg"}
        specs = []
        for s in self.out_specs:
            if s[0] == "arg" and not (s[1] in keep and not s[2]):
                base = final.get(s[1], graph.params[s[1]])
                graph.outputs.append(view_node(graph, base, s[2]))
                s = ("graph", len(graph.outputs) - 1, False)
            specs.append(s)
        return Lowered(self.jitted, graph, self.in_tree, self.arg_names, self.arg_types,
                       self.out_tree, specs, self.writebacks, self.captured, self.repeats)

    def with_captures_baked(self) -> Lowered:
        """This function with each captured array a constant of its current contents, for a
        standalone module (AOT), which has no Python objects to read them from."""
        from jitc.core.ir import Graph

        n_leaves = len(self.arg_types)
        graph, mapping = Graph(self.graph.name), {}
        for node in self.graph.nodes:
            if node.op == "parameter" and node.attrs["index"] >= n_leaves:
                value = np.array(self.captured[node.attrs["index"] - n_leaves][0].get())
                value.flags.writeable = False
                new = graph.add("constant", (), {"value": value}, node.shape, node.dtype,
                                node.loc)
            else:
                new = graph.add(node.op, [mapping[o] for o in node.operands],
                                dict(node.attrs), node.shape, node.dtype, node.loc,
                                node.subgraph, node.tuple_types)
            mapping[node] = new
        graph.outputs = [mapping[o] for o in self.graph.outputs]
        return Lowered(self.jitted, graph, self.in_tree, self.arg_names, self.arg_types,
                       self.out_tree, self.out_specs, self.writebacks, (), self.repeats)

    def compile(self, backend: str | None = None) -> Compiled:
        return Compiled(self, backend or self.jitted.backend)


class Compiled:
    """An optimized graph bound to one backend's executable, for one exact signature."""

    def __init__(self, lowered: Lowered, backend: str, graph=None):
        from jitc import backends

        self.lowered = lowered
        self.backend = backend
        self.graph = optimized(lowered) if graph is None else graph
        module = backends.get(backend)
        if hasattr(module, "refuse_dtypes"):  # a backend computing in fewer dtypes than jitc
            module.refuse_dtypes(self.graph, lowered.arg_names)
        self.executable = module.compile(self.graph)
        self._fast_call = None  # (run, its fast call): see fast_call
        self._native_call = None  # see native_call

    def call_flat(self, leaves):
        for i, dtypes in self.lowered.int_ranges.items():
            _check_int_range(leaves[i], dtypes, self.lowered.arg_names[i])
        arrays = [leaf if type(leaf) is np.ndarray or is_device_array(leaf)
                  else np.asarray(leaf, dtype=t[1])
                  for leaf, t in zip(leaves, self.lowered.arg_types)]
        captured = [place.get() for place, _ in self.lowered.captured]
        for array, (_, (shape, dtype)) in zip(captured, self.lowered.captured):
            if not (isinstance(array, np.ndarray) or is_device_array(array)) \
                    or array.shape != shape or array.dtype != dtype:
                raise StaleCapture()
        if self.lowered.writebacks:
            _check_overlap(self.lowered, leaves)
        if config.TRACE:
            from jitc.runtime import chrome_trace

            return chrome_trace.traced_call(
                self, lambda run: self._run(run, arrays, captured, leaves))
        return self._run(self.executable, arrays, captured, leaves)

    def _run(self, run, arrays, captured, leaves):
        outs = run(*arrays, *captured)
        for (kind, target), k in self.lowered.writebacks:
            if kind == "arg":
                write_back(leaves[target], outs[k])
            elif kind == "captured":
                write_back(captured[target], outs[k])
            else:
                target.set(outs[k])
        return self._finish(outs, leaves)

    def _finish(self, outs, leaves):
        """The function's result (its tree, NumPy or Python scalars) from the outputs."""
        from jitc.trace.mutation.functional import numpy_view

        results = []
        for spec in self.lowered.out_specs:
            if spec[0] == "graph":
                value, scalar = outs[spec[1]], spec[2]
                if scalar:
                    value = value[()] if scalar is True else scalar(value[()])
                results.append(value)
            elif spec[0] == "arg":
                results.append(numpy_view(leaves[spec[1]], spec[2]))
            else:
                results.append(spec[1])
        return unflatten(self.lowered.out_tree, results)

    @property
    def fast_call(self):
        """A function of the positional arguments that raises one of FAST_PATH_MISSES unless
        they are what this signature was compiled for (runtime/fastpath.py), or None if the
        backend does not check its arguments itself. Made once per run function of the
        executable (the cpu backend's changes once its own driver has compiled): calls that
        switch between signatures switch between these."""
        run = getattr(self.executable, "checked_run", None)  # run(*leaves, *results)
        made = self._fast_call
        if made is None or made[0] is not run:
            made = self._fast_call = (run, self._make_fast_call(run))
        return made[1]

    @property
    def native_call(self):
        """A fast call that posts this signature's launches to jitc's native worker, or
        None where submit's native path cannot serve it (runtime/native.py)."""
        if self._native_call is None:
            self._native_call = self._make_native_call() or False
        return self._native_call or None

    def _make_native_call(self):
        from jitc.runtime import native

        if not native.usable(self):
            return None
        return self._make_fast_call(self.executable.posting_run(native.post))

    def _make_fast_call(self, run):
        if run is None or self.lowered.in_tree[1][0][0] != "tuple":
            return None
        from jitc.runtime.fastpath import fast_call

        (_, arg_defs), kwargs_def = self.lowered.in_tree[1]
        if kwargs_def[1]:
            return None
        return fast_call(arg_defs, self.lowered.arg_types, self.lowered.out_tree,
                         self.lowered.out_specs, run, self.executable.results,
                         self.lowered.writebacks, [p for p, _ in self.lowered.captured],
                         self._donated(), self.lowered.repeats, self.lowered.int_ranges)

    def _donated(self) -> list:
        """(parameter index, result index) for written arrays the executable may compute in
        place: results that are not also returned, and that no kernel writes before the last
        read of the array's old contents."""
        can = getattr(self.executable, "can_write_into", None)
        if can is None:
            return []
        returned = {s[1] for s in self.lowered.out_specs if s[0] == "graph"}
        n = len(self.lowered.arg_types)
        out = []
        for (kind, target), k in self.lowered.writebacks:
            param = target if kind == "arg" else n + target if kind == "captured" else None
            if param is not None and k not in returned and can(param, k):
                out.append((param, k))
        return out

    def __call__(self, *args, **kwargs):
        leaves, tree = flatten((args, kwargs))
        names = self.lowered.arg_names
        if tree != self.lowered.in_tree:
            raise TypeError(f"{self.lowered.jitted.__name__}: arguments do not match the "
                            f"compiled signature ({', '.join(names)}); pass the non-static "
                            f"arguments only, with the same structure")
        for leaf, name, (shape, dtype, weak) in zip(leaves, names, self.lowered.arg_types):
            if weak:
                if not isinstance(leaf, (bool, int, float, np.generic, np.ndarray)):
                    raise TypeError(f"argument {name!r}: expected a Python scalar, got "
                                    f"{type(leaf).__name__}")
                continue
            on_host = not (isinstance(leaf, np.ndarray) or is_device_array(leaf))
            got = np.asarray(leaf) if on_host else leaf
            if got.dtype != dtype:
                raise TypeError(f"argument {name!r}: expected dtype {dtype}, got {got.dtype} "
                                f"(compiled for {type_str(shape, dtype)})")
            if got.shape != shape:
                raise ValueError(f"argument {name!r}: expected shape {shape}, got {got.shape} "
                                 f"(compiled for {type_str(shape, dtype)})")
        return self.call_flat(leaves)

    def as_text(self, stage: str = "optimized") -> str:
        """The optimized graph, or a stage of the backend's own (cuda: "ptx", "kernels")."""
        if stage == "optimized":
            return str(self.graph)
        backend_text = getattr(self.executable, "as_text", None)
        if backend_text is None:
            raise ValueError(f"the {self.backend} backend has no stage {stage!r}")
        return backend_text(stage)

    def stats(self) -> dict:
        return self.executable.stats()

    def report(self, path: str) -> str:
        """Write an offline HTML page to `path`: the fused graph, the time each kernel takes
        (cpu), see report. Returns the path."""
        from jitc import report

        return report.write(self, path)

    def fusion_report(self) -> str:
        from jitc.fusion import fusion_report

        return fusion_report(self.lowered.graph, self.graph)


def optimized(lowered: Lowered):
    """The optimized graph of `lowered`, its written arguments aliased to their outputs."""
    from jitc.fusion import optimize

    graph = optimize(lowered.graph)
    n = len(lowered.arg_types)
    graph.aliases = {k: target if kind == "arg" else n + target
                     for (kind, target), k in lowered.writebacks
                     if kind in ("arg", "captured")}
    return graph


def jit(fun=None, *, backend=None, static_argnums=(), static_argnames=()):
    """Compile `fun` (plain NumPy code) into fused kernels; use as @jit or @jit(...)."""
    if fun is None:
        return functools.partial(jit, backend=backend, static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    if backend is not None:
        from jitc import backends

        if backend not in backends.BACKENDS:
            raise JitcError(f"unknown backend {backend!r}; choose one of "
                            f"{sorted(backends.BACKENDS)}")
    return Jitted(fun, backend, static_argnums, static_argnames)


from jitc.runtime.futures import submit as _submit  # noqa: E402 (it imports this module)

__all__ = ["jit", "Jitted", "Lowered", "Compiled"]
