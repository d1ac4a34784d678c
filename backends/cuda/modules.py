"""Kernel modules on disk: each generated kernel is a file in the (private) jitc cache.

A real file gives simulator tracebacks real lines (and the simulator tells shared arrays apart
by file and line), and lets numba-cuda cache compiled kernels next to it (`cache=True`), so a
new process on a GPU machine does not recompile. Files are named by the kernel's hash and
loaded like the cpu backend's (backends/native/cache.py: private, sealed, size-bounded).
"""

from __future__ import annotations

import functools
import os

from jitc.backends.cuda import toolchain
from jitc.backends.cuda.kernel import Kernel
from jitc.backends.native import cache, cache_locator
from jitc.core import interrupts


@functools.cache
def _launchable(name: str, source: str):
    from numba import cuda

    module = cache.load_module(source, subdir="cuda", name=f"jitc_cuda_{name}")
    fn = getattr(module, name)
    if toolchain.simulator_enabled():
        return module, cuda.jit(fn)
    with (
        interrupts.deferred(),
        cache.lock(),
        cache_locator.only_ours(getattr(module, "__file__", None)),
    ):
        return module, cuda.jit(fn, cache=cache.persistent())


def load(kernel: Kernel):
    """The launchable (`fn[grid, block, stream](*args)`) of a generated kernel."""
    return _launchable(kernel.name, kernel.source)[1]


def seal(kernels) -> None:
    """Seal the numba-cuda cache files of kernels that compiled and ran."""
    for k in kernels:
        cache.seal(_launchable(k.name, k.source)[0])


def dump(graph_name: str, kernels, directory: str) -> None:
    """JITC_DUMP: every kernel's source in one file per function."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{graph_name}.cuda.py"), "w") as f:
        f.write("\n\n".join(k.source for k in kernels))
