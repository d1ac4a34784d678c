"""The concurrent executor (issue 16): graphs with independent branches at batch 1, where no
kernel has enough rows to split over threads, run concurrently against sequentially.

    python -m benchmarks.bench_executor [--markdown] [--rounds N]

Each case is compiled twice in this process, with config.CONCURRENT on (what the opt-in
JITC_CONCURRENT=1 gives) and off (the default: one launch per kernel, in order);
the two are timed alternately, round after round (each first in every other round), so that a
busy neighbour slows both alike, and NumPy after them.
Times are medians over the rounds of samples that each average enough calls to last 20 ms;
the goal: concurrent <= 0.65x sequential on 2 cores.
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

from benchmarks.workloads import dense_softmax, make_lstm, w2_inputs

# Each head's products are below BLAS_MIN_FLOPS (backends/cpu/dot.py), so each is one kernel
# over one row, which no launch splits over threads; larger ones go to BLAS, which splits a
# batch-1 product over its columns already.
D, HIDDEN, OUT, HEADS = 512, 256, 64, 4
N_HEAD, D_HEAD = 8, 64


def mlp_heads(x, W1, b1, W2):
    """Four separate MLP heads on one input."""
    return tuple(np.maximum(x @ W1[i] + b1[i], 0) @ W2[i] for i in range(HEADS))


def head_projections(x, Wq, Wk, Wv):
    """Per-head q, k and v projections (separate weights per head), concatenated."""
    return tuple(np.concatenate([x @ W[h] for h in range(N_HEAD)], axis=1) for W in (Wq, Wk, Wv))


def cases():
    rng = np.random.default_rng(16)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x = normal(1, D)
    yield (
        f"{HEADS} MLP heads [1,{D}] -> {HIDDEN} -> {OUT} (float32)",
        mlp_heads,
        (
            x,
            normal(HEADS, D, HIDDEN, scale=D**-0.5),
            normal(HEADS, HIDDEN),
            normal(HEADS, HIDDEN, OUT, scale=HIDDEN**-0.5),
        ),
    )
    yield (
        f"per-head q/k/v projections [1,{D}], {N_HEAD} heads x {D_HEAD} (float32)",
        head_projections,
        tuple([x] + [normal(N_HEAD, D, D_HEAD, scale=D**-0.5) for _ in range(3)]),
    )
    # controls: W2 at batch 1 has no independent branches; W4's LSTM cells depend on each
    # other within a step, and unrolled, the cells of a diagonal (step t, layer l and step
    # t+1, layer l-1) are independent but too small to be worth a parallel region
    yield ("control: W2 softmax(relu(x@W+b)) [1,512]x[512,1024]", dense_softmax, w2_inputs(1))
    step, unrolled = make_lstm(60)
    xs = rng.standard_normal((100, 1, 60))
    state = tuple(
        (rng.standard_normal((1, 60)) * 0.5, rng.standard_normal((1, 60)) * 0.5) for _ in range(3)
    )
    yield "control: W4 LSTM 3x60 batch 1, one step", step, (xs[0], state)
    yield "control: W4 LSTM 100 steps, jitted Python loop", unrolled, (xs, state)


SETTLE = 0.5  # seconds for thread pools to stop spinning (benchmarks/run.py)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def sample(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def _tasks(chains) -> str:
    """A group's tasks: "24 tasks", or "4 tasks of 1-2 kernels" where chains run in them."""
    lengths = sorted({len(c) for c in chains})
    span = (
        ""
        if lengths == [1]
        else f" of {lengths[0]}-{lengths[-1]}"
        if len(lengths) > 1
        else f" of {lengths[0]}"
    )
    return f"{len(chains)} tasks{span and span + ' kernels'}"


def time_case(name, fn, fargs, rounds):
    """One table row: fn compiled with and without the concurrent schedule, timed
    alternately (and NumPy beside them)."""
    import jitc
    from jitc.core import config
    from jitc.runtime import tiered

    want = _leaves(fn(*fargs))
    runs = {}
    for concurrent in (True, False):
        config.CONCURRENT = concurrent
        f = jitc.jit(fn)
        for got, w in zip(_leaves(f(*fargs)), want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)
        runs["concurrent" if concurrent else "sequential"] = functools.partial(f, *fargs)
    tiered.wait()  # each function's own driver compiles in the background after its first call
    config.CONCURRENT = True
    launches = jitc.jit(fn).lower(*fargs).compile().executable.launch_chains
    n = max(1, int(0.02 / min(sample(call, 20) for call in runs.values())))
    times = {k: [] for k in runs}
    for r in range(rounds):  # each first in every other round: a pool spinning after the
        for k in sorted(runs, reverse=r % 2 == 1):  # one timed before slows the next
            times[k].append(sample(runs[k], n))
    time.sleep(SETTLE)  # NumPy last: its BLAS threads spin after a call, as numba's do
    numpy_call = functools.partial(fn, *fargs)
    times["NumPy"] = [sample(numpy_call, n) for _ in range(rounds)]
    med = {k: statistics.median(v) for k, v in times.items()}
    kernels = sum(len(chain) for chains in launches for chain in chains)
    groups = [chains for chains in launches if sum(map(len, chains)) > 1]
    sizes = (
        ", ".join(map(_tasks, groups))
        if len(groups) <= 4
        else f"{len(groups)}, the largest of {max(map(len, groups))} tasks"
    )
    return [
        name,
        f"{kernels} kernels, {len(launches)} launches (groups: {sizes or 'none'})",
        f"{med['sequential'] * 1e6:.1f} µs",
        f"{med['concurrent'] * 1e6:.1f} µs",
        f"{med['concurrent'] / med['sequential']:.2f}x",
        f"{min(times['concurrent']) / min(times['sequential']):.2f}x",
        f"{med['NumPy'] * 1e6:.1f} µs",
        f"{med['concurrent'] / med['NumPy']:.2f}x",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)

    import numba

    import jitc  # noqa: F401 - imported before timing

    load = os.getloadavg()[0]
    rows = [time_case(name, fn, fargs, args.rounds) for name, fn, fargs in cases()]
    cols = [
        "case",
        "schedule",
        "sequential",
        "concurrent",
        "concurrent/sequential",
        "(fastest samples)",
        "NumPy",
        "concurrent/NumPy",
    ]
    print(
        f"{os.cpu_count()} cores, numba {numba.get_num_threads()} threads "
        f"({numba.threading_layer()}), load average {load:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at the end; {args.rounds} rounds\n"
    )
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|---" + "|--:" * (len(cols) - 1) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(str(r[i])) for r in [cols] + rows) for i in range(len(cols))]
        for r in [cols] + rows:
            print(
                "  ".join(
                    str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r)
                )
            )


if __name__ == "__main__":
    sys.exit(main())
