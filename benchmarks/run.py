"""jitc benchmarks against NumPy, numba and JAX (issue 4, "Targets").

    python -m benchmarks [--only W1,W3] [--quick] [--repeats N] [--markdown] [--strict]
    python benchmarks/run.py ...

Every implementation's result is checked against NumPy before it is timed; a mismatch or an
exception is printed in its table cell (details under the table) and the run continues.
Times are medians of N samples (time.perf_counter; each sample averages enough calls to last
a few ms), after a warm-up. Ratios jitc/peer < 1 mean jitc is faster.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks import peers
from benchmarks.peers import IMPLS
from benchmarks.workloads import WORKLOADS, w2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = (
    "W1",
    "W2",
    "W3",
    "W4",
    "W5",
    "W6",
    "W7",
    "W8",
    "W9",
    "W10",
    "W11",
    "W12",
    "W13",
    "W14",
    "W15",
    "W16",
)


# ---------------------------------------------------------------- timing


SLOW_CALL = 0.25  # seconds: a call this slow (NumPy running a Python loop) is timed 3 times


def median_time(fn, repeats, min_sample):
    """Median seconds per call of fn() over `repeats` samples of n calls (n: >= min_sample s),
    or over 3 calls where one takes SLOW_CALL or more."""
    fn()  # warm-up
    if "jitc.runtime.tiered" in sys.modules:  # a jitted function's own driver compiles after its
        sys.modules["jitc.runtime.tiered"].wait()  # first call, in the background
        fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_sample or n >= 1 << 20:
            if n == 1 and dt >= SLOW_CALL:
                repeats = min(repeats, 3)
            break
        n = min(n * 10, max(n + 1, int(n * 1.2 * min_sample / max(dt, 1e-9))))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


# Seconds between one peer's timing and the next: OpenMP, OpenBLAS and XLA workers spin
# for a while after a parallel region, and on 2 cores they slow whoever runs next.
SETTLE = 0.5


def copy_bandwidth(n, repeats):
    """GB/s of np.copyto on n float32 (bytes read + bytes written)."""
    src = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    dst = np.empty_like(src)
    t = median_time(lambda: np.copyto(dst, src), repeats, 0.0)
    return 2 * src.nbytes / t / 1e9


# ---------------------------------------------------------------- one workload


class Table:
    """Rows of cells plus numbered notes; rendered as aligned text or GitHub markdown."""

    def __init__(self, title, columns):
        self.title, self.columns, self.rows, self.notes = title, columns, [], []

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)
        return f"[{self.notes.index(text) + 1}]"

    def render(self, markdown):
        cols = self.columns
        rows = [[str(c) for c in r] for r in self.rows]
        if markdown:
            lines = [
                f"### {self.title}",
                "",
                "| " + " | ".join(cols) + " |",
                "|" + "|".join("---" if i == 0 else "--:" for i in range(len(cols))) + "|",
            ]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
            lines += [""] + [f"{i}. {n}" for i, n in enumerate(self.notes, 1)]
        else:
            w = [max(len(r[i]) for r in [cols] + rows) for i in range(len(cols))]

            def fmt(r):
                return "  ".join(
                    c.ljust(w[0]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)
                )

            lines = [f"== {self.title}", fmt(cols), fmt(["-" * x for x in w])]
            lines += [fmt(r) for r in rows] + [f"  [{i}] {n}" for i, n in enumerate(self.notes, 1)]
        return "\n".join(lines) + "\n"


def fmt_time(t, unit="time"):
    if unit == "us/call":
        return f"{t * 1e6:.2f} µs/call"
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.1f} µs"


def ratio_cells(times):
    j = times.get("jitc")
    return [
        f"{j / times[p]:.2f}x" if j and times.get(p) else "-" for p in ("NumPy", "numba", "JAX")
    ]


RATIO_COLS = ["jitc/NumPy", "jitc/numba", "jitc/JAX"]


def short_error(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}".strip()[:400]


def run_once(impl, case, fn, fargs):
    return peers.sync(impl, peers.call(case, fn, fargs))


def run_case(case, impls, table, args, bandwidth):
    want = case.fn(*case.args) if case.run is None else case.run(case.fn, *case.args)
    want = copy.deepcopy(want)  # in-place workloads return their state arrays, reset later
    times, first, cells = {}, {}, []
    for impl in IMPLS:
        if impl not in impls:
            cells.append("n/a" + table.note("JAX not installed: pip install -e .[bench]"))
            continue
        if impl in (case.skip or {}):
            cells.append("n/a" + table.note(f"{impl}: {case.skip[impl]}"))
            continue
        try:
            fn, fargs, note = peers.PREPARE[impl](case)
            run = functools.partial(run_once, impl, case, fn, fargs)
            t0 = time.perf_counter()
            out = run()
            first[impl] = time.perf_counter() - t0
            dtype_note = peers.check(out, want, case.rtol, case.atol, impl == "jitc")
            note = "; ".join(filter(None, [note, dtype_note]))
        except Exception as e:  # noqa: BLE001 - reported in the table
            kind = "WRONG" if isinstance(e, AssertionError) else "ERROR"
            cells.append(f"{kind} {table.note(f'{impl} on {case.name}: {short_error(e)}')}")
            args.failures.append((impl, case.name, short_error(e)))
            continue
        if not args.quick:  # a smoke run times nothing worth settling for
            time.sleep(SETTLE)  # the previous peer's idle thread pool stops spinning first
        times[impl] = median_time(run, args.repeats, args.min_sample)
        cells.append(
            fmt_time(times[impl], case.unit) + (table.note(f"{impl}: {note}") if note else "")
        )
    row = [case.name] + cells + ratio_cells(times)
    row.append(fmt_time(first["jitc"]) if "jitc" in first else "-")
    if case.bytes_moved:
        bound = case.bytes_moved / (bandwidth * 1e9)
        j = times.get("jitc")
        row += [
            f"{fmt_time(bound)} ({case.bytes_moved / 1e6:.1f} MB)",
            f"{bound / j:.0%}" if j else "-",
        ]
    table.rows.append(row + ["-"] * (len(table.columns) - len(row)))  # no bound: no bound columns


def run_workload(key, impls, args, bandwidth):
    cases = WORKLOADS[key](args.quick)
    cols = ["case"] + list(IMPLS) + RATIO_COLS + ["jitc 1st call"]
    if any(c.bytes_moved for c in cases):
        cols += [f"bw bound @{bandwidth:.1f} GB/s", "jitc % of bound"]
    table = Table(f"{key} (median time per call)", cols)
    for case in cases:
        run_case(case, impls, table, args, bandwidth)
    return table


# ---------------------------------------------------------------- W6: compile times


def w6_child(impl, quick):
    """In a fresh process: first call of W2 (compile included), then a new batch size."""
    case = w2(quick)[0]
    t1 = time.perf_counter()
    fn, fargs, _ = peers.PREPARE[impl](case, probe=False)
    peers.import_backend(impl)
    imports = time.perf_counter() - t1
    t1 = time.perf_counter()
    out = peers.sync(impl, fn(*fargs))
    first = time.perf_counter() - t1
    peers.check(out, case.fn(*case.args), case.rtol, case.atol)
    x2 = case.args[0][: max(1, case.args[0].shape[0] // 4)]
    if impl == "JAX":
        x2 = peers.jax_module().device_put(x2)
    t1 = time.perf_counter()
    peers.sync(impl, fn(x2, *fargs[1:]))
    new_batch = time.perf_counter() - t1
    print(
        json.dumps(
            {"first": first, "new_batch": new_batch, "batch": int(x2.shape[0]), "imports": imports}
        )
    )


def run_w6(impls, args):
    table = Table(
        "W6 compile: first call of W2 [256,512] (fresh process), then a new batch size",
        ["case"] + list(IMPLS) + RATIO_COLS,
    )
    rows = {k: {} for k in ("cold", "warm", "batch", "imports")}
    cells = {k: [] for k in rows}
    batch = "?"
    for impl in IMPLS:
        if impl == "NumPy" or impl not in impls:
            for k in rows:
                cells[k].append("n/a")
            continue
        with tempfile.TemporaryDirectory(prefix="jitc-bench-cache-") as cache:
            os.chmod(cache, 0o700)
            env = dict(os.environ, JITC_CACHE_DIR=cache)
            res = []
            for _ in range(2):  # the second process reuses the cache dir of the first
                p = subprocess.run(
                    [sys.executable, "-m", "benchmarks.run", "--w6-child", impl]
                    + (["--quick"] if args.quick else []),
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                lines = p.stdout.strip().splitlines()
                if p.returncode or not lines:
                    err = (p.stderr.strip().splitlines() or ["no output"])[-1][:400]
                    res.append(err)
                    args.failures.append((impl, "W6", err))
                else:
                    res.append(json.loads(lines[-1]))
        for k, r in (("cold", res[0]), ("warm", res[1]), ("batch", res[0]), ("imports", res[1])):
            if isinstance(r, str):
                cells[k].append("ERROR " + table.note(f"{impl}: {r}"))
            elif k == "imports" and impl != "jitc":  # imported with the benchmark module
                cells[k].append("-")
            else:
                rows[k][impl] = r[{"batch": "new_batch", "imports": "imports"}.get(k, "first")]
                cells[k].append(fmt_time(rows[k][impl]))
                batch = r["batch"]
    names = {
        "cold": "first call, fresh process, empty cache",
        "warm": "first call, 2nd fresh process, same cache dir",
        "batch": f"new batch size ({batch}) in the warm process",
        "imports": "jitc's backend import, 2nd process (not in the rows above)",
    }
    for k in rows:
        table.rows.append([names[k]] + cells[k] + ratio_cells(rows[k]))
    table.note(
        "numba: the loops version of W2 (numba cannot compile its NumPy code), "
        "cache=False; JAX has no persistent cache by default. Times exclude imports "
        "(for jitc: its cpu backend, which starts numba's threads and imports "
        "numba's array support, which imports scipy.linalg), timed in the last row."
    )
    return table


# ---------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(ALL), help="comma-separated workloads, e.g. W1,W3")
    ap.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (smoke test)")
    ap.add_argument("--repeats", type=int, default=None, help="timed samples per median")
    ap.add_argument("--markdown", action="store_true", help="print GitHub markdown tables")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any check or run failed")
    ap.add_argument("--w6-child", metavar="IMPL", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.w6_child:
        return w6_child(args.w6_child, args.quick)

    keys = [k.strip().upper() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in ALL]
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(ALL)}")
    args.repeats = args.repeats or (3 if args.quick else 15)
    args.min_sample = 0.0005 if args.quick else 0.02
    args.failures = []
    impls = [i for i in IMPLS if i != "JAX" or peers.jax_module()]

    import numba
    import threadpoolctl

    import jitc  # noqa: F401 - import before timing anything

    jax = peers.jax_module()
    bandwidth = copy_bandwidth(1 << 20 if args.quick else 1 << 25, args.repeats)
    pools = ", ".join(
        f"{p['internal_api']} {p['num_threads']} threads" for p in threadpoolctl.threadpool_info()
    )
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, numba {numba.__version__}, "
        f"jax {jax.__version__ if jax else 'not installed'}; {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at start; {pools}\n"
        f"copy bandwidth (np.copyto, float32, read+write) {bandwidth:.1f} GB/s\n",
        flush=True,
    )
    for key in keys:
        table = run_w6(impls, args) if key == "W6" else run_workload(key, impls, args, bandwidth)
        print(table.render(args.markdown), flush=True)
    if args.failures:
        print(f"{len(args.failures)} failure(s):")
        for impl, case, err in args.failures:
            print(f"  {impl} on {case}: {err}")
    return 1 if args.strict and args.failures else 0


if __name__ == "__main__":
    sys.exit(main())
