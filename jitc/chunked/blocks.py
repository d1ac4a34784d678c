"""A jitted call on dask arrays as a dask graph: one task per block, each one call of the
whole jitted function (all its fused kernels) on that block of every argument.

The tasks carry the user's function and its jit options, not compiled code: each worker
process builds one Jitted per function (JittedRef) and compiles once per block shape,
from jitc's persistent cache where another process already did.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from operator import getitem

import numpy as np

from jitc.chunked.partition import analyze, block_mismatch
from jitc.errors import UnsupportedError
from jitc.pytree import flatten, unflatten
from jitc.specs import ShapeDtype
from jitc.tracing import _names

_REGISTRY: dict = {}  # token -> the Jitted this process runs blocks with
_REGISTRY_LOCK = threading.Lock()


class JittedRef:
    """What a task says about the function: small to send, one Jitted per process."""

    def __init__(self, jitted):
        self.token = jitted.__dict__.setdefault("_chunk_token", uuid.uuid4().hex)
        self.fun = jitted.fun
        self.options = dict(backend=jitted.backend, static_argnums=tuple(jitted._static_nums),
                            static_argnames=tuple(jitted._static_names))
        _REGISTRY.setdefault(self.token, jitted)

    def __getstate__(self):
        return {"token": self.token, "fun": self.fun, "options": self.options}

    def jitted(self):
        found = _REGISTRY.get(self.token)
        if found is None:
            from jitc.api import Jitted

            with _REGISTRY_LOCK:
                found = _REGISTRY.setdefault(self.token, Jitted(self.fun, **self.options))
        return found


def run_block(ref, tree, *leaves):
    """One task: the jitted function on one block of every argument; its flat outputs."""
    _share_of_the_machine()
    args, kwargs = unflatten(tree, leaves)
    out, _ = flatten(ref.jitted()(*args, **kwargs))
    return tuple(out)


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


def is_dask(x) -> bool:
    return type(x).__module__.startswith("dask.array")


class Plan:
    """How one call on dask arrays runs: which argument axes go chunk by chunk, which are
    computed whole and why, and the dask graph that does it."""

    def __init__(self, jitted, args, kwargs):
        self.jitted = jitted
        self.leaves, self.tree = flatten((args, kwargs))
        dyn, dyn_kw, _, static_nums = jitted._split(args, kwargs)
        self.dyn_leaves = dyn_leaves = flatten((dyn, dyn_kw))[0]
        names = _names(jitted, args, kwargs, static_nums)
        self.leaf_index = {}  # id(array) -> its parameter in the trace
        for i, leaf in enumerate(dyn_leaves):
            self.leaf_index.setdefault(id(leaf), i)
            if is_dask(leaf) and any(np.isnan(c) for cs in leaf.chunks for c in cs):
                raise UnsupportedError(f"{jitted.__name__}: argument {names[i]!r} is a dask "
                                       "array of unknown chunk sizes; call "
                                       ".compute_chunk_sizes() on it first")
        self.lowered = jitted.lower(*_specs(args), **_specs(kwargs))
        self._refuse_writes()
        self.classes, self.states = analyze(self.lowered.graph, len(dyn_leaves))
        self.dask_leaves = [(i, x) for i, x in enumerate(self.leaves) if is_dask(x)]
        self.chunks = self._class_chunks()
        self._check_blocks()

    # -- which classes run chunk by chunk
    def _dims(self, leaf):
        p = self.lowered.graph.params[self.leaf_index[id(leaf)]]
        return [self.classes.find(s) if isinstance(s, int) else None
                for s in self.states[p.id]]

    def _class_chunks(self) -> dict:
        """class root -> its chunks, for every unbroken class some dask argument splits."""
        chunks = {}
        for _, x in self.dask_leaves:
            for d, c in enumerate(self._dims(x)):
                if c is not None and len(x.chunks[d]) > 1 and not self.classes.is_broken(c):
                    chunks.setdefault(c, x.chunks[d])
        return chunks

    def _check_blocks(self):
        """Trace the function at every distinct block shape; a class whose blocks trace to
        another program than the whole runs whole."""
        while self.chunks:
            roots = list(self.chunks)
            for extents in itertools.product(*(sorted(set(self.chunks[c])) for c in roots)):
                sizes = {c: (sum(self.chunks[c]), n) for c, n in zip(roots, extents)}
                why = self._block_mismatch(sizes)
                if why:
                    for c in roots:
                        self.classes.brk(c, why)
                    self.chunks = self._class_chunks()
                    break
            else:
                return

    def _block_mismatch(self, sizes):
        def block_spec(x):
            if not (is_dask(x) or isinstance(x, np.ndarray) and id(x) in self.leaf_index):
                return x
            shape = [sizes[c][1] if c in sizes else n for c, n in zip(self._dims(x), x.shape)]
            return ShapeDtype(tuple(shape), x.dtype)

        args, kwargs = unflatten(self.tree, [block_spec(x) for x in self.leaves])
        try:
            block = self.jitted.lower(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - any failure means: not by blocks
            return f"tracing a block failed ({type(e).__name__}: {e})"
        return block_mismatch(self.lowered.graph, block.graph, self.states, self.classes,
                              sizes)

    def _refuse_writes(self):
        if self.lowered.writebacks:
            raise UnsupportedError(
                f"{self.jitted.__name__}: called with dask arrays, the function writes "
                "into an argument or captured array; dask arrays are immutable and a write "
                "would happen once per block: return the new value instead")

    # -- what it says
    def as_text(self) -> str:
        """The partition plan, then the traced graph."""
        names = self.lowered.arg_names
        grid = 1
        lines = [f"partition plan of {self.jitted.__name__} on dask arrays:"]
        for _, x in self.dask_leaves:
            name = names[self.leaf_index[id(x)]]
            for d, c in enumerate(self._dims(x)):
                n = len(x.chunks[d])
                if c in self.chunks:
                    lines.append(f"  {name} axis {d}: {len(self.chunks[c])} chunks, chunk by "
                                 "chunk" + (f" (rechunked from {n})" if
                                            x.chunks[d] != self.chunks[c] else ""))
                elif n > 1:
                    why = self.classes.reason(c) if c is not None else None
                    lines.append(f"  {name} axis {d}: rechunked from {n} chunks to one: "
                                 f"{why or 'its values are combined with unchunked ones'}")
        for c in self.chunks:
            grid *= len(self.chunks[c])
        lines.append(f"  {grid} task{'s' * (grid != 1)}, each one call of "
                     f"{self.jitted.__name__} (all its fused kernels) on one block")
        return "\n".join(lines) + "\n\n" + self.lowered.as_text()

    def rechunked(self) -> list[str]:
        """The plan's lines about axes computed whole though dask split them."""
        return [line.strip() for line in self.as_text().splitlines() if "rechunked" in line]

    # -- the dask graph
    def build(self):
        import dask.array as da
        from dask.highlevelgraph import HighLevelGraph

        roots = list(self.chunks)
        pos = {c: k for k, c in enumerate(roots)}
        grid = [len(self.chunks[c]) for c in roots]
        name = f"jitc-{self.jitted.__name__}-{uuid.uuid4().hex[:12]}"
        layers, deps, arg_keys = {}, [], []
        for leaf in self.leaves:
            if is_dask(leaf) or (isinstance(leaf, np.ndarray) and any(
                    c in pos for c in self._dims(leaf))):
                arr = self._blocked(leaf, da)
                deps.append(arr)
                arg_keys.append((arr.name, [pos.get(c) for c in self._dims(leaf)]))
            elif isinstance(leaf, np.ndarray) and leaf.size > 1:
                key = f"jitc-arg-{uuid.uuid4().hex[:12]}"
                layers[key] = leaf  # one copy in the graph, not one per task
                arg_keys.append((key, None))
            else:
                arg_keys.append((None, leaf))
        tasks = {}
        ref = JittedRef(self.jitted)
        for g in itertools.product(*(range(n) for n in grid)):
            args = []
            for key, dims in arg_keys:
                if key is None:
                    args.append(dims)
                elif dims is None:
                    args.append(key)
                else:
                    args.append((key, *[0 if p is None else g[p] for p in dims]))
            tasks[(name, *g)] = (run_block, ref, self.tree, *args)
        tasks.update(layers)
        base = HighLevelGraph.from_collections(name, tasks, dependencies=deps)
        results = []
        for j, spec in enumerate(self.lowered.out_specs):
            out = self._output(j, spec, name, pos, grid)
            if isinstance(out, tuple):  # one layer per result, reading the blocks' tasks
                key, out_tasks, chunks, dtype = out
                graph = HighLevelGraph({**base.layers, key: out_tasks},
                                       {**base.dependencies, key: {name}})
                out = da.Array(graph, key, chunks=chunks, meta=np.empty((0,) * len(chunks),
                                                                        dtype))
            results.append(out)
        return unflatten(self.lowered.out_tree, results)

    def _blocked(self, leaf, da):
        """The argument as a dask array chunked by the plan: the class's chunks along
        chunk-by-chunk axes, one chunk along every other axis."""
        dims = self._dims(leaf)
        chunks = tuple(self.chunks[c] if c in self.chunks else (n,)
                       for c, n in zip(dims, leaf.shape))
        if is_dask(leaf):
            return leaf if leaf.chunks == chunks else leaf.rechunk(chunks)
        return da.from_array(leaf, chunks=chunks)

    def _output(self, j, spec, name, pos, grid):
        """Output leaf `j`: a static value, an argument, or (name, tasks, chunks, dtype) of
        the dask array whose blocks are item `j` of the blocks' results."""
        kind = spec[0]
        if kind == "static":
            return spec[1]
        if kind == "arg":
            if spec[2]:
                raise UnsupportedError(f"{self.jitted.__name__}: returns a view of an "
                                       "argument; with dask arrays return a new array")
            return self.dyn_leaves[spec[1]]
        node = self.lowered.graph.outputs[spec[1]]
        dims = [self.classes.find(s) if isinstance(s, int) else None
                for s in self.states[node.id]]
        live = [pos.get(c) for c in dims]
        key, tasks = f"{name}-out{j}", {}
        for g in itertools.product(*(range(n) for n in grid)):
            if any(g[k] for k in range(len(grid)) if k not in live):
                continue  # the output does not vary along that grid axis: block 0 has it
            tasks[(key, *[0 if p is None else g[p] for p in live])] = (getitem, (name, *g), j)
        chunks = tuple(self.chunks[c] if c in self.chunks else (n,)
                       for c, n in zip(dims, node.shape))
        return key, tasks, chunks, node.dtype


def _specs(tree):
    """`tree` with every dask array replaced by its ShapeDtype."""
    leaves, t = flatten(tree)
    return unflatten(t, [ShapeDtype(x.shape, x.dtype) if is_dask(x) else x for x in leaves])
