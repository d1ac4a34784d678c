"""A fused graph -> the AOT program: numba kernel source plus the static `EntryPlan` that calls it.

The kernels and the buffer plan are the cpu backend's (`jitc.backends.cpu.plan`, target
"aot": scratch rows come from the temp arena, dots use loops since an object has no BLAS).
What AOT adds: shapes are static, so every size slot `n[k]` becomes a literal, and each
kernel body becomes one call of the entry over all of its rows (lo = 0, hi = rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jitc.aot.link import AotLinkError, ArrayArg, Branch, EntryPlan, IntArg, KernelCall
from jitc.backends.cpu.driver import FAILURE_OF, FASTMATH, KERNEL_HEADER
from jitc.backends.cpu.plan import plan_program
from jitc.core import failures
from jitc.core.ir import Graph
from jitc.fusion.stats import kernel_names

DECORATOR = f"@njit(error_model='numpy', fastmath={FASTMATH})"


@dataclass
class Program:
    """source: the generated kernel module (kept for reading); kernels: name -> numba
    dispatcher; plan: the entry; kernel_names: in order of first call; failures: the
    distinct (exception class name, message) a failing call can mean, each message naming
    the NumPy call and the user's line (the entry returns the kernel's status only);
    labels: kernel name -> the graph's names of the kernels it runs (fusion_15: as stats()
    and the report name them), several where kernels share one body's code."""

    source: str
    kernels: dict
    plan: EntryPlan
    kernel_names: list
    failures: tuple = ()
    labels: dict | None = None


def _static(source: str, sizes: list) -> str:
    """Replace the size slots n[k] by their values and drop the `n` parameter."""
    source = re.sub(r"\bn\[(\d+)\]", lambda m: str(sizes[int(m.group(1))]), source)
    return re.sub(r"^(def \w+\(.*?), n\):", r"\1):", source, flags=re.M)


def plan_aot(graph: Graph, name: str, inout: dict | None = None) -> Program:
    """The kernels and the entry plan of an optimized (fused) graph; `inout` (output index
    -> (parameter, direct)) names the outputs written back into in-out arguments."""
    program = plan_program(graph, name, target="aot", inout=inout)
    sources: list = []  # distinct (static body, argument types); kernel k is sources[k]
    calls = []
    label_of = {n: name for name, n in kernel_names(graph)}  # a dot fusion: its plain name
    labels: dict = {}
    first_call, at = [], 0  # per program kernel, its first call's (or branch's) position
    for kernel in program.kernels:
        first_call.append(at)
        at += 1 if kernel.branch is not None else len(kernel.bodies)
    first_call.append(at)
    for kernel in program.kernels:
        if kernel.branch is not None:  # a loop's test
            (flag,) = kernel.pointers
            when, target = kernel.branch
            calls.append(Branch(_arg(flag, flag.shape), when, first_call[target]))
            continue
        label = "copy into results" if kernel.node is None else label_of[kernel.node]
        for body in kernel.bodies:
            args = [_arg(kernel.pointers[p], shape) for p, shape, _ in body.arrays]
            # one compiled kernel per text and argument types (a copy of int64s and one of
            # float64s share a text)
            key = (_static(body.source, kernel.sizes), tuple((a.dtype, len(a.shape)) for a in args))
            if key not in sources:
                sources.append(key)
            k = f"k{sources.index(key)}"
            named = labels.setdefault(k, [])
            if label not in named:
                named.append(label)
            calls.append(KernelCall(k, tuple(args) + (IntArg(0), IntArg(kernel.rows))))
    names = [f"k{i}" for i in range(len(sources))]
    texts = [text.replace("def BODY(", f"def {k}(", 1) for k, (text, _) in zip(names, sources)]
    header = KERNEL_HEADER.replace("cpu backend: one kernel", "AOT compiler (jitc.aot)")
    # float16 conversions without F16C or library calls (backends/cpu/half.py)
    header = header.replace("half import JIT as _half", "half import PORTABLE as _half")
    # the complex product without an FMA instruction or libm's fma (complexmath.py)
    header = header.replace(
        "complexmath import JIT as _complex", "complexmath import PORTABLE as _complex"
    )
    source = header + "\n\n" + "\n\n".join(DECORATOR + "\n" + t for t in texts)
    namespace: dict = {"__name__": f"jitc_aot_{name}"}
    exec(compile(source, f"<jitc aot {name}>", "exec"), namespace)  # noqa: S102
    plan = EntryPlan(
        name=name,
        params=tuple(program.params),
        results=tuple(program.results),
        constants=tuple(program.constants),
        temp_bytes=program.temp_bytes,
        calls=tuple(calls),
        inout=program.inout,
    )
    _check_no_overlap(plan)
    return Program(
        source, {k: namespace[k] for k in names}, plan, names, _failures(program.kernels), labels
    )


def _arg(buf, shape) -> ArrayArg:
    """A planned buffer (plan.Buf) as an array argument of `shape`."""
    return ArrayArg(buf.source, buf.index, shape, buf.dtype, buf.offset)


def _failures(kernels) -> tuple:
    """(class name, message) of each way a kernel can fail, as the cpu backend raises it."""
    found = []
    for kernel in kernels:
        if kernel.error is None:
            continue
        kind = FAILURE_OF.get(kernel.error)
        cls, message = kernel.error
        if kind is not None:
            error = failures.located(list(kernel.sites), kind, Exception, message)
            cls, message = _CLASS_NAMES.get(type(error), cls), str(error)
        if (cls, message) not in found:
            found.append((cls, message))
    return tuple(found)


_CLASS_NAMES = {ValueError: "ValueError", IndexError: "IndexError"}  # failures' overrides


def _check_no_overlap(plan: EntryPlan):
    """A kernel never reads and writes overlapping arena bytes except the very same buffer
    (in place): a planning bug would otherwise be a silent wrong answer in a program with no
    debugger attached."""
    for call in plan.calls:
        if isinstance(call, Branch):
            continue
        temps = [a for a in call.args if isinstance(a, ArrayArg) and a.source == "temp"]
        for i, a in enumerate(temps):
            for b in temps[i + 1 :]:
                if a.index == b.index or a.nbytes == 0 or b.nbytes == 0:
                    continue
                if a.index < b.index + b.nbytes and b.index < a.index + a.nbytes:
                    raise AotLinkError(
                        f"{plan.name}: {call.kernel} reads and writes overlapping "
                        f"arena bytes {a.index} and {b.index}"
                    )
