"""One thread pool at a time: numba's.

numba calls BLAS through SciPy's OpenBLAS (a different library from NumPy's). Left at its
default, that BLAS spins its own threads beside numba's prange workers and on 2 cores the two
pools fight (an ~8 ms floor per call was measured). jitc runs SciPy's BLAS single-threaded
and parallelizes large dots itself, over row blocks inside numba's pool. NumPy's own BLAS is
left untouched.
"""

from __future__ import annotations

import functools
import os


@functools.cache
def single_threaded_scipy_blas() -> bool:
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (loads the library numba will call)
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return False
    done = False
    for lib in ThreadpoolController().lib_controllers:
        if lib.user_api == "blas" and "scipy.libs" in os.path.dirname(lib.filepath):
            lib.set_num_threads(1)
            done = True
    return done
