"""Kernel modules on disk: each generated kernel is a file in the (private) jitc cache.

A real file gives simulator tracebacks real lines (and the simulator tells shared arrays apart
by file and line), and lets numba-cuda cache compiled kernels next to it (`cache=True`), so a
new process on a GPU machine does not recompile. Files are named by the kernel's hash, written
atomically, and imported once per process.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import tempfile

from jitc.backends.cpu.cache import cache_dir
from jitc.backends.cuda import toolchain
from jitc.backends.cuda.kernel import Kernel


def _directory() -> str:
    path = os.path.join(cache_dir(), "cuda")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _import(name: str, source: str):
    module_name = f"jitc_cuda_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = os.path.join(_directory(), module_name + ".py")
    try:
        with open(path) as f:
            intact = f.read() == source
    except (OSError, UnicodeDecodeError):
        intact = False
    if not intact:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[module_name] = module
    return module


@functools.cache
def _launchable(name: str, source: str):
    from numba import cuda

    fn = getattr(_import(name, source), name)
    if toolchain.simulator_enabled():
        return cuda.jit(fn)
    return cuda.jit(fn, cache=True)


def load(kernel: Kernel):
    """The launchable (`fn[grid, block, stream](*args)`) of a generated kernel."""
    return _launchable(kernel.name, kernel.source)


def dump(graph_name: str, kernels, directory: str) -> None:
    """JITC_DUMP: every kernel's source in one file per function."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{graph_name}.cuda.py"), "w") as f:
        f.write("\n\n".join(k.source for k in kernels))
