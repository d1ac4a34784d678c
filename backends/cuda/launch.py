"""Launch configurations from sizes at run time: (grid, block) and scratch lengths per kernel.

Kernels never bake in a launch shape (loops and reductions stride over the grid), so the same
kernel runs with many blocks of 256 threads on a GPU and with two blocks of a few threads under
numba's simulator, which runs one Python thread per CUDA thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitc.backends.cuda.dot import SKINNY_THREADS, TILE, TILE_THREADS
from jitc.backends.cuda.kernel import Kernel
from jitc.backends.cuda.reduction import MAX_THREADS
from jitc.core.errors import JitcError

MAX_GRID_YZ = 65535


@dataclass(frozen=True)
class Policy:
    max_threads: int  # of a loop block, and of a skinny dot block (<= SKINNY_THREADS)
    max_blocks: int
    max_lanes: int  # threads per row of a reduction
    max_lanes_across_rows: int  # the same when rows, not lanes, run along threadIdx.x
    row_threads: int  # threads of a reduction block


GPU = Policy(
    max_threads=256,
    max_blocks=8192,
    max_lanes=256,
    max_lanes_across_rows=8,
    row_threads=MAX_THREADS,
)
# The simulator starts one Python thread per CUDA thread for every block: a few threads and
# at most two blocks still run every code path (several lanes, several rows per block,
# grid-stride loops, skinny dots over several blocks).
SIMULATOR = Policy(
    max_threads=16, max_blocks=2, max_lanes=4, max_lanes_across_rows=2, row_threads=8
)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Config:
    grid: tuple
    block: tuple
    scratch_elements: int = 0  # per scratch array

    @property
    def empty(self) -> bool:
        return 0 in self.grid


def config(kernel: Kernel, policy: Policy) -> Config:
    info = kernel.launch
    if kernel.kind in ("loop", "matrix"):  # a matrix kernel: a thread per matrix, scratch
        t = min(policy.max_threads, _pow2_at_least(info["total"]))
        return Config(
            (min(_ceil(info["total"], t), policy.max_blocks),), (t,), info.get("scratch", 0)
        )
    if kernel.kind == "reduction":
        rows, rlen = info["rows"], info["rlen"]
        lanes = min(_pow2_at_least(rlen), policy.max_lanes)
        if info["one_lane"]:  # a float16 sum: every add in order (reduction.in_order)
            lanes = 1
        if not info["lanes_on_x"]:  # rows run along threadIdx.x: keep enough of them
            lanes = min(lanes, policy.max_lanes_across_rows)
        subs = max(1, min(policy.row_threads // lanes, _pow2_at_least(rows)))
        blocks = min(_ceil(rows, subs), policy.max_blocks)
        block = (lanes, subs) if info["lanes_on_x"] else (subs, lanes)
        return Config((blocks,), block, blocks * subs * rlen)
    B, M, N = info["B"], info["M"], info["N"]
    if kernel.kind == "dot_tile":
        grid, block = (_ceil(N, TILE), _ceil(M, TILE), B), (TILE_THREADS, TILE_THREADS)
    else:
        t = min(SKINNY_THREADS, policy.max_threads, _pow2_at_least(N))
        grid, block = (_ceil(N, t), _ceil(M, info["rows_per_block"]), B), (t,)
    if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
        raise JitcError(
            f"cuda backend: a dot of {B} x {M} x {N} needs a grid of {grid} "
            f"blocks; CUDA allows at most {MAX_GRID_YZ} along y and z"
        )
    return Config(grid, block)
