"""Run a kernel over its rows, split across numba's threads when the work is large enough.

One launcher serves every kernel (they share the abi.py signature), so the parallel region
is compiled once per process (and cached on disk), not once per kernel: a numba function
with a prange costs ~0.4 s to compile, a serial kernel ~0.1 s. Its source is loaded through
cache.py like generated code, so its cache files are private and sealed too (never beside
the installed package, never in numba's own cache directories).
"""

from __future__ import annotations

import functools

from jitc.backends.cpu.cache import load_module
from jitc.backends.cpu.threads import start_thread_pool

# Below this much work (elements, or multiply-adds for a dot) one thread does all rows: a
# parallel region costs a few microseconds to start.
PARALLEL_MIN_WORK = 1 << 16
# Rows are split into up to this many chunks per thread, each its own task for TBB (a
# parallel chunksize of 1), so that when another process keeps a core busy the thread on the
# free core takes the chunks of the descheduled one instead of the call waiting for it: when
# numba split the chunks into one static block per thread, a contended call took as long as a
# single-threaded one, or longer. A chunk holds at least CHUNK_MIN_WORK, since each task costs
# about a microsecond (16 tasks made a 30 us call 4 us slower).
CHUNKS_PER_THREAD = 8
CHUNK_MIN_WORK = PARALLEL_MIN_WORK // 2

SOURCE = f'''\
# jitc's launcher (backends/cpu/launcher.py)
from numba import cfunc, njit, prange
from jitc.backends.cpu.abi import LAUNCHER_SIGNATURE, call_kernel, swap_chunksize, thread_count
from jitc.backends.cpu.cache import persistent


@njit(parallel=True, nogil=True, cache=persistent())
def _parallel(kernel, pack, rows, chunks):
    failed = 0
    outer = swap_chunksize(1)
    for c in prange(chunks):
        failed += call_kernel(kernel, pack, c * rows // chunks, (c + 1) * rows // chunks)
    swap_chunksize(outer)
    return failed


@cfunc(LAUNCHER_SIGNATURE, nogil=True, cache=persistent())
def launch(kernel, pack, rows, work):
    if work >= {PARALLEL_MIN_WORK} and rows > 1:
        chunks = min({CHUNKS_PER_THREAD} * thread_count(), rows, work // {CHUNK_MIN_WORK})
        if chunks > 1:
            return min(_parallel(kernel, pack, rows, chunks), 1)
    return call_kernel(kernel, pack, 0, rows)
'''


@functools.cache
def launcher_module():
    start_thread_pool()  # registers get_num_threads, which cached code links against
    return load_module(SOURCE, runtime=True)


def launcher_address() -> int:
    return launcher_module().launch.address
