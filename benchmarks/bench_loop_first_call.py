"""First-call time of issue 36's loops at two trip counts: compiling a loop must not grow
with the number of times it runs.

    python -m benchmarks.bench_loop_first_call [--markdown]

Each (case, size) runs in a fresh process with an empty JITC_CACHE_DIR (jitc's runtime
store, built once per installation, already there), twice: in jitc's default mode
(tiered: the reference tier runs a loop for up to 0.5 s while the kernels compile), the
time a user's first call waits for; and with JITC_COMPILE=sync, the time to compile
before running, which is what must not grow with the trip count. The sizes change the trip
counts of every loop in the function (the Cholesky's three loops, Levinson's recursion, the
CSR rows) while its source stays the same; a traced trip count (Jacobi's steps, the LSTM's)
compiles once for all counts, so its two sizes are a second shape. The result is checked
against NumPy.
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

# (case, the two sizes, what the size is)
CASES = [
    ("cholesky_in_place", (200, 1000), "N"),
    ("durbin", (1000, 4000), "N"),
    ("gauss_seidel", (100, 400), "N (10 sweeps)"),
    ("jacobi_python", (100, 1000), "steps"),
    ("conjugate_gradient_python", (500, 2000), "N"),
    ("csr_matvec", (10_000, 100_000), "rows"),
    ("lstm_loop", (100, 1000), "steps"),
]

CHILD = """
import json, os, sys, time
import numpy as np
from benchmarks.bench_loop_first_call import make
case, size, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.environ["JITC_COMPILE"] = mode  # the benchmarks package set sync
fn, args = make(case, size)
import jitc
f = jitc.jit(fn)
fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
t = time.perf_counter()
got = f(*fresh)
first = time.perf_counter() - t
want = fn(*args)
flat = lambda x: [v for y in x for v in flat(y)] if isinstance(x, tuple) else [x]
for g, w in zip(flat(got), flat(want), strict=True):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
print(json.dumps({"first": first}))
"""


def make(case: str, size: int):
    """(the plain NumPy function, its arguments) of `case` at `size`."""
    import math

    import numpy as np

    from benchmarks import workloads as w

    rng = np.random.default_rng(36)
    if case == "cholesky_in_place":
        s = rng.standard_normal((size, size))
        return w.cholesky_in_place, (s @ s.T + size * np.eye(size),)
    if case == "durbin":
        lags = np.arange(size + 1)
        return w.durbin, (np.exp(-0.5 * lags) * np.cos(0.1 * lags),)
    if case == "gauss_seidel":
        return w.gauss_seidel, (rng.random((size, size)), rng.random((size, size)) * 0.01, 10)
    if case == "jacobi_python":
        return w.jacobi_python, (rng.random(20_000, dtype=np.float32), size)
    if case == "conjugate_gradient_python":
        r = rng.standard_normal((size, size)) / math.sqrt(size)
        a = r @ r.T + 0.5 * np.eye(size)
        b = rng.standard_normal(size)
        return w.conjugate_gradient_python, (a, b, 1e-6 * float(np.sqrt(b @ b)))
    if case == "csr_matvec":
        return w.csr_matvec, w._csr_matrix(rng, size, size, 10)
    if case == "lstm_loop":
        _, lstm_loop = w.make_lstm(60)
        xs = (rng.standard_normal((size, 1, 60)) * 0.5).astype(np.float32)
        zeros = np.zeros((1, 60), np.float32)
        return lstm_loop, (xs, tuple((zeros, zeros) for _ in range(3)))
    raise ValueError(f"no case {case!r}")


def first_call(case: str, size: int, store: str, mode: str = "tiered") -> float:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, JITC_CACHE_DIR=cache, JITC_RUNTIME_DIR=store, PYTHONPATH=root)
        for name in ("JITC_COMPILE", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        run = subprocess.run(
            [sys.executable, "-c", CHILD, case, str(size), mode],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if run.returncode:
        raise RuntimeError(f"{case} at {size}: {run.stderr.strip().splitlines()[-1]}")
    return json.loads(run.stdout.strip().splitlines()[-1])["first"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", help="comma-separated case names")
    args = ap.parse_args(argv)
    cases = [c for c in CASES if not args.only or c[0] in args.only.split(",")]
    rows = [
        ("case", "size")
        + tuple(f"{w}, {n}" for w in ("first call", "compile first") for n in ("smaller", "larger"))
        + ("compile: larger/smaller",)
    ]
    with tempfile.TemporaryDirectory() as store:
        first_call("durbin", 1000, store)  # the installation's runtime pieces, built once
        for case, (small, large), what in cases:
            t0 = time.perf_counter()
            tiered = [first_call(case, n, store) for n in (small, large)]
            a, b = (first_call(case, n, store, "sync") for n in (small, large))
            times = [f"{t:.2f} s" for t in (*tiered, a, b)]
            rows.append((case, f"{what} {small} / {large}", *times, f"{b / a:.2f}x"))
            print(f"{case}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.markdown:
        print("| " + " | ".join(rows[0]) + " |")
        print("|" + "---|" * len(rows[0]))
        rows = rows[1:]
    for row in rows:
        print("| " + " | ".join(row) + " |" if args.markdown else "  ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
