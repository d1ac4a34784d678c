"""Tracing speed: a 1,000-op NumPy program must trace (function -> Lowered graph) in < 50 ms.

    python benchmarks/bench_trace.py

The program is a chain of layernorm/GELU/softmax-like blocks over a (64, 256) float32
array, so it exercises ufunc dispatch, NEP 50 dtype resolution, broadcasting, reductions,
reshape/transpose and matmul: the tracer's hot paths. Correctness is checked before timing
(the traced graph has >= 1,000 ops and its reference run matches NumPy).
"""

from __future__ import annotations

import math
import time

import numpy as np

import jitc

BUDGET_MS = 50.0
N_BLOCKS = 24


def _block(x, w, i):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(var + 1e-5)
    h = x @ w
    h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
    h = h.reshape(64, 4, 64).transpose(1, 0, 2)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    h = (e / e.sum(axis=-1, keepdims=True)).transpose(1, 0, 2).reshape(64, 256)
    h = np.where(h > 0.01, h, 0.0) * (i + 1)
    return x + np.clip(h, -3, 3)[:, ::-1] * 0.5


def program(x, w):
    for i in range(N_BLOCKS):
        x = _block(x, w, i)
    return x


def trace_once(jitted, args) -> tuple[float, int]:
    t = time.perf_counter()
    lowered = jitted.lower(*args)
    return time.perf_counter() - t, len(lowered.graph.nodes)


def main(repeats: int = 7) -> float:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    w = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    jitted = jitc.jit(program, backend="reference")

    # Correct first: the graph is big enough and computes what NumPy computes.
    _, n_ops = trace_once(jitted, (x, w))
    assert n_ops >= 1000, f"the benchmark program traced to only {n_ops} ops"
    got, want = jitted(x, w), program(x, w)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)

    times = sorted(trace_once(jitted, (x, w))[0] for _ in range(repeats))
    best, median = times[0] * 1e3, times[len(times) // 2] * 1e3
    per_1000 = median * 1000 / n_ops
    print(
        f"trace: {n_ops} ops in {median:.1f} ms median ({best:.1f} ms best) = "
        f"{per_1000:.1f} ms per 1,000 ops (budget {BUDGET_MS:.0f} ms)"
    )
    return per_1000


if __name__ == "__main__":
    ms = main()
    raise SystemExit(0 if ms < BUDGET_MS else f"tracing is too slow: {ms:.1f} ms per 1,000 ops")
