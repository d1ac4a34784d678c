"""A mid-size jitted call with another process busy on one core (issue 14).

    python -m benchmarks.bench_contention [--markdown]

Times one call (an elementwise chain and a row sum over 512x512 float64, ~0.25 ms on 2
threads) quiet, while another process works in bursts of 3 ms CPU (COMPETITOR=code to run
another; BUSY="taskset -c 1" to pin it), and single-threaded
(numba.set_num_threads(1)), in fresh processes per threading layer: jitc's choice (TBB) and
numba's GNU OpenMP default, which jitc used before. The goal: contended within 2x of quiet
and never slower than single-threaded. Times are medians of samples that each average
enough calls to last 20 ms, so a stalled call counts in its sample.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LAYERS = {"tbb (jitc)": {}, "omp (numba's default)": {"NUMBA_THREADING_LAYER": "omp"}}
REPEATS = 15
BUSY = os.environ.get("BUSY", "").split()
# another process's work as a compile or a data loader does it: bursts of a few ms of CPU
# with short sleeps between (a pure spin loop lets OpenMP's spinning threads keep up)
COMPETITOR = os.environ.get(
    "COMPETITOR",
    """
import time
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.003:
        pass
    time.sleep(0.0002)
""",
)


def measure() -> dict:
    """In a child process: the call's time quiet, contended and single-threaded (µs)."""
    import numba
    import numpy as np

    import jitc
    from benchmarks.run import median_time

    @jitc.jit
    def step(x, y):
        return np.exp(-x * x) * y + np.sqrt(np.abs(y)).sum(axis=1, keepdims=True)

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    step(x, y)

    def timed():
        return median_time(lambda: step(x, y), REPEATS, 0.02) * 1e6

    out = {"layer": numba.threading_layer(), "quiet": timed()}
    busy = subprocess.Popen(BUSY + [sys.executable, "-c", COMPETITOR])
    try:
        time.sleep(0.2)
        out["contended"] = timed()
        numba.set_num_threads(1)
        out["single"] = timed()
    finally:
        busy.kill()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure()))
        return
    rows = []
    for name, env in LAYERS.items():
        run = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_contention", "--child"],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        if run.returncode:
            rows.append((name, f"ERROR: {run.stderr.strip().splitlines()[-1]}"))
            continue
        r = json.loads(run.stdout.splitlines()[-1])
        rows.append(
            (
                name,
                f"{r['quiet']:.0f}",
                f"{r['contended']:.0f}",
                f"{r['single']:.0f}",
                f"{r['contended'] / r['quiet']:.2f}",
                f"{r['contended'] / r['single']:.2f}",
            )
        )
    head = (
        "threading layer",
        "quiet µs",
        "contended µs",
        "single-thread µs (contended)",
        "contended/quiet",
        "contended/single",
    )
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(f"{h:>16}" for h in head))
        for r in rows:
            print("  ".join(f"{c:>16}" for c in r))


if __name__ == "__main__":
    main()
