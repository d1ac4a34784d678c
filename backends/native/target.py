"""The CPU numba compiles jitc's kernels for: the host, with 512-bit vectors allowed.

LLVM tunes Intel's AVX-512 server cores (Skylake-X to Sapphire Rapids) with
"prefer-256-bit", so its loop vectorizer stops at ymm registers even where the kernel is
all arithmetic: a leftover of the first AVX-512 parts, whose wide instructions lowered the
clock. On this project's machine (an Intel Xeon of that line, family 6 model 207) zmm ran
jitc's float32 tanh 1.2x and W1's chain 1.25x faster, and memory-bound kernels the same.
Turning the preference off keeps every other host feature.

numba reads its target features once, when its CPU codegen is first made, so this must run
before the process's first numba compile. Where something compiled earlier (the user's own
numba code), or NUMBA_CPU_FEATURES is set, numba's choice stands. Processes jitc starts to
compile for this one get `child_environment()`, so that what they cache is what this
process looks up (the features are part of numba's cache key).
"""

from __future__ import annotations

WIDE_VECTORS = "-prefer-256-bit"


def configure() -> None:
    """Allow 512-bit vectors on AVX-512 hosts, if numba has not chosen its features yet
    (nothing where numba is not installed: the backend then says so itself)."""
    try:
        import llvmlite.binding as llvm
        from numba.core import config
        from numba.core.registry import cpu_target
    except ImportError:
        return
    made = "_toplevel_target_context" in vars(cpu_target)  # numba's cached_property
    if made or config.CPU_FEATURES is not None:
        return
    features = llvm.get_host_cpu_features()
    if features.get("avx512f", False):
        config.CPU_FEATURES = f"{features.flatten()},{WIDE_VECTORS}"


def features() -> str:
    """The target features numba compiles for in this process."""
    import llvmlite.binding as llvm
    from numba.core import config

    return config.CPU_FEATURES or llvm.get_host_cpu_features().flatten()


def child_environment() -> dict:
    """Environment variables that make a child process's numba compile as this one does."""
    return {"NUMBA_CPU_FEATURES": features()}
