"""A fused graph as a device program: flat buffers and the kernel launches that fill them.

Nothing here touches a GPU or numba.cuda: a Program is plain data (kernel sources, buffer
sizes, argument lists), so PTX for every kernel can be made on a machine without a GPU.

Top-level nodes map as the fusion contract says: parameters and constants are buffers; `get`
and views (`reshape`, a contiguous slice of a parameter: fusion/views.py) name an existing
buffer or a range of it (every buffer is flat and C-ordered, so a view is free); a fusion
or a single op is one kernel (loop, reduction or dot). A dot fusion whose epilogue reduces
rows (softmax after a matmul) runs as the dot into a temporary, then the
epilogue as a row kernel. With `library_dots` (a GPU with CuPy), large float dots go to
cuBLAS through cupy.matmul and their epilogue is the following kernel. A `while` node is a
HostLoop: its step a Program of its own, which the host runs while the flag it computes is
true (XLA's `While` on the GPU before conditional graph nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitc.backends.cuda.dot import DotLayout, dot_kernel
from jitc.backends.cuda.kernel import Kernel
from jitc.backends.cuda.linalg import linalg_kernel
from jitc.backends.cuda.loop import loop_kernel
from jitc.backends.cuda.reduction import reduction_kernel
from jitc.backends.cuda.scan import scan_kernel
from jitc.backends.cuda.scatter import scatter_kernel
from jitc.backends.cuda.sort import sort_kernel
from jitc.backends.cuda.update_slice import copy_kernel, update_slice_kernels
from jitc.core import ops
from jitc.core.errors import UnsupportedError
from jitc.core.ir import Graph, Node
from jitc.core.source import where
from jitc.fusion.contract import single_op_body
from jitc.fusion.region import reads_base_in_region, region_of
from jitc.fusion.views import block_offset, external_view

LIBRARY_MIN_FLOPS = 1 << 21  # below this many multiply-adds our kernels beat a cuBLAS call


@dataclass
class Buffer:
    """kind: "param" (index = the argument), "const" (value), "temp", "view": `size`
    elements from element `offset` of buffer `index` (a slice of a parameter or constant),
    or "loop": a loop's result, the array its last trip left (HostLoop)."""

    size: int
    dtype: np.dtype
    kind: str
    index: int = -1
    value: np.ndarray | None = None
    offset: int = 0


@dataclass
class Launch:
    kernel: Kernel
    inputs: list  # buffer ids, in the kernel's argument order
    outputs: list


@dataclass
class LibraryDot:
    """out = dot_general(lhs, rhs) by cupy.matmul (cuBLAS) on (B, M, K) x (B, K, N) views."""

    dot: Node
    lhs: int
    rhs: int
    out: int


@dataclass
class Raise:
    """An error NumPy raises for these shapes whatever the values (a gather from an empty axis)."""

    exc: type
    message: str


@dataclass
class Program:
    buffers: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # buffer id per graph output
    output_shapes: list = field(default_factory=list)
    output_aliases_input: list = field(default_factory=list)  # a param/const: copy it

    def all_steps(self):
        """Every step, a loop's body's after the loop."""
        for s in self.steps:
            yield s
            if isinstance(s, HostLoop):
                yield from s.body.all_steps()

    @property
    def kernels(self) -> list[Kernel]:
        """Every distinct kernel, in first-launch order."""
        seen: dict = {}
        for s in self.all_steps():
            if isinstance(s, Launch):
                seen.setdefault(s.kernel.name, s.kernel)
        return list(seen.values())


@dataclass
class HostLoop:
    """`while flag: carried = body(carried, invariants)` run by the host: `body` computes
    the next carried values and, last, the next flag, which the host reads back each trip.
    The carried values are copied in first, so `results` (kind "loop" buffers) are the
    loop's own arrays however many trips ran."""

    body: Program
    flag: int  # buffer ids in the graph around the loop
    carried: list
    invariants: list
    results: list


def _aliases_input(n: Node) -> bool:
    """Does n name a parameter's or constant's bytes (so a result must copy them)?"""
    while n.op == "reshape":
        n = n.operands[0]
    return n.op in ("parameter", "constant") or external_view(n) is not None


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def split_dot_body(body: Graph, dot: Node) -> Graph:
    """The body without its dot: the dot's value becomes the last parameter."""
    epilogue = Graph(body.name + "_epilogue")
    mapping: dict[Node, Node] = {}
    for m in body.nodes:
        if m.op == "parameter":
            mapping[m] = epilogue.add_parameter(m.shape, m.dtype)
    mapping[dot] = epilogue.add_parameter(dot.shape, dot.dtype)
    for m in body.nodes:
        if m.op != "parameter" and m is not dot:
            mapping[m] = epilogue.add(
                m.op, [mapping[o] for o in m.operands], m.attrs, m.shape, m.dtype, m.loc
            )
    epilogue.outputs = [mapping[o] for o in body.outputs]
    return epilogue


def _bare_dot_body(node: Node) -> Graph:
    body = Graph("dot")
    lhs, rhs = (body.add_parameter(o.shape, o.dtype) for o in node.operands)
    body.outputs = [body.add("dot_general", [lhs, rhs], dict(node.attrs), node.shape, node.dtype)]
    return body


class _Builder:
    def __init__(self, graph: Graph, library_dots: bool):
        self.graph = graph
        self.library_dots = library_dots
        self.p = Program()
        self.names: dict[Node, object] = {}  # node -> buffer id (or tuple of ids)

    def buffer(self, shape, dtype, kind="temp", **kw) -> int:
        self.p.buffers.append(Buffer(_size(shape), np.dtype(dtype), kind, **kw))
        return len(self.p.buffers) - 1

    def outputs_of(self, n: Node) -> list[int]:
        if n.tuple_types is None:
            bid = self.buffer(n.shape, n.dtype)
            self.names[n] = bid
            return [bid]
        ids = [self.buffer(s, d) for s, d in n.tuple_types]
        self.names[n] = tuple(ids)
        return ids

    def build(self) -> Program:
        self.users = self.graph.users()
        self.position = {n: i for i, n in enumerate(self.graph.nodes)}
        for n in self.graph.nodes:
            if n.op == "parameter":
                self.names[n] = self.buffer(n.shape, n.dtype, "param", index=n.attrs["index"])
            elif n.op == "constant":
                value = np.ascontiguousarray(n.attrs["value"], dtype=n.dtype)
                self.names[n] = self.buffer(n.shape, n.dtype, "const", value=value)
            elif n.op == "get":
                self.names[n] = self.names[n.operands[0]][n.attrs["index"]]
            elif n.op == "reshape":
                self.names[n] = self.names[n.operands[0]]
            elif external_view(n) is not None:
                self.names[n] = self.buffer(
                    n.shape,
                    n.dtype,
                    "view",
                    index=self.names[n.operands[0]],
                    offset=block_offset(n),
                )
            elif n.op == "fusion":
                self.fusion(n)
            elif n.op == "while":
                self.host_loop(n)
            elif n.op == "dot_general":
                (out,) = self.outputs_of(n)
                self.dot(_bare_dot_body(n), [self.names[o] for o in n.operands], [out])
            else:
                self.single_op(n)
        for o in self.graph.outputs:
            self.p.outputs.append(self.names[o])
            self.p.output_shapes.append(o.shape)
            self.p.output_aliases_input.append(_aliases_input(o))
        return self.p

    def _dies_at(self, buffer: int, n: Node) -> bool:
        """Is temporary `buffer` read by nothing after node n, nor a result of the graph?"""
        if self.p.buffers[buffer].kind != "temp":
            return False
        sharing = [m for m, b in self.names.items() if b == buffer]
        if any(m in self.graph.outputs for m in sharing):
            return False
        users = self.users
        at = self.position[n]
        return all(self.position[u] <= at for m in sharing for u in users[m])

    def _keep_unwritten(self, n: Node, base: Node, outs, copy: Kernel, in_place=True):
        """The outputs a region write n writes into: its base's buffer where that dies at n
        (and n may overwrite it: `in_place`), else `outs` after a copy of the base."""
        buffer = self.names[base]
        if in_place and self._dies_at(buffer, n):
            self.p.buffers.pop()  # the buffer outputs_of made for n
            self.names[n] = buffer
            return [buffer]
        self.launch(copy, [buffer], outs)
        return outs

    def host_loop(self, n: Node):
        k = n.attrs["carried"]
        ids = [self.names[o] for o in n.operands]
        results = [self.buffer(s, d, "loop") for s, d in n.tuple_types]
        self.names[n] = tuple(results)
        body = build_program(n.subgraph, self.library_dots)
        self.p.steps.append(HostLoop(body, ids[0], ids[1 : 1 + k], ids[1 + k :], results))

    def launch(self, kernel: Kernel, inputs, outputs):
        self.p.steps.append(Launch(kernel, list(inputs), list(outputs)))

    def single_op(self, n: Node):
        outs = self.outputs_of(n)
        if n.op == "gather" and n.size and n.operands[0].shape[n.attrs["axis"]] == 0:
            self.p.steps.append(
                Raise(
                    IndexError,
                    (f"index out of bounds: gather from axis {n.attrs['axis']} of size 0"),
                )
            )
            return
        if n.op == "scatter":
            self.launch(scatter_kernel(n), [self.names[o] for o in n.operands], outs)
            return
        if n.op == "update_slice":
            copy, *region = update_slice_kernels(n)
            outs = self._keep_unwritten(n, n.operands[0], outs, copy)
            for k in region:
                self.launch(k, [self.names[n.operands[1]]], outs)
            return
        if n.op == "fft":
            raise UnsupportedError(
                f"{n.loc.api if n.loc and n.loc.api else ops.FFT_KINDS[n.attrs['kind']]} is "
                f"not supported on the cuda backend (it has no FFT kernels; use the cpu "
                f"backend){where(n.loc)}"
            )
        if n.op == "linalg":
            if n.size:
                self.launch(linalg_kernel(n), [self.names[o] for o in n.operands], outs)
            return
        if n.op == "cumulative":
            if n.size:
                self.launch(scan_kernel(n), [self.names[o] for o in n.operands], outs)
            return
        if n.op in ops.SORTS:
            if n.size:
                self.launch(sort_kernel(n), [self.names[o] for o in n.operands], outs)
            return
        body, sources = single_op_body(n)
        gen = reduction_kernel if n.op in ops.REDUCTIONS else loop_kernel
        self.launch(gen(body), [self.names[s] for s in sources], outs)

    def fusion(self, n: Node):
        body = n.subgraph
        inputs = [self.names[o] for o in n.operands]
        outs = self.outputs_of(n)
        if n.attrs["kind"] == "region":
            region = region_of(n)
            base = n.operands[region.base]
            outs = self._keep_unwritten(n, base, outs, copy_kernel(n), reads_base_in_region(n))
            if region.value.outputs[0].size:
                kernel = loop_kernel(region.value, region.writes, n.shape)
                self.launch(kernel, inputs, outs * len(region.writes))
            return
        dots = [m for m in body.nodes if m.op == "dot_general"]
        if dots:
            self.dot(body, inputs, outs)
        elif any(m.op in ops.REDUCTIONS for m in body.nodes):
            self.launch(reduction_kernel(body), inputs, outs)
        else:
            self.launch(loop_kernel(body), inputs, outs)

    def _use_library(self, dot: Node) -> bool:
        lay = DotLayout(dot)
        return (
            self.library_dots
            and dot.dtype.kind == "f"
            and lay.B * lay.M * lay.N * lay.K >= LIBRARY_MIN_FLOPS
        )

    def dot(self, body: Graph, inputs, outs):
        """A dot body: one kernel with the epilogue on the accumulators, or the dot into a
        temporary (cuBLAS, or our kernel when the epilogue reduces rows) and the epilogue."""
        (dot,) = [m for m in body.nodes if m.op == "dot_general"]
        reduces = any(m.op in ops.REDUCTIONS for m in body.nodes)
        library = self._use_library(dot)
        if not reduces and not library:
            self.launch(dot_kernel(body), inputs, outs)
            return
        lhs, rhs = (inputs[p.attrs["index"]] for p in dot.operands)
        bare = body.outputs == [dot]
        temp = outs[0] if bare else self.buffer(dot.shape, dot.dtype)
        if library:
            self.p.steps.append(LibraryDot(dot, lhs, rhs, temp))
        else:
            self.launch(dot_kernel(_bare_dot_body(dot)), [lhs, rhs], [temp])
        if bare:
            return
        epilogue = split_dot_body(body, dot)
        gen = reduction_kernel if reduces else loop_kernel
        self.launch(gen(epilogue), inputs + [temp], outs)


def build_program(graph: Graph, library_dots: bool = False) -> Program:
    return _Builder(graph, library_dots).build()
