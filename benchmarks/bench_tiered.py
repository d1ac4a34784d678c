"""W6 extended (issue 16): time to first result and time to compiled speed in a new process,
jitc sync and tiered, cold and warm cache, beside NumPy, numba and JAX.

    python -m benchmarks.bench_tiered [--quick] [--markdown]

Workloads: the softmax MLP softmax(relu(x @ W + b)) [256,512]x[512,1024] (W2) and a GPT-2
block n_ctx 64, n_embd 256 (W7). Each row runs in a fresh process. "first result" counts
from before the framework's import (jitc with its backend, jax; numba is imported by the
harness, so its import is not counted) to the end of the first call; "compiled speed at"
to the end of the first call that ran compiled code: jitc tiered keeps calling, as a loop
would, and its calls before that ran the reference tier (NumPy); "idle": it calls once, then
sleeps until the kernels are ready (numba's compiler needs the GIL, which a calling loop
holds half the time). "cold": an empty JITC_CACHE_DIR; "warm": a second process on the
cache the cold one left. numba's versions
have cache=False and JAX has no persistent cache by default: they are cold only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ("W2 softmax MLP", "W7 GPT-2 block")
# (implementation, JITC_COMPILE, cache) per row; cache "warm" reuses the row above's
ROWS = [
    ("NumPy", None, "-"),
    ("numba", None, "cold"),
    ("JAX", None, "cold"),
    ("jitc", "sync", "cold"),
    ("jitc", "sync", "warm"),
    ("jitc", "tiered", "cold"),
    ("jitc", "tiered", "warm"),
    ("jitc", "tiered", "cold, idle"),
]
MAX_WAIT = 300  # seconds a tiered child keeps calling before it gives up


def case_of(workload: str, quick: bool):
    from benchmarks.workloads import w2, w7

    return (w2 if workload.startswith("W2") else w7)(quick)[0]


def child(impl: str, workload: str, quick: bool, idle: bool) -> None:
    """In a fresh process: one row's timings, as JSON on the last line of stdout."""
    from benchmarks import peers
    from benchmarks.run import median_time

    case = case_of(workload, quick)
    want = case.fn(*case.args)
    t0 = time.perf_counter()
    fn, args, _ = peers.PREPARE[impl](case, probe=False)
    out = peers.sync(impl, fn(*args))
    first = time.perf_counter() - t0
    peers.check(out, want, case.rtol, case.atol)
    compiled_at, calls_before = (None, 0) if impl == "NumPy" else (first, 0)
    if impl == "jitc":
        from jitc.runtime import tiered

        compiled = not tiered.kernels_pending()  # the first call ran the compiled tier
        calls_before = int(not compiled)
        if idle:  # the caller does other work (here: sleeps) until the kernels are ready
            compiled = tiered.wait(MAX_WAIT)
        while not compiled and time.perf_counter() - t0 < MAX_WAIT:
            compiled = not tiered.kernels_pending()  # this call will run compiled kernels
            peers.check(fn(*args), want, case.rtol, case.atol)
            calls_before += not compiled
        if idle and compiled:
            fn(*args)  # the first compiled call
        compiled_at = time.perf_counter() - t0 if compiled else None
    steady = median_time(lambda: peers.sync(impl, fn(*args)), 7, 0.02)
    print(
        json.dumps(
            {
                "first": first,
                "compiled_at": compiled_at,
                "calls_before": calls_before,
                "steady": steady,
            }
        )
    )


def run_row(impl, mode, cache, workload, quick, cache_dir):
    env = dict(os.environ, JITC_CACHE_DIR=cache_dir, PYTHONPATH=ROOT)
    if mode:
        env["JITC_COMPILE"] = mode
    p = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_tiered", "--child", impl, workload]
        + (["--quick"] if quick else [])
        + (["--idle"] if "idle" in cache else []),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=MAX_WAIT + 120,
    )
    lines = p.stdout.strip().splitlines()
    if p.returncode or not lines:
        return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


def table(workload: str, quick: bool) -> list[tuple]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="jitc-bench-tiered-") as root:
        for k, (impl, mode, cache) in enumerate(ROWS):
            if cache != "warm":
                cache_dir = os.path.join(root, str(k))
            r = run_row(impl, mode, cache, workload, quick, cache_dir)
            rows.append(cells(impl, mode, cache, r))
    return rows


def cells(impl, mode, cache, r) -> tuple:
    name = impl + (f" {mode}" if mode else "")
    if "error" in r:
        return (name, cache, "ERROR " + r["error"], "", "", "")
    at = r["compiled_at"]
    return (
        name,
        cache,
        f"{r['first']:.3f}",
        "-" if impl == "NumPy" else "gave up" if at is None else f"{at:.3f}",
        str(r["calls_before"]),
        f"{r['steady'] * 1e3:.2f}",
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes (smoke test)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("IMPL", "WORKLOAD"), help=argparse.SUPPRESS)
    ap.add_argument("--idle", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(*args.child, args.quick, args.idle)
    header = (
        "implementation",
        "cache",
        "first result (s)",
        "compiled speed at (s)",
        "reference-tier calls",
        "steady call (ms)",
    )
    for workload in WORKLOADS:
        lines = [header] + table(workload, args.quick)
        print(f"\n{workload} ({case_of(workload, args.quick).name}), {os.cpu_count()} cores")
        if args.markdown:
            print("| " + " | ".join(lines[0]) + " |\n|" + "---|" * len(header))
            print("\n".join("| " + " | ".join(line) + " |" for line in lines[1:]))
        else:
            widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
            for line in lines:
                print("  ".join(c.rjust(w) for c, w in zip(line, widths)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
