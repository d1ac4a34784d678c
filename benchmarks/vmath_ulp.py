"""The largest error, in float32 ulps, of jitc's float32 math over every float32 input.

    python -m benchmarks.vmath_ulp [tanh exp sigmoid erf]

For each input x of a function's range (every float32 bit pattern between its ends, both
signs), the error of jitc's float32 result y against float64 libm on x, in units of the
float32 spacing at the exact result: |y - f(x)| / 2^(e - 24), f(x) in [2^(e-1), 2^e). The
tests sample these functions (tests/test_vmath.py) and check the interval where each peaks
exhaustively; this scan is where those peaks and the bounds in vmath's docstrings come from
(tanh: 1.0204 ulp at 0.97371286, 84 s on two cores). The inputs outside a range round to a constant.
"""

from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np
from numba import prange

from jitc.backends.cpu import vmath


@numba.njit
def _tanh(x):
    return math.tanh(x)


@numba.njit
def _exp(x):
    return math.exp(x)


@numba.njit
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit
def _erf(x):
    return math.erf(x)


# name: (jitc's float32 function, the float64 reference, the inputs' range)
FUNCTIONS = {
    "tanh": (vmath.tanh_f32, _tanh, (-9.2, 9.2)),
    "exp": (vmath.exp_f32, _exp, (-104.0, 88.72)),
    "sigmoid": (vmath.sigmoid_f32, _sigmoid, (-110.0, 110.0)),
    "erf": (vmath.erf_f32, _erf, (-4.0, 4.0)),
}
TASKS = 256  # per scan: even work for numba's threads


def bits(value: float) -> int:
    """The float32 bit pattern of `value`, as an unsigned int."""
    return int(np.array([value], np.float32).view(np.uint32)[0])


def scanner(fn, ref):
    """A compiled scan: (max ulp error, the bit pattern where it occurs) over [lo, hi)."""

    @numba.njit(parallel=True, nogil=True)
    def scan(lo, hi):
        worst = np.zeros(TASKS)
        where = np.zeros(TASKS, np.int64)
        span = (hi - lo + TASKS - 1) // TASKS
        for task in prange(TASKS):
            start = lo + task * span
            for b in range(start, min(hi, start + span)):
                x = np.array([b], np.uint32).view(np.float32)[0]
                exact = ref(np.float64(x))
                ulp = max(math.ldexp(1.0, math.frexp(abs(exact))[1] - 24), 1.401298464324817e-45)
                err = abs(np.float64(fn(x)) - exact) / ulp
                if err > worst[task]:
                    worst[task], where[task] = err, b
        i = np.argmax(worst)
        return worst[i], where[i]

    return scan


def max_error(name: str) -> tuple[float, float]:
    """(max ulp error, the float32 input where it occurs) of `name` over its whole range."""
    fn, ref, (lo, hi) = FUNCTIONS[name]
    scan = scanner(fn, ref)
    # non-negative inputs run from 0's bits up, negative ones from -0's up in magnitude
    halves = [(bits(0.0), bits(hi) + 1)] + ([(bits(-0.0), bits(lo) + 1)] if lo < 0 else [])
    err, at = max(scan(a, b) for a, b in halves)
    return err, float(np.array([at], np.uint32).view(np.float32)[0])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(FUNCTIONS), choices=list(FUNCTIONS))
    for name in parser.parse_args(argv).names:
        start = time.perf_counter()
        err, at = max_error(name)
        lo, hi = FUNCTIONS[name][2]
        print(
            f"{name}: {err:.4f} ulp at {np.float32(at)!r} over [{lo}, {hi}] "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
