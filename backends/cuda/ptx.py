"""PTX and ptxas resources for the kernels of a graph, without a GPU.

Kernels are compiled from their source text by numba-cuda's NVVM (toolchain.compile_ptx_many:
one batch, in a child process when this process runs the simulator) and assembled by ptxas.
Identical kernels (same text) are compiled once.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitc.backends.cuda import toolchain
from jitc.backends.cuda.program import Program


def program_ptx(program: Program, arch: str = "sm_90") -> dict[str, str]:
    """{kernel name: PTX} for every distinct kernel of `program`, in launch order."""
    kernels = program.kernels
    ptxs = toolchain.compile_ptx_many([(k.source, k.argtypes, arch, k.name) for k in kernels])
    return dict(zip((k.name for k in kernels), ptxs))


@dataclass(frozen=True)
class KernelReport:
    name: str
    kind: str
    arch: str
    registers: int
    smem_bytes: int
    stack_bytes: int
    spill_bytes: int


def kernel_reports(kernels, arches=("sm_80", "sm_90")) -> list[KernelReport]:
    """Compile and assemble every kernel for every arch (one NVVM batch); a report each."""
    jobs = [(k, arch) for k in kernels for arch in arches]
    ptxs = toolchain.compile_ptx_many([(k.source, k.argtypes, a, k.name) for k, a in jobs])
    out = []
    for (k, arch), ptx in zip(jobs, ptxs):
        res = toolchain.assemble(ptx, arch).kernel(k.name)
        out.append(
            KernelReport(
                k.name,
                k.kind,
                arch,
                res.registers,
                res.smem_bytes,
                res.stack_frame_bytes,
                res.spill_bytes,
            )
        )
    return out


def table(reports) -> str:
    rows = [
        f"{'kernel':<28} {'kind':<11} {'arch':<6} {'regs':>4} {'smem':>6} {'stack':>5} {'spill':>5}"
    ]
    rows += [
        f"{r.name:<28} {r.kind:<11} {r.arch:<6} {r.registers:>4} {r.smem_bytes:>6} "
        f"{r.stack_bytes:>5} {r.spill_bytes:>5}"
        for r in reports
    ]
    return "\n".join(rows)
