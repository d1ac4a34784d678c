"""Run a kernel over its rows, split across numba's threads when the work is large enough,
or a group of independent small kernels as the tasks of one parallel region.

One launcher serves every kernel (they share the abi.py signature), so the parallel region
is compiled once per process (and cached on disk), not once per kernel: a numba function
with a prange costs ~0.4 s to compile, a serial kernel ~0.1 s. Its source is loaded through
cache.py like generated code, so its cache files are private and sealed too (never beside
the installed package, never in numba's own cache directories).

A group (schedule.py) is launched as one more kernel, `group`, whose rows are its chains of
kernels: its pack is a table of each chain's first entry, then (kernel address, pack offset
from the table, rows) per kernel, chain after chain, and a row runs its chain's kernels in
turn, each over all its rows. The launcher splits it like any kernel, into one task per
chain when the group is worth running concurrently (group_work).
"""

from __future__ import annotations

import functools

import numba

from jitc.backends.cpu.threads import start_thread_pool
from jitc.backends.native.cache import load_module

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
# A group runs its members concurrently when the work beside its largest member is at least
# this much: at PARALLEL_MIN_WORK, the 3-layer LSTM step of benchmarks W4 (six 60x240
# products of 14K multiply-adds) ran 1.1-1.3x slower in a parallel region than in turn.
GROUP_MIN_WORK = 4 * PARALLEL_MIN_WORK
# A group is split into up to this many tasks per thread, fewer than a kernel's rows: its
# chains are few and even, and each task costs TBB about a microsecond. 24 projections at
# batch 1 (benchmarks/bench_executor.py) ran in 0.56-0.59x their sequential time in 4 tasks,
# 0.58-0.62x in 16; with another process busy on a core, 1.04-1.13x against 1.08-1.17x.
GROUP_CHUNKS_PER_THREAD = 2
# A BLAS kernel is split into up to this many tasks per thread: a task is one BLAS call
# over a block of columns or rows, and BLAS runs best on large blocks. W2 at batch 1
# ([1,512]x[512,1024], a gemv per task) took 18.7-19.0 us in 2 tasks per thread and 28-29
# us in 8 (NumPy 21 us); at batch 256 (a gemm per task), 1.22 ms against 1.29 ms.
BLAS_CHUNKS_PER_THREAD = 2
# A matrix times a vector (a gemv per task) splits into one task per thread: on an AMD EPYC
# W2 at batch 1 took 28-30 us in 1 task per thread and 35-39 us in 2 (NumPy 35-37 us); a
# 2000x2000 float32 matrix times a vector 140-142 against 147-157 us (NumPy 127-131).
GEMV_CHUNKS_PER_THREAD = 1
GROUP_ENTRY = 3  # kernel address, pack offset (int64s from the table), rows

SOURCE = f"""\
# jitc's launcher (backends/cpu/launcher.py)
from numba import carray, cfunc, njit, prange
from jitc.backends.cpu.abi import (KERNEL_SIGNATURE, LAUNCHER_SIGNATURE, call_kernel,
                                   pointer_address, swap_chunksize, thread_count)
from jitc.backends.native.cache import persistent


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


@cfunc(KERNEL_SIGNATURE, nogil=True, cache=persistent())
def group(table, lo, hi):
    t = carray(table, (carray(table, (hi + 1,))[hi],))
    at = pointer_address(table)
    failed = 0
    for e in range(t[lo], t[hi], {GROUP_ENTRY}):
        failed |= call_kernel(t[e], at + 8 * t[e + 1], 0, t[e + 2])
    return failed
"""


def splits(rows: int, work: int) -> bool:
    """Does `launch` split this kernel's rows over threads (with more than one thread)?"""
    return work >= PARALLEL_MIN_WORK and rows > 1


def _tasks_work(tasks_per_thread: int) -> int:
    """The work for which `launch` makes this many tasks per thread of numba's pool."""
    return tasks_per_thread * numba.config.NUMBA_NUM_THREADS * CHUNK_MIN_WORK


def launch_work(work: int, blas: bool, matrix_vector: bool = False, sized: bool = False) -> int:
    """The work `launch` is given for a kernel of this much work: its own, but for a BLAS
    kernel at most enough for BLAS_CHUNKS_PER_THREAD tasks per thread (a matrix-vector
    product's: GEMV_CHUNKS_PER_THREAD), unless its rows are blocks sized already (`sized`:
    a depth-split product's)."""
    if not blas or sized:
        return work
    tasks = GEMV_CHUNKS_PER_THREAD if matrix_vector else BLAS_CHUNKS_PER_THREAD
    return min(work, _tasks_work(tasks))


def group_work(works: list) -> int:
    """The work `launch` is given for a group of chains of these works: enough for one task
    per chain, up to GROUP_CHUNKS_PER_THREAD per thread of numba's pool, when the work
    beside the largest is GROUP_MIN_WORK or more, else 0 (one thread runs them in turn)."""
    if sum(works) - max(works) < GROUP_MIN_WORK:
        return 0
    return min(len(works) * CHUNK_MIN_WORK, _tasks_work(GROUP_CHUNKS_PER_THREAD))


@functools.cache
def launcher_module():
    start_thread_pool()  # registers get_num_threads, which cached code links against
    return load_module(SOURCE, runtime=True)


def launcher_address() -> int:
    return launcher_module().launch.address


def group_address() -> int:
    return launcher_module().group.address
