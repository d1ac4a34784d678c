"""First-call time of functions with many array arguments (issue 14), jitc beside JAX.

    python -m benchmarks.bench_first_call [--markdown] [--mlp-only] [--runs N]

Each case runs in a fresh process with an empty JITC_CACHE_DIR, so the time includes every
compile a new user waits for (kernels, the driver, the launcher, the collectors). Cases:
a sum of N arrays, an SGD step over a dict of N/3 parameters updated in place (N/3 grads
read, N/3 results written), and a sum of N different elementwise terms. Before: 300
arguments took 37-47 s (one kernel of 300 arrays, one driver of 300 arguments); the goal
is under 3 s, growing at most linearly. Steady calls are medians, NumPy's beside them.

The first table (issue 16) times the first call of softmax(relu(x @ W + b)) at
[256,512]x[512,1024] float32 in a new process: cold (a fresh JITC_CACHE_DIR; jitc's runtime
store, compiled once per installation, already built), cold with a fresh runtime store too
(the first call after installing), and warm (the cache one cold run filled). "first call" is
measured inside the process around the call (it includes importing the backend: numba);
"process" is the whole `python -c` from outside (interpreter, NumPy and jitc imports too).
Goals: cold <= 1.0 s, warm <= 0.3 s. The children cache Python bytecode as Python does by
default (an installed package has its .pyc): with PYTHONDONTWRITEBYTECODE=1, set on this
project's machines, every process compiled jitc's own source again (~0.1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CASES = [("sum", 100), ("sum", 300), ("sgd", 300), ("terms", 100), ("terms", 300)]

CHILD = """
import json, sys, time
import numpy as np
from benchmarks.bench_first_call import make
from benchmarks.run import median_time
which, case, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    fn, args = make(case, n, jax.numpy)
    f = jax.jit(fn)
    args = jax.tree_util.tree_map(jax.numpy.asarray, args)
    run = lambda: jax.block_until_ready(f(*args))
else:
    import jitc
    fn, args = make(case, n)
    f = jitc.jit(fn)
    run = lambda: f(*args)
t = time.perf_counter()
run()
first = time.perf_counter() - t
print(json.dumps({"first": first, "call": median_time(run, 7, 0.02) * 1e6}))
"""


MLP_CHILD = """
import time
t0 = time.perf_counter()
import json
import numpy as np
import jitc
def mlp(x, W, b):
    h = np.maximum(x @ W + b, 0)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 512), dtype=np.float32)
W = rng.standard_normal((512, 1024), dtype=np.float32) * np.float32(0.05)
b = rng.standard_normal(1024, dtype=np.float32)
f = jitc.jit(mlp)
t = time.perf_counter()
got = f(x, W, b)
done = time.perf_counter()
np.testing.assert_allclose(got, mlp(x, W, b), rtol=1e-5, atol=1e-7)
print(json.dumps({"first": done - t, "imports_and_first": done - t0}))
"""


def mlp_first_calls(runs: int) -> dict:
    """{mode: [(first call s, imports + first call s, process s), ...]} over `runs` new
    processes per mode."""
    import time

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out: dict = {"cold": [], "cold, fresh runtime store": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:

        def one(cache, store):
            env = dict(os.environ, JITC_CACHE_DIR=cache, JITC_RUNTIME_DIR=store, PYTHONPATH=root)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            t = time.perf_counter()
            run = subprocess.run(
                [sys.executable, "-c", MLP_CHILD],
                env=env,
                cwd=root,
                capture_output=True,
                text=True,
                timeout=600,
            )
            wall = time.perf_counter() - t
            if run.returncode:
                raise RuntimeError(run.stderr.strip().splitlines()[-1])
            inside = json.loads(run.stdout.strip().splitlines()[-1])
            return inside["first"], inside["imports_and_first"], wall

        store = os.path.join(tmp, "store")
        one(os.path.join(tmp, "setup"), store)  # the installation's runtime pieces
        for i in range(runs):
            out["cold"].append(one(os.path.join(tmp, f"cold{i}"), store))
            out["cold, fresh runtime store"].append(
                one(os.path.join(tmp, f"fresh{i}"), os.path.join(tmp, f"store{i}"))
            )
        for _ in range(runs):
            out["warm"].append(one(os.path.join(tmp, "cold0"), store))
    return out


def mlp_lines(results: dict) -> list:
    lines = [
        (
            "softmax MLP [256,512]x[512,1024]",
            "first call (s), median",
            "first call (s), all runs",
            "imports + first call (s)",
            "process (s)",
        )
    ]

    def median(values):
        return f"{sorted(values)[len(values) // 2]:.2f}"

    for mode, rows in results.items():
        lines.append(
            (
                mode,
                median([r[0] for r in rows]),
                " ".join(f"{r[0]:.2f}" for r in rows),
                median([r[1] for r in rows]),
                median([r[2] for r in rows]),
            )
        )
    return lines


def make(case: str, n: int, xp=None):
    """(function, argument tuple) of a case over n arrays; the function calls `xp`'s
    functions (NumPy's by default, jax.numpy's for JAX)."""
    import numpy as np

    xp = xp or np
    rng = np.random.default_rng(0)
    if case == "sum":

        def fn(*xs):
            acc = xs[0]
            for x in xs[1:]:
                acc = acc + x
            return acc

        return fn, tuple(rng.standard_normal(1000) for _ in range(n))
    if case == "sgd":
        k = n // 3
        params = {f"w{i}": rng.standard_normal(256) for i in range(k)}
        grads = {f"w{i}": rng.standard_normal(256) for i in range(k)}

        def fn(params, grads):  # pure: JAX cannot update in place; jitc writes results
            return {name: p - 0.01 * grads[name] for name, p in params.items()}

        return fn, (params, grads)
    terms = [xp.sin, xp.exp, xp.tanh, xp.sqrt, xp.abs, xp.log1p, xp.cos]

    def fn(*xs):
        acc = 0.0
        for i, x in enumerate(xs):
            acc = acc + terms[i % len(terms)](xp.abs(x))
        return acc

    return fn, tuple(rng.standard_normal(1000) for _ in range(n))


def child(which: str, case: str, n: int) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, JITC_CACHE_DIR=cache, PYTHONPATH=root)
        run = subprocess.run(
            [sys.executable, "-c", CHILD, which, case, str(n)],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if run.returncode:
        return {"error": run.stderr.strip().splitlines()[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def numpy_call(case: str, n: int) -> float:
    from benchmarks.run import median_time

    fn, args = make(case, n)
    return median_time(lambda: fn(*args), 7, 0.02) * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--mlp-only", action="store_true", help="only the softmax MLP table")
    parser.add_argument("--runs", type=int, default=3, help="new processes per MLP mode")
    args = parser.parse_args(argv)
    from benchmarks.peers import jax_module

    show(mlp_lines(mlp_first_calls(args.runs)), args.markdown)
    if args.mlp_only:
        return
    print()
    rows = []
    for case, n in CASES:
        jitc_ = child("jitc", case, n)
        jax_ = child("jax", case, n) if jax_module() else {"error": "jax not installed"}
        rows.append((case, n, jitc_, jax_, numpy_call(case, n)))

    def cell(r, key, fmt):
        return fmt.format(r[key]) if key in r else r["error"][:40]

    header = (
        "case",
        "arrays",
        "jitc first call (s)",
        "JAX first call (s)",
        "jitc call (µs)",
        "JAX call (µs)",
        "NumPy call (µs)",
    )
    lines = [header]
    for case, n, j, x, numpy_us in rows:
        lines.append(
            (
                case,
                str(n),
                cell(j, "first", "{:.2f}"),
                cell(x, "first", "{:.2f}"),
                cell(j, "call", "{:.1f}"),
                cell(x, "call", "{:.1f}"),
                f"{numpy_us:.1f}",
            )
        )
    show(lines, args.markdown)


def show(lines: list, markdown: bool) -> None:
    """A table (header first) as markdown or aligned text."""
    if markdown:
        print("| " + " | ".join(lines[0]) + " |")
        print("|" + "---|" * len(lines[0]))
        for line in lines[1:]:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
        for line in lines:
            print("  ".join(c.rjust(w) for c, w in zip(line, widths)))


if __name__ == "__main__":
    main()
