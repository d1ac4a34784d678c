"""numba's thread pool, on TBB (SciPy's BLAS kept to one thread: blas.py).

numba's pool runs on TBB rather than its GNU OpenMP default for two reasons measured on
this 2-core machine. GNU OpenMP is not fork-safe: numba kills a forked child that starts a
parallel region ("fork() called from a process already using GNU OpenMP"), so a user's
`multiprocessing.Pool` (fork is Linux's default) lost its workers and hung. And OpenMP's
static split waits on its slowest thread: with another process busy on one core, a 160 us
call took milliseconds (threads spinning on a descheduled peer); TBB's work stealing lets
the free core take the chunks instead. A user who set NUMBA_THREADING_LAYER, or started
numba's pool before jitc did, keeps their choice.

"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os

import numba
from numba.np.ufunc import parallel

from jitc.core import interrupts


@functools.cache
def start_thread_pool() -> str:
    """Start numba's threads (on TBB where jitc may choose) and name the layer in use."""
    with interrupts.deferred():
        if (
            not parallel._is_initialized
            and _load_tbb()
            and "NUMBA_THREADING_LAYER" not in os.environ
        ):
            numba.config.THREADING_LAYER = "tbb"
        parallel._launch_threads()
        return numba.threading_layer()


def _load_tbb() -> bool:
    """Load the `tbb` package's library so numba's TBB layer finds it: pip puts it in the
    environment's lib/, which the dynamic loader does not search."""
    try:
        files = importlib.metadata.distribution("tbb").files or []
    except importlib.metadata.PackageNotFoundError:
        return False
    for f in files:
        if f.name == "libtbb.so.12":
            try:
                ctypes.CDLL(str(f.locate()), mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                return False
    return False
