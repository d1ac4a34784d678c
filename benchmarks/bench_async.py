"""Async dispatch (issue 16): a loop of LSTM steps whose Python work overlaps the compute.

    python -m benchmarks.bench_async [--hidden 60] [--steps 100] [--rounds 7] [--prepare-us 10]

Each step prepares the next input in Python (`prepare`: a little NumPy and a Python loop
whose length is calibrated at start so that it takes --prepare-us, the issue's ~10 µs) and
runs one step of W4's 3-layer LSTM (benchmarks/workloads.py make_lstm) on
it. Four loops compute the same final state: `sync` calls the jitted step; `naive` submits
each call to a one-thread concurrent.futures.ThreadPoolExecutor, passing the previous
step's future, which the pool thread waits for; `submit` chains jitc's futures
(`step.submit(x, state_future)`: small steps run on jitc's native worker, which needs no
GIL; steps whose kernels split over threads, from --hidden 256 on, on its Python executor
thread); the last loop does the same with the interpreter's switch interval cut from 5 ms
to 50 µs while it runs, so the executor thread gets the GIL sooner (jitc itself leaves the
interval alone). The loops alternate round by round (the machine
is shared and noisy); the table gives each loop's median and best round and the median of
the per-round ratios to `sync`. The goal: submit <= 0.7x sync.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
import time

import numpy as np

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.workloads import _normal, _rng, make_lstm  # noqa: E402

SHORT_SWITCH = 50e-6  # sys.setswitchinterval for the last loop (CPython's default: 5 ms)


def setup(hidden, steps, prepare_us=10.0):
    """(jitted step: (x, state) -> state, the initial state, prepare(t) -> x)."""
    import jitc

    lstm_step, _ = make_lstm(hidden)

    def step(x, state):
        return lstm_step(x, state)[1]

    rng = _rng()
    raw = [rng.standard_normal(hidden).astype(np.float32) for _ in range(steps)]
    state = tuple(
        (_normal(rng, (1, hidden), 0.5), _normal(rng, (1, hidden), 0.5)) for _ in range(3)
    )

    loop = [150]

    def prepare(t):  # the caller's own work for the next step
        s = 0
        for i in range(loop[0]):
            s += i * i
        return ((raw[t] - np.float32(0.1)) * np.float32(0.5)).reshape(1, hidden)

    for _ in range(3):  # scale the loop until prepare takes prepare_us
        loop[0] = max(1, round(loop[0] * prepare_us / (_time(prepare, steps) * 1e6)))
    return jitc.jit(step), state, prepare


def _time(prepare, steps, n=1000):
    """Seconds per prepare call, the best of 5 runs of n."""
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for i in range(n):
            prepare(i % steps)
        best = min(best, (time.perf_counter() - t) / n)
    return best


def loops(step, state, prepare, steps):
    pool = cf.ThreadPoolExecutor(1)

    def sync():
        s = state
        for t in range(steps):
            s = step(prepare(t), s)
        return s

    def naive():
        fut = pool.submit(lambda: state)
        for t in range(steps):
            fut = pool.submit(lambda x, prev: step(x, prev.result()), prepare(t), fut)
        return fut.result()

    def submit():
        s = state
        for t in range(steps):
            s = step.submit(prepare(t), s)
        return s.result()

    def submit_short_switch():  # the option jitc does not take: measured here
        old = sys.getswitchinterval()
        sys.setswitchinterval(SHORT_SWITCH)
        try:
            return submit()
        finally:
            sys.setswitchinterval(old)

    return {
        "sync": sync,
        "naive": naive,
        "submit": submit,
        f"submit, switch interval {SHORT_SWITCH * 1e6:.0f} µs": submit_short_switch,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=60)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--prepare-us",
        type=float,
        default=10.0,
        help="the Python work per step (the issue's ~10 µs)",
    )
    args = parser.parse_args(argv)
    step, state, prepare = setup(args.hidden, args.steps, args.prepare_us)
    runs = loops(step, state, prepare, args.steps)
    expected = runs["sync"]()
    for name, run in runs.items():
        got = run()
        if not all(np.array_equal(a, b) for pair in zip(got, expected) for a, b in zip(*pair)):
            raise SystemExit(f"{name}: the final state differs from the synchronous loop's")
    from jitc.runtime import tiered

    tiered.wait()  # the step's own driver compiles in the background after its first call
    t = time.perf_counter()
    for i in range(1000):
        prepare(i % args.steps)
    prep_us = (time.perf_counter() - t) * 1e3
    x = prepare(0)
    t = time.perf_counter()
    for _ in range(1000):
        step(x, state)
    step_us = (time.perf_counter() - t) * 1e3
    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
    sync = np.array(times["sync"])
    print(
        f"LSTM 3x{args.hidden} batch 1, {args.steps} steps; prepare {prep_us:.1f} µs, "
        f"one jitted step {step_us:.1f} µs; {args.rounds} alternating rounds, "
        f"{os.cpu_count()} cores\n"
    )
    print("| loop | median ms | best ms | x sync (median of rounds) |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        ts = np.array(ts)
        print(
            f"| {name} | {np.median(ts) * 1e3:.2f} | {ts.min() * 1e3:.2f} | "
            f"{np.median(ts / sync):.2f} |"
        )


if __name__ == "__main__":
    main()
