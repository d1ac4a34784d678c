"""jitc.aot: compile a NumPy function ahead of time into a C-callable object with no runtime.

    art = jitc.aot.compile(step, "f32[1,60]", ..., name="lstm", target="aarch64-linux")
    art.write("build/")           # lstm.o, lstm.h, liblstm.so, lstm.py, lstm.size.json
    art.size_report()

Pipeline: trace -> fuse (jitc.fusion) -> plan (plan.py: the cpu backend's kernels, static
sizes, a buffer plan over one temp arena) -> link (link.py: numba IR -> one llvmlite object).
"""

from jitc.aot.artifact import Artifact, compile, resolve_cpu
from jitc.aot.cli import cli_compile
from jitc.aot.link import AotLinkError
from jitc.aot.size import read_size_report

__all__ = ["Artifact", "AotLinkError", "compile", "cli_compile", "read_size_report", "resolve_cpu"]
