"""Where a call's time goes: each launch timed over repeated profiled calls (backends/cpu/
profile.py) on the arguments given to lower() or seeded random inputs, and this machine's
copy bandwidth to compare against."""

from __future__ import annotations

import time

import numpy as np

COPY_BYTES = 64 << 20  # well past the last-level cache


def seeded_inputs(params, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in params:
        if p.dtype.kind == "f":
            a = rng.standard_normal(p.shape).astype(p.dtype)
        elif p.dtype.kind == "c":
            a = (rng.standard_normal(p.shape) + 1j * rng.standard_normal(p.shape)).astype(p.dtype)
        elif p.dtype.kind == "b":
            a = rng.random(p.shape) < 0.5
        else:
            a = rng.integers(0, 100, p.shape).astype(p.dtype)
        out.append(np.array(a, order="C"))  # np.ascontiguousarray makes a scalar 1-d
    return out


def timing_inputs(compiled) -> tuple[list | None, str]:
    """(the arrays to time `compiled`'s executable on, what they are), or (None, why not).
    The arguments `lower()` was given, copied (the timed calls may write them), where it
    had values; else seeded random ones, unless a loop stops when its values say so: a CG
    `while norm(r) > tol` on a random matrix may never stop, and a native call cannot be
    interrupted, so such a function is not timed without its own arguments. Counted loops
    (a `for` over a range) and branches stop whatever the values."""
    leaves = compiled.lowered.example_leaves
    if leaves is not None:
        arrays, captured = compiled.inputs(leaves)
        return [
            np.array(a, order="C") for a in (*arrays, *captured)
        ], "the arguments given to lower()"
    loop = next((n for n in _loops(compiled.graph) if n.attrs["stops"] == "values"), None)
    if loop is not None:
        return None, (
            f"Not timed: the loop at {loop.loc or '?'} runs until its values say stop (a "
            f"while loop until they converge), and on seeded random inputs it may never stop. "
            f"Time it on arrays of yours: jitc.jit(f).lower(*arrays).compile().report(path)."
        )
    return seeded_inputs(compiled.executable.graph.params), "seeded random inputs"


def _loops(graph):
    """The loops of `graph`, those inside fusions' and loops' graphs too."""
    for n in graph.nodes:
        if n.op == "while":
            yield n
        if n.subgraph is not None:
            yield from _loops(n.subgraph)


def copy_bandwidth() -> float:
    """Bytes per second NumPy's copy moves (read + write), best of five."""
    src = np.ones(COPY_BYTES // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    return 2 * src.nbytes / best


def time_kernels(executable, arrays, min_seconds: float = 0.2, max_calls: int = 200) -> dict:
    """Plain calls of `executable` (a cpu executable) on `arrays`, then as many
    profiled calls: {"calls": n, "call_ns": a plain call's median, "profiled_ns": a profiled
    call's median, "kernel_ns": the median of each profiled call's launches added up,
    "launch_ns": [median per launch]}. Each profiled call's launches fit in its own time,
    so kernel_ns <= profiled_ns (medians keep the order of paired samples)."""
    executable(*arrays)
    executable.profiled_call(*arrays)  # compiles the profiling launcher
    calls = _repeat(lambda: executable(*arrays), min_seconds, max_calls)
    per_launch, profiled = [], []
    for _ in calls:
        start = time.perf_counter_ns()
        _, spans = executable.profiled_call(*arrays)
        profiled.append(time.perf_counter_ns() - start)
        took = [0.0] * len(executable.launch_kernels)  # a loop's launches, added up
        for launch, begin, end in spans:
            took[launch] += end - begin
        per_launch.append(took)
    launches = np.array(per_launch, dtype=np.float64).reshape(len(calls), -1)
    return {
        "calls": len(calls),
        "call_ns": float(np.median(calls)),
        "profiled_ns": float(np.median(profiled)),
        "kernel_ns": float(np.median(launches.sum(axis=1))),
        "launch_ns": [float(v) for v in np.median(launches, axis=0)],
    }


def _repeat(call, min_seconds: float, max_calls: int) -> list[int]:
    times = []
    start = time.perf_counter()
    while len(times) < max_calls and (len(times) < 5 or time.perf_counter() - start < min_seconds):
        t = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - t)
    return times
