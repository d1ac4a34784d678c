"""A fused graph -> the AOT program: numba kernel source plus the static `EntryPlan` that calls it.

This is the cpu backend's driver made static. The kernels come from the cpu backend's own
emitters (`LoopKernel`, `dot_lines`), with three AOT differences: sizes are literals (the
specs fix every shape), scratch rows are kernel arguments pointing into the temp arena (no
allocation: objects have no runtime), and dots always use the generated loops (no BLAS).
Buffers follow `jitc.fusion.plan_buffers`: intermediates at fixed arena offsets, in-place
where it allows, results straight into the caller's result buffers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from jitc import ops
from jitc.aot.link import AotLinkError, ArrayArg, EntryPlan, KernelCall
from jitc.backends.cpu.codegen import FASTMATH, HEADER, _single_op_body
from jitc.backends.cpu.dot import dot_lines
from jitc.backends.cpu.loops import LoopKernel, Sizes
from jitc.fusion import plan_buffers
from jitc.ir import Graph, Node
from jitc.primitives import dot_free_dims

ALIGN = 64
DECORATOR = f"@njit(error_model='numpy', fastmath={FASTMATH})"
COPY_KERNEL = "def {name}(a, out):\n    for i in range(a.shape[0]):\n        out[i] = a[i]\n"


@dataclass
class Program:
    """source: the generated kernel module (kept for reading); kernels: name -> numba
    dispatcher or (dispatcher, argtypes); plan: the entry."""
    source: str
    kernels: dict
    plan: EntryPlan
    kernel_names: list


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _static(source: str, sizes: list) -> str:
    """Replace the run-time size slots n[k] by their values and drop the `n` parameter."""
    source = re.sub(r"\bn\[(\d+)\]", lambda m: str(sizes[int(m.group(1))]), source)
    return re.sub(r"^(def \w+\(.*?)(?:, )?\bn\):", r"\1):", source, flags=re.M)


class _Classes:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        while self.parent.get(x, x) is not x:
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[rb] = ra


class Planner:
    def __init__(self, graph: Graph, name: str):
        self.graph = graph
        self.name = name
        self.sz = Sizes()
        self.sources: list[str] = []
        self.kernel_names: list[str] = []
        self.calls: list[KernelCall] = []
        self.constants: list[np.ndarray] = []
        self.loc: dict[Node, ArrayArg] = {}
        self.buffers = plan_buffers(graph)
        self.extra = 0  # bytes of kernel-local arena (scratch, dot results) past the plan

    # -- where values live
    def _const(self, value: np.ndarray) -> int:
        for k, c in enumerate(self.constants):
            if c is value:
                return k
        self.constants.append(np.ascontiguousarray(value))
        return len(self.constants) - 1

    def _result_classes(self):
        """Storage class -> result index, for classes holding a graph output (the smallest
        output index of any member: every member then lives in that result buffer)."""
        classes = _Classes()
        for n in self.graph.nodes:
            if n.op == "reshape":
                classes.union(n.operands[0], n)
        for n, o in self.buffers.in_place.items():
            classes.union(o, n)
        result_of: dict = {}
        for k, o in enumerate(self.graph.outputs):
            result_of.setdefault(classes.find(o), k)
        return classes, result_of

    def _place(self, n: Node) -> ArrayArg:
        root = self.classes.find(n)
        if n.op == "parameter":
            return ArrayArg("param", n.attrs["index"], n.shape, n.dtype)
        if n.op == "constant":
            return ArrayArg("const", self._const(n.attrs["value"]), n.shape, n.dtype)
        if n.op == "reshape":
            src = self.loc[n.operands[0]]
            return ArrayArg(src.source, src.index, n.shape, n.dtype)
        if root in self.result_of:
            return ArrayArg("result", self.result_of[root], n.shape, n.dtype)
        if n in self.buffers.in_place:
            src = self.loc[self.buffers.in_place[n]]
            return ArrayArg(src.source, src.index, n.shape, n.dtype)
        if n not in self.buffers.offsets and n.nbytes:
            raise AotLinkError(f"{self.name}: the buffer plan has no place for {n!r}")
        return ArrayArg("temp", self.buffers.offsets.get(n, 0), n.shape, n.dtype)

    def _local(self, offset: int, shape, dtype) -> tuple[ArrayArg, int]:
        """A kernel-local temporary past the planned arena; returns it and the next offset."""
        arg = ArrayArg("temp", self.buffers.size + offset, shape, dtype)
        end = offset + _align(arg.nbytes)
        self.extra = max(self.extra, end)
        return arg, end

    # -- kernels
    def _kernel(self, source: str) -> str:
        name = f"k{len(self.sources)}"
        self.sources.append(source.replace("def KERNEL(", f"def {name}(", 1))
        self.kernel_names.append(name)
        return name

    def _loop(self, body: Graph, inputs, outs: list[ArrayArg], local: int = 0):
        ks = LoopKernel(body, "KERNEL", self.sz, scratch_args=True).generate()
        name = self._kernel(ks.source)
        args = [inputs(m) for m in ks.inputs] + outs
        for _, size, dtype in ks.scratch:
            arg, local = self._local(local, (size,), dtype)
            args.append(arg)
        self.calls.append(KernelCall(name, tuple(args)))

    def _dot(self, node: Node, lhs: ArrayArg, rhs: ArrayArg, out: ArrayArg, local: int = 0):
        """dot_lines' loop path over (batch, rows, contract) x (batch, contract, cols) views.

        The plan passes those 3-d views (a reshape of a C-contiguous buffer is free), so the
        kernel does no reshape: numba's reshape calls a helper of its runtime library. An
        operand whose dims are not in that order is first transposed into the arena."""
        (B, M, K, N), perms = _dot_dims(node)
        operands = []
        for x, arg, perm in zip(node.operands, (lhs, rhs), perms):
            if perm != sorted(perm):
                body = Graph("transpose")
                p = body.add_parameter(x.shape, x.dtype)
                shape = tuple(x.shape[d] for d in perm)
                body.outputs = [body.add("transpose", [p], {"permutation": tuple(perm)},
                                         shape, x.dtype)]
                moved, local = self._local(local, shape, x.dtype)
                self._loop(body, lambda m, a=arg: a, [moved], local)
                arg = moved
            operands.append(arg)
        lhs, rhs = operands
        lines = dot_lines(node, "a", "b", "out", self.sz, blas=False)
        arrange = [ln for ln in lines if ln.split(" = ")[0] in ("a3", "b3", "o3")]
        if len(arrange) != 3 or any("np.dot" in ln for ln in lines):
            raise AotLinkError(f"{self.name}: unexpected dot kernel shape from dot_lines")
        body = [ln for ln in lines if ln not in arrange]
        name = self._kernel("def KERNEL(a3, b3, o3):\n"
                            + "\n".join("    " + ln for ln in body) + "\n")
        view = [(lhs, (B, M, K)), (rhs, (B, K, N)), (out, (B, M, N))]
        self.calls.append(KernelCall(name, tuple(ArrayArg(a.source, a.index, shape, a.dtype)
                                                 for a, shape in view)))

    def _outputs_of(self, n: Node, gets: dict) -> list[ArrayArg]:
        if n.tuple_types is None:
            return [self.loc[n]]
        outs, local = [], 0
        for k, (shape, dtype) in enumerate(n.tuple_types):
            if (n, k) in gets:
                outs.append(self.loc[gets[(n, k)]])
            else:  # an element nothing reads still needs somewhere to go
                arg, local = self._local(local, shape, dtype)
                outs.append(arg)
        return outs

    def _fusion(self, n: Node, outs: list[ArrayArg]):
        body = n.subgraph

        def inputs(m):
            if m.op == "parameter":
                return self.loc[n.operands[m.attrs["index"]]]
            return ArrayArg("const", self._const(m.attrs["value"]), m.shape, m.dtype)

        dots = [m for m in body.nodes if m.op == "dot_general"]
        if not dots:
            self._loop(body, inputs, outs)
            return
        (dot,) = dots
        # the dot writes into the result when the epilogue reads it elementwise (as codegen)
        users = body.users()
        in_place = (len(outs) == 1 and body.outputs[0].shape == dot.shape
                    and body.outputs[0].dtype == dot.dtype
                    and all(u.op in ops.ELEMENTWISE or u.op in ops.REDUCTIONS
                            for u in users[dot]))
        local = 0
        if in_place:
            target = ArrayArg(outs[0].source, outs[0].index, dot.shape, dot.dtype)
        else:
            target, local = self._local(0, dot.shape, dot.dtype)
        self._dot(dot, *(inputs(o) for o in dot.operands), target, local)
        if body.outputs == [dot]:
            if not in_place:
                self._copy(target, outs[0])
            return
        epilogue = Graph(body.name + "_epilogue")
        mapping: dict[Node, Node] = {}
        sources: list[ArrayArg] = []
        for m in body.nodes:
            if m is dot or m.op == "parameter" or (m.op == "constant" and m.shape != ()):
                mapping[m] = epilogue.add_parameter(m.shape, m.dtype)
                sources.append(target if m is dot else inputs(m))
            else:
                mapping[m] = epilogue.add(m.op, [mapping[o] for o in m.operands], m.attrs,
                                          m.shape, m.dtype, m.loc)
        epilogue.outputs = [mapping[o] for o in body.outputs]
        self._loop(epilogue, lambda m: sources[m.attrs["index"]], outs, local)

    def _copy(self, src: ArrayArg, dst: ArrayArg):
        size = int(np.prod(src.shape, dtype=np.int64))
        if size == 0:
            return
        name = f"copy_{src.dtype.name}"
        if name not in self.kernel_names:
            self.sources.append(COPY_KERNEL.format(name=name))
            self.kernel_names.append(name)
        self.calls.append(KernelCall(name, (ArrayArg(src.source, src.index, (size,), src.dtype),
                                            ArrayArg(dst.source, dst.index, (size,), dst.dtype))))

    def build(self) -> Program:
        g = self.graph
        self.classes, self.result_of = self._result_classes()
        gets = {(n.operands[0], n.attrs["index"]): n for n in g.nodes if n.op == "get"}
        for n in g.nodes:
            if n.tuple_types is None:
                self.loc[n] = self._place(n)
        for n in g.nodes:
            if n.op in ("parameter", "constant", "get", "reshape"):
                continue
            outs = self._outputs_of(n, gets)
            if n.op == "fusion":
                self._fusion(n, outs)
            elif n.op == "dot_general":
                self._dot(n, *(self.loc[o] for o in n.operands), outs[0])
            else:
                body, sources = _single_op_body(n)
                self._loop(body, lambda m, s=sources: self.loc[s[m.attrs["index"]]], outs)
        for k, o in enumerate(g.outputs):
            where = self.loc[o]
            if (where.source, where.index) != ("result", k):
                self._copy(where, ArrayArg("result", k, o.shape, o.dtype))
        return self._program()

    def _program(self) -> Program:
        g = self.graph
        kernels_src = [_static(s, self.sz.values) for s in self.sources]
        source = (HEADER.replace("cpu backend", "AOT compiler (jitc.aot)") + "\n\n"
                  + "\n\n".join(DECORATOR + "\n" + s for s in kernels_src))
        namespace: dict = {"__name__": f"jitc_aot_{self.name}"}
        exec(compile(source, f"<jitc aot {self.name}>", "exec"), namespace)  # noqa: S102
        # kernels whose static source is the same (each LSTM layer's) share one function
        first: dict = {}
        kernels = {}
        for name, text in zip(self.kernel_names, kernels_src):
            body = text.split("(", 1)[1]
            kernels[name] = namespace[first.setdefault(body, name)]
        plan = EntryPlan(
            name=self.name,
            params=tuple((p.shape, p.dtype) for p in g.params),
            results=tuple((o.shape, o.dtype) for o in g.outputs),
            constants=tuple(self.constants),
            temp_bytes=self.buffers.size + self.extra,
            calls=tuple(self.calls))
        _check_no_overlap(plan)
        return Program(source, kernels, plan, list(self.kernel_names))


def _dot_dims(node: Node):
    """((B, M, K, N), (lhs order, rhs order)) of a dot_general, as dot_lines arranges it."""
    l, r = node.operands
    a = node.attrs
    lb, rb = list(a["lhs_batch"]), list(a["rhs_batch"])
    lc, rc = list(a["lhs_contracting"]), list(a["rhs_contracting"])
    lf, rf = dot_free_dims(l.ndim, lc, lb), dot_free_dims(r.ndim, rc, rb)

    def prod(shape, dims):
        return int(np.prod([shape[d] for d in dims], dtype=np.int64))

    dims = (prod(l.shape, lb), prod(l.shape, lf), prod(l.shape, lc), prod(r.shape, rf))
    return dims, (lb + lf + lc, rb + rc + rf)


def _check_no_overlap(plan: EntryPlan):
    """A kernel never writes a buffer it also reads elsewhere than in place: a planning bug
    would otherwise be a silent wrong answer in a program with no debugger attached."""
    for call in plan.calls:
        temps = [a for a in call.args if isinstance(a, ArrayArg) and a.source == "temp"]
        for i, a in enumerate(temps):
            for b in temps[i + 1:]:
                if a.index == b.index or a.nbytes == 0 or b.nbytes == 0:
                    continue
                if a.index < b.index + b.nbytes and b.index < a.index + a.nbytes:
                    raise AotLinkError(f"{plan.name}: {call.kernel} reads and writes overlapping "
                                       f"arena bytes {a.index} and {b.index}")


def plan_program(graph: Graph, name: str) -> Program:
    """The kernels and the entry plan of an optimized (fused) graph."""
    return Planner(graph, name).build()
