"""What `jitc report`'s time table says for W1-W3 and a tanh-GELU over 8M float32 values:
per kernel, its time, GB/s and share of this machine's copy bandwidth (the bound of a
kernel that streams memory), GFLOP/s for dots.

    python -m benchmarks.bench_report [--quick]
"""

from __future__ import annotations

import argparse

import numpy as np

import jitc
from benchmarks import workloads
from jitc.report import kernel_times


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def cases(quick: bool):
    out = [
        (c.name, c.fn, c.args) for w in ("W1", "W2", "W3") for c in workloads.WORKLOADS[w](quick)
    ]
    n = 1 << (16 if quick else 23)
    out.append(
        (
            f"tanh-GELU {n // 2**20 or n}{'M' if n >= 2**20 else ''} f32",
            gelu,
            (np.random.default_rng(0).standard_normal(n).astype(np.float32),),
        )
    )
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (smoke test)")
    quick = parser.parse_args(argv).quick
    print("| workload | kernel | ops | µs | share of kernels | GB/s | of copy bw | GFLOP/s |")
    print("|---|---|---|--:|--:|--:|--:|--:|")
    for name, fn, args in cases(quick):
        t = kernel_times(jitc.jit(fn).lower(*args).compile())
        for r in t["rows"]:
            if r["inside"]:
                cells = [f"in {r['inside']}", "", "", "", ""]
            else:
                cells = [
                    f"{r['ns'] / 1e3:,.1f}",
                    f"{100 * r['ns'] / t['kernel_ns']:.0f}%",
                    f"{r['gbs']:.1f}" if r["gbs"] else "",
                    f"{r['bw_share']:.0f}%" if r["bw_share"] else "",
                    f"{r['gflops']:.1f}" if r["gflops"] else "",
                ]
            print(f"| {name} | {r['name']} | {r['summary_short']} | " + " | ".join(cells) + " |")
        print(
            f"| {name} | (call) | copy bandwidth {t['copy_gbs']:.1f} GB/s | "
            f"{t['call_ns'] / 1e3:,.1f} | | | | |"
        )


if __name__ == "__main__":
    main()
