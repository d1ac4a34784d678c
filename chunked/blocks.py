"""A jitted call on dask arrays as a dask graph: per stage, one task per block running the
stage's compiled program (all its fused kernels) on that block of every argument, and per
cross-block reduction, tasks combining the blocks' partials.

A task names its program by a small StageRef (the user's function, its jit options, the
argument specs and the plan's chunking), kept once in the graph: each worker process
traces and compiles each stage once per block shape, from jitc's persistent kernel cache
where another process already did, and never ships compiled code.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from operator import getitem

import numpy as np

from jitc.chunked.partition import Partition, where
from jitc.chunked.stages import Stages, combine
from jitc.core.errors import UnsupportedError
from jitc.core.pytree import flatten, unflatten
from jitc.core.specs import ShapeDtype
from jitc.stages import ArgumentResult, StaticResult

_PROGRAMS: dict = {}  # (StageRef token, stage, block extents) -> Compiled
_LOCK = threading.Lock()
SPLIT_EVERY = 8  # partials a combine task reads at most


def is_dask(x) -> bool:
    return type(x).__module__.startswith("dask.array")


def _spec(x):
    return ShapeDtype(x.shape, x.dtype) if is_dask(x) or isinstance(x, np.ndarray) else x


class Analysis:
    """The traced graph, its axis classes, which of them run block by block (with their
    chunks) and its stages: everything about a call but the argument values."""

    def __init__(self, function, spec_args, spec_kwargs, dask_chunks):
        """`dask_chunks`: per dynamic leaf, its dask chunks or None."""
        from jitc.trace.lowering import lower

        self.function = function
        self.lowered = lower(function, spec_args, spec_kwargs)
        n = len(self.lowered.arg_types)
        self.part = Partition(self.lowered.graph, n)
        params = self.lowered.graph.params
        self.chunks = {}  # class root -> chunks, for classes that run block by block
        for i, chunks in enumerate(dask_chunks):
            for c, cs in zip(self.part.roots(params[i]), chunks or ()):
                if len(cs) > 1 and c not in self.part.classes.whole:
                    self.chunks.setdefault(c, cs)
        # rolls along a chunked class read a halo of their neighbours' edges
        self.halos = {c: h for c, h in self.part.halos().items() if c in self.chunks}
        for c, h in list(self.halos.items()):
            if h > min(self.chunks[c]):
                self.part.classes.pin(
                    c,
                    f"a roll by {h} needs more than its smallest "
                    f"chunk ({min(self.chunks[c])}) from a neighbour",
                )
                del self.halos[c], self.chunks[c]
        self.stages = Stages(self.lowered.graph, self.part.cross_block(self.chunks))

    def leaf_chunks(self, i):
        """Leaf `i`'s chunks in the plan: the class's along block-by-block dims, else one."""
        p = self.lowered.graph.params[i]
        return tuple(self.chunks.get(c, (n,)) for c, n in zip(self.part.roots(p), p.shape))

    def shape_of(self, extents):
        """A node's shape in the block whose chunked classes have `extents`."""

        def shape(node):
            if node.shape is None:  # a loop's tuple of results: it runs whole
                return None
            return tuple(extents.get(c, n) for c, n in zip(self.part.roots(node), node.shape))

        return shape


class StageRef:
    """What a task needs to find (or build) its stage program in any process."""

    def __init__(self, function, spec_args, spec_kwargs, dask_chunks):
        self.token = uuid.uuid4().hex
        self.function = function  # a stages.Function: pickled with its Python function
        self.specs = (spec_args, spec_kwargs, dask_chunks)

    def analysis(self) -> Analysis:
        found = _PROGRAMS.get(self.token)
        if found is None:
            found = _PROGRAMS.setdefault(self.token, Analysis(self.function, *self.specs))
        return found

    def program(self, k, extents):
        key = (self.token, k, extents)
        found = _PROGRAMS.get(key)
        if found is None:
            from jitc.stages import ArgType, GraphResult, Lowered

            a = self.analysis()
            graph = a.stages.program(k, a.shape_of(dict(zip(a.chunks, extents))), a.part, a.halos)
            names = [f"%{p.id}" for p in graph.params]
            lowered = Lowered(
                a.function,
                graph,
                flatten((tuple(names), {}))[1],
                names,
                [ArgType(p.shape, p.dtype) for p in graph.params],
                flatten(tuple(range(len(graph.outputs))))[1],
                [GraphResult(j) for j in range(len(graph.outputs))],
            )
            with _LOCK:
                found = _PROGRAMS.setdefault(key, lowered.compile())
        return found


def run_stage(sref, k, extents, *inputs):
    """One task: stage `k`'s program on one block; the values its blocks return."""
    _share_of_the_machine()
    from jitc.runtime.dispatch import call_compiled

    program = sref.program(k, extents)
    arrays = [np.asarray(x, dtype=t.dtype) for x, t in zip(inputs, program.lowered.arg_types)]
    return call_compiled(program, arrays)


def _share_of_the_machine():
    """In a dask.distributed worker, run jitc's kernels on as many threads as the worker was
    given (LocalCluster splits the cores among its workers): several worker processes on
    one machine each using every core would oversubscribe it."""
    try:
        from distributed import get_worker

        n = get_worker().state.nthreads
    except (ImportError, ValueError):  # not in a distributed worker
        return
    import numba

    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


class Plan:
    """How one call on dask arrays runs: which argument axes go block by block, which are
    computed whole and why, the cross-block reductions, and the dask graph that does it."""

    def __init__(self, function, args, kwargs):
        """`args`: the bound object first, where the function has one."""
        from jitc.trace.lowering import _names
        from jitc.trace.mutation.capture import split_arguments

        self.function = function
        split = split_arguments(function, args, kwargs)
        self.leaves = flatten((split.dynamic, split.dynamic_kwargs))[0]
        self.names = _names(function, args, kwargs, split.static_positions)
        for leaf, name in zip(self.leaves, self.names):
            if is_dask(leaf) and any(np.isnan(c) for cs in leaf.chunks for c in cs):
                raise UnsupportedError(
                    f"{function.name}: argument {name!r} is a dask "
                    "array of unknown chunk sizes; call "
                    ".compute_chunk_sizes() on it first"
                )
        spec_args = tuple(unflatten(t, [_spec(x) for x in ls]) for ls, t in map(flatten, args))
        spec_kwargs = {
            k: unflatten(t, [_spec(x) for x in ls])
            for k, (ls, t) in ((k, flatten(v)) for k, v in kwargs.items())
        }
        dask_chunks = [x.chunks if is_dask(x) else None for x in self.leaves]
        self.sref = StageRef(function, spec_args, spec_kwargs, dask_chunks)
        self.a = self.sref.analysis()
        self._refuse_writes()
        self._refuse_sized()
        for line in self.rechunked():  # JITC_LOG=compiles says where dask's split is undone
            logging.getLogger("jitc").info("%s on dask arrays: %s", function.name, line)

    def _refuse_writes(self):
        if self.a.lowered.writebacks:
            raise UnsupportedError(
                f"{self.function.name}: called with dask arrays, the function writes "
                "into an argument or captured array; dask arrays are immutable and a write "
                "would happen once per block: return the new value instead"
            )

    def _refuse_sized(self):
        from jitc.stages import SizedResult

        for spec in self.a.lowered.out_specs:
            if isinstance(spec, SizedResult):
                raise UnsupportedError(
                    f"{self.function.name}: called with dask arrays, the function returns "
                    f"{spec.what}, whose size is known only at run time; dask needs every "
                    "block's size when the graph is built: compute it on NumPy arrays"
                )

    # -- what it says
    def as_text(self) -> str:
        """The partition plan, then the traced graph."""
        a, cls = self.a, self.a.part.classes
        params = a.lowered.graph.params
        lines = [f"partition plan of {self.function.name} on dask arrays:"]
        for i, x in enumerate(self.leaves):
            if not is_dask(x):
                continue
            for d, c in enumerate(a.part.roots(params[i])):
                n = len(x.chunks[d])
                if c in a.chunks:
                    halo = f", with a halo of {a.halos[c]} for np.roll" if c in a.halos else ""
                    lines.append(
                        f"  {self.names[i]} axis {d}: {len(a.chunks[c])} chunks, block "
                        f"by block{halo}"
                        + (f" (rechunked from {n})" if x.chunks[d] != a.chunks[c] else "")
                    )
                elif n > 1:
                    lines.append(
                        f"  {self.names[i]} axis {d}: rechunked from {n} chunks to "
                        f"one: {cls.reason(c)}"
                    )
        nodes = {n.id: n for n in a.lowered.graph.nodes}
        for nid, (kind, over) in a.stages.cross.items():
            blocks = int(np.prod([len(a.chunks[c]) for c in over]))
            lines.append(
                f"  {where(nodes[nid])}: partial {kind} per block, combined across {blocks} blocks"
            )
        grid = int(np.prod([len(c) for c in a.chunks.values()]))
        lines.append(
            f"  {len(a.stages.returns)} stage(s) of {grid} task(s) each, every task "
            "one compiled program (all its fused kernels) on one block"
        )
        return "\n".join(lines) + "\n\n" + a.lowered.as_text()

    def rechunked(self) -> list[str]:
        """The plan's lines about axes computed whole though dask split them."""
        return [line.strip() for line in self.as_text().splitlines() if "rechunked" in line]

    # -- the dask graph
    def build(self, leaves):
        """The dask graph of this call on `leaves` (this signature's dynamic leaves; their
        values may differ from the ones the plan was made with)."""
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph

        a = self.a
        roots = list(a.chunks)
        pos = {c: k for k, c in enumerate(roots)}
        grid = [len(a.chunks[c]) for c in roots]
        name = f"jitc-{self.function.name}-{uuid.uuid4().hex[:12]}"
        ref_key = f"{name}-program"
        tasks, deps = {ref_key: self.sref}, []
        params = a.lowered.graph.params
        captured = [place.get() for place, _ in a.lowered.captured]
        inputs = []  # per parameter: (key, grid position per dim) or (None, value)
        for i, leaf in enumerate(list(leaves) + captured):
            dims = [pos.get(c) for c in a.part.roots(params[i])]
            if any(p is not None for p in dims):
                arr = self._blocked(i, leaf, da)
                deps.append(arr)
                inputs.append((arr.name, dims))
            elif isinstance(leaf, np.ndarray) or is_dask(leaf):
                key = f"{name}-arg{i}"
                tasks[key] = leaf  # one copy in the graph, not one per task
                if is_dask(leaf):
                    arr = leaf.rechunk(leaf.shape)
                    deps.append(arr)
                    tasks[key] = (getitem, (arr.name,) + (0,) * leaf.ndim, ())
                inputs.append((key, None))
            else:
                inputs.append((None, leaf))
        blocks = list(itertools.product(*(range(n) for n in grid)))
        combined = {}  # reduction node id -> key prefix of its combined blocks
        for k, returns in enumerate(a.stages.returns):
            stage = f"{name}-s{k}"
            reads = a.stages.inputs(k)
            for g in blocks:
                args = [_ref(key, dims, g) for key, dims in inputs]
                args += [(combined[n.id], *self._sub(n, g, pos)) for n in reads]
                extents = tuple(a.chunks[c][g[pos[c]]] for c in roots)
                tasks[(stage, *g)] = (run_stage, ref_key, k, extents, *args)
            for j, n in enumerate(returns):
                if n.id in a.stages.cross:
                    combined[n.id] = self._combine(n, j, stage, blocks, pos, tasks)
        base = HighLevelGraph.from_collections(name, tasks, dependencies=deps)
        results = []
        for spec in a.lowered.out_specs:
            out = self._output(spec, leaves, name, combined, blocks, pos)
            if isinstance(out, tuple):  # one layer per result, reading the internal tasks
                key, out_tasks, chunks, dtype = out
                graph = HighLevelGraph(
                    {**base.layers, key: out_tasks}, {**base.dependencies, key: {name}}
                )
                out = da.Array(graph, key, chunks=chunks, meta=np.empty((0,) * len(chunks), dtype))
            results.append(out)
        return unflatten(a.lowered.out_tree, results)

    def _sub(self, node, g, pos):
        """Block `g`'s position in `node`'s own grid (its block-by-block dims)."""
        return [g[pos[c]] if c in pos else 0 for c in self.a.part.roots(node)]

    def _combine(self, node, j, stage, blocks, pos, tasks):
        """Tasks combining reduction `node`'s partials (item `j` of stage's blocks) across
        the blocks of the classes it reduces; the key prefix of the combined blocks."""
        kind, _ = self.a.stages.cross[node.id]
        key = f"{stage}-combine{node.id}"
        reads = {c for o in node.operands for c in self.a.part.roots(o)}
        groups: dict = {}
        for g in blocks:
            if any(g[p] for c, p in pos.items() if c not in reads):
                continue  # a grid axis the reduction does not read: block 0 has it
            groups.setdefault(tuple(self._sub(node, g, pos)), []).append((getitem, (stage, *g), j))
        for sub, parts in groups.items():
            level = 0
            while len(parts) > SPLIT_EVERY:  # a tree, as dask's reductions: no task reads all
                parts = [
                    _task(
                        tasks,
                        (f"{key}-tree{level}", *sub, i),
                        combine,
                        kind,
                        *parts[i * SPLIT_EVERY : (i + 1) * SPLIT_EVERY],
                    )
                    for i in range(-(-len(parts) // SPLIT_EVERY))
                ]
                level += 1
            tasks[(key, *sub)] = (combine, kind, *parts)
        return key

    def _blocked(self, i, leaf, da):
        """Parameter `i` as a dask array chunked by the plan."""
        chunks = (
            self.a.leaf_chunks(i)
            if i < len(self.a.lowered.arg_types)
            else tuple((n,) for n in leaf.shape)
        )
        arr = leaf if is_dask(leaf) else da.from_array(leaf, chunks=chunks)
        if arr.chunks != chunks:
            arr = arr.rechunk(chunks)
        depth = {
            d: self.a.halos[c]
            for d, c in enumerate(self.a.part.roots(self.a.lowered.graph.params[i]))
            if c in self.a.halos
        }
        if depth:  # np.roll wraps around the whole array: the halo is periodic
            arr = da.overlap.overlap(arr, depth=depth, boundary={d: "periodic" for d in depth})
        return arr

    def _output(self, spec, leaves, name, combined, blocks, pos):
        """One output leaf: a static value, an argument, or (key, tasks, chunks, dtype) of
        a dask array over the internal tasks."""
        a = self.a
        if isinstance(spec, StaticResult):
            return spec.value
        if isinstance(spec, ArgumentResult):
            if spec.view:
                raise UnsupportedError(
                    f"{self.function.name}: returns a view of an "
                    "argument; with dask arrays return a new array"
                )
            return leaves[spec.leaf]
        node = a.lowered.graph.outputs[spec.index]
        key, tasks = f"{name}-out{spec.index}", {}
        roots = a.part.roots(node)
        if node.id in a.stages.cross:
            sub_keys = {tuple(self._sub(node, g, pos)) for g in blocks}
            for sub in sub_keys:
                tasks[(key, *sub)] = (combined[node.id], *sub)
        else:
            k = a.stages.stage[node.id]
            j = a.stages.returns[k].index(node)
            for g in blocks:
                if any(g[p] for c, p in pos.items() if c not in roots):
                    continue  # the output does not vary along that grid axis: block 0 has it
                tasks[(key, *self._sub(node, g, pos))] = (getitem, (f"{name}-s{k}", *g), j)
        chunks = tuple(a.chunks.get(c, (n,)) for c, n in zip(roots, node.shape))
        return key, tasks, chunks, node.dtype


def _task(tasks, key, *task):
    tasks[key] = task
    return key


def _ref(key, dims, g):
    if key is None:
        return dims  # a Python value, passed as it is
    if dims is None:
        return key
    return (key, *[0 if p is None else g[p] for p in dims])
