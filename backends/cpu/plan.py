"""A fused graph -> a Program: the kernels to run, in order, over buffers at planned places.

The JIT driver (driver.py) and the AOT entry (jitc.aot) both run a Program, so they share
the kernels and the buffer plan. Buffers follow `jitc.fusion.plan_buffers`: intermediates at
offsets in one temp arena, in place where it allows, results straight into the caller's
result buffers; a reshape is the same bytes under another shape.

A Kernel is what the driver launches once over a range of rows: one or more generated
functions (bodies) run in order over the same rows, e.g. a dot and its epilogue, so each
thread applies the epilogue to the output rows it has just computed. Every extent a body
reads is a slot of the kernel's size vector, so two specializations that differ only in
extents have the same source and share compiled code.

Targets: "jit" may call BLAS and lets kernels allocate scratch rows; "aot" (no runtime)
takes scratch rows from the arena and computes every dot with loops.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from jitc.backends.cpu import dot as dots
from jitc.backends.cpu.fft import fft_available, fft_source
from jitc.backends.cpu.lapack import ERROR_OF_KIND, lapack_source
from jitc.backends.cpu.lapack_factor import factor_error, factor_source
from jitc.backends.cpu.loops import LoopKernel, Sizes
from jitc.backends.cpu.scalar_loop import scalar_loop
from jitc.backends.cpu.scan import scan_source
from jitc.backends.cpu.scatter import ERROR as SCATTER_ERROR
from jitc.backends.cpu.scatter import scatter_source
from jitc.backends.cpu.sort import scratch_rows, sort_source
from jitc.backends.cpu.update_slice import (
    COPY_UNLESS_SAME,
    packed_view,
    region_source,
    region_view,
    shared_view,
)
from jitc.core import failures, linalg_layout, ops
from jitc.core.errors import JitcError, UnsupportedError
from jitc.core.ir import Graph, Node
from jitc.core.source import where
from jitc.fusion import plan_buffers
from jitc.fusion.contract import single_op_body
from jitc.fusion.region import collapsed, region_of
from jitc.fusion.views import block_offset, external_view, is_view

ALIGN = 64
# A node's kernel-local temporaries (a dot's accumulator, a transposed operand) start where
# the previous node's ended while that is below this many bytes past the plan (jit only), so
# that independent small kernels do not share them and may run concurrently (schedule.py).
LOCALS_SPREAD = 1 << 18
SOURCES = ("param", "result", "temp", "const")


class PlanError(JitcError):
    """The planner met a graph shape it cannot place (a bug, reported with the node)."""


@dataclass(frozen=True)
class Buf:
    """Where an array lives: `offset` bytes into entry parameter / result / constant
    `index`, or `index` bytes into the temp arena. A view may have a shape other than its
    buffer's (a reshape) and an offset (a contiguous slice of a parameter or constant)."""

    source: str
    index: int
    shape: tuple
    dtype: np.dtype
    offset: int = 0

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def start(self) -> tuple:
        """Where its first byte is, whatever its shape: two Bufs alias when these match."""
        return (self.source, self.index, self.offset)

    def viewed(self, shape, offset: int = 0) -> Buf:
        """The same bytes as `shape`, starting `offset` bytes further in."""
        return Buf(self.source, self.index, tuple(shape), self.dtype, self.offset + offset)


@dataclass
class Body:
    """One generated function `def BODY(arrays..., lo, hi, n)`; arrays: (pointer index into
    Kernel.pointers, shape, shape slots) per array argument (AOT scratch rows included)."""

    source: str
    arrays: list


@dataclass
class Kernel:
    """Bodies run in order over rows [lo, hi) of `rows`; `work` weighs threading."""

    bodies: list
    pointers: list  # Buf per distinct array, in pack order
    sizes: list  # values of the size vector n
    rows: int
    work: int
    error: tuple | None = None  # (exception class name, message) when a body can raise
    sites: tuple = ()  # the nodes that can raise (jitc.core.failures names them on a failure)
    writes: frozenset = frozenset()  # indices into `pointers` a body writes (schedule.py)
    node: Node | None = None  # the graph node it computes (None: a copy into a result)
    blas: bool = False  # a BLAS call per block of rows (launcher.launch_work)
    matrix_vector: bool = False  # that call a gemv: a matrix times a vector
    sized: bool = False  # BLAS over rows that are already blocks of a good size: not capped
    # not a kernel but a branch of a loop: (when, target): the driver goes on at program
    # kernel `target` if the bool its one pointer points at is `when`, else at the next
    branch: tuple | None = None


@dataclass
class Program:
    name: str
    params: list  # (shape, dtype)
    results: list  # (shape, dtype), the graph outputs not written into a parameter
    constants: list  # arrays
    temp_bytes: int
    kernels: list  # Kernel, in call order
    inout: tuple = ()  # parameters the program writes (AOT in-out arguments)


def _refuse_libm_calls(graph: Graph) -> None:
    """AOT objects import nothing, and NumPy computes complex trigonometry, power and the
    like with the C library's functions, which the cpu kernels call (complexlibm.py)."""
    for n in graph.nodes:
        if n.subgraph is not None:
            _refuse_libm_calls(n.subgraph)
        elif n.op in ops.COMPLEX_LIBM and n.operands[0].dtype.kind == "c":
            raise UnsupportedError(
                f"np.{n.op} on {n.operands[0].dtype} is not supported in AOT (NumPy "
                f"computes it with the C library's complex functions, which AOT objects "
                f"do not link){where(n.loc)}"
            )


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _error(body: Graph) -> tuple | None:
    if any(n.op == "gather" for n in body.nodes):
        return ("IndexError", "index out of bounds in integer-array indexing (gather)")
    if any(n.op == "power" and n.dtype.kind == "i" for n in body.nodes):  # unsigned: never
        return ("ValueError", "Integers to negative integer powers are not allowed.")
    return None


class _KernelBuilder:
    """Collects the bodies of one kernel, its distinct buffers and its size slots."""

    def __init__(self):
        self.sz = Sizes()
        self.pointers: list[Buf] = []
        self.bodies: list[Body] = []
        self.error = None
        self.sites: list[Node] = []
        self.writes: set[int] = set()

    def pointer(self, buf: Buf) -> int:
        for k, p in enumerate(self.pointers):
            if p.start == buf.start:
                return k
        self.pointers.append(buf)
        return len(self.pointers) - 1

    def add(self, source: str, reads: list[Buf], writes: list[Buf]):
        """A body whose array arguments are `reads` then `writes` (the arrays it stores
        into: what the concurrent schedule orders kernels by)."""
        arrays = [
            (self.pointer(b), b.shape, tuple(self.sz(d) for d in b.shape)) for b in reads + writes
        ]
        self.written(writes)
        self.bodies.append(Body(_hoist_sizes(source), arrays))

    def written(self, bufs: list[Buf]):
        """Note that the bodies write these arrays, passed to them under any name."""
        self.writes.update(
            k for k, p in enumerate(self.pointers) for b in bufs if p.start == b.start
        )

    def kernel(
        self,
        rows: int,
        work: int,
        blas: bool = False,
        matrix_vector: bool = False,
        sized: bool = False,
    ) -> Kernel:
        return Kernel(
            self.bodies,
            self.pointers,
            self.sz.values,
            rows,
            work,
            self.error,
            tuple(self.sites),
            frozenset(self.writes),
            blas=blas,
            matrix_vector=matrix_vector,
            sized=sized,
        )


def _around(shape, axis: int) -> tuple[int, int, int]:
    """(pre, size, post): `shape` viewed as three axes around `axis`, which scans and sorts
    run along."""
    return (
        int(np.prod(shape[:axis], dtype=np.int64)),
        shape[axis],
        int(np.prod(shape[axis + 1 :], dtype=np.int64)),
    )


class Planner:
    def __init__(self, graph: Graph, target: str = "jit", inout: dict | None = None, buffers=None):
        """inout: output index -> (parameter index, direct): the output is the new contents
        of that parameter (an AOT in-out argument), computed straight into it when direct,
        else into the arena and copied into it after every kernel has read it."""
        if target not in ("jit", "aot"):
            raise ValueError(f"target must be 'jit' or 'aot', not {target!r}")
        self.graph = graph
        self.aot = target == "aot"
        if self.aot:
            _refuse_libm_calls(graph)
        self.kernels: list[Kernel] = []
        self.constants: list[np.ndarray] = []
        self.loc: dict[Node, Buf] = {}
        self.buffers = plan_buffers(graph) if buffers is None else buffers
        self.inout = dict(inout or {})
        self.visible = [k for k in range(len(graph.outputs)) if k not in self.inout]
        self.targets = {}  # output index -> the Buf its value goes to
        reserved = 0  # arena bytes past the plan staging in-out results
        for k, o in enumerate(graph.outputs):
            if k not in self.inout:
                self.targets[k] = Buf("result", self.visible.index(k), o.shape, o.dtype)
            elif self.inout[k][1]:
                self.targets[k] = Buf("param", self.inout[k][0], o.shape, o.dtype)
            else:
                self.targets[k] = Buf("temp", self.buffers.size + reserved, o.shape, o.dtype)
                reserved += _align(self.targets[k].nbytes)
        self.locals_at = self.buffers.size + reserved
        self.extra = reserved  # arena bytes past the plan: staging, kernel-local temporaries
        self.local_base = 0  # where the current node's local temporaries start
        self.locals_end = 0  # past the locals of every node so far (from locals_at)

    # -- where values live
    def _const(self, value: np.ndarray) -> int:
        for k, c in enumerate(self.constants):
            if c is value:
                return k
        self.constants.append(value)
        return len(self.constants) - 1

    def _result_classes(self):
        """Storage class -> result index, for classes holding a graph output (the smallest
        output index of any member: every member then lives in that result buffer)."""
        parent: dict = {}

        def find(x):
            while parent.get(x, x) is not x:
                x = parent[x]
            return x

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[rb] = ra

        for n in self.graph.nodes:
            if n.op == "reshape":
                union(n.operands[0], n)
        for n, o in self.buffers.in_place.items():
            union(o, n)
        result_of: dict = {}
        for k, o in enumerate(self.graph.outputs):
            result_of.setdefault(find(o), k)
        return find, result_of

    def _place(self, n: Node) -> Buf:
        if n.op == "parameter":
            return Buf("param", n.attrs["index"], n.shape, n.dtype)
        if n.op == "constant":
            return Buf("const", self._const(n.attrs["value"]), n.shape, n.dtype)
        if n.op == "reshape":
            return self.loc[n.operands[0]].viewed(n.shape)
        if external_view(n) is not None:
            return self.loc[n.operands[0]].viewed(n.shape, block_offset(n) * n.dtype.itemsize)
        root = self.find(n)
        if root in self.result_of:
            return self.targets[self.result_of[root]].viewed(n.shape)
        if n in self.buffers.in_place:
            return self.loc[self.buffers.in_place[n]].viewed(n.shape)
        if n not in self.buffers.offsets and n.nbytes:
            raise PlanError(f"the buffer plan has no place for {n!r}")
        return Buf("temp", self.buffers.offsets.get(n, 0), n.shape, n.dtype)

    def _written_over(self, out: Buf, reads: list) -> bool:
        """May `out` be the buffer of one of `reads`: the same place, or a result whose
        array the caller passes as an aliased parameter's (graph.aliases, in place)?"""
        params = {b.index for b in reads if b.source == "param"}
        if out.source == "result" and self.graph.aliases.get(self.visible[out.index]) in params:
            return True
        # e.g. `a - b @ W` where `a` already lives in the result (a dot's output that the
        # subtraction runs in place of): the dot must not overwrite `a` before it is read
        return any((b.source, b.index) == (out.source, out.index) for b in reads)

    def _local(self, offset: int, shape, dtype) -> tuple[Buf, int]:
        """A kernel-local temporary past the planned arena; returns it and the next offset."""
        buf = Buf("temp", self.locals_at + self.local_base + offset, tuple(shape), np.dtype(dtype))
        end = offset + _align(buf.nbytes)
        self.locals_end = max(self.locals_end, self.local_base + end)
        self.extra = max(self.extra, self.locals_at - self.buffers.size + self.local_base + end)
        return buf, end

    # -- kernels
    def _loop(
        self,
        kb: _KernelBuilder,
        body: Graph,
        inputs,
        outs: list[Buf],
        local: int,
        views=None,
        places=None,
        packed=None,
    ):
        """Add a loop body to `kb`; returns (its LoopKernel, the next local offset). views,
        places, packed: where a region fusion stores its outputs (LoopKernel)."""
        aliases = {}
        if views is None:
            aliases = {k: p for k, o in enumerate(outs) for p in body.params if inputs(p) == o}
        ks = LoopKernel(
            body,
            "BODY",
            kb.sz,
            scratch_args=self.aot,
            aliases=aliases,
            views=views,
            places=places,
            packed=packed,
        ).generate()
        scratch = []
        for _, elements, dtype in ks.scratch:
            buf, local = self._local(local, (elements,), dtype)
            scratch.append(buf)
        kb.add(ks.source, [inputs(m) for m in ks.inputs], [outs[k] for k in ks.out_args] + scratch)
        kb.written(outs)  # an output computed in place is written through its input's array
        kb.error = kb.error or _error(body)
        kb.sites += failures.sites(body)
        return ks, local

    def _loop_kernel(self, body: Graph, inputs, outs: list[Buf], local: int = 0, writes=None):
        """writes: output k is stored into the region writes[k] of outs[k] (fusion/region.py)."""
        kb = _KernelBuilder()
        views = places = packed = None
        if writes is not None:
            views = [region_view(w, o.shape, kb.sz) for w, o in zip(writes, outs)]
            places = shared_view(writes, outs[0].shape, kb.sz)
            packed = packed_view(writes, outs[0].shape, kb.sz)
        ks, _ = self._loop(kb, body, inputs, outs, local, views, places, packed)
        self.kernels.append(kb.kernel(ks.rows, ks.work))

    def _operand(self, x: Node, buf: Buf, perm: list, local: int) -> tuple[Buf, int]:
        """`buf` transposed by `perm` into the arena (for a dot operand with no 3-d view)."""
        body = Graph("transpose")
        p = body.add_parameter(x.shape, x.dtype)
        shape = tuple(x.shape[d] for d in perm)
        body.outputs = [body.add("transpose", [p], {"permutation": tuple(perm)}, shape, x.dtype)]
        moved, local = self._local(local, shape, x.dtype)
        self._loop_kernel(body, lambda m: buf, [moved], local)
        return moved, local

    def _dot(self, node: Node, lhs: Buf, rhs: Buf, out: Buf, epilogue=None, local: int = 0):
        """Kernel(s) computing out = dot_general(lhs, rhs), then `epilogue` (a function
        adding the epilogue body to a kernel builder) over the same rows when it can."""
        orders = list(dots.view_orders(node))
        operands = [lhs, rhs]
        perms = dots.standard_permutations(node)
        for side in (0, 1):
            if orders[side] is None:
                x = node.operands[side]
                operands[side], local = self._operand(x, operands[side], perms[side], local)
                orders[side] = ("BMK", "BKN")[side]
                node = _dot_on_transposed(node, side, perms[side])
        ds = dots.dot_shape(node, *orders, blas=not self.aot)
        product = out
        if ds.split == "depth":
            product, local = self._local(local, ds.view("out"), node.dtype)
        kb = _KernelBuilder()
        kb.add(
            dots.dot_source("BODY", node, ds, kb.sz),
            [operands[0].viewed(ds.view("lhs")), operands[1].viewed(ds.view("rhs"))],
            [product.viewed(ds.view("out"))],
        )
        blas = {"blas": ds.mode == "blas", "matrix_vector": ds.mode == "blas" and ds.matrix_vector}
        if ds.split == "depth":  # blocks of DEPTH_MIN_ROWS or more: one task each
            self.kernels.append(kb.kernel(ds.rows, ds.work, blas=True, sized=True))
            self._sum_rows(product.viewed((ds.chunks, ds.N)), out.viewed((ds.N,)))
        else:
            if epilogue is not None and ds.split == "rows":
                ks, local = epilogue(kb, local, ds.rows)
                if ks is not None:
                    self.kernels.append(kb.kernel(ds.rows, ds.work + ks.work, **blas))
                    return
            self.kernels.append(kb.kernel(ds.rows, ds.work, **blas))
        if epilogue is not None:
            kb = _KernelBuilder()
            ks, _ = epilogue(kb, local, None)
            self.kernels.append(kb.kernel(ks.rows, ks.work))

    def _outputs_of(self, n: Node, gets: dict) -> list[Buf]:
        if n.tuple_types is None:
            return [self.loc[n]]
        outs, local = [], 0
        for k, (shape, dtype) in enumerate(n.tuple_types):
            if (n, k) in gets:
                outs.append(self.loc[gets[(n, k)]])
            else:  # an element nothing reads still needs somewhere to go
                buf, local = self._local(local, shape, dtype)
                outs.append(buf)
        return outs

    def _fusion(self, n: Node, outs: list[Buf]):
        body = n.subgraph

        def inputs(m):
            if m.op == "parameter":
                return self.loc[n.operands[m.attrs["index"]]]
            return Buf("const", self._const(m.attrs["value"]), m.shape, m.dtype)

        if n.attrs["kind"] == "region":
            self._region_write(n, inputs, outs[0])
            return
        dot_nodes = [m for m in body.nodes if m.op == "dot_general"]
        if not dot_nodes:
            self._loop_kernel(body, inputs, outs)
            return
        (dot,) = dot_nodes
        # the dot writes into the result when the epilogue reads it at its own index
        users = body.users()
        in_place = (
            len(outs) == 1
            and body.outputs[0].shape == dot.shape
            and body.outputs[0].dtype == dot.dtype
            and all(u.op in ops.ELEMENTWISE or u.op in ops.REDUCTIONS for u in users[dot])
            and not self._written_over(outs[0], [inputs(m) for m in body.params])
        )
        local = 0
        if in_place:
            target = outs[0].viewed(dot.shape)
        else:
            target, local = self._local(0, dot.shape, dot.dtype)
        operands = [inputs(o) for o in dot.operands]
        if body.outputs == [dot]:
            self._dot(dot, *operands, target, local=local)
            if not in_place:
                self._copy(target, outs[0])
            return
        epilogue_graph, sources = _epilogue(body, dot)
        sources = [target if m is dot else inputs(m) for m in sources]

        def epilogue(kb, local, rows):
            """Add the epilogue body to kb if it runs over `rows` rows (None: any)."""
            lk = LoopKernel(epilogue_graph, "BODY", Sizes())
            if rows is not None and lk.rows != rows:
                return None, local
            return self._loop(kb, epilogue_graph, lambda m: sources[m.attrs["index"]], outs, local)

        self._dot(dot, *operands, target, epilogue, local)

    def _scatter(self, n: Node, out: Buf):
        base, idx, upd = n.operands
        axis = n.attrs["axis"]
        pre = int(np.prod(base.shape[:axis], dtype=np.int64))
        post = int(np.prod(base.shape[axis + 1 :], dtype=np.int64))
        size, m = base.shape[axis], idx.size
        src, dst = self.loc[base].viewed((pre, size, post)), out.viewed((pre, size, post))
        kb = _KernelBuilder()
        kb.add(
            scatter_source(n.attrs["mode"], n.dtype, src.start != dst.start),
            [src, self.loc[idx].viewed((m,)), self.loc[upd].viewed((pre, m, post))],
            [dst],
        )
        kb.error = SCATTER_ERROR
        kb.sites = [n]
        self.kernels.append(kb.kernel(pre, pre * (size + m) * post))

    def _keep_unwritten(self, base: Node, out: Buf):
        """Copy the buffer a region write writes into `out` first, when its old version does
        not live there (it is read later, or an argument)."""
        src = self.loc[base]
        if src.start != out.start:
            donated = src.source == "param" and out.source == "result"
            self._copy(src, out, COPY_UNLESS_SAME if donated else COPY_BODY)

    def _region_write(self, n: Node, inputs, out: Buf):
        """A region fusion: one loop over the regions computes their values into `out`."""
        region = region_of(n)
        self._keep_unwritten(n.operands[region.base], out)
        if not region.value.outputs[0].size:
            return
        fewer_axes = collapsed(region, out.shape)
        if fewer_axes is not None:  # the same bytes, viewed with fewer axes
            region, base_shape = fewer_axes
            out = out.viewed(base_shape)
            shape_of = {p.attrs["index"]: p.shape for p in region.value.params}
            given = inputs
            inputs = lambda m: given(m).viewed(shape_of[m.attrs["index"]])  # noqa: E731
        outs = [out] * len(region.writes)
        self._loop_kernel(region.value, inputs, outs, writes=region.writes)

    def _update_slice(self, n: Node, out: Buf):
        """The region of `out` written over, the rest of the buffer kept."""
        base, update = n.operands
        self._keep_unwritten(base, out)
        if update.size == 0:
            return
        kb = _KernelBuilder()
        source, rows = region_source(n, kb.sz)
        kb.add(source, [self.loc[update]], [out])
        self.kernels.append(kb.kernel(rows, update.size))

    def _scan(self, n: Node, out: Buf):
        (x,) = n.operands
        pre, size, post = _around(x.shape, n.attrs["axis"])
        if pre * size * post == 0:
            return  # nothing to write
        kb = _KernelBuilder()
        kb.add(
            scan_source(n.attrs["kind"], n.dtype),
            [self.loc[x].viewed((pre, size, post))],
            [out.viewed((pre, size, post))],
        )
        self.kernels.append(kb.kernel(pre, pre * size * post))

    def _sort(self, n: Node, out: Buf):
        (x,) = n.operands
        pre, size, post = _around(x.shape, n.attrs["axis"])
        if pre * size * post == 0:
            return  # nothing to write
        indices = n.op == "argsort"
        bufs = [out.viewed((pre, size, post))]
        if self.aot:  # scratch rows from the arena
            local = 0
            for dtype in scratch_rows(x.dtype, indices):
                row, local = self._local(local, (size,), dtype)
                bufs.append(row)
        kb = _KernelBuilder()
        kb.add(
            sort_source(x.dtype, indices, self.aot), [self.loc[x].viewed((pre, size, post))], bufs
        )
        self.kernels.append(kb.kernel(pre * post, pre * size * post))

    def _linalg(self, n: Node, out: Buf):
        """One LAPACK kernel over the stack of matrices (its operands are materialized,
        as a dot's are); AOT has no LAPACK to call."""
        kind = n.attrs["kind"]
        if self.aot:
            raise UnsupportedError(
                f"{ops.LINALG_KINDS[linalg_layout.base(kind)]} is not supported in AOT (it "
                f"calls LAPACK, which AOT objects do not link)"
                f"{where(n.loc)}"
            )
        if linalg_layout.is_packed(kind):
            self._factorization(n, kind, out)
            return
        m = n.operands[0].shape[-1]
        batch = int(np.prod(n.operands[0].shape[:-2], dtype=np.int64))
        if out.nbytes == 0:
            return
        views = [self.loc[n.operands[0]].viewed((batch, m, m))]
        if kind == "solve":
            views.append(self.loc[n.operands[1]].viewed((batch, m, n.shape[-1])))
        out = out.viewed((batch,) + ((2,) if kind == "slogdet" else n.shape[-2:]))
        kb = _KernelBuilder()
        kb.add(lapack_source(kind, n.dtype, kb.sz), views, [out])
        kb.error = ERROR_OF_KIND[kind]
        kb.sites = [n]
        self.kernels.append(kb.kernel(batch, 0))  # work 0: one thread (lapack.py says why)

    def _factorization(self, n: Node, kind: str, out: Buf):
        """One LAPACK kernel over the stack (lapack_factor.py): operands (B, core...), the
        packed result (B, P)."""
        batch = int(np.prod(n.shape[:-1], dtype=np.int64))
        if out.nbytes == 0:
            return
        cores = [o.shape[len(n.shape) - 1 :] for o in n.operands]
        kb = _KernelBuilder()
        kb.add(
            factor_source(kind, n.dtype, kb.sz),
            [self.loc[o].viewed((batch,) + c) for o, c in zip(n.operands, cores)],
            [out.viewed((batch, n.shape[-1]))],
        )
        kb.error = factor_error(kind)
        kb.sites = [n]
        self.kernels.append(kb.kernel(batch, 0))  # work 0: one thread (lapack.py says why)

    def _fft(self, n: Node, out: Buf):
        """One DUCC0 call over the whole materialized operand (fft.py); AOT objects link no
        FFT library."""
        if self.aot:
            raise UnsupportedError(
                f"{n.loc.api if n.loc and n.loc.api else ops.FFT_KINDS[n.attrs['kind']]} is "
                f"not supported in AOT (it calls rocket-fft's DUCC0, which AOT objects do not "
                f"link){where(n.loc)}"
            )
        if not fft_available():
            raise UnsupportedError(
                f"{n.loc.api if n.loc and n.loc.api else ops.FFT_KINDS[n.attrs['kind']]} on "
                f"the cpu backend needs the rocket-fft package: pip install 'jitc[fft]'"
                f"{where(n.loc)}"
            )
        if out.nbytes == 0:
            return
        (x,) = n.operands
        kb = _KernelBuilder()
        source = fft_source(n.attrs["kind"], n.attrs["axes"], n.attrs["norm"], x.dtype)
        kb.add(source, [self.loc[x]], [out])
        self.kernels.append(kb.kernel(1, 0))  # work 0: DUCC0 runs its own threads

    def _sum_rows(self, partials: Buf, dst: Buf):
        """dst = the sum of the rows of `partials`, in row order (a depth-split product's)."""
        chunks, size = partials.shape
        kb = _KernelBuilder()
        kb.add(SUM_ROWS_BODY.format(chunks=chunks), [partials], [dst])
        self.kernels.append(kb.kernel(size, size * chunks))

    def _copy(self, src: Buf, dst: Buf, body: str | None = None):
        size = int(np.prod(src.shape, dtype=np.int64))
        if size == 0:
            return
        kb = _KernelBuilder()
        kb.add(body or COPY_BODY, [src.viewed((size,))], [dst.viewed((size,))])
        self.kernels.append(kb.kernel(size, size))

    def _branch(self, flag: Buf, when: bool, target: int | None = None) -> Kernel:
        """A branch to kernel `target` (None: set later) where `flag` holds `when`."""
        kernel = Kernel([], [flag], [], 0, 0, branch=(when, target))
        self.kernels.append(kernel)
        return kernel

    def _while(self, n: Node, carried: list[Buf]):
        """while flag: carried, flag = step(carried, invariants). The step is planned as a
        program of its own, its arena past this node's locals, and runs from `carried` into
        a staged copy of its results, then from that copy back into `carried` (the same
        kernels over the other buffers): no step copies its results. A branch after each
        step leaves the loop once its flag is false; results left in the staged copy are
        copied into `carried` then."""
        k = n.attrs["carried"]
        flag0, inits, invariants = n.operands[0], n.operands[1 : 1 + k], n.operands[1 + k :]
        step = plan_program(n.subgraph, f"{self.graph.name}_step", "aot" if self.aot else "jit")
        staged, local = [], max(0, self.locals_end - self.local_base)  # past `carried`
        for shape, dtype in step.results:
            buf, local = self._local(local, shape, dtype)
            staged.append(buf)
        back, local = self._local(local, (), np.bool_)  # the flag of a step into `carried`
        arena, _ = self._local(local, (step.temp_bytes,), np.uint8)
        fixed = [self.loc[v] for v in invariants]

        def run_step(params: list[Buf], results: list[Buf]):
            def placed(buf: Buf) -> Buf:
                if buf.source == "temp":
                    return Buf("temp", arena.index + buf.index, buf.shape, buf.dtype, buf.offset)
                if buf.source == "const":
                    index = self._const(step.constants[buf.index])
                    return Buf("const", index, buf.shape, buf.dtype, buf.offset)
                base = (params + fixed if buf.source == "param" else results)[buf.index]
                return base.viewed(buf.shape, buf.offset)

            shift = len(self.kernels)
            self.kernels += [relocated(kernel, placed, shift) for kernel in step.kernels]

        for init, buf in zip(inits, carried):
            if self.loc[init].start != buf.start:
                self._copy(self.loc[init], buf)
        if self._scalar_loop(n, carried):
            return
        done = self._branch(self.loc[flag0], False)
        top = len(self.kernels)
        run_step(carried, staged)
        in_staged = self._branch(staged[k], False)
        run_step(staged[:k], carried + [back])
        self._branch(back, True, top)
        finished = self._branch(back, False)  # always taken: past the copies below
        in_staged.branch = (False, len(self.kernels))
        for new, buf in zip(staged, carried):
            self._copy(new, buf)
        done.branch = finished.branch = (False, len(self.kernels))

    def _scalar_loop(self, n: Node, carried: list[Buf]) -> bool:
        """The whole loop as one kernel where its steps are scalar work (scalar_loop.py);
        False where they are not, or where an array it reads shares a carried buffer."""
        k = n.attrs["carried"]
        reads = [self.loc[v] for v in n.operands[:1] + n.operands[1 + k :]]
        if any(_overlap(r, c) for r in reads[1:] for c in carried):
            return False
        kb = _KernelBuilder()
        loop = scalar_loop(n, [(b.shape, b.dtype) for b in carried], kb.sz, rows=not self.aot)
        if loop is None:
            return False
        kb.add(loop.source, [_flat(b) for b in reads], [_flat(b) for b in carried])
        kb.error = loop.error
        kb.sites = failures.sites(n.subgraph)
        self.kernels.append(kb.kernel(1, 1))
        return True

    def _node_kernels(self, n: Node, outs: list):
        if n.op == "while":
            self._while(n, outs)
        elif n.op == "fusion":
            self._fusion(n, outs)
        elif n.op == "dot_general":
            self._dot(n, *(self.loc[o] for o in n.operands), outs[0])
        elif n.op == "scatter":
            self._scatter(n, outs[0])
        elif n.op == "update_slice":
            self._update_slice(n, outs[0])
        elif n.op == "cumulative":
            self._scan(n, outs[0])
        elif n.op in ops.SORTS:
            self._sort(n, outs[0])
        elif n.op == "linalg":
            self._linalg(n, outs[0])
        elif n.op == "fft":
            self._fft(n, outs[0])
        else:
            body, sources = single_op_body(n)
            self._loop_kernel(body, lambda m, s=sources: self.loc[s[m.attrs["index"]]], outs)

    def build(self, name: str) -> Program:
        g = self.graph
        self.find, self.result_of = self._result_classes()
        gets = {(n.operands[0], n.attrs["index"]): n for n in g.nodes if n.op == "get"}
        for n in g.nodes:
            if n.tuple_types is None:
                self.loc[n] = self._place(n)
        for n in g.nodes:
            if n.op in ("parameter", "constant", "get") or is_view(n):
                continue
            if not self.aot:
                self.local_base = self.locals_end if self.locals_end < LOCALS_SPREAD else 0
            first = len(self.kernels)
            self._node_kernels(n, self._outputs_of(n, gets))
            for k in self.kernels[first:]:
                k.node = k.node or n  # a loop's step kernels name the step's nodes
        for k, o in enumerate(g.outputs):
            where, target = self.loc[o], self.targets[k]
            if where.start != target.start:
                self._copy(where, target)
        for k, (p, direct) in self.inout.items():
            if not direct:  # staged: every kernel has read the parameter by now
                self._copy(
                    self.targets[k], Buf("param", p, self.targets[k].shape, self.targets[k].dtype)
                )
        return Program(
            name,
            [(p.shape, p.dtype) for p in g.params],
            [(g.outputs[k].shape, g.outputs[k].dtype) for k in self.visible],
            self.constants,
            self.buffers.size + self.extra,
            self.kernels,
            tuple(sorted(p for p, _ in self.inout.values())),
        )


def _flat(buf: Buf) -> Buf:
    return buf.viewed((int(np.prod(buf.shape, dtype=np.int64)),))


def _overlap(a: Buf, b: Buf) -> bool:
    """Do the bytes of `a` and `b` overlap? (A temp's index is where it starts in the arena.)"""
    if a.source != b.source or (a.source != "temp" and a.index != b.index):
        return False
    start_a, start_b = a.offset + (a.index if a.source == "temp" else 0), b.offset
    start_b += b.index if b.source == "temp" else 0
    return start_a < start_b + b.nbytes and start_b < start_a + a.nbytes


def relocated(kernel: Kernel, placed, shift: int) -> Kernel:
    """A kernel of a loop's step program in the program around it: its buffers where
    `placed` puts them, a branch's target `shift` kernels further on."""
    branch = kernel.branch
    if branch is not None:
        branch = (branch[0], branch[1] + shift)
    return dataclasses.replace(kernel, pointers=[placed(b) for b in kernel.pointers], branch=branch)


COPY_BODY = """def BODY(a, out, lo, hi, n):
    a_c = a[lo:hi]
    out_c = out[lo:hi]
    for j in range(hi - lo):
        out_c[j] = a_c[j]
"""

SUM_ROWS_BODY = """def BODY(p, out, lo, hi, n):
    out_c = out[lo:hi]
    first = p[0, lo:hi]
    for j in range(hi - lo):
        out_c[j] = first[j]
    for c in range(1, {chunks}):
        p_c = p[c, lo:hi]
        for j in range(hi - lo):
            out_c[j] += p_c[j]
"""


def _hoist_sizes(source: str) -> str:
    """Read each size slot n[k] once, into a local, at the top of the body. Read inside a
    loop, a size is reloaded after every store (LLVM cannot tell the stores do not hit the
    size vector), so index expressions stop being affine and the loop does not vectorize."""
    slots = sorted({int(k) for k in re.findall(r"\bn\[(\d+)\]", source)})
    if not slots:
        return source
    head, rest = source.split("\n", 1)
    rest = re.sub(r"\bn\[(\d+)\]", r"n_\1", rest)
    return "\n".join([head] + [f"    n_{k} = n[{k}]" for k in slots]) + "\n" + rest


def _epilogue(body: Graph, dot: Node) -> tuple[Graph, list[Node]]:
    """The body after its dot, with the dot (and every array input) as parameters."""
    epilogue = Graph(body.name + "_epilogue")
    mapping: dict[Node, Node] = {}
    sources: list[Node] = []
    for m in body.nodes:
        if m is dot or m.op == "parameter" or (m.op == "constant" and m.shape != ()):
            mapping[m] = epilogue.add_parameter(m.shape, m.dtype)
            sources.append(m)
        else:
            mapping[m] = epilogue.add(
                m.op, [mapping[o] for o in m.operands], m.attrs, m.shape, m.dtype, m.loc
            )
    epilogue.outputs = [mapping[o] for o in body.outputs]
    return epilogue, sources


def _dot_on_transposed(node: Node, side: int, perm: list) -> Node:
    """The same dot_general reading operand `side` after it was transposed by `perm`."""
    from jitc.core.ir import Node as _Node

    operands = list(node.operands)
    x = operands[side]
    moved = _Node(
        -1, "transpose", [x], {"permutation": tuple(perm)}, tuple(x.shape[d] for d in perm), x.dtype
    )
    operands[side] = moved
    attrs = dict(node.attrs)
    where = {old: new for new, old in enumerate(perm)}
    prefix = ("lhs", "rhs")[side]
    for key in (f"{prefix}_batch", f"{prefix}_contracting"):
        attrs[key] = tuple(where[d] for d in node.attrs[key])
    return _Node(node.id, node.op, operands, attrs, node.shape, node.dtype, node.loc)


def plan_program(
    graph: Graph, name: str, target: str = "jit", inout: dict | None = None, buffers=None
) -> Program:
    """The kernels and buffer places of an optimized (fused) graph (see Planner for
    `inout`); `buffers`: plan_buffers(graph), where the caller has it already."""
    return Planner(graph, target, inout, buffers).build(name)
