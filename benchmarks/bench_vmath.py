"""Micro-benchmark of jitc's vectorizable math (backends/cpu/vmath.py) on 4M elements.

    python benchmarks/bench_vmath.py [--n 4000000] [--repeats 20] [--only exp,tanh]

For each function and dtype: a numba loop calling the jitc function (compiled with every
fast-math flag that keeps NaN/Inf), the NumPy (or SciPy) ufunc, and the same numba loop calling
math.* (scalar libm). Results are checked against NumPy before timing. Columns: best-of
thread-CPU times in ms (all single-threaded), ratios jitc/NumPy and jitc/math (below 1:
jitc is faster), the widest float vector type in the loop function's LLVM IR, whether the
IR declares any math function, and the max relative difference from NumPy.
"""

from __future__ import annotations

import argparse
import math
import re
import time

import numpy as np
from numba import njit

from jitc.backends.cpu.vmath import VMATH

FASTMATH = {"reassoc", "contract", "arcp", "afn"}  # the most a caller may use


def _sigmoid_np(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


def _erf_np(x, out):
    import scipy.special

    scipy.special.erf(x, out=out)


PEERS = {  # name -> (NumPy-style function, math.* for the libm loop, input range)
    "exp": (np.exp, math.exp, (-80.0, 80.0)),
    "log": (np.log, math.log, (1e-3, 1e3)),
    "log1p": (np.log1p, math.log1p, (-0.9, 100.0)),
    "expm1": (np.expm1, math.expm1, (-10.0, 10.0)),
    "tanh": (np.tanh, math.tanh, (-10.0, 10.0)),
    "sigmoid": (_sigmoid_np, None, (-20.0, 20.0)),
    "erf": (_erf_np, math.erf, (-4.0, 4.0)),
    "sin": (np.sin, math.sin, (-100.0, 100.0)),
    "cos": (np.cos, math.cos, (-100.0, 100.0)),
}


def _loop(fn):
    @njit(fastmath=FASTMATH, error_model="numpy", nogil=True)
    def apply(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    return apply


def _math_loop(fn, dtype):
    t = np.float32 if dtype == np.float32 else np.float64

    @njit(fastmath=FASTMATH, error_model="numpy", nogil=True)
    def apply(x, out):
        for i in range(x.size):
            out[i] = t(fn(x[i]))

    return apply


def _best_ms(repeats, f, *args):
    """Best of `repeats` in thread CPU time: robust on a shared, oversubscribed machine."""
    f(*args)
    best = math.inf
    for _ in range(repeats):
        t0 = time.thread_time()
        f(*args)
        best = min(best, time.thread_time() - t0)
    return best * 1e3


def _vector_width(ir_text: str) -> str:
    """Widest float vector in the loop function itself (not in helpers linked with it)."""
    body = re.search(r"^define [^\n]*apply[^\n]*\{\n(.*?)^\}", ir_text, re.M | re.S).group(1)
    widths = [int(w) for w in re.findall(r"<(\d+) x (?:float|double)>", body)]
    return f"<{max(widths)}>" if widths else "scalar"


_LIBM = re.compile(
    r"^declare [^@]*@\"?(llvm\.)?(exp|exp2|expm1|log|log2|log10|log1p|pow|sin|"
    r"cos|tan|tanh|erf|sqrt|fma|floor|ceil|rint|round|trunc)[fl]?[.(\"]",
    re.M,
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else list(PEERS)
    rng = np.random.default_rng(0)
    print(f"{args.n} elements, best of {args.repeats}; ratios < 1: jitc is faster")
    head = (
        f"{'function':9s} {'dtype':8s} {'jitc ms':>8s} {'numpy ms':>9s} {'math ms':>8s} "
        f"{'jitc/np':>8s} {'jitc/math':>9s} {'vector':>7s} {'libm':>5s} {'max rel err':>11s}"
    )
    print(head)
    print("-" * len(head))
    for name in names:
        np_fn, math_fn, (lo, hi) = PEERS[name]
        for dtype in (np.float32, np.float64):
            x = rng.uniform(lo, hi, args.n).astype(dtype)
            out, ref = np.empty_like(x), np.empty_like(x)
            jit_loop = _loop(VMATH[(name, dtype)])
            jit_loop(x, out)
            np_fn(x, ref)
            rel = float(
                np.max(
                    np.abs(out.astype(np.float64) - ref)
                    / np.maximum(np.abs(ref.astype(np.float64)), 1e-300)
                )
            )
            if not np.allclose(out, ref, rtol=1e-5 if dtype == np.float32 else 1e-13, atol=0):
                print(f"{name} {dtype.__name__}: WRONG, max rel err {rel:.2e}")
            t_jit = _best_ms(args.repeats, jit_loop, x, out)
            t_np = _best_ms(args.repeats, np_fn, x, ref)
            if math_fn is not None:
                m_loop = _math_loop(math_fn, dtype)
                t_math = _best_ms(max(3, args.repeats // 4), m_loop, x, ref)
                r_math = f"{t_jit / t_math:9.2f}"
                t_math = f"{t_math:8.2f}"
            else:
                t_math, r_math = f"{'n/a':>8s}", f"{'n/a':>9s}"
            ir_text = jit_loop.inspect_llvm(jit_loop.signatures[0])
            libm = "yes" if _LIBM.search(ir_text) else "no"
            print(
                f"{name:9s} {dtype.__name__:8s} {t_jit:8.2f} {t_np:9.2f} {t_math} "
                f"{t_jit / t_np:8.2f} {r_math} {_vector_width(ir_text):>7s} {libm:>5s} "
                f"{rel:11.1e}"
            )


if __name__ == "__main__":
    main()
