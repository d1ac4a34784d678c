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
    x = da.random.default_rng(0).standard_normal((rows, COLS), chunks=(chunk, COLS),
                                                  dtype=np.float32)
    g, b = rng.standard_normal(COLS).astype(np.float32), rng.standard_normal(COLS).astype(
        np.float32)
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


def run(rows, chunk, workers) -> list[dict]:
    import dask.array as da
    from distributed import Client, LocalCluster

    out = []
    for n in workers:
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=40) as cluster, \
                Client(cluster):
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
                np.testing.assert_allclose(jitted(x[:chunk], *rest).compute(),
                                           fn(x[:chunk].compute(), *rest), rtol=1e-3, atol=1e-4)
                out.append({"case": name, "workers": n, "numpy": numpy_s, "jitc": jitc_s,
                            "first": first, "tasks": x.numblocks[0]})
    return out


def table(rows_, rows, chunk) -> str:
    gib = rows * COLS * 4 / 2**30
    lines = [f"### Dask: f(x).sum(axis=0), x f32[{rows},{COLS}] ({gib:.1f} GiB) in chunks of "
             f"{chunk} rows, LocalCluster of worker processes, 1 thread each", "",
             "| case | workers | tasks | dask + NumPy chunks | dask + jitc | jitc/NumPy | "
             "jitc first compute |", "|---|--:|--:|--:|--:|--:|--:|"]
    for r in rows_:
        lines.append(f"| {r['case']} | {r['workers']} | {r['tasks']} | {r['numpy']:.2f} s | "
                     f"{r['jitc']:.2f} s | {r['jitc'] / r['numpy']:.2f}x | {r['first']:.2f} s |")
    return "\n".join(lines)


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
