"""The cuda backend: numba-cuda kernels for every fusion, run on a GPU or numba's simulator.

`compile(graph)` needs a GPU or NUMBA_ENABLE_CUDASIM=1; `kernels(graph)` and `kernels_ptx(graph)`
need neither (only the toolchain), which is how CI proves the GPU code compiles without a GPU.
Kernels compute in every dtype jitc has, as the cpu backend does: integers wrap, divide and
shift as NumPy's loops, float16 arrays hold float16 and each float16 op computes in float32,
rounded to float16 (lowering.py).
"""

from __future__ import annotations

import numpy as np

from jitc.core.dtypes import SUPPORTED


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
    return False, (
        f"no CUDA GPU here ({seen}) and numba's CUDA "
        "simulator is off: run on a machine with an NVIDIA GPU and driver, or set "
        "NUMBA_ENABLE_CUDASIM=1 before numba is imported to use the simulator"
    )


# The dtypes its kernels compute in: every jitc dtype but complex (its lowering has no
# complex arithmetic; the cpu backend's is in backends/cpu/complexmath.py).
DTYPES = frozenset(d for d in map(np.dtype, SUPPORTED) if d.kind != "c")


def refuse_dtypes(graph, arg_names=()):
    """UnsupportedError naming the first argument, or else the first op (with its user
    file:line), that these kernels cannot compute: a dtype outside DTYPES, or np.nextafter
    of float16 (the cpu backend steps float16's bit pattern; a cuda kernel holds float16
    values as float32, whose step rounds back to the same float16)."""
    from jitc.core.errors import UnsupportedError

    for p in graph.params:
        if p.dtype not in DTYPES:
            i = p.attrs["index"]
            what = f"argument {arg_names[i]!r}" if i < len(arg_names) else f"parameter {i}"
            raise UnsupportedError(
                f"backend 'cuda': {what} has dtype {p.dtype}, which the "
                "cuda backend does not compute in (use backend='cpu')"
            )
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.nodes:
            if n.subgraph is not None:
                stack.append(n.subgraph)
            at = f" at {n.loc}" if n.loc else ""
            types = n.tuple_types or ((n.shape, n.dtype),)
            bad = [d for _, d in types if d is not None and np.dtype(d) not in DTYPES]
            if bad:
                raise UnsupportedError(
                    f"backend 'cuda': {n.op} computes in {bad[0]}{at}, "
                    "which the cuda backend does not compute in (use "
                    "backend='cpu')"
                )
            if n.op == "nextafter" and n.dtype == np.dtype(np.float16):
                raise UnsupportedError(
                    f"np.nextafter of float16{at}: the cuda backend has no "
                    "float16 bit step; use backend='cpu'"
                )


def uncached(graph) -> list:
    """Nothing this backend compiles is handed on at exit."""
    return []


def cached(graph) -> bool:
    """numba-cuda caches kernels itself; the cuda backend is not tiered."""
    return True


def compile(graph):
    from jitc.backends.cuda.executable import CudaExecutable

    refuse_dtypes(graph)
    return CudaExecutable(graph)


def kernels(graph):
    """The distinct kernels a graph compiles to (source, argument types), no GPU needed."""
    from jitc.backends.cuda.program import build_program

    return build_program(graph).kernels


def kernels_ptx(graph, arch: str = "sm_90") -> dict:
    """{kernel name: PTX text} for every kernel of `graph`, made by NVVM without a GPU."""
    from jitc.backends.cuda.program import build_program
    from jitc.backends.cuda.ptx import program_ptx

    return program_ptx(build_program(graph), arch)
