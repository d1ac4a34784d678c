"""Compile-time cost of jitc's optimizer: simplification + fusion of a ~1,000-op graph.

    python benchmarks/bench_fusion_compile.py [--blocks 10] [--repeats 7]

The graph is a stack of GPT-2 style transformer blocks (layernorm, attention with a causal
mask and softmax, GELU MLP, residuals), traced once. Before timing, the optimized graph is
checked against the traced one on the reference backend. The number reported is the median
wall time of `jitc.fusion.optimize` (every pass of the pipeline, verifier off), with the
per-pass split. Target: under 100 ms for 1,000 ops.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import jitc
from jitc.backends.reference.interpreter import evaluate
from jitc.core.pytree import flatten
from jitc.fusion import optimize
from jitc.fusion.stats import graph_stats

T, C, H = 16, 64, 4
TARGET_MS = 100.0


def _layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _block(x, p):
    d = C // H
    h = _layernorm(x, p["g1"], p["b1"])
    q, k, v = np.split(h @ p["w_qkv"] + p["b_qkv"], 3, axis=-1)
    q, k, v = (a.reshape(T, H, d).transpose(1, 0, 2) for a in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(np.float32(d))
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, np.float32(-1e9))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    o = (e / e.sum(axis=-1, keepdims=True)) @ v
    x = x + o.transpose(1, 0, 2).reshape(T, C) @ p["w_o"] + p["b_o"]
    h = _layernorm(x, p["g2"], p["b2"]) @ p["w_fc"] + p["b_fc"]
    h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))
    return x + h @ p["w_pr"] + p["b_pr"]


def transformer(x, params):
    for p in params:
        x = _block(x, p)
    return x


def _params(rng):
    def f(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    return {
        "g1": 1 + f(C),
        "b1": f(C),
        "w_qkv": f(C, 3 * C),
        "b_qkv": f(3 * C),
        "w_o": f(C, C),
        "b_o": f(C),
        "g2": 1 + f(C),
        "b2": f(C),
        "w_fc": f(C, 4 * C),
        "b_fc": f(4 * C),
        "w_pr": f(4 * C, C),
        "b_pr": f(C),
    }


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, C)).astype(np.float32)
    params = [_params(rng) for _ in range(args.blocks)]
    lowered = jitc.jit(transformer, backend="reference").lower(x, params)
    graph = lowered.graph
    n_ops = graph.count_ops()

    # correctness first: the optimized graph computes what the traced one does
    optimized = optimize(graph, verify=True)
    flat, _ = flatten(((x, params), {}))
    want, got = evaluate(graph, flat)[0], evaluate(optimized, flat)[0]
    scale = float(np.abs(want).max())
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5 * (1 + scale)):
        print("WRONG: the optimized graph disagrees with the traced graph", file=sys.stderr)
        sys.exit(1)

    optimize(graph)  # warm-up
    samples, split = [], {}
    for _ in range(args.repeats):
        timings: dict = {}
        start = time.perf_counter()
        optimize(graph, timings=timings)
        samples.append((time.perf_counter() - start) * 1e3)
        for name, seconds in timings.items():
            split.setdefault(name, []).append(seconds * 1e3)
    ms = statistics.median(samples)
    stats = graph_stats(optimized)
    print(
        f"fusion compile time: {n_ops} traced ops -> {stats['kernels']} kernels "
        f"({stats['fusions']} fusions), temp_bytes {stats['temp_bytes']}"
    )
    print(
        f"  optimize (simplify + fuse): {ms:.1f} ms median of {args.repeats} "
        f"(min {min(samples):.1f} ms); target < {TARGET_MS:.0f} ms for 1,000 ops: "
        f"{'ok' if ms < TARGET_MS * max(1.0, n_ops / 1000) else 'SLOW'}"
    )
    print(
        "  per pass: "
        + ", ".join(f"{name} {statistics.median(v):.1f} ms" for name, v in split.items())
    )
    return ms


if __name__ == "__main__":
    main()
