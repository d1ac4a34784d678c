"""Generate one numba loop kernel for a fusion body: elementwise ops, shape ops, gathers and
reductions over one iteration space.

The iteration shape S is the shape every reduction reads (or the outputs' shape when there is
none). Dims split into outer dims (kept) and inner dims (reduced; for plain loops, the last
dim). The kernel computes the outer rows [lo, hi) (a 1-d loop: the elements [lo, hi)), so a
launcher can split them across threads. For each row the kernel runs stages: a stage is one
pass over the inner dims that finishes the reductions whose inputs are ready; the last pass
writes full-shaped outputs. A row of an expensive value needed by a later pass is kept in a
scratch row (in cache) rather than computed twice. Every extent is read from the kernel's
size vector `n`, so shapes that differ only in extents share the source and the compiled code.

Kernel signature: `def NAME(inputs..., outputs..., [scratch rows...], lo, hi, n)`; arrays are
C-contiguous with the shapes of their body nodes.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import numpy as np

from jitc.backends.cpu import regions
from jitc.backends.cpu.lowering import STORAGE, TYPE_NAMES, literal, load, lower_elementwise, store
from jitc.core import ops
from jitc.core.errors import JitcError
from jitc.core.ir import Graph, Node
from jitc.core.recursion import run


class LayoutError(JitcError):
    """The fusion body has a layout this generator does not emit (a fusion-contract bug)."""


@dataclass
class KernelSource:
    name: str
    source: str
    inputs: list  # Nodes of the body whose arrays the kernel reads (params, array constants)
    out_args: list  # indices of the body outputs passed as arrays (not written in place)
    rows: int  # size of the row space [lo, hi) ranges over
    work: int  # elements computed: what the launcher weighs against starting threads
    raises: bool  # the kernel can raise (an out-of-bounds gather index)
    # (name, elements, dtype) of scratch rows passed as arguments (LoopKernel scratch_args)
    scratch: list = field(default_factory=list)


_REDUCE_INIT = {
    ("sum", "f"): 0,
    ("sum", "i"): 0,
    ("prod", "f"): 1,
    ("prod", "i"): 1,
    ("sum", "u"): 0,
    ("prod", "u"): 1,
    ("sum", "c"): 0,
    ("prod", "c"): 1,
    ("max", "f"): -np.inf,
    ("min", "f"): np.inf,
    ("and", "b"): True,
    ("or", "b"): False,
    ("sum", "b"): False,
    ("prod", "b"): True,
    ("max", "b"): False,
    ("min", "b"): True,
}


# Elements a float sum adds in its own dtype before the block's total joins a float64
# accumulator. The block's adds are reassociable, so LLVM spreads them over its vector
# lanes (tens of elements per lane); float32 sums then err like NumPy's pairwise ones
# (relative error ~1e-7 where one sequential accumulator erred 2.5e-3 over 2**24 elements).
BLOCK = 1024
# In a 1-d loop split into cells (regions.py), the part of a cell a thread computes: from
# CELL_START up to CELL_END, where its elements [lo, hi) meet the cell.
CELL_START, CELL_END = "s_", "e_"


def _init(kind, dtype):
    if (kind, dtype.kind) in _REDUCE_INIT:
        return literal(_REDUCE_INIT[(kind, dtype.kind)], dtype)
    info = np.iinfo(dtype)
    return literal(info.min if kind == "max" else info.max, dtype)


def _wide_dtype(dtype):
    """The accumulator a blocked sum of `dtype` totals its blocks in."""
    return np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)


def _combine(kind, acc, v, dtype):
    t = TYPE_NAMES[dtype]
    if kind == "sum":
        return f"({acc} or {v})" if dtype.kind == "b" else f"{t}({acc} + {v})"
    if kind == "prod":
        # reassociable: LLVM multiplies in vector lanes
        if dtype.kind == "c":  # NumPy's complex product (fused as its multiply loop)
            return f"{t}(c_mul({acc}, {v}))"
        return (
            f"({acc} and {v})"
            if dtype.kind == "b"
            else (
                f"reassoc_mul({acc}, {t}({v}))"
                if dtype.kind == "f" and dtype != np.float16
                else f"{t}({acc} * {v})"
            )
        )  # float16: each product rounded, in order
    if kind == "and":
        return f"({acc} and {v})"
    if kind == "or":
        return f"({acc} or {v})"
    if dtype.kind == "f":  # NaN-propagating, and a reduction LLVM vectorizes
        return f"{'fmaximum' if kind == 'max' else 'fminimum'}({acc}, {v})"
    if kind == "max":
        return f"({acc} if {acc} >= {v} else {v})"
    return f"({acc} if {acc} <= {v} else {v})"


def _grouped(index: str) -> str:
    """`index` as one operand of `*` or `//`: a chunk's `s_ + i0` times a slice's stride of
    -1 read `s_ + i0 * -1`, past the end of a reversed slice (`x + r[::-1]` wrong in all
    but a loop's first chunk), and `s_ + i0 // 2` likewise."""
    return index if index.isidentifier() or index.isdigit() else f"({index})"


def _scaled(index: str, factor) -> str:
    return index if factor == 1 else f"{_grouped(index)} * {factor}"


def _offset_of(expr: str, v: str) -> str | None:
    """For an index `expr` of the form `offset + v` (any grouping of a sum), the offset
    ("" for `v` alone); None if `v` appears otherwise."""
    terms, stack = [], [ast.parse(expr, mode="eval").body]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            stack += [e.right, e.left]
        else:
            terms.append(e)
    is_v = [isinstance(t, ast.Name) and t.id == v for t in terms]
    rest = [t for t, hit in zip(terms, is_v) if not hit]
    if is_v.count(True) != 1 or any(
        isinstance(x, ast.Name) and x.id == v for t in rest for x in ast.walk(t)
    ):
        return None
    return " + ".join(ast.unparse(t) for t in rest)


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0

    def line(self, text):
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"


class Sizes:
    """Shape-derived integers and float constants become slots of the run-time array `n`,
    so two specializations that differ only in extents or in a float constant (a learning
    rate, a scale) generate the same source and share compiled code."""

    def __init__(self):
        self.values: list[int] = []

    def __call__(self, value) -> str:
        self.values.append(int(value))
        return f"n[{len(self.values) - 1}]"

    def scalar(self, value, dtype) -> str:
        """A constant: floats as a slot holding their bits; integers and booleans stay
        literals (LLVM turns division, remainder and shifts by a known integer into cheap
        code, and no user tunes an integer the way they tune a float)."""
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            return literal(value, dtype)
        slot = self(np.asarray(value, np.float64).view(np.int64))
        return f"{TYPE_NAMES[dtype]}(float_bits({slot}))"


class LoopKernel:
    def __init__(
        self,
        body: Graph,
        name: str,
        sizes: Sizes,
        scratch_args: bool = False,
        aliases: dict | None = None,
        views: list | None = None,
        places: list | None = None,
        packed=None,
    ):
        """scratch_args: scratch rows become kernel arguments (after the outputs) instead of
        np.empty inside the kernel; for AOT, whose kernels cannot allocate. views: output k
        is stored into `outk[<views[k]>]`, a region of the array passed (region writes,
        fusion/region.py). places: (view, indices), where a loop of rows may instead store
        every output into one view, `out0[<view>]`, output k at the index `indices[k]` maps
        the loop's to (a loop axis number, or a literal index), so the stores of one element
        of each output sit side by side in the code (LLVM merges adjacent stores). packed:
        better still, every output stored into one packed row (update_slice.Packed)."""
        self.body = body
        self.scratch_args = scratch_args
        # output index -> the body parameter whose buffer it overwrites (in place): written
        # through the same array, so LLVM sees one pointer, not two it must check for overlap
        self.aliases = aliases or {}
        self.views = views or []
        self.shared_view, self.places = places or (None, None)
        self.packed = packed
        self.name = name
        self.sz = sizes
        self.w = _Writer()
        self.arg_names: dict[Node, str] = {}
        self.inputs: list[Node] = []
        self.reduces = [n for n in body.nodes if n.op in ops.REDUCTIONS]
        self.chunk_slices: dict | None = None  # array -> its chunk's slice (1-d split loops)
        self.row_slices: dict = {}  # (array, leading indices, offset) -> (name, slice)
        # strided rows copied through contiguous scratch rows (_staged): row key -> (scratch
        # name, row name, literal tail, stored into, array)
        self.staged: dict = {}
        self.stage = False
        self.aligned: list = []  # concatenates the cells split at (regions.py)
        self.cell = None  # the cell being written, in _write_cell
        # a 1-d loop split into cells: where this thread's part of the cell starts (CELL_START)
        self.flat_cells = False
        self.constants: dict = {}  # float constant node -> (its local, its slot's value)
        self._plan_iteration()

    # -- layout
    def _plan_iteration(self):
        body = self.body
        if self.reduces:
            shapes = {r.operands[0].shape for r in self.reduces}
            axes = {self._reduced_axes(r) for r in self.reduces}
            if len(shapes) != 1 or len(axes) != 1:
                raise LayoutError(f"reductions over different spaces {shapes} / {axes}")
            self.shape = shapes.pop()
            self.inner = axes.pop()
        else:
            shapes = {o.shape for o in body.outputs}
            if len(shapes) != 1:
                raise LayoutError(f"loop fusion outputs differ in shape: {shapes}")
            self.shape = shapes.pop()
            self.inner = (len(self.shape) - 1,) if self.shape else ()
        self.outer = tuple(d for d in range(len(self.shape)) if d not in self.inner)
        self.index = tuple(f"i{d}" for d in range(len(self.shape)))
        # a 1-d loop: its rows are its elements, so a long vector splits across threads
        self.flat = not self.outer and not self.reduces and len(self.shape) == 1
        if self.flat:  # its rows are chunks of each output: stored through views
            self.places = self.packed = None
        self.rows = (
            self.shape[0]
            if self.flat
            else int(np.prod([self.shape[d] for d in self.outer], dtype=np.int64))
        )
        self.raises = any(n.op == "gather" for n in body.nodes)

    @staticmethod
    def _reduced_axes(r):
        return tuple(r.attrs["axes"]) if r.op == "reduce" else (r.attrs["axis"],)

    def _stages(self):
        """stage[r] for each reduction: 1 + the latest stage it depends on."""
        stage: dict[Node, int] = {}
        depends: dict[Node, int] = {}
        for n in self.body.nodes:
            s = max((depends[o] for o in n.operands), default=-1)
            if n.op in ops.REDUCTIONS:
                stage[n] = s + 1
                depends[n] = s + 1
            else:
                depends[n] = s
        return stage

    # -- values
    def _constant(self, n: Node) -> str:
        """A scalar constant; a float's slot is read once, at the top of the body (read at
        each use, it was most of numba's typing work on a long chain)."""
        if n.dtype.kind != "f":
            return self.sz.scalar(n.attrs["value"][()], n.dtype)
        if n not in self.constants:
            self.constants[n] = (
                f"c{len(self.constants)}",
                self.sz.scalar(n.attrs["value"][()], n.dtype),
            )
        return self.constants[n][0]

    def _array(self, node):
        if node not in self.arg_names:
            self.arg_names[node] = f"a{len(self.inputs)}"
            self.inputs.append(node)
        return self.arg_names[node]

    def value(self, node: Node, idx: tuple, memo: dict) -> str:
        """The expression of `node` at `idx`, writing the lines it needs first (as
        generators on one stack, recursion.py: an op chain is as deep as it is long)."""
        return run(self._memoized(node, idx, memo))

    def _memoized(self, node: Node, idx: tuple, memo: dict):
        key = (node, idx)
        if key not in memo:
            memo[key] = yield self._value(node, idx, memo)
        return memo[key]

    def _value(self, n: Node, idx, memo):
        w = self.w
        op = n.op
        if op == "parameter" or (op == "constant" and n.shape != ()):
            if n in self.scratch and idx == self.index:
                return load(n.dtype, f"{self.scratch[n]}[{self._inner_flat()}]")
            arr = self._array(n)
            if self.chunk_slices is not None and idx == self.index:
                return load(n.dtype, f"{self._chunk_slice(arr)}[j]")
            return load(n.dtype, self._indexed(arr, idx))
        if op == "constant":
            return self._constant(n)
        if op in ops.REDUCTIONS:
            want = tuple(self.index[d] for d in self.outer)
            # a size-1 outer dim is indexed by 0 through broadcasts: the same row
            idx = tuple(
                w if i == "0" and self.shape[d] == 1 else i
                for i, w, d in zip(idx, want, self.outer)
            )
            if idx != want:
                raise LayoutError(f"{op} result read at {idx}, not its row {want}")
            return self.acc[n]
        if n in self.scratch and idx == self.index and self.scratch_ready.get(n):
            return load(n.dtype, f"{self.scratch[n]}[{self._inner_flat()}]")
        if op in ops.ELEMENTWISE:
            args = []
            for o in n.operands:
                args.append((yield self._memoized(o, idx, memo)))
            dtype = n.operands[-1].dtype if op == "select" else n.operands[0].dtype
            expr = lower_elementwise(op, dtype, n.dtype, args, n.attrs)
            var = w.fresh()
            w.line(f"{var} = {expr}")
            if n in self.scratch and idx == self.index:
                w.line(f"{self.scratch[n]}[{self._inner_flat()}] = {store(n.dtype, var)}")
            return var
        if op == "iota":
            return f"{TYPE_NAMES[n.dtype]}({idx[n.attrs['dimension']]})"
        (x,) = n.operands if op not in ("concatenate", "gather") else (None,)
        if op == "broadcast_in_dim":
            dims = n.attrs["broadcast_dimensions"]
            sub = tuple("0" if x.shape[k] == 1 else idx[d] for k, d in enumerate(dims))
            return (yield self._memoized(x, sub, memo))
        if op == "transpose":
            sub = [None] * x.ndim
            for k, p in enumerate(n.attrs["permutation"]):
                sub[p] = idx[k]
            return (yield self._memoized(x, tuple(sub), memo))
        if op == "slice":
            sub = []
            for i, s, st in zip(idx, n.attrs["start"], n.attrs["stride"]):
                term = _scaled(i, st)
                sub.append(term if s == 0 else f"{s} + {term}")
            sub = tuple(f"({e})" if " " in e else e for e in sub)
            return (yield self._memoized(x, sub, memo))
        if op == "reshape":
            sub = self._reshape_index(x.shape, n.shape, idx)
            return (yield self._memoized(x, sub, memo))
        if op == "concatenate":
            return (yield from self._concatenate(n, idx))
        if op == "gather":
            return (yield from self._gather(n, idx, memo))
        raise LayoutError(f"cannot generate {op} inside a loop kernel")

    def _reshape_index(self, src, dst, idx):
        """Index into `src` for index `idx` of the reshaped `dst`.

        Dims pair up into groups of equal product (unit dims map for free). A src dim split
        into several dst dims is a sum of products; dst dims merged from several src dims
        need a division per src dim, by literal divisors (LLVM turns a division by a
        constant into multiplies; the outermost dim of a group never divides, so batch
        extents stay run-time sizes)."""
        src_dims = [k for k, d in enumerate(src) if d != 1]
        dst_dims = [k for k, d in enumerate(dst) if d != 1]
        out = ["0"] * len(src)
        si = di = 0
        while si < len(src_dims) or di < len(dst_dims):
            gs, gd = [src_dims[si]], [dst_dims[di]]
            ps, pd = src[gs[0]], dst[gd[0]]
            si, di = si + 1, di + 1
            while ps != pd:
                if ps < pd:
                    gs.append(src_dims[si])
                    ps *= src[src_dims[si]]
                    si += 1
                else:
                    gd.append(dst_dims[di])
                    pd *= dst[dst_dims[di]]
                    di += 1
            terms, stride = [], 1  # the group's flat index, from the dst side
            for k in reversed(gd):
                terms.append(idx[k] if stride == 1 else _scaled(idx[k], self.sz(stride)))
                stride *= dst[k]
            flat = " + ".join(reversed(terms))
            if len(gs) == 1:
                out[gs[0]] = flat if len(gd) == 1 else f"({flat})"
                continue
            if len(gd) > 1:
                name = self.w.fresh("f")
                self.w.line(f"{name} = {flat}")
                flat = name
            stride = int(np.prod([src[k] for k in gs], dtype=np.int64))
            for j, k in enumerate(gs):
                stride //= src[k]
                q = flat if stride == 1 else f"({_grouped(flat)} // {stride})"
                out[k] = q if j == 0 else f"({_grouped(q)} % {src[k]})"
        return tuple(out)

    def _concatenate(self, n, idx):
        w = self.w
        dim = n.attrs["dimension"]
        chosen = regions.operand_in(n, self.cell) if self.cell and n in self.aligned else None
        if chosen is not None:  # the cell lies in one operand: no branch
            offset, part = chosen
            sub = list(idx)
            if offset:
                sub[dim] = self._shifted(idx[dim], offset)
            return (yield self._memoized(part, tuple(sub), {}))
        var = w.fresh()
        offset = 0
        for k, o in enumerate(n.operands):
            hi = offset + o.shape[dim]
            cond = f"{idx[dim]} < {self.sz(hi)}"
            w.line(
                ("if " if k == 0 else "elif " if k < len(n.operands) - 1 else "else")
                + (f"{cond}:" if k < len(n.operands) - 1 else ":")
            )
            w.depth += 1
            sub = list(idx)
            if offset:
                sub[dim] = f"({idx[dim]} - {self.sz(offset)})"
            v = yield self._memoized(o, tuple(sub), {})  # defined in this branch only
            w.line(f"{var} = {v}")
            w.depth -= 1
            offset = hi
        return var

    def _shifted(self, index: str, offset: int) -> str:
        """`index - offset` inside a cell, which starts at or after `offset`: as
        `nonneg(start - offset) + v` where `index` is `start + v` in the innermost loop
        variable v, so that the access still goes through a row slice."""
        v = self.index[self.inner[-1]] if self.inner else None
        start = _offset_of(index, v) if v else None
        if start is None:
            return f"({index} - {self.sz(offset)})"
        return f"nonneg({start or 0} - {self.sz(offset)}) + {v}"

    def _gather(self, n, idx, memo):
        w = self.w
        x, ind = n.operands
        axis = n.attrs["axis"]
        k = w.fresh("k")
        raw = yield self._memoized(ind, idx[axis : axis + ind.ndim], memo)
        size = self.sz(x.shape[axis])
        w.line(f"{k} = np.int64({raw})")
        w.line(f"if {k} < 0:")
        w.line(f"    {k} += {size}")
        w.line(f"if {k} < 0 or {k} >= {size}:")
        w.line(f"    raise IndexError('gather index out of bounds for axis {axis}')")
        sub = idx[:axis] + (k,) + idx[axis + ind.ndim :]
        return (yield self._memoized(x, sub, memo))

    def _indexed(self, arr: str, idx: tuple, stored: bool = False) -> str:
        """`arr` at `idx`. Where only the last index moves in the innermost loop, and by the
        loop variable itself, the access goes through a row slice taken once per row: the
        loop then indexes by its own non-negative variable, which LLVM vectorizes without
        numba's negative-index wraparound (indexing by `i1 * n + i2` was 10x slower)."""
        if (self.flat and not self.flat_cells) or not self.inner or not idx:
            return f"{arr}[{', '.join(idx)}]" if idx else f"{arr}[()]"
        v = self.index[self.inner[-1]]
        moving = [k for k, e in enumerate(idx) if re.search(rf"\b{v}\b", e)]
        if len(moving) != 1:
            return f"{arr}[{', '.join(idx)}]"
        (at,) = moving
        offset = _offset_of(idx[at], v)
        head, tail = idx[:at], idx[at + 1 :]
        if offset is None or not all(map(self._row_invariant, head + tail + (offset or "0",))):
            return f"{arr}[{', '.join(idx)}]"
        fixed = ""
        if tail and all(t.isdigit() for t in tail):  # T[i, j, :, 0, 1]: rows of T[i, j]
            fixed, tail = ", " + ", ".join(tail), ()
        if not head and not tail and not offset:
            return f"{arr}[{v}{fixed}]"
        key = (arr, head, offset, tail)
        if key not in self.row_slices:
            # a row along a middle axis (`T[i, j, :, k, 1]`) is a strided view
            row = list(head) + [f"{offset}:" if offset or tail else ""] + list(tail)
            self.row_slices[key] = (
                self.w.fresh(f"{arr}_r"),
                f"{arr}[{', '.join(x for x in row if x)}]",
            )
        name = self.row_slices[key][0]
        strided = bool(fixed or tail) or (stored and (self.views or self.places is not None))
        if self.stage and strided:
            return f"{self._staged(key + (fixed, stored), name, fixed, stored)}[{v}]"
        return f"{name}[{v}{fixed}]"

    def _copy_staged(self, stored: bool, emit: bool = True) -> list:
        """The loop copying the staged input rows in (stored=False) or the output rows out,
        emitted at the present depth, or returned unindented (emit=False)."""
        rows = [x for x in self.staged.values() if x[3] == stored]
        if not rows:
            return []
        lines = [f"for t_ in range({self.sz(self.shape[self.inner[-1]])}):"]
        for buf, row, fixed, _, _ in rows:
            lines.append(
                f"    {row}[t_{fixed}] = {buf}[t_]"
                if stored
                else f"    {buf}[t_] = {row}[t_{fixed}]"
            )
        if emit:
            for line in lines:
                self.w.line(line)
        return lines

    def _staged(self, key, row: str, fixed: str, stored: bool) -> str:
        """The contiguous scratch row standing for strided row `row` (at `fixed` trailing
        indices): an input's is filled at the row's start, an output's copied out at its
        end, so the loop between runs on contiguous rows and its math vectorizes (a tanh
        limiter over the strided slabs of a 5-d array ran scalar: 1.7x)."""
        if key not in self.staged:
            self.staged[key] = (f"{row}_s{len(self.staged)}", row, fixed, stored, key[0])
        return self.staged[key][0]

    def _stored(self, k: int, out: str) -> str:
        """Where output k's element at the loop's index is stored."""
        if not self.packed:
            return self._indexed(out, self._placed(k, self.index), stored=True)
        p = self.packed
        heads = ", ".join(
            f"{start} + {stride} * {self.index[d]}" for d, (start, stride) in enumerate(p.heads)
        )
        key = ("out0", "packed")
        if key not in self.row_slices:
            whole = f"out0[{heads}]" if heads else "out0"
            self.row_slices[key] = (
                self.w.fresh("out0_p"),
                f"run_from({whole}, {p.start} * {p.block})",
            )
        name = self.row_slices[key][0]
        at = f" * {p.step} + {p.offsets[k]}"  # follows the loop variable
        if self.stage:
            name = self._staged(key + (at, True), name, at, True)
            at = ""
        return f"{name}[{self.index[self.inner[-1]]}{at}]"

    def _placed(self, k: int, idx: tuple) -> tuple:
        """The index output k is stored at, for the loop's index `idx`."""
        if self.places is None:
            return idx
        return tuple(idx[e] if isinstance(e, int) else e for e in self.places[k])

    def _row_invariant(self, expr: str) -> bool:
        """Does `expr` use only the row's (outer) indices, sizes and literals?"""
        names = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"\bn\[\d+\]", "", expr)))
        return names <= {self.index[d] for d in self.outer} | {CELL_START}

    def _chunk_slice(self, arr: str) -> str:
        """`arr[lo:hi]` for this thread's chunk of a 1-d loop. Indexing the slice from 0
        (rather than arr at lo + j) lets LLVM see a non-negative index and drop numba's
        negative-index wraparound, which otherwise blocks vectorization of the loop."""
        return self.chunk_slices.setdefault(arr, f"{arr}_c")

    def _inner_flat(self):
        terms, stride = [], 1
        for d in reversed(self.inner):
            terms.append(self.index[d] if stride == 1 else _scaled(self.index[d], self.sz(stride)))
            stride *= self.shape[d]
        return " + ".join(reversed(terms)) or "0"

    # -- structure
    def _output_index(self, out: Node):
        if out.shape == self.shape:
            return self.index, True
        row = tuple(self.shape[d] for d in self.outer)
        if out.shape == row:
            return tuple(self.index[d] for d in self.outer), False
        keep = tuple(1 if d in self.inner else self.shape[d] for d in range(len(self.shape)))
        if self.reduces and out.shape == keep:
            return tuple(
                "0" if d in self.inner else self.index[d] for d in range(len(self.shape))
            ), False
        raise LayoutError(
            f"output {out.type_str()} fits neither the iteration shape {self.shape} nor its rows"
        )

    def _needs_scratch(self, stages, final):
        """Expensive full-shape values read in more than one pass get a scratch row."""
        readers: dict[Node, set] = {}
        seen: set = set()
        roots = [(o, s) for r, s in stages.items() for o in r.operands]
        roots += [(out, final) for out in self.body.outputs if out.shape == self.shape]
        stack = roots[::-1]
        while stack:  # depth first, operands in order (an explicit stack: chains are deep)
            n, s = stack.pop()
            if (n, s) in seen or n.op in ops.REDUCTIONS:
                continue
            seen.add((n, s))
            if n.shape == self.shape and n.op in ops.EXPENSIVE:
                readers.setdefault(n, set()).add(s)
            stack += [(o, s) for o in reversed(n.operands)]
        return [n for n, s in readers.items() if len(s) > 1]

    def generate(self) -> KernelSource:
        w = self.w
        body = self.body
        stages = self._stages()
        final = max(stages.values(), default=-1) + 1
        self.acc = {r: f"acc{k}" for k, r in enumerate(self.reduces)}
        self.scratch = {n: f"row{k}" for k, n in enumerate(self._needs_scratch(stages, final))}
        self.scratch_ready: dict = {}
        outs = [
            self._array(self.aliases[k]) if k in self.aliases else f"out{k}"
            for k in range(len(body.outputs))
        ]
        arg_outs = list(outs)
        inner_size = int(np.prod([self.shape[d] for d in self.inner], dtype=np.int64))
        self.aligned = regions.aligned_concatenates(body.outputs, self.shape)
        cells = None if self.reduces else regions.cells(body.outputs, self.shape, self.aligned)
        self.flat_cells = self.flat and cells is not None
        if cells is not None:  # a cell's stores are offset along the row: not packed
            self.packed = None
        if self.places is not None or self.packed:  # every output is stored into out0
            outs = ["out0"] * len(outs)
        body_start = len(w.lines)
        self.stage = (
            not self.scratch_args
            and not self.reduces
            and not self.flat
            and cells is None
            and any(n.op in ops.EXPENSIVE for n in body.nodes)
        )

        if self.flat:  # rows are elements: each array is read through its [lo:hi] slice
            slices_at = len(w.lines)
            self.chunk_slices = {}
            if not self.flat_cells:  # else each cell loops over its part of [lo, hi)
                w.line("for j in range(hi - lo):")
                w.depth += 1
                w.line("i0 = lo + j")
        else:
            if not self.scratch_args:
                for node, scr in self.scratch.items():
                    w.line(f"{scr} = scratch({self.sz(inner_size)}, {STORAGE[node.dtype]})")
            alloc_at = len(w.lines)
            for k, d in enumerate(self.outer):  # the first row's index
                size = int(np.prod([self.shape[e] for e in self.outer[k + 1 :]], dtype=np.int64))
                extent = self.sz(self.shape[d])
                w.line(
                    f"i{d} = (lo // {self.sz(size)}) % {extent}"
                    if k + 1 < len(self.outer)
                    else f"i{d} = lo % {extent}"
                )
            w.line("for o in range(lo, hi):")
            w.depth += 1
            rows_at, rows_depth = len(w.lines), w.depth
        for s in range(final + 1):
            ready = [r for r, rs in stages.items() if rs == s]
            for r in ready:
                if self._blocked(r):
                    w.line(f"{self._wide(r)} = {literal(0, _wide_dtype(r.dtype))}")
                elif r.op == "reduce":
                    w.line(f"{self.acc[r]} = {_init(r.attrs['kind'], r.dtype)}")
                else:
                    w.line(f"{self.acc[r]} = np.int64(0)")
                    worst = _init("max" if r.op == "argmax" else "min", r.operands[0].dtype)
                    w.line(f"best{self.acc[r]} = {worst}")
                    w.line(f"seen{self.acc[r]} = False")
            writes = [
                (k, o)
                for k, o in enumerate(body.outputs)
                if s == final and self._output_index(o)[1]
            ]
            if not ready and not writes:
                continue
            if cells is not None:  # no reductions: the one stage writes every output
                self._write_cells(cells, outs)
                continue
            depth = w.depth
            blocked = [r for r in ready if self._blocked(r)]
            if not self.flat:
                self._open_inner(blocked)
            memo: dict = {}
            for r in ready:
                v = self.value(r.operands[0], self.index, memo)
                if r in blocked and r.dtype.kind == "c":  # in complex128, in order
                    w.line(f"{self._block(r)} = {self._block(r)} + np.complex128({v})")
                elif r in blocked:
                    t = TYPE_NAMES[self._block_dtype(r)]
                    w.line(f"{self._block(r)} = reassoc_add({self._block(r)}, {t}({v}))")
                elif r.op == "reduce":
                    w.line(f"{self.acc[r]} = {_combine(r.attrs['kind'], self.acc[r], v, r.dtype)}")
                else:
                    self._arg_update(r, v)
            for k, o in writes:
                v = store(o.dtype, self.value(o, self.index, memo))
                if self.flat:
                    w.line(f"{self._chunk_slice(outs[k])}[j] = {v}")
                else:
                    w.line(f"{self._stored(k, outs[k])} = {v}")
            for n in self.scratch:
                if (n, self.index) in memo:
                    self.scratch_ready[n] = True
            self._close_inner(blocked, depth)
        for k, o in enumerate(body.outputs):
            idx, full = self._output_index(o)
            if not full:
                v = store(o.dtype, self.value(o, idx, {}))
                w.line(f"{outs[k]}[{', '.join(idx)}] = {v}" if idx else f"{outs[k]}[()] = {v}")
        if not self.flat:
            self._copy_staged(stored=True)
            self._next_row()
        if self.flat:
            w.lines[slices_at:slices_at] = [
                "    " + f"{s} = {a}[lo:hi]" for a, s in self.chunk_slices.items()
            ]
        else:
            w.lines[rows_at:rows_at] = [
                "    " * rows_depth + f"{name} = {expr}" for name, expr in self.row_slices.values()
            ] + ["    " * rows_depth + line for line in self._copy_staged(stored=False, emit=False)]
            w.lines[alloc_at:alloc_at] = [
                f"    {buf} = scratch({self.sz(self.shape[self.inner[-1]])}, {arr}.dtype)"
                for buf, _, _, _, arr in self.staged.values()
            ]
        loop = w.lines[body_start:]
        scratch = (
            [(s, inner_size, n.dtype) for n, s in self.scratch.items()] if self.scratch_args else []
        )
        out_args = [k for k in range(len(outs)) if k not in self.aliases]
        args = ", ".join(
            [self.arg_names[n] for n in self.inputs]
            + [arg_outs[k] for k in out_args]
            + [s for s, _, _ in scratch]
            + ["lo", "hi", "n"]
        )
        src = (
            [f"def {self.name}({args}):"]
            + (
                []
                if self.packed
                else [f"    out0 = out0[{self.shared_view}]"]
                if self.places is not None
                else [f"    out{k} = out{k}[{view}]" for k, view in enumerate(self.views)]
            )
            + [f"    {name} = {expr}" for name, expr in self.constants.values()]
            + loop
        )
        work = int(np.prod(self.shape, dtype=np.int64))
        return KernelSource(
            self.name,
            "\n".join(src) + "\n",
            list(self.inputs),
            out_args,
            self.rows,
            work,
            self.raises,
            scratch,
        )

    def _next_row(self):
        """Step the row index like an odometer: a division per row was most of the time of
        a loop whose rows are short (a region of 6006 rows of 11 elements: 2.3x)."""
        w = self.w
        depth = w.depth
        for k, d in enumerate(reversed(self.outer)):
            w.line(f"i{d} += 1")
            if k + 1 == len(self.outer):
                break  # the first axis never wraps within the rows of one call
            w.line(f"if i{d} == {self.sz(self.shape[d])}:")
            w.depth += 1
            w.line(f"i{d} = 0")
        w.depth = depth

    # -- blocked summation: float sums add BLOCK elements in the sum's dtype (vector lanes),
    # then add each block's total into a float64 accumulator; complex sums add in complex128
    def _blocked(self, r) -> bool:
        """Is `r` a float or complex sum over a loop (summed in blocks)?"""
        return (
            r.op == "reduce"
            and r.attrs["kind"] == "sum"
            and r.dtype.kind in "fc"
            and r.dtype != np.float16
            and bool(self.inner)
        )  # float16: rounds each add

    def _block(self, r):
        return f"blk{self.acc[r]}"

    def _block_dtype(self, r):
        """A block adds in the sum's dtype where its loop runs along memory (LLVM spreads it
        over vector lanes); a strided loop (sum over axis 0) stays sequential, so it adds in
        float64, at no cost beside its cache misses. A complex sum adds in complex128 (NumPy
        sums complex64 pairwise: a sequential complex64 sum would err far more)."""
        if r.dtype.kind == "c":
            return np.dtype(np.complex128)
        return r.dtype if self.inner[-1] == len(self.shape) - 1 else np.dtype(np.float64)

    def _wide(self, r):
        return f"wide{self.acc[r]}"

    def _open_inner(self, blocked):
        """The loops over the inner dims; the last one in blocks when a float sum reads it."""
        w = self.w
        for d in self.inner[:-1]:
            w.line(f"for i{d} in range({self.sz(self.shape[d])}):")
            w.depth += 1
        if not self.inner:
            return
        d = self.inner[-1]
        extent = self.sz(self.shape[d])
        if not blocked:
            w.line(f"for i{d} in range({extent}):")
            w.depth += 1
            return
        w.line(f"for b{d} in range(0, {extent}, {BLOCK}):")
        w.depth += 1
        for r in blocked:
            w.line(f"{self._block(r)} = {literal(0, self._block_dtype(r))}")
        left = f"{extent} - b{d}"  # min() would compile numba's overload in every process
        w.line(f"for k{d} in range({left} if {left} < {BLOCK} else {BLOCK}):")
        w.line(f"    i{d} = nonneg(b{d} + k{d})")
        w.depth += 1

    def _close_inner(self, blocked, depth):
        """Back to `depth`: each block's total goes into its float64 accumulator, and once
        all blocks are in, the sum is rounded once to its dtype."""
        w = self.w
        if blocked:
            w.depth -= 1
            for r in blocked:
                w.line(f"{self._wide(r)} += {TYPE_NAMES[_wide_dtype(r.dtype)]}({self._block(r)})")
        w.depth = depth
        for r in blocked:
            w.line(f"{self.acc[r]} = {TYPE_NAMES[r.dtype]}({self._wide(r)})")

    def _write_cells(self, cells, outs):
        """Write outputs that are concatenates cell by cell (regions.py): a row picks its
        cells with one test, and each cell along the last axis is a loop with no branch."""
        w = self.w
        rows: dict = {}
        for c in cells:
            rows.setdefault(tuple((c.lo[d], c.hi[d]) for d in self.outer), []).append(c)
        for r, (ranges, group) in enumerate(rows.items()):
            if len(rows) > 1:
                tests = [
                    f"{self.sz(lo)} <= {self.index[d]}"
                    for d, (lo, _) in zip(self.outer, ranges)
                    if lo > 0
                ]
                tests += [
                    f"{self.index[d]} < {self.sz(hi)}"
                    for d, (_, hi) in zip(self.outer, ranges)
                    if hi < self.shape[d]
                ]
                w.line(
                    "else:"
                    if r == len(rows) - 1
                    else f"{'elif' if r else 'if'} {' and '.join(tests)}:"
                )
                w.depth += 1
            for c in group:
                self._write_cell(c, outs)
            if len(rows) > 1:
                w.depth -= 1

    def _write_cell(self, cell, outs):
        """One cell's loop over the last axis; each output reads the operand covering it."""
        w = self.w
        last = self.inner[-1]
        v = self.index[last]

        def shifted(i, by):
            return i if by == 0 else f"({i} - {self.sz(by)})"

        lo, hi = cell.lo[last], cell.hi[last]

        def plus(at):
            if not self.flat_cells:
                return v if at == 0 else f"{self.sz(at)} + {v}"
            shift = at - lo  # from where this thread's part of the cell starts
            if shift == 0:
                return f"{CELL_START} + {v}"
            sign = "+" if shift > 0 else "-"
            return f"({CELL_START} {sign} {self.sz(abs(shift))}) + {v}"

        if self.flat_cells:  # the cell's part of this thread's elements [lo, hi)
            w.line(f"{CELL_START} = max(lo, {self.sz(lo)})")
            w.line(f"{CELL_END} = min(hi, {self.sz(hi)})")
        start, saved = len(w.lines), self.row_slices
        self.row_slices = {}  # row slices are taken inside the cell: rows of its leaves
        self.cell = cell
        count = f"{CELL_END} - {CELL_START}" if self.flat_cells else self.sz(hi - lo)
        w.line(f"for {v} in range({count}):")
        w.depth += 1
        memo: dict = {}
        for k, box in enumerate(cell.boxes):
            head = tuple(self.index[d] for d in self.outer)
            sub = tuple(shifted(self.index[d], box.start[d]) for d in self.outer)
            value = self.value(box.leaf, sub + (plus(lo - box.start[last]),), memo)
            at = self._placed(k, head + (plus(lo),))
            w.line(f"{self._indexed(outs[k], at, stored=True)} = {store(box.leaf.dtype, value)}")
        w.depth -= 1
        self.cell = None
        w.lines[start:start] = [
            "    " * w.depth + f"{name} = {expr}" for name, expr in self.row_slices.values()
        ]
        self.row_slices = saved

    def _arg_update(self, r, v):
        w = self.w
        acc = self.acc[r]
        axis_var = self.index[r.attrs["axis"]]
        cmp = ">" if r.op == "argmax" else "<"
        w.line(
            f"if not seen{acc} or ({v} {cmp} best{acc} and best{acc} == best{acc}) or "
            f"({v} != {v} and best{acc} == best{acc}):"
        )
        w.line(f"    best{acc} = {v}")
        w.line(f"    {acc} = np.int64({axis_var})")
        w.line(f"    seen{acc} = True")
