"""Jitted functions on dask arrays against the same dask graph with NumPy chunk functions
(issue 15), on a LocalCluster of worker processes.

    python -m benchmarks.bench_dask [--rows 2097152] [--workers 1,2] [--markdown]

The input (rows x 512 float32, 4 GiB at the default 2^21 rows) is generated on the workers
and persisted before timing, so the times are the functions' and the scheduler's, not data
generation's. Each row: the median of REPEATS computes of `f(x).sum(axis=0)` (a small
result, so no 4 GiB travels back); jitc's first compute (every worker compiling or loading
its kernels) is shown separately.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import jitc

REPEATS = 3
COLS = 512


def layernorm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(1e-5)) * g + b


def softmax_mlp(x, w, b):
    y = np.maximum(x @ w + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _inputs(rows, chunk):
    import dask.array as da

    rng = np.random.default_rng(0)
    x = da.random.default_rng(0).standard_normal(
        (rows, COLS), chunks=(chunk, COLS), dtype=np.float32
    )
    g, b = (
        rng.standard_normal(COLS).astype(np.float32),
        rng.standard_normal(COLS).astype(np.float32),
    )
    w = (rng.standard_normal((COLS, COLS)) / np.sqrt(COLS)).astype(np.float32)
    return x, {"layernorm": (layernorm, (g, b)), "softmax MLP": (softmax_mlp, (w, b))}


def _time(fn, x, rest):
    """Median seconds of computing fn(x, *rest).sum(axis=0)."""
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn(x, *rest).sum(axis=0).compute()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def task_overhead(n=400) -> float:
    """Seconds per task the cluster spends on tasks that do nothing (scheduler, transfer
    of tiny results): the floor a chunk's work must stay well above."""
    import dask.array as da

    y = da.zeros(n, chunks=1).map_blocks(np.negative, dtype=np.float64).sum(split_every=32)
    tasks = len(y.__dask_graph__())
    y.compute()
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        y.compute()
        times.append(time.perf_counter() - t)
    return statistics.median(times) / tasks


def chunk_seconds(chunk) -> float:
    """One thread's time for jitc's layernorm on one chunk, in this process."""
    import numba

    x = np.random.default_rng(0).standard_normal((chunk, COLS), dtype=np.float32)
    g = b = np.ones(COLS, np.float32)
    f = jitc.jit(layernorm)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        f(x, g, b)
        times = []
        for _ in range(5):
            t = time.perf_counter()
            f(x, g, b)
            times.append(time.perf_counter() - t)
    finally:
        numba.set_num_threads(before)
    return min(times)


def run(rows, chunk, workers) -> list[dict]:
    import dask.array as da
    from distributed import Client, LocalCluster

    out = []
    for n in workers:
        with (
            LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=40,
            ) as cluster,
            Client(cluster),
        ):
            x, cases = _inputs(rows, chunk)
            x = x.persist()
            x.sum().compute()  # wait until it is in the workers' memory
            for name, (fn, rest) in cases.items():
                jitted = jitc.jit(fn)
                t = time.perf_counter()
                jitted(x, *rest).sum(axis=0).compute()
                first = time.perf_counter() - t
                jitc_s = _time(jitted, x, rest)
                numpy_s = _time(functools.partial(da.map_blocks, fn, dtype=np.float32), x, rest)
                np.testing.assert_allclose(
                    jitted(x[:chunk], *rest).compute(),
                    fn(x[:chunk].compute(), *rest),
                    rtol=1e-3,
                    atol=1e-4,
                )
                out.append(
                    {
                        "case": name,
                        "workers": n,
                        "numpy": numpy_s,
                        "jitc": jitc_s,
                        "first": first,
                        "tasks": x.numblocks[0],
                        "overhead": task_overhead(),
                    }
                )
    return out


def table(rows_, rows, chunk) -> str:
    gib = rows * COLS * 4 / 2**30
    lines = [
        f"### Dask: f(x).sum(axis=0), x f32[{rows},{COLS}] ({gib:.1f} GiB) in chunks of "
        f"{chunk} rows, LocalCluster of worker processes, 1 thread each",
        "",
        "| case | workers | tasks | dask + NumPy chunks | dask + jitc | jitc/NumPy | "
        "jitc first compute |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows_:
        lines.append(
            f"| {r['case']} | {r['workers']} | {r['tasks']} | {r['numpy']:.2f} s | "
            f"{r['jitc']:.2f} s | {r['jitc'] / r['numpy']:.2f}x | {r['first']:.2f} s |"
        )
    overhead = statistics.median(r["overhead"] for r in rows_)
    return "\n".join(lines + ["", _estimate(chunk, overhead)])


def _estimate(chunk, overhead, total=1e12, nodes=100, cores=16) -> str:
    """On paper, from one thread's measured time per chunk and the measured scheduler
    overhead per task: how large a cluster one pass over a 1 TB array keeps busy. With T
    threads each taking a chunk of total/T bytes, the work lasts total/(T*rate) while
    dask's one scheduler spends T*overhead handing out the tasks: busy while
    T <= sqrt(total / (rate * overhead))."""
    per_chunk = chunk_seconds(chunk)
    rate = chunk * COLS * 4 / per_chunk  # bytes per second per thread
    best = (total / (rate * overhead)) ** 0.5
    threads = nodes * cores
    compute, dispatch = total / (threads * rate), threads * overhead
    return (
        f"Paper estimate for 1 TB: jitc's layernorm runs at {rate / 1e9:.1f} GB/s on one "
        f"thread ({per_chunk * 1e3:.1f} ms per {chunk * COLS * 4 / 2**20:.0f} MiB chunk) "
        f"and the scheduler spends {overhead * 1e3:.2f} ms per task (both measured here). "
        f"One pass keeps at most sqrt(1 TB / (rate x overhead)) = {best:.0f} threads busy "
        f"({best / cores:.0f} nodes of {cores} cores), with chunks of "
        f"{total / best / 2**30:.1f} GiB, about {2 * best * overhead:.2f} s per pass. "
        f"On {nodes} nodes ({threads} threads) a pass computes for {compute:.3f} s but "
        f"takes {dispatch:.2f} s to schedule: saturating them takes tasks of at least "
        f"{dispatch:.1f} s of work, i.e. {dispatch / compute:.0f} passes fused per task "
        "(time steps of a stencil, epochs over the data)."
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2**21)
    p.add_argument("--chunk", type=int, default=2**16)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    results = run(a.rows, a.chunk, [int(n) for n in a.workers.split(",")])
    print(table(results, a.rows, a.chunk))


if __name__ == "__main__":
    main()
