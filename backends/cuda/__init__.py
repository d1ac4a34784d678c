"""The cuda backend: numba-cuda kernels for every fusion, run on a GPU or numba's simulator.

`compile(graph)` needs a GPU or NUMBA_ENABLE_CUDASIM=1; `kernels(graph)` and `kernels_ptx(graph)`
need neither (only the toolchain), which is how CI proves the GPU code compiles without a GPU.
"""

from __future__ import annotations

import numpy as np


def is_available():
    """A GPU or the simulator, and numba-cuda (ptxas is only needed to assemble PTX)."""
    from importlib import metadata

    from jitc.backends.cuda import toolchain

    try:
        metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        return False, f"numba-cuda is not installed (pip install '{toolchain.NUMBA_CUDA_PACKAGE}')"
    if toolchain.simulator_enabled():
        return True, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    gpu, seen = toolchain.gpu_status()
    if gpu:
        return True, "a CUDA GPU"
    return False, (f"no CUDA GPU here ({seen}) and numba's CUDA "
                   "simulator is off: run on a machine with an NVIDIA GPU and driver, or set "
                   "NUMBA_ENABLE_CUDASIM=1 before numba is imported to use the simulator")


# The dtypes its kernels compute in. The 8- and 16-bit and unsigned integers and float16
# (jitc's others) are refused by name: the lowering's casts, literals, shifts and division
# helpers are written for int32/int64, and a kernel that ran on them would wrap and compare
# wrongly; float16 would need the cpu backend's rounding after every op (backends/cpu/half.py).
DTYPES = frozenset(map(np.dtype, (np.bool_, np.int32, np.int64, np.float32, np.float64)))


def refuse_dtypes(graph, arg_names=()):
    """UnsupportedError naming the first argument, or else the first op (with its user
    file:line), whose dtype this backend does not compute in."""
    from jitc.errors import UnsupportedError

    others = ", ".join(d.name for d in sorted(DTYPES, key=str))
    for p in graph.params:
        if p.dtype not in DTYPES:
            i = p.attrs["index"]
            what = f"argument {arg_names[i]!r}" if i < len(arg_names) else f"parameter {i}"
            raise UnsupportedError(f"backend 'cuda': {what} has dtype {p.dtype}; the cuda "
                                   f"backend computes in {others} (use backend='cpu')")
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.nodes:
            if n.subgraph is not None:
                stack.append(n.subgraph)
            types = n.tuple_types or ((n.shape, n.dtype),)
            bad = [d for _, d in types if d is not None and np.dtype(d) not in DTYPES]
            if bad:
                at = f" at {n.loc}" if n.loc else ""
                raise UnsupportedError(f"backend 'cuda': {n.op} computes in {bad[0]}{at}; the "
                                       f"cuda backend computes in {others} (use backend='cpu')")


def compile(graph):
    from jitc.backends.cuda.executable import CudaExecutable

    refuse_dtypes(graph)
    return CudaExecutable(graph)


def kernels(graph):
    """The distinct kernels a graph compiles to (source, argument types), no GPU needed."""
    from jitc.backends.cuda.program import build_program

    refuse_dtypes(graph)
    return build_program(graph).kernels


def kernels_ptx(graph, arch: str = "sm_90") -> dict:
    """{kernel name: PTX text} for every kernel of `graph`, made by NVVM without a GPU."""
    from jitc.backends.cuda.program import build_program
    from jitc.backends.cuda.ptx import program_ptx

    refuse_dtypes(graph)
    return program_ptx(build_program(graph), arch)
