"""The CUDA toolchain: numba-cuda (NVVM) makes PTX, ptxas from the nvidia-cuda-nvcc wheel
assembles it, and two probes say how this process runs kernels (simulator or a real GPU).

Nothing here needs a GPU or a CUDA driver: PTX generation uses NVVM only, and ptxas is a plain
executable. Packages (see .ci/cuda-notes.md): ``numba-cuda[cu13]`` for NVVM/NVRTC and
``cuda-toolkit[nvcc]==13.*`` (the ``nvidia-cuda-nvcc`` wheel, same CUDA release as NVVM) for ptxas.

Simulator or real target is a per-process choice: numba picks ``numba.cuda``'s implementation
when ``numba.cuda`` is first imported, from ``NUMBA_ENABLE_CUDASIM``; it cannot change afterwards.
In a simulator process numba-cuda's compiler does not work, so `compile_ptx` of kernel *source*
runs in a child process with the simulator off (a function object cannot be shipped; it raises).

Public API:
    compile_ptx(pyfunc_or_source, argtypes, arch="sm_90", ...) -> str
    compile_ptx_many([(pyfunc_or_source, argtypes, arch[, name]), ...]) -> [str]
    find_ptxas() -> str
    assemble(ptx, arch="sm_90", ...) -> PtxasReport
    simulator_enabled() -> bool
    use_simulator(enable=True) -> bool   # fix numba.cuda's mode for this process, import it
    gpu_present() -> bool
    gpu_status() -> (bool, what the probe saw)
    status() -> (bool, reason)      # can this process make and assemble PTX?
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import linecache
import os
import pickle
import re
import subprocess
import sys
import tempfile
import types as _pytypes
from dataclasses import dataclass, field

from jitc.core import config
from jitc.core.errors import JitcError

__all__ = [
    "ToolchainError",
    "KernelResources",
    "PtxasReport",
    "compile_ptx",
    "compile_ptx_many",
    "find_ptxas",
    "assemble",
    "ptxas_version",
    "parse_ptxas_log",
    "simulator_enabled",
    "use_simulator",
    "gpu_present",
    "gpu_status",
    "status",
    "parse_arch",
]

NUMBA_CUDA_PACKAGE = "numba-cuda[cu13]"
PTXAS_PACKAGE = "nvidia-cuda-nvcc"  # installed as cuda-toolkit[nvcc]==13.* to match NVVM's release


class ToolchainError(JitcError):
    """The CUDA toolchain is missing, or NVVM / ptxas rejected a kernel."""


# ---------------------------------------------------------------------------------------------
# Architectures


def parse_arch(arch) -> tuple[int, int]:
    """(major, minor) of an arch given as "sm_90", "sm90", "compute_80", "90", 90 or (9, 0)."""
    if isinstance(arch, tuple) and len(arch) == 2 and all(isinstance(v, int) for v in arch):
        return arch
    text = str(arch).strip().lower()
    m = re.fullmatch(r"(?:sm_?|compute_?)?(\d+)(\d)", text)
    if not m:
        raise ToolchainError(
            f"cannot read the GPU architecture {arch!r}: give it as 'sm_80', 'sm_90', 90 or (9, 0)"
        )
    return int(m.group(1)), int(m.group(2))


def _sm(arch) -> str:
    major, minor = parse_arch(arch)
    return f"sm_{major}{minor}"


# ---------------------------------------------------------------------------------------------
# Which numba.cuda this process has


def _env_flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) != 0
    except ValueError:
        return False  # numba's own reading: a non-integer value warns and means the default, 0


def simulator_enabled() -> bool:
    """Whether numba.cuda in this process is (or, if imported now, would be) the CUDA simulator.

    Once numba.cuda is imported the answer is fixed and read off the imported module. Before
    that, numba.cuda follows numba's config.ENABLE_CUDASIM, which numba read from
    NUMBA_ENABLE_CUDASIM when numba itself was imported (and re-reads whenever it compiles), not
    the environment of the moment; without numba imported yet it is the environment. Imports
    nothing. To choose, set NUMBA_ENABLE_CUDASIM before numba is imported, or use_simulator().
    """
    mod = sys.modules.get("numba.cuda")
    is_available = getattr(mod, "is_available", None) if mod is not None else None
    if is_available is not None:
        return getattr(is_available, "__module__", "").endswith("simulator_init")
    config = sys.modules.get("numba.core.config")
    if config is not None and hasattr(config, "ENABLE_CUDASIM"):
        return bool(config.ENABLE_CUDASIM)
    return _env_flag("NUMBA_ENABLE_CUDASIM")


def use_simulator(enable: bool = True) -> bool:
    """Fix this process's numba.cuda to the simulator (or the real target) and import it.

    Sets NUMBA_ENABLE_CUDASIM, makes numba re-read it, and imports numba.cuda. Raises
    ToolchainError if numba.cuda was already imported the other way (it cannot be switched).
    """
    mod = sys.modules.get("numba.cuda")
    if mod is not None and getattr(mod, "is_available", None) is not None:
        if simulator_enabled() != enable:
            raise ToolchainError(
                f"numba.cuda is already imported {'without' if enable else 'with'} the simulator "
                f"in this process; set NUMBA_ENABLE_CUDASIM={int(enable)} before numba is "
                f"imported, or run in a child process"
            )
        return enable
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if enable else "0"
    from numba.core import config

    config.reload_config()
    import numba.cuda  # noqa: F401

    if simulator_enabled() != enable:
        raise ToolchainError(f"numba.cuda did not come up with simulator={enable}")
    return enable


_GPU_PROBE = r"""
import ctypes, sys
lib = None
for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib"):
    try:
        lib = ctypes.CDLL(name)
        break
    except OSError:
        pass
if lib is None:
    print("0 no CUDA driver library (libcuda) found")
    sys.exit(0)
rc = lib.cuInit(0)
if rc != 0:
    print(f"0 cuInit failed with CUresult {rc}")
    sys.exit(0)
n = ctypes.c_int(0)
rc = lib.cuDeviceGetCount(ctypes.byref(n))
print(f"{n.value if rc == 0 else 0} cuDeviceGetCount returned {rc}")
"""


@functools.lru_cache(maxsize=1)
def _gpu_probe() -> tuple[int, str]:
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _GPU_PROBE],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return 0, f"the GPU probe did not run: {e}"
    if proc.returncode != 0:
        return 0, f"the GPU probe crashed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"
    count, _, reason = proc.stdout.strip().partition(" ")
    try:
        return int(count), reason
    except ValueError:
        return 0, f"the GPU probe printed {proc.stdout!r}"


def gpu_present() -> bool:
    """Whether a real CUDA GPU is usable here (driver loads, cuInit works, >= 1 device).

    Asked once per process, in a child process that only uses ctypes on libcuda: nothing CUDA
    is imported or initialized here, so this is safe without a driver, before a fork, and in a
    simulator process (it reports the hardware, not the simulator). Honors CUDA_VISIBLE_DEVICES.
    """
    return _gpu_probe()[0] > 0


def gpu_status() -> tuple[bool, str]:
    """(gpu_present(), what the probe saw), e.g. (False, "no CUDA driver library found")."""
    count, reason = _gpu_probe()
    return count > 0, reason


# ---------------------------------------------------------------------------------------------
# ptxas


def _nvidia_dirs() -> list[str]:
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec else []


@functools.cache
def _find_ptxas_cached(override: str | None) -> str:
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise ToolchainError(f"JITC_PTXAS={override!r} is not an executable file")
    exe = "ptxas.exe" if os.name == "nt" else "ptxas"
    candidates = []
    for base in _nvidia_dirs():
        # CUDA 13 wheels install to nvidia/cu13/bin; CUDA 12 ones to nvidia/cuda_nvcc/bin.
        candidates += [
            os.path.join(base, "cu13", "bin", exe),
            os.path.join(base, "cuda_nvcc", "bin", exe),
        ]
        try:
            candidates += [os.path.join(base, d, "bin", exe) for d in sorted(os.listdir(base))]
        except OSError:
            pass
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise ToolchainError(
        f"ptxas not found: install the {PTXAS_PACKAGE!r} wheel "
        f"(pip install 'cuda-toolkit[nvcc]==13.*', the same CUDA release as numba-cuda's NVVM), "
        f"or point JITC_PTXAS at a ptxas binary"
    )


def find_ptxas() -> str:
    """Path of ptxas from the nvidia-cuda-nvcc wheel (or $JITC_PTXAS); ToolchainError if absent.

    A ptxas on PATH is deliberately not used: it must be at least as new as the NVVM that wrote
    the PTX (PTX .version), and the wheel pair is what keeps them in step.
    """
    return _find_ptxas_cached(config.ptxas())


@functools.cache
def ptxas_version(ptxas: str | None = None) -> str:
    """ptxas's release line, e.g. "Cuda compilation tools, release 13.5, V13.5.37"."""
    path = ptxas or find_ptxas()
    proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    lines = [ln for ln in proc.stdout.splitlines() if "release" in ln]
    return lines[-1].strip() if lines else proc.stdout.strip()


@dataclass(frozen=True)
class KernelResources:
    """What ptxas -v says one kernel (an .entry) uses, per thread / per block."""

    name: str  # the mangled .entry name
    short_name: str  # its Python name (last component of numba's mangled name)
    registers: int  # registers per thread
    smem_bytes: int  # static shared memory per block
    stack_frame_bytes: int  # local-memory stack frame per thread
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int = 0
    cmem_bytes: int = 0  # constant bank 0 (kernel parameters)

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclass(frozen=True)
class PtxasReport:
    """The result of assembling one PTX module for one architecture."""

    arch: str  # "sm_90"
    kernels: tuple[KernelResources, ...]
    ptxas_version: str = ""
    gmem_bytes: int = 0  # module-scope global memory
    log: str = field(default="", repr=False)  # ptxas's full -v output
    cubin: bytes = field(default=b"", repr=False, compare=False)

    def kernel(self, name: str) -> KernelResources:
        """The kernel whose Python name or mangled name is `name` (or, if only one, it)."""
        hits = [k for k in self.kernels if name in (k.short_name, k.name)]
        if len(hits) == 1:
            return hits[0]
        names = ", ".join(k.short_name for k in self.kernels)
        raise KeyError(f"{len(hits)} kernels named {name!r} in this {self.arch} module: {names}")

    def table(self) -> str:
        """A one-line-per-kernel summary for logs."""
        rows = [
            f"{'kernel':<24} {'arch':<6} {'regs':>4} {'smem':>6} {'stack':>5} "
            f"{'spill st/ld':>11} {'bar':>3}"
        ]
        for k in self.kernels:
            spills = f"{k.spill_store_bytes}/{k.spill_load_bytes}"
            rows.append(
                f"{k.short_name:<24} {self.arch:<6} {k.registers:>4} {k.smem_bytes:>6} "
                f"{k.stack_frame_bytes:>5} {spills:>11} {k.barriers:>3}"
            )
        return "\n".join(rows)


def _short_name(mangled: str) -> str:
    """The last nested-name component of an Itanium name (numba's ABI tags B<n>... skipped)."""
    if not mangled.startswith("_ZN"):
        return mangled
    i, last = 3, mangled
    while i < len(mangled) and mangled[i] != "E":
        is_tag = mangled[i] == "B"
        if is_tag:
            i += 1
        m = re.match(r"\d+", mangled[i:])
        if not m:
            break
        n = int(m.group(0))
        start = i + len(m.group(0))
        if not is_tag:
            last = mangled[start : start + n]
        i = start + n
    return last


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BYTES = re.compile(r"(\d+) bytes (\w+(?:\[\d+\])?)")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_ptxas_log(log: str, arch: str = "", version: str = "", cubin: bytes = b"") -> PtxasReport:
    """Parse `ptxas -v` output into a PtxasReport (one KernelResources per entry function)."""
    entries: dict[str, dict] = {}
    order: list[str] = []
    props: dict[str, tuple[int, int, int]] = {}
    current_entry = None  # the entry whose "Used ..." line comes next
    current_props = None  # the function whose stack line comes next
    gmem = 0
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current_entry = m.group(1)
            arch = arch or m.group(2)
            if current_entry not in entries:
                entries[current_entry] = {}
                order.append(current_entry)
            continue
        if m := _PROPS.search(line):
            current_props = m.group(1)
            continue
        if m := _STACK.search(line):
            if current_props is not None:
                props[current_props] = tuple(int(v) for v in m.groups())
                current_props = None
            continue
        if m := _USED.search(line):
            if current_entry is None:
                continue
            info = entries[current_entry]
            info["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                info["barriers"] = int(b.group(1))
            for size, kind in _BYTES.findall(line):
                if kind == "smem":
                    info["smem"] = int(size)
                elif kind == "cmem[0]":
                    info["cmem"] = int(size)
            current_entry = None
            continue
        if "bytes gmem" in line:
            for size, kind in _BYTES.findall(line):
                if kind == "gmem":
                    gmem = int(size)
    kernels = []
    for name in order:
        info = entries[name]
        if "registers" not in info:
            raise ToolchainError(f"ptxas -v printed no 'Used N registers' line for {name}:\n{log}")
        stack, spill_st, spill_ld = props.get(name, (0, 0, 0))
        kernels.append(
            KernelResources(
                name=name,
                short_name=_short_name(name),
                registers=info["registers"],
                smem_bytes=info.get("smem", 0),
                stack_frame_bytes=stack,
                spill_store_bytes=spill_st,
                spill_load_bytes=spill_ld,
                barriers=info.get("barriers", 0),
                cmem_bytes=info.get("cmem", 0),
            )
        )
    return PtxasReport(
        arch=arch,
        kernels=tuple(kernels),
        ptxas_version=version,
        gmem_bytes=gmem,
        log=log,
        cubin=cubin,
    )


def assemble(
    ptx: str, arch="sm_90", *, opt_level: int = 3, extra_args=(), timeout: float = 300
) -> PtxasReport:
    """Assemble `ptx` with `ptxas -arch=sm_XX -v` and return what each kernel uses.

    Raises ToolchainError with ptxas's own messages when it rejects the PTX.
    """
    ptxas = find_ptxas()
    sm = _sm(arch)
    with tempfile.TemporaryDirectory(prefix="jitc-ptxas-") as tmp:
        src, out = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [ptxas, f"-arch={sm}", "-v", f"-O{opt_level}", *extra_args, src, "-o", out]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise ToolchainError(f"ptxas for {sm} took over {timeout} s") from e
        log = (proc.stdout or "") + (proc.stderr or "")
        if proc.returncode != 0:
            hint = ""
            if "Unsupported .version" in log or "is not supported" in log:
                hint = (
                    "\n(ptxas is older than the NVVM that wrote this PTX: install "
                    "nvidia-cuda-nvcc and nvidia-nvvm from one CUDA release, "
                    "e.g. pip install 'cuda-toolkit[nvcc,nvvm]==13.*')"
                )
            raise ToolchainError(
                f"ptxas rejected the PTX for {sm} (exit {proc.returncode}): {' '.join(cmd)}\n"
                f"{log.strip()}{hint}"
            )
        with open(out, "rb") as f:
            cubin = f.read()
    return parse_ptxas_log(log, arch=sm, version=ptxas_version(ptxas), cubin=cubin)


# ---------------------------------------------------------------------------------------------
# PTX generation with numba-cuda


def _resolve_argtypes(argtypes) -> tuple:
    """numba types, or strings such as "float32[::1]" read in numba.types' namespace."""
    from numba.core import types as nbtypes

    if isinstance(argtypes, str) or not isinstance(argtypes, (tuple, list)):
        argtypes = (argtypes,)
    out = []
    for t in argtypes:
        if isinstance(t, str):
            try:
                t = eval(t, {"__builtins__": {}}, dict(vars(nbtypes)))  # noqa: S307
            except Exception as e:
                raise ToolchainError(f"cannot read the argument type {t!r}: {e}") from e
        if not isinstance(t, nbtypes.Type):
            raise ToolchainError(f"argument type {t!r} is not a numba type")
        out.append(t)
    return tuple(out)


def _function_from_source(source: str, name: str | None, namespaces: dict):
    """Exec kernel source in a fresh namespace (once per `namespaces`) and pick the kernel."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<jitc-cuda-kernel-{digest}>"
    ns = namespaces.get(source)
    if ns is None:
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        ns = {"__name__": f"jitc_cuda_kernel_{digest}"}
        try:
            exec(compile(source, filename, "exec"), ns)
        except Exception as e:
            raise ToolchainError(f"the kernel source does not run: {type(e).__name__}: {e}") from e
        namespaces[source] = ns
    if name is not None:
        if name not in ns:
            raise ToolchainError(f"the kernel source defines no {name!r}")
        return ns[name]
    funcs = [
        v
        for v in ns.values()
        if isinstance(v, _pytypes.FunctionType) and v.__code__.co_filename == filename
    ]
    if len(funcs) != 1:
        names = [f.__name__ for f in funcs]
        raise ToolchainError(
            f"the kernel source defines {len(funcs)} plain functions {names}; "
            f"say which one is the kernel with name="
        )
    return funcs[0]


def _compile_here(pyfunc, argtypes, cc, options) -> str:
    try:
        from numba import cuda
    except ImportError as e:
        raise ToolchainError(
            f"numba.cuda cannot be imported ({e}): install {NUMBA_CUDA_PACKAGE!r}"
        ) from e
    if not getattr(cuda, "implementation", "") == "NVIDIA":
        raise ToolchainError(
            f"numba.cuda is numba's deprecated built-in target, not numba-cuda: install "
            f"{NUMBA_CUDA_PACKAGE!r}"
        )
    py_func = getattr(pyfunc, "py_func", pyfunc)  # a @cuda.jit dispatcher -> its function
    try:
        ptx, _ = cuda.compile(
            py_func, argtypes, device=False, abi="numba", cc=cc, output="ptx", **options
        )
    except Exception as e:
        raise ToolchainError(
            f"numba-cuda could not compile {getattr(py_func, '__name__', py_func)!r} "
            f"for sm_{cc[0]}{cc[1]}: {type(e).__name__}: {e}"
        ) from e
    return ptx


_CHILD = r"""
import pickle, sys
from jitc.backends.cuda import toolchain as mod
jobs, options = pickle.load(sys.stdin.buffer)
try:
    res = ("ok", mod.compile_ptx_many(jobs, **options))
except Exception as e:
    res = ("err", f"{type(e).__name__}: {e}")
sys.stdout.buffer.write(pickle.dumps(res))
"""


def _compile_in_child(jobs, options) -> list[str]:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=pickle.dumps((jobs, options)),
        capture_output=True,
        env=env,
        timeout=1800,
    )
    if proc.returncode != 0:
        raise ToolchainError(
            f"the PTX compile process failed (exit {proc.returncode}):\n"
            f"{proc.stderr.decode(errors='replace')[-3000:]}"
        )
    kind, value = pickle.loads(proc.stdout)
    if kind != "ok":
        raise ToolchainError(value)
    return value


def compile_ptx(
    pyfunc,
    argtypes,
    arch="sm_90",
    *,
    name: str | None = None,
    fastmath: bool = False,
    lineinfo: bool = False,
    opt: bool = True,
    launch_bounds=None,
) -> str:
    """PTX text of a CUDA kernel, made by numba-cuda's NVVM for `arch`; no GPU needed.

    pyfunc: a plain Python function written as a numba CUDA kernel (using `cuda.grid`,
        `cuda.shared.array`, `math.*`, ...), a @cuda.jit dispatcher, or the *source* of such a
        function as a string (which must import what it uses; `name` picks the kernel when it
        defines more than one function).
    argtypes: numba types, or strings like "float32[::1]", one per argument.
    arch: "sm_80", "sm_90", 90 or (9, 0).
    fastmath, lineinfo, opt, launch_bounds: as numba.cuda.compile's.

    In a process whose numba.cuda is the simulator, source strings compile in a child process
    (about 1.5 s each: batch them with compile_ptx_many); a function object raises.
    """
    return compile_ptx_many(
        [(pyfunc, argtypes, arch, name)],
        fastmath=fastmath,
        lineinfo=lineinfo,
        opt=opt,
        launch_bounds=launch_bounds,
    )[0]


def compile_ptx_many(
    jobs, *, fastmath: bool = False, lineinfo: bool = False, opt: bool = True, launch_bounds=None
) -> list[str]:
    """compile_ptx for each job (pyfunc_or_source, argtypes, arch[, name]), in order.

    A source string is executed once per batch however many of its kernels are compiled, and in
    a simulator process the whole batch goes to a single child process.
    """
    norm = []
    for job in jobs:
        pyfunc, argtypes, arch, *rest = job
        if len(rest) > 1:
            raise ToolchainError(f"a job is (pyfunc, argtypes, arch[, name]), not {job!r}")
        parse_arch(arch)
        norm.append((pyfunc, _resolve_argtypes(argtypes), arch, rest[0] if rest else None))
    options = {"fastmath": fastmath, "lineinfo": lineinfo, "opt": opt}
    if launch_bounds is not None:
        options["launch_bounds"] = launch_bounds
    if simulator_enabled():
        if not all(isinstance(j[0], str) for j in norm):
            raise ToolchainError(
                "this process runs numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 when numba.cuda "
                "was imported), whose numba.cuda cannot compile to PTX: pass the kernel's source "
                "text instead (compiled in a child process), or compile in a process without "
                "NUMBA_ENABLE_CUDASIM"
            )
        return _compile_in_child(norm, options) if norm else []
    namespaces: dict[str, dict] = {}
    out = []
    for pyfunc, argtypes, arch, name in norm:
        if isinstance(pyfunc, str):
            pyfunc = _function_from_source(pyfunc, name, namespaces)
        out.append(_compile_here(pyfunc, argtypes, parse_arch(arch), options))
    return out


# ---------------------------------------------------------------------------------------------
# Is it all there?


def status() -> tuple[bool, str]:
    """(True, versions) if PTX can be made and assembled here, else (False, what is missing).

    Imports nothing CUDA: checks that the packages are installed and ptxas is found.
    """
    from importlib import metadata

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    missing = [d for d in ("numba-cuda", "cuda-bindings") if version(d) is None]
    if missing:
        return False, (
            f"not installed: {', '.join(missing)} "
            f"(pip install '{NUMBA_CUDA_PACKAGE}' 'cuda-toolkit[nvcc]==13.*')"
        )
    try:
        ptxas = find_ptxas()
    except ToolchainError as e:
        return False, str(e)
    found = [
        f"{d} {version(d)}" for d in ("numba-cuda", "nvidia-nvvm", "nvidia-cuda-nvcc") if version(d)
    ]
    return True, f"{', '.join(found)}; ptxas at {ptxas}"
