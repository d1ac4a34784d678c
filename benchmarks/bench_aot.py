"""Per-call cost of an AOT artifact's Python loader (NAME.py: NumPy + ctypes) against the JIT.

    python benchmarks/bench_aot.py [--cpu generic|native] [--repeats 7]

For each workload: build the artifact, load NAME.py, check both against NumPy, then time a
call through the JIT (`jitc.jit(fn)(*args)`), through the loader, and the bare C entry
through ctypes with prepared pointers (the compute alone). `add` is tiny, so its times are
per-call overhead; the issue's target is loader <= 2x JIT there.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _add(x, y):
    return x + y


def workloads():
    lstm = _module(os.path.join(ROOT, "examples", "lstm.py"), "bench_aot_lstm")
    mlp = _module(os.path.join(ROOT, "examples", "mlp.py"), "bench_aot_mlp")
    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    return [
        ("add f32[4]", "add", _add, [f32(4), f32(4)]),
        ("lstm step", "lstm", lstm.step.fun, [f32(1, 60) for _ in range(7)]),
        ("mlp f32[1,512]", "mlp", mlp.mlp.fun, [f32(1, 512)]),
    ]


def _time(fn, repeats):
    """Median seconds per call over `repeats` samples of >= 20 ms each."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(number, 10)
    return float(np.median([timer.timeit(number) / number for _ in range(repeats)]))


def _flat(x):
    return list(x) if isinstance(x, tuple) else [x]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", default="generic")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    import jitc
    import jitc.aot as aot

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, name, fn, inputs in workloads():
            art = aot.compile(fn, *inputs, name=name, cpu=args.cpu)
            art.write(tmp)
            loader = _module(os.path.join(tmp, f"{name}.py"), f"bench_aot_{name}")
            call = getattr(loader, name)
            jitted = jitc.jit(fn)
            want = _flat(fn(*[a.copy() for a in inputs]))
            for got in (_flat(call(*inputs)), _flat(jitted(*inputs))):  # correct first
                for g, w in zip(got, want, strict=True):
                    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
            outs = [np.empty(s, d) for s, d in art.plan.results]
            arena = np.zeros(art.plan.temp_bytes + 64, np.uint8)
            ptrs = [a.ctypes.data for a in inputs + outs] + [arena.ctypes.data]
            t_jit = _time(lambda: jitted(*inputs), args.repeats)  # noqa: B023
            t_aot = _time(lambda: call(*inputs), args.repeats)  # noqa: B023
            t_raw = _time(lambda: loader._entry(*ptrs), args.repeats)  # noqa: B023
            rows.append((label, t_jit, t_aot, t_raw, art.size_report()["object_bytes"]))

    print(f"AOT loader vs JIT per call (cpu {args.cpu}; median of {args.repeats}; us)")
    head = (
        f"{'workload':<16}{'JIT':>9}{'AOT .py':>10}{'AOT/JIT':>9}{'C entry':>10}"
        f"{'loader cost':>13}{'object':>11}"
    )
    print(head)
    print("-" * len(head))
    for label, t_jit, t_aot, t_raw, size in rows:
        print(
            f"{label:<16}{t_jit * 1e6:>9.2f}{t_aot * 1e6:>10.2f}{t_aot / t_jit:>9.2f}"
            f"{t_raw * 1e6:>10.2f}{(t_aot - t_raw) * 1e6:>13.2f}{size / 1024:>9.1f}KB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
