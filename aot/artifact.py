"""`jitc.aot.compile(fn, *specs)` -> `Artifact`: trace, fuse, plan, link one object; write it out.

Shapes are static (the specs), as in tfcompile; closure-captured arrays (weights) become
read-only data in the object. `Artifact.write(dir)` writes NAME.o, NAME.h, libNAME.so (host
targets, system C compiler), NAME.py (NumPy + ctypes loader), NAME.size.json and, with
emit_test=True, NAME_test.c checking the object against NumPy.
"""

from __future__ import annotations

import json
import keyword
import os
import shutil
import subprocess
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import numpy as np

from jitc.aot import c_emit
from jitc.aot.link import AotLinkError, build_object, resolve_triple, signature_digest
from jitc.aot.loader import loader_source
from jitc.aot.plan import Program, plan_aot
from jitc.aot.size import format_report, size_report
from jitc.core.pytree import LEAF, flatten
from jitc.stages import ArgumentResult, Function, SizedResult, StaticResult, Wrapped
from jitc.trace.lowering import lower

# "generic" is jitc's portable baseline per architecture. x86-64-v2 (SSE4.2, 2009+) rather
# than LLVM's generic x86-64: without SSE4.1, floor/ceil/trunc/rint become libm calls.
BASELINE_CPU = {"x86_64": "x86-64-v2", "aarch64": "generic"}


def resolve_cpu(triple: str, cpu: str) -> str:
    if cpu != "generic":
        return cpu
    return BASELINE_CPU.get(resolve_triple(triple).split("-")[0], "generic")


@dataclass
class Artifact:
    """One compiled function: the object bytes and what describes it."""

    name: str
    triple: str
    cpu: str
    object: bytes
    digest: str  # signature_digest: in the object, the header and the loader
    program: Program
    arg_names: list
    # per returned value: ("res", result index, 0-d scalar?); ("arg", k): the caller's
    # argument k itself (written in place); ("copy", k, scalar): a copy of what it holds
    outputs: list
    single: bool  # the function returns one value, not a tuple
    function: object = field(repr=False)  # the Python function, NumPy's oracle
    origin: str = ""
    # what `jitc report DIR/NAME` re-traces for the graph and the time table: the function
    # (FILE.py:NAME) and its argument specs, where a module-level function of a file
    built_from: dict | None = None
    _report: dict | None = field(default=None, repr=False)

    @property
    def plan(self):
        return self.program.plan

    @property
    def source(self) -> str:
        """The generated kernel module (numba source), for reading."""
        return self.program.source

    def header(self) -> str:
        return c_emit.header(
            self.plan, self.arg_names, self.triple, self.cpu, self.origin, self.digest
        )

    def loader(self) -> str:
        return loader_source(
            self.plan,
            self.arg_names,
            self.outputs,
            self.single,
            self.origin,
            self.digest,
            self.program.failures,
        )

    def size_report(self) -> dict:
        if self._report is None:
            self._report = size_report(
                self.object,
                self.plan,
                self.program.kernel_names,
                self.triple,
                self.cpu,
                self.digest,
                self.program.labels,
            )
            if self.built_from:
                self._report["built_from"] = self.built_from
        return self._report

    def format_size_report(self) -> str:
        return format_report(self.size_report())

    def golden(self, seed: int = 0):
        """(inputs, results, written) computed by NumPy running the Python function; written:
        {argument index: its contents after the call} for the in-out arguments."""
        rng = np.random.default_rng(seed)
        inputs = []
        for shape, dtype in self.plan.params:
            dtype = np.dtype(dtype)
            if dtype.kind == "f":
                a = rng.standard_normal(shape).astype(dtype)
            elif dtype.kind == "b":
                a = rng.random(shape) < 0.5
            else:
                a = rng.integers(-100, 100, shape).astype(dtype)
            inputs.append(np.asarray(a, dtype))
        args = [a.copy() for a in inputs]
        with np.errstate(all="ignore"):
            out = self.function(*args)
        leaves, _ = flatten(out)
        results = [None] * len(self.plan.results)
        for spec, leaf in zip(self.outputs, leaves):
            if spec[0] == "res":
                shape, dtype = self.plan.results[spec[1]]
                results[spec[1]] = np.asarray(leaf).astype(dtype).reshape(shape)
        return inputs, results, {k: args[k] for k in self.plan.inout}

    def is_host(self) -> bool:
        host = llvm.get_process_triple().split("-")[0]
        return self.triple.split("-")[0] == host

    def write(self, directory: str, emit_test: bool = False) -> dict:
        """Write the files; returns {kind: path}. libNAME.so is built for host targets only."""
        os.makedirs(directory, exist_ok=True)
        paths = {}

        def put(kind, filename, data):
            path = os.path.join(directory, filename)
            with open(path, "wb" if isinstance(data, bytes) else "w") as f:
                f.write(data)
            paths[kind] = path
            return path

        n = self.name
        obj = put("object", f"{n}.o", self.object)
        put("header", f"{n}.h", self.header())
        put("loader", f"{n}.py", self.loader())
        put("kernels", f"{n}.kernels.py", self.source)
        if self.is_host():
            cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
            if cc is None:
                raise AotLinkError("no C compiler (cc) found to link lib{n}.so")
            so = os.path.join(directory, f"lib{n}.so")
            run = subprocess.run([cc, "-shared", "-o", so, obj], capture_output=True, text=True)
            if run.returncode:
                raise AotLinkError(f"{cc} could not link lib{n}.so:\n{run.stderr}")
            paths["library"] = so
        put("size", f"{n}.size.json", json.dumps(self.size_report(), indent=1) + "\n")
        if emit_test:
            inputs, results, written = self.golden()
            put("test", f"{n}_test.c", c_emit.test_program(self.plan, inputs, results, written))
        return paths


def _specs(specs):
    from jitc.core.specs import ShapeDtype, spec

    out = []
    for s in specs:
        if isinstance(s, str):
            s = spec(s)
        elif isinstance(s, np.ndarray):
            s = ShapeDtype(s.shape, s.dtype)
        if not isinstance(s, ShapeDtype):
            raise TypeError(
                f"AOT arguments are specs such as 'f32[1,60]', jitc.ShapeDtype or "
                f"arrays, not {type(s).__name__}"
            )
        out.append(s)
    return out


C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto "
    "if inline int long register restrict return short signed sizeof static struct switch "
    "typedef union unsigned void volatile while bool true false".split()
)


def _check_name(name: str) -> str:
    """The artifact name is a C symbol and a Python module and function name."""
    if (
        not (name.isascii() and name.isidentifier())
        or keyword.iskeyword(name)
        or name in C_KEYWORDS
    ):
        raise AotLinkError(
            f"artifact name {name!r} must be an identifier valid in both C and "
            f"Python (letters, digits, _; not a keyword): pass name= (--name)"
        )
    return name


def _written(lowered, w) -> str:
    return lowered.captured[w.target].place.name if w.kind == "captured" else w.target.name


def _outputs(lowered, written: dict, visible: list, name: str) -> list:
    """Artifact.outputs: where each returned value comes from."""
    leaf_of = {k: leaf for leaf, k in written.items()}
    outputs = []
    for s in lowered.out_specs:
        if isinstance(s, ArgumentResult):
            outputs.append(("arg", s.leaf))
        elif isinstance(s, StaticResult):
            raise AotLinkError(
                f"{name}: the function returns a Python value ({s.value!r}) "
                f"that does not depend on its arguments; AOT returns arrays"
            )
        elif isinstance(s, SizedResult):
            raise AotLinkError(
                f"{name}: the function returns {s.what}, whose size is known only at run "
                "time; an AOT function's results have static shapes (return a mask, or "
                "np.where(mask, x, fill))"
            )
        elif s.index in leaf_of:  # also the new contents of an in-out argument
            outputs.append(("copy", leaf_of[s.index], bool(s.scalar)))
        else:
            outputs.append(("res", visible.index(s.index), bool(s.scalar)))
    return outputs


def _writes_directly(graph, param: int, output: int) -> bool:
    """Can the in-out output be computed straight into its argument? Not when another
    output still names the argument's old bytes (it is copied out after the kernels)."""
    from jitc.fusion.buffers import can_write_into_parameter
    from jitc.fusion.views import is_view

    p = graph.params[param]
    for o in graph.outputs:
        while is_view(o):
            o = o.operands[0]
        if o is p:
            return False
    return can_write_into_parameter(graph, param, output)


def compile(
    fn, *specs, name: str | None = None, target: str = "host", cpu: str = "generic", progress=None
) -> Artifact:
    """Compile `fn` for fixed argument specs into a self-contained object for `target`
    ("host", "x86_64-linux", "aarch64-linux"); cpu "generic" (portable baseline), "native"
    (this machine) or an LLVM cpu name. `progress(stage)` is called before each stage."""
    from jitc.fusion import optimize

    say = progress or (lambda stage: None)
    function = _function(fn)
    name = _check_name(name or function.name)
    say(f"tracing {function.name}({', '.join(str(s) for s in _specs(specs))})")
    lowered, written = lowering(function, specs, name)
    visible = [k for k in range(len(lowered.graph.outputs)) if k not in written.values()]
    outputs = _outputs(lowered, written, visible, name)
    say("optimizing and fusing the graph")
    graph = optimize(lowered.graph, aliases={k: leaf for leaf, k in written.items()})
    inout = {k: (leaf, _writes_directly(graph, leaf, k)) for leaf, k in written.items()}
    program = plan_aot(graph, name, inout)
    triple = resolve_triple(target)
    cpu = resolve_cpu(target, cpu)
    say(
        f"compiling {len(set(map(id, program.kernels.values())))} kernels "
        f"({len(program.plan.calls)} calls) for {triple}, cpu {cpu}"
    )
    digest = signature_digest(program.plan, program.source)
    obj = build_object(program.kernels, program.plan, target, cpu, digest=digest)
    fun = function.fun
    origin = getattr(fun, "__module__", "") or ""
    origin = f"{origin}.{fun.__qualname__}" if origin else fun.__qualname__
    return Artifact(
        name,
        triple,
        cpu,
        obj,
        digest,
        program,
        list(lowered.arg_names),
        outputs,
        lowered.out_tree == LEAF,
        fun,
        origin,
        _built_from(fun, _specs(specs)),
    )


def _function(fn) -> Function:
    """`fn` as jitc compiles it: a jitted function's own, else a plain function's."""
    if isinstance(fn, Function):
        return fn
    return fn.function if isinstance(fn, Wrapped) else Function.of(fn)


def lowering(fn, specs, name: str | None = None):
    """(the Lowered an artifact of `fn` for `specs` compiles, {argument: output} of its
    in-out arguments): captured arrays baked in as read-only data, written arguments as
    outputs. `jitc report` compiles the same graph, so its kernels are the artifact's."""
    function = _function(fn)
    name = name or function.name
    lowered = lower(function, function.bound + tuple(_specs(specs)), {})
    captured = [w for w in lowered.writebacks if w.kind != "arg"]
    if captured:
        raise AotLinkError(
            f"{name}: the function writes into "
            f"{', '.join(_written(lowered, t) for t in captured)}; captured "
            f"arrays are read-only data in an AOT module: pass the array as "
            f"an argument to write it (an in-out pointer)"
        )
    written = {w.target: w.output for w in lowered.writebacks}  # argument -> new contents
    lowered = lowered.with_captures_baked().with_arguments_computed(keep=written)
    if any(t.weak for t in lowered.arg_types):
        raise AotLinkError(f"{name}: AOT arguments must be arrays (got a Python scalar)")
    return lowered, written


def _built_from(fun, specs) -> dict | None:
    """FILE.py:NAME and the specs of a module-level function defined in a file (one that
    `jitc report` can load again), else None."""
    code = getattr(fun, "__code__", None)
    qualname = getattr(fun, "__qualname__", "")
    if code is None or "<" in qualname or "." in qualname or not os.path.isfile(code.co_filename):
        return None
    return {
        "function": f"{os.path.abspath(code.co_filename)}:{qualname}",
        "args": [str(s) for s in specs],
        "max_bytes": None,
    }
