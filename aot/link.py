"""The low-level AOT object builder: numba kernels + a call plan -> one relocatable object.

Input: kernels that are numba-compilable Python functions (plain functions or `@njit`
dispatchers; loops over C-contiguous arrays and int64 sizes) and an `EntryPlan` naming the
order of calls and where each array operand lives. Output: an ELF object for a target triple
that defines and exports two symbols, three when built with a signature digest::

    int    NAME(const T* arg0, ..., T* res0, ..., void* temp);  /* 0 or a kernel's status */
    size_t NAME_temp_bytes(void);
    const char NAME_signature_digest[33];  /* `signature_digest`, NUL-terminated hex */

Everything else (kernels, constants) has internal linkage, so the object has no undefined
symbols except perhaps memcpy/memset/memmove (see `build_object(allowed_imports=...)`) and
two objects with different entry names link together.

How it works:

1. `kernel_ir` lowers each kernel through numba with `no_cpython_wrapper`,
   `no_cfunc_wrapper`, `nopython` and the runtime (NRT) *disabled*, through an AOT codegen
   whose optimization passes are turned off: the result is numba's unoptimized LLVM IR,
   with no reference to Python or to numba's runtime. A kernel that needs the runtime
   (`np.empty` inside the kernel, an exception with run-time arguments) fails here with
   `AotLinkError`, instead of producing an object with NRT_* imports.
2. `build_object` re-targets that IR (triple, data layout, host `target-cpu`/
   `target-features` attributes stripped, Python exception-info stores replaced by null so
   no pickled exception or source path lands in the object), writes the entry function in
   LLVM IR, links everything into one module, internalizes all but the two entry symbols,
   optimizes at O3 with the *target's* machine (so vectorization is tuned for the target,
   not the build host) and emits the object with a PIC target machine.

numba's array ABI (checked against the kernel's actual LLVM signature at build time): a
kernel is ``i32 @mangled(ptr retptr, ptr excinfo, <args>)``; each array argument expands to
``ptr meminfo, ptr parent, i64 nitems, i64 itemsize, ptr data, i64 shape[ndim],
i64 strides[ndim]`` (strides in bytes), an int64 scalar to one ``i64``. The status is 0 on
success (-2 for "returned None", also success), 1 for a raised exception, -1 for a
runtime error; the entry returns the first failing status unchanged.

Only little-endian LP64 ELF targets are supported: numba computes sizes with the host's
data layout, which agrees with x86_64 and aarch64 Linux on every size it bakes in.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from jitc.backends.cpu.lowering import storage  # float16 arrays: their uint16 bits
from jitc.core.errors import JitcError

__all__ = [
    "AotLinkError",
    "ArrayArg",
    "IntArg",
    "KernelCall",
    "Branch",
    "EntryPlan",
    "kernel_ir",
    "build_object",
    "kernel_symbol",
    "constant_symbol",
    "c_prototypes",
    "resolve_triple",
    "symbol_sizes",
    "section_sizes",
    "undefined_symbols",
    "signature_digest",
    "digest_symbol",
    "ABI_VERSION",
]

DEFAULT_IMPORTS = frozenset({"memcpy", "memset", "memmove"})
_TRIPLES = {
    "x86_64-linux": "x86_64-unknown-linux-gnu",
    "aarch64-linux": "aarch64-unknown-linux-gnu",
}
_SOURCES = ("param", "result", "temp", "const")
# numba options that change the generated code; everything else (cache, nogil, parallel,
# ...) is dropped: AOT kernels run serially and outside Python.
_KEPT_OPTIONS = ("fastmath", "error_model", "boundscheck")
# The entry's calling convention (pointer order, temp arena rules, status codes): part of
# every signature digest, so bump it when the convention changes and old objects are refused.
ABI_VERSION = 1
DIGEST_CHARS = 32


class AotLinkError(JitcError):
    """A kernel or plan cannot become a self-contained object for the target."""


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class ArrayArg:
    """One array operand of a kernel call, passed as a C-contiguous array of `shape`.

    source: "param" (entry argument `index`), "result" (entry result `index`), "const"
    (plan constant `index`) or "temp" (`index` is a byte offset into the temp arena).
    The shape may differ from the underlying param/result/constant's (a reshape) and start
    `offset` bytes into it (a slice) as long as it fits in its bytes; the dtype must match."""

    source: str
    index: int
    shape: tuple
    dtype: np.dtype
    offset: int = 0

    def __post_init__(self):
        if self.source not in _SOURCES:
            raise AotLinkError(f"ArrayArg source must be one of {_SOURCES}, not {self.source!r}")
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass(frozen=True)
class IntArg:
    """An int64 scalar argument."""

    value: int


@dataclass(frozen=True)
class KernelCall:
    """A call of `kernels[kernel]` with `args` (ArrayArg / IntArg), in the kernel's order."""

    kernel: str
    args: tuple


@dataclass(frozen=True)
class Branch:
    """Not a call: the entry goes on at call `target` if the bool `flag` holds `when`, else
    at the next call (a loop's test: jitc.backends.cpu.plan Kernel.branch)."""

    flag: ArrayArg
    when: bool
    target: int


@dataclass(frozen=True)
class EntryPlan:
    """The entry function `int NAME(const T* arg0, ..., T* res0, ..., void* temp)`.

    params/results: ((shape, dtype), ...); constants: arrays frozen into read-only data;
    temp_bytes: size of the caller's temp arena (`NAME_temp_bytes()` returns it; the arena
    must be aligned to the largest itemsize used in it, e.g. from malloc); calls: in order;
    inout: the arguments the call writes (`T* argK`, not const: the function wrote them)."""

    name: str
    params: tuple
    results: tuple
    constants: tuple
    temp_bytes: int
    calls: tuple
    inout: tuple = ()


def signature_digest(plan: EntryPlan, code: str) -> str:
    """What makes two objects interchangeable, as 32 hex digits: sha256 over the ABI version,
    the entry's name, argument and result shapes and dtypes, in-out arguments, temp arena,
    calls, constants (the weights' bytes) and `code`, the kernels' source. Equal plans and
    code compute the same thing, so a rebuild of the same function keeps its digest; any
    other difference changes it. 128 bits: an accidental match is out of reach, and the hex
    string is short enough for an error message and a C `strcmp`. Not a security check:
    whoever can replace the library can run code anyway."""
    sig = [(tuple(map(int, s)), np.dtype(d).str) for s, d in plan.params + plan.results]
    h = hashlib.sha256(
        f"jitc aot abi {ABI_VERSION}\n{plan.name}\n{sig}\n"
        f"params {len(plan.params)} inout {tuple(plan.inout)}\n"
        f"temp {plan.temp_bytes}\n{plan.calls!r}\n{code}\n".encode()
    )
    for c in plan.constants:
        h.update(f"const {c.dtype.str} {c.shape}\n".encode())
        h.update(np.ascontiguousarray(c).tobytes())
    return h.hexdigest()[:DIGEST_CHARS]


# --------------------------------------------------------------------------- numba -> IR

_codegen_cache: dict = {}


def _raw_context():
    """numba's CPU target context with an AOT codegen that skips numba's own optimization
    passes (they are tuned for the build host; build_object optimizes for the target)."""
    if "ctx" not in _codegen_cache:
        from numba.core import codegen
        from numba.core.registry import cpu_target

        class _RawLibrary(codegen.AOTCodeLibrary):
            def _optimize_functions(self, ll_module):
                ll_module.data_layout = self._codegen._data_layout

            def _optimize_final_module(self):
                pass

        class _RawCodegen(codegen.AOTCPUCodegen):
            _library_class = _RawLibrary

        _codegen_cache["ctx"] = cpu_target.target_context.subtarget(
            _internal_codegen=_RawCodegen("jitc_aot"), aot_mode=True
        )
    return _codegen_cache["ctx"]


def _unwrap(pyfunc):
    """(python function, numba options) of a plain function or a numba dispatcher."""
    options = {}
    if hasattr(pyfunc, "py_func"):
        options = {
            k: v for k, v in getattr(pyfunc, "targetoptions", {}).items() if k in _KEPT_OPTIONS
        }
        pyfunc = pyfunc.py_func
    return pyfunc, options


def kernel_ir(pyfunc, argtypes, **options) -> tuple[str, str]:
    """Lower one kernel with numba and return (llvm_ir, symbol).

    `pyfunc` is a Python function or an `@njit` dispatcher (its fastmath, error_model and
    boundscheck options are kept unless overridden by `options`); `argtypes` are numba types
    (`types.Array(types.float32, 2, "C")`, `types.int64`). The IR is numba's unoptimized
    module for the build host; `symbol` is the kernel's mangled LLVM function name. The
    kernel must return None and must not need numba's runtime."""
    from numba.core import compiler, types
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    func, base = _unwrap(pyfunc)
    base.update(options)
    flags = compiler.Flags()
    cpu_target.options.parse_as_flags(flags, dict(base, nopython=True))
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    flags.no_compile = True
    flags.nrt = False  # no allocation, no refcounts: nothing to import from numba's runtime
    flags.enable_pyobject = False
    flags.enable_looplift = False
    argtypes = tuple(argtypes)
    name = getattr(func, "__name__", repr(func))
    try:
        with global_compiler_lock:
            cres = compiler.compile_extra(
                cpu_target.typing_context, _raw_context(), func, argtypes, None, flags, locals={}
            )
            cres.library._ensure_finalized()
            text = cres.library.get_llvm_str()
    except Exception as e:
        msg = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()
        hint = ""
        if "NRT required" in msg or "Only accept returning of array" in msg:
            hint = (
                " (it allocates or raises an exception with run-time arguments, which needs "
                "numba's runtime; AOT objects have none: pass scratch space as an argument)"
            )
        raise AotLinkError(
            f"kernel {name}{argtypes}: numba cannot compile it for AOT{hint}:\n{msg}"
        ) from e
    if cres.signature.return_type != types.none:
        raise AotLinkError(
            f"kernel {name} returns {cres.signature.return_type}; AOT kernels "
            f"write their outputs and return None"
        )
    return text, cres.fndesc.mangled_name


# --------------------------------------------------------------------------- targets


def resolve_triple(triple: str) -> str:
    """'host' | 'x86_64-linux' | 'aarch64-linux' | a full LLVM triple -> full triple."""
    if triple == "host":
        return llvm.get_process_triple()
    return _TRIPLES.get(triple, triple)


def _target_machine(triple: str, cpu: str):
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    full = resolve_triple(triple)
    try:
        target = llvm.Target.from_triple(full)
    except RuntimeError as e:
        raise AotLinkError(f"LLVM has no target for triple {full!r}: {e}") from None
    features = ""
    if cpu == "native":
        host = llvm.get_process_triple()
        if full.split("-")[0] != host.split("-")[0]:
            raise AotLinkError(
                f"cpu='native' means the build host ({host}); it cannot be "
                f"used for the cross triple {full}"
            )
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    tm = target.create_target_machine(
        cpu=cpu, features=features, reloc="pic", codemodel="default", opt=3
    )
    layout = str(tm.target_data)
    pointer_bits = re.search(r"(?:^|-)p:(\d+)", layout)  # absent: LLVM's default, 64
    if not layout.startswith("e") or (pointer_bits and pointer_bits.group(1) != "64"):
        raise AotLinkError(f"{full}: only little-endian 64-bit targets are supported")
    return tm, full


_TARGET_ATTR = re.compile(r'\s*"(?:target-cpu|target-features|tune-cpu)"="[^"]*"')
_EXC_STORE = re.compile(r"^(\s*store ptr )@[^,]+(, ptr %[^,]+,.*!numba_exception_output.*)$", re.M)


def _retarget(text: str, triple: str, layout: str) -> str:
    """Make numba's host IR target IR: triple and layout, no host cpu attributes, no
    pointer to Python's pickled exception info (replaced by null)."""
    text = re.sub(r'^target triple = ".*"$', f'target triple = "{triple}"', text, flags=re.M)
    text = re.sub(
        r'^target datalayout = ".*"$', f'target datalayout = "{layout}"', text, flags=re.M
    )
    text = _TARGET_ATTR.sub("", text)
    return _EXC_STORE.sub(r"\1null\2", text)


# --------------------------------------------------------------------------- the entry

_I8, _I32, _I64, _PTR = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType()


def _sanitize(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", s)


def kernel_symbol(entry: str, kernel: str) -> str:
    """The (local) symbol of `kernel` in the object built for entry `entry` (with
    inline=False). A function listed under two names with the same argtypes is compiled
    once and named after the first of them that the plan calls."""
    return f"{entry}__{_sanitize(kernel)}"


def constant_symbol(entry: str, index: int) -> str:
    """The (local, read-only) symbol of constant `index` in the object for `entry`."""
    return f"{entry}__const{index}"


def digest_symbol(entry: str) -> str:
    """The exported, read-only C string holding the object's signature digest."""
    return f"{entry}_signature_digest"


def _numba_type_of(arg):
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    if isinstance(arg, IntArg):
        return types.int64
    return types.Array(from_dtype(storage(arg.dtype)), len(arg.shape), "C")


def _normalize_kernels(kernels: dict, plan: EntryPlan) -> dict:
    """name -> (pyfunc, argtypes); a bare function takes its argtypes from its calls."""
    out = {}
    for name, spec in kernels.items():
        if isinstance(spec, tuple):
            pyfunc, argtypes = spec
        else:
            pyfunc, argtypes = spec, None
            for call in _calls(plan):
                if call.kernel == name:
                    t = tuple(_numba_type_of(a) for a in call.args)
                    if argtypes is not None and t != argtypes:
                        raise AotLinkError(
                            f"kernel {name} is called with {t} and with "
                            f"{argtypes}; give its argtypes explicitly"
                        )
                    argtypes = t
            if argtypes is None:
                continue  # never called
        out[name] = (pyfunc, tuple(argtypes))
    return out


def _calls(plan: EntryPlan) -> list:
    """The plan's kernel calls, its branches left out."""
    return [c for c in plan.calls if isinstance(c, KernelCall)]


def _check_plan(plan: EntryPlan, kernels: dict):
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", plan.name):
        raise AotLinkError(f"entry name {plan.name!r} is not a C identifier")
    if plan.temp_bytes < 0:
        raise AotLinkError("temp_bytes must be >= 0")
    for c in plan.constants:
        if not isinstance(c, np.ndarray):
            raise AotLinkError(f"constants must be numpy arrays, not {type(c).__name__}")
    from numba.core import types

    for k, call in enumerate(plan.calls):
        if isinstance(call, Branch):
            w = f"{plan.name}: branch {k}"
            if not 0 <= call.target <= len(plan.calls):
                raise AotLinkError(f"{w}: no call {call.target} to go on at")
            if (call.flag.shape, call.flag.dtype) != ((), np.dtype(bool)):
                raise AotLinkError(f"{w}: its flag is {call.flag.dtype}{list(call.flag.shape)}")
            _check_array(plan, call.flag, w)
            continue
        where = f"{plan.name}: call {k} ({call.kernel})"
        if call.kernel not in kernels:
            raise AotLinkError(f"{where}: no such kernel")
        argtypes = kernels[call.kernel][1]
        if len(argtypes) != len(call.args):
            raise AotLinkError(
                f"{where}: {len(call.args)} arguments for a kernel of {len(argtypes)}"
            )
        for j, (a, t) in enumerate(zip(call.args, argtypes)):
            w = f"{where} argument {j}"
            if isinstance(a, IntArg):
                if t != types.int64:
                    raise AotLinkError(f"{w}: IntArg for a {t} parameter")
                if not -(2**63) <= int(a.value) < 2**63:
                    raise AotLinkError(f"{w}: {a.value} does not fit in int64")
                continue
            if not isinstance(a, ArrayArg):
                raise AotLinkError(f"{w}: expected ArrayArg or IntArg, got {a!r}")
            if not (
                isinstance(t, types.Array)
                and t.layout == "C"
                and t.ndim == len(a.shape)
                and np.dtype(str(t.dtype)) == storage(a.dtype)
            ):
                raise AotLinkError(f"{w}: {a.dtype}{list(a.shape)} for a {t} parameter")
            _check_array(plan, a, w)


def _check_array(plan: EntryPlan, a: ArrayArg, w: str):
    """An array argument lies inside what it names, at an aligned offset."""
    if a.source == "temp":
        if a.index < 0 or a.index + a.nbytes > plan.temp_bytes:
            raise AotLinkError(
                f"{w}: temp bytes [{a.index}, {a.index + a.nbytes}) "
                f"outside the arena of {plan.temp_bytes}"
            )
        if a.index % a.dtype.itemsize:
            raise AotLinkError(f"{w}: temp offset {a.index} is not aligned to {a.dtype.itemsize}")
        return
    table = {"param": plan.params, "result": plan.results}.get(a.source)
    if table is not None:
        if not 0 <= a.index < len(table):
            raise AotLinkError(f"{w}: no {a.source} {a.index}")
        shape, dtype = table[a.index]
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if np.dtype(dtype) != a.dtype:
            raise AotLinkError(f"{w}: {a.source} {a.index} is {np.dtype(dtype)}, not {a.dtype}")
    else:
        if not 0 <= a.index < len(plan.constants):
            raise AotLinkError(f"{w}: no constant {a.index}")
        c = plan.constants[a.index]
        size = c.nbytes
        if c.dtype != a.dtype:
            raise AotLinkError(f"{w}: constant {a.index} is {c.dtype}, not {a.dtype}")
    if a.offset % a.dtype.itemsize or not 0 <= a.offset <= size - a.nbytes:
        raise AotLinkError(
            f"{w}: bytes [{a.offset}, {a.offset + a.nbytes}) of a {a.source} of {size}"
        )


def _entry_module(
    plan: EntryPlan, kernel_fns: dict, triple: str, layout: str, digest: str | None
) -> str:
    """LLVM IR of the entry, `NAME_temp_bytes`, the digest and the constants; kernels
    declared only."""
    m = ir.Module(name=plan.name)
    m.triple, m.data_layout = triple, layout
    if digest is not None:
        text = bytearray(digest.encode("ascii") + b"\0")
        g = ir.GlobalVariable(m, ir.ArrayType(_I8, len(text)), digest_symbol(plan.name))
        g.initializer = ir.Constant(ir.ArrayType(_I8, len(text)), text)
        g.global_constant = True
    consts = []
    for k, c in enumerate(plan.constants):
        data = np.ascontiguousarray(c).astype(c.dtype.newbyteorder("<"), copy=False)
        raw = data.tobytes()
        g = ir.GlobalVariable(m, ir.ArrayType(_I8, len(raw)), constant_symbol(plan.name, k))
        g.initializer = ir.Constant(ir.ArrayType(_I8, len(raw)), bytearray(raw))
        g.global_constant, g.linkage, g.unnamed_addr = True, "internal", True
        g.align = max(16, c.dtype.itemsize)
        consts.append(g)
    by_symbol: dict = {}  # two names may share one compiled kernel
    for symbol, types in kernel_fns.values():
        if symbol not in by_symbol:
            by_symbol[symbol] = ir.Function(m, ir.FunctionType(_I32, types), symbol)
    decls = {name: by_symbol[symbol] for name, (symbol, _) in kernel_fns.items()}

    tb = ir.Function(m, ir.FunctionType(_I64, []), f"{plan.name}_temp_bytes")
    ir.IRBuilder(tb.append_basic_block("entry")).ret(ir.Constant(_I64, plan.temp_bytes))

    fn = ir.Function(
        m, ir.FunctionType(_I32, [_PTR] * (len(plan.params) + len(plan.results) + 1)), plan.name
    )
    nparam = len(plan.params)
    for k, a in enumerate(fn.args):
        a.name = f"arg{k}" if k < nparam else f"res{k - nparam}" if k < len(fn.args) - 1 else "temp"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    retslot = b.alloca(ir.ArrayType(_I64, 4), name="retptr")  # kernels return None
    excslot = b.alloca(_PTR, name="excinfo")
    # a block per call (a branch goes on at any of them), then the return
    blocks = [fn.append_basic_block(f"call{k}") for k in range(len(plan.calls) + 1)]
    b.branch(blocks[0])

    def address(a: ArrayArg):
        if a.source == "param":
            data = fn.args[a.index]
        elif a.source == "result":
            data = fn.args[nparam + a.index]
        elif a.source == "const":
            data = consts[a.index]
        else:
            data = b.gep(fn.args[-1], [ir.Constant(_I64, a.index)], inbounds=True, source_etype=_I8)
        if a.offset:
            data = b.gep(data, [ir.Constant(_I64, a.offset)], inbounds=True, source_etype=_I8)
        return data

    for k, call in enumerate(plan.calls):
        b.position_at_end(blocks[k])
        if isinstance(call, Branch):
            flag = b.load(address(call.flag), typ=_I8)
            holds = b.icmp_unsigned("==", flag, ir.Constant(_I8, int(call.when)))
            b.cbranch(holds, blocks[call.target], blocks[k + 1])
            continue
        values = [retslot, excslot]
        for a in call.args:
            if isinstance(a, IntArg):
                values.append(ir.Constant(_I64, int(a.value)))
                continue
            data = address(a)
            itemsize = a.dtype.itemsize
            strides, s = [], itemsize
            for d in reversed(a.shape):
                strides.insert(0, s)
                s *= d
            values += [
                ir.Constant(_PTR, None),
                ir.Constant(_PTR, None),
                ir.Constant(_I64, int(np.prod(a.shape, dtype=np.int64))),
                ir.Constant(_I64, itemsize),
                data,
            ]
            values += [ir.Constant(_I64, d) for d in a.shape]
            values += [ir.Constant(_I64, st) for st in strides]
        want = [_type_name(t) for t in decls[call.kernel].function_type.args]
        got = [_type_name(v.type) for v in values]
        if want != got:  # the ABI numba actually emitted disagrees with the plan
            raise AotLinkError(
                f"{plan.name}: call {k} ({call.kernel}) passes ({', '.join(got)})"
                f" to a kernel taking ({', '.join(want)})"
            )
        status = b.call(decls[call.kernel], values, name=f"status{k}")
        ok = b.or_(
            b.icmp_signed("==", status, ir.Constant(_I32, 0)),
            b.icmp_signed("==", status, ir.Constant(_I32, -2)),
        )
        fail = fn.append_basic_block(f"fail{k}")
        b.cbranch(ok, blocks[k + 1], fail)
        b.position_at_end(fail)
        b.ret(status)
    b.position_at_end(blocks[-1])
    b.ret(ir.Constant(_I32, 0))
    return str(m)


def _type_name(t) -> str:
    return "ptr" if isinstance(t, ir.PointerType) else str(t)


def _arch_of(triple: str) -> str:
    arch = triple.split("-")[0]
    return {"arm64": "aarch64"}.get(arch, arch)


def _build_module(
    kernels: dict, plan: EntryPlan, triple: str, cpu: str, inline: bool, digest: str | None
):
    """(optimized llvmlite module, target machine) for `plan`; see build_object."""
    tm, full = _target_machine(triple, cpu)
    layout = str(tm.target_data)
    kernels = _normalize_kernels(kernels, plan)
    _check_plan(plan, kernels)
    used = [n for n in dict.fromkeys(c.kernel for c in _calls(plan))]

    modules, kernel_fns, compiled = [], {}, {}
    for name in used:
        pyfunc, argtypes = kernels[name]
        key = (id(pyfunc), argtypes)  # one compile for a kernel listed under two names
        if key not in compiled:
            text, symbol = kernel_ir(pyfunc, argtypes)
            mod = llvm.parse_assembly(_retarget(text, full, layout))
            fn = mod.get_function(symbol)
            compiled[key] = (mod, symbol, [str(a.type) for a in fn.arguments])
            modules.append(mod)
        mod, symbol, arg_types = compiled[key]
        kernel_fns[name] = (symbol, [_llvmlite_type(t) for t in arg_types])

    main = llvm.parse_assembly(_entry_module(plan, kernel_fns, full, layout, digest))
    for mod in modules:
        main.link_in(mod)

    exported = {plan.name, f"{plan.name}_temp_bytes", digest_symbol(plan.name)}
    for gv in list(main.functions) + list(main.global_variables):
        if gv.is_declaration or gv.name in exported or gv.name.startswith("llvm."):
            continue
        gv.linkage = "internal"
    renamed = set()
    for name, (symbol, _) in kernel_fns.items():
        if symbol in renamed:
            continue
        renamed.add(symbol)
        fn = main.get_function(symbol)
        fn.name = kernel_symbol(plan.name, name)
        if not inline:
            fn.add_function_attribute("noinline")
    for fn in main.functions:
        if not fn.is_declaration:
            fn.add_function_attribute("nounwind")  # no .eh_frame: nothing here unwinds

    arch = _arch_of(full)
    for fn in main.functions:
        if fn.is_declaration and fn.name.startswith("llvm."):
            parts = fn.name.split(".")
            if parts[1] in _ARCH_INTRINSICS and _ARCH_INTRINSICS[parts[1]] != arch:
                raise AotLinkError(
                    f"{plan.name}: the kernels use the {parts[1]} intrinsic "
                    f"{fn.name}, which {full} does not have"
                )
    main.verify()

    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(main, pb)
    main.verify()
    return main, tm


_ARCH_INTRINSICS = {
    "x86": "x86_64",
    "aarch64": "aarch64",
    "arm": "arm",
    "ppc": "powerpc64le",
    "nvvm": "nvptx64",
    "amdgcn": "amdgcn",
    "riscv": "riscv64",
}


def _llvmlite_type(text: str):
    if text == "ptr":
        return _PTR
    m = re.fullmatch(r"i(\d+)", text)
    if m:
        return ir.IntType(int(m.group(1)))
    return {"float": ir.FloatType(), "double": ir.DoubleType()}.get(text) or _unsupported(text)


def _unsupported(text):
    raise AotLinkError(
        f"kernel parameter of LLVM type {text} is not supported by the entry "
        f"builder (arrays and int64 only)"
    )


def build_object(
    kernels: dict,
    plan: EntryPlan,
    triple: str = "host",
    cpu: str = "generic",
    *,
    inline: bool = False,
    digest: str | None = None,
    allowed_imports=DEFAULT_IMPORTS,
) -> bytes:
    """Build the relocatable ELF object for `plan`.

    kernels: name -> (pyfunc, argtypes) or name -> pyfunc (argtypes then come from the
    calls); triple: "host", "x86_64-linux", "aarch64-linux" or a full LLVM triple;
    cpu: "generic" (portable baseline of the architecture), "native" (the build host's CPU
    and features; host triple only) or an LLVM cpu name.

    With inline=False (the default) each kernel stays one local function named
    `kernel_symbol(plan.name, kernel)` so `symbol_sizes` reports code bytes per kernel (LLVM
    may still specialize it); inline=True lets LLVM inline kernels into the entry.
    digest (`signature_digest`) is exported as `digest_symbol(plan.name)`, for loaders and
    C code to check that the object is the one they were generated with.
    Raises AotLinkError if the object would import any symbol outside `allowed_imports`
    (e.g. libm's expf for math.exp, or floor on a generic x86-64 without SSE4.1)."""
    module, tm = _build_module(kernels, plan, triple, cpu, inline, digest)
    obj = tm.emit_object(module)
    extra = sorted(set(undefined_symbols(obj)) - set(allowed_imports))
    if extra:
        raise AotLinkError(
            f"{plan.name}: the object for {resolve_triple(triple)} would import "
            f"{', '.join(extra)}; AOT objects must be self-contained (allowed: "
            f"{', '.join(sorted(allowed_imports)) or 'nothing'}). libm calls come from math "
            f"functions the target lowers to a library call; use jitc's own math."
        )
    return obj


# --------------------------------------------------------------------------- C side

# float16 as its bits: uint16_t, which every C compiler has (_Float16 needs GCC 12 / Clang 15
# and, on x86-64, SSE2 ABI support; a caller that has it can cast the pointer).
_C_TYPES = {
    "float16": "uint16_t",
    "float32": "float",
    "float64": "double",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "bool": "bool",
    "complex64": "float _Complex",
    "complex128": "double _Complex",
}


def _c_type(dtype) -> str:
    name = np.dtype(dtype).name
    if name not in _C_TYPES:
        raise AotLinkError(f"no C type for {name}")
    return _C_TYPES[name]


def c_prototypes(plan: EntryPlan) -> str:
    """The C declarations of the two exported functions (needs stdint.h, stdbool.h,
    stddef.h)."""
    args = [
        f"{'' if k in plan.inout else 'const '}{_c_type(d)}* arg{k}"
        for k, (_, d) in enumerate(plan.params)
    ]
    args += [f"{_c_type(d)}* res{k}" for k, (_, d) in enumerate(plan.results)]
    args.append("void* temp")
    return f"int {plan.name}({', '.join(args)});\nsize_t {plan.name}_temp_bytes(void);\n"


# --------------------------------------------------------------------------- ELF reading


@dataclass(frozen=True)
class _Symbol:
    name: str
    kind: int  # STT_*
    bind: int  # STB_*
    shndx: int
    size: int


def _elf(obj: bytes):
    """(section headers, symbols) of a little-endian ELF64 relocatable object."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise AotLinkError("not a little-endian ELF64 object")
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]

    def cstr(table_off, off):
        end = obj.index(b"\0", table_off + off)
        return obj[table_off + off : end].decode()

    names = [cstr(sections[shstrndx][4], s[0]) for s in sections]
    symbols = []
    for s in sections:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[s[6]][4]
        for k in range(s[5] // 24):
            st_name, info, _other, shndx, _value, size = struct.unpack_from(
                "<IBBHQQ", obj, s[4] + 24 * k
            )
            symbols.append(_Symbol(cstr(strtab, st_name), info & 0xF, info >> 4, shndx, size))
    return [(n, s) for n, s in zip(names, sections)], symbols


def symbol_sizes(obj: bytes) -> dict[str, int]:
    """Bytes per defined function and data symbol (local or global) of an ELF object.

    Code LLVM keeps in unnamed places (constant pools like .LCPI0_0, jump tables) is not
    in any symbol; `section_sizes` gives the totals."""
    _, symbols = _elf(obj)
    return {
        s.name: s.size for s in symbols if s.kind in (1, 2) and s.shndx != 0 and s.name
    }  # STT_OBJECT, STT_FUNC


def section_sizes(obj: bytes) -> dict[str, int]:
    """Bytes per allocated section (.text, .rodata, .rodata.cst16, .bss, ...)."""
    sections, _ = _elf(obj)
    return {name: s[5] for name, s in sections if s[2] & 0x2 and s[5]}  # SHF_ALLOC


def undefined_symbols(obj: bytes) -> list[str]:
    """Names the object imports (what `nm -u` lists)."""
    _, symbols = _elf(obj)
    return sorted({s.name for s in symbols if s.shndx == 0 and s.name})
