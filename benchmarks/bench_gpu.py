"""The cuda section: W1-W3 on a GPU, jitc's cuda backend against CuPy eager and JAX.

    python benchmarks/bench_gpu.py [--quick] [--repeats N] [--only W1,W3]

Without a CUDA GPU (or under numba's simulator, where timings mean nothing) it prints one line
saying why and exits 0, so CI runs it everywhere and the first GPU machine gets the table.

All three implementations run the same NumPy function of benchmarks/workloads.py: CuPy with
`np` rebound to `cupy` (eager: one kernel per NumPy call), JAX with `np` rebound to
`jax.numpy` under jax.jit, jitc with `jitc.jit(fn, backend="cuda")`. Inputs live on the device
(CuPy arrays for CuPy and jitc, device_put arrays for JAX), so no host copies are timed. Every
result is checked against NumPy first. Times are medians (each sample averages enough calls to
last >= 20 ms) with the device synchronized after every call; ratios jitc/peer < 1 mean jitc
is faster.
"""

from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks.peers import check, rebind
from benchmarks.workloads import w1, w2, w3

WORKLOADS = {"W1": w1, "W2": w2, "W3": w3}
IMPLS = ("CuPy", "JAX", "jitc")


def why_not() -> str | None:
    """None if a CUDA GPU can be timed here, else the reason."""
    from jitc.backends.cuda import toolchain

    if toolchain.simulator_enabled():
        return "NUMBA_ENABLE_CUDASIM=1 (numba's simulator) is on; GPU timings need the hardware"
    gpu, seen = toolchain.gpu_status()
    if not gpu:
        return f"no CUDA GPU ({seen})"
    try:
        import cupy  # noqa: F401
    except ImportError as e:
        return f"CuPy is not installed ({e}); pip install -e .[cuda]"
    return None


def _jax():
    """jax with its GPU backend, or the reason it has none."""
    os.environ.setdefault("JAX_PLATFORMS", "cuda")
    try:
        import jax

        jax.devices("gpu")
        # XLA's GPU matmul rounds its inputs to TF32 by default: float32 as NumPy computes it
        # (the answers every implementation is checked against) needs "highest".
        jax.config.update("jax_default_matmul_precision", "highest")
    except Exception as e:  # noqa: BLE001 - any failure means "no JAX on the GPU"
        return None, f"JAX has no GPU backend here ({type(e).__name__}: {str(e)[:120]})"
    return jax, None


def prepare(impl, case, cp, jax):
    """(call, sync): a no-argument call of the compiled function on device inputs, and a
    function waiting for its result."""
    if impl == "CuPy":
        fn, args = rebind(case.fn, np_module=cp), [cp.asarray(a) for a in case.args]
        stream = cp.cuda.get_current_stream()
        return (lambda: fn(*args)), (lambda out: stream.synchronize())
    if impl == "JAX":
        import jax.numpy as jnp

        fn, args = jax.jit(rebind(case.fn, np_module=jnp)), jax.device_put(case.args)
        return (lambda: fn(*args)), jax.block_until_ready
    import jitc

    fn, args = jitc.jit(case.fn, backend="cuda"), [cp.asarray(a) for a in case.args]
    stream = cp.cuda.get_current_stream()
    return (lambda: fn(*args)), (lambda out: stream.synchronize())


def to_host(out, cp):
    if isinstance(out, (tuple, list)):
        return type(out)(to_host(o, cp) for o in out)
    return cp.asnumpy(out) if isinstance(out, cp.ndarray) else np.asarray(out)


def run(names, repeats, quick):
    import cupy as cp

    from benchmarks.run import median_time

    jax, jax_missing = _jax()
    print(
        f"== cuda: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
        f"CuPy {cp.__version__}" + (f", JAX {jax.__version__}" if jax else "")
    )
    if jax_missing:
        print(f"   JAX column n/a: {jax_missing}")
    print(
        f"{'workload':<48} {'CuPy':>10} {'JAX':>10} {'jitc':>10} {'jitc/CuPy':>9} {'jitc/JAX':>8}"
    )
    failures = []
    for name in names:
        for case in WORKLOADS[name](quick=quick):
            times = {}
            for impl in IMPLS:
                if impl == "JAX" and jax is None:
                    continue
                try:
                    call, sync = prepare(impl, case, cp, jax)
                    out = call()
                    sync(out)
                    check(
                        to_host(out, cp),
                        case.fn(*case.args),
                        case.rtol,
                        case.atol,
                        exact_dtype=impl == "jitc",
                    )
                    times[impl] = median_time(lambda c=call, s=sync: s(c()), repeats, 0.02)
                except Exception as e:  # noqa: BLE001 - reported, the run goes on
                    failures.append(f"{impl} on {case.name}: {type(e).__name__}: {e}")
            cells = [f"{times[i] * 1e6:8.1f}us" if i in times else "n/a".rjust(10) for i in IMPLS]
            ratios = [
                f"{times['jitc'] / times[p]:.2f}" if "jitc" in times and p in times else "n/a"
                for p in ("CuPy", "JAX")
            ]
            print(f"{case.name[:48]:<48} {' '.join(cells)} {ratios[0]:>9} {ratios[1]:>8}")
    for f in failures:
        print("failure:", f)
    return 1 if failures else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(WORKLOADS), help="e.g. W1,W3")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="tiny sizes")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {sorted(WORKLOADS)}")
    reason = why_not()
    if reason:
        print(f"cuda: skipped: {reason}")
        return 0
    return run(names, args.repeats, args.quick)


if __name__ == "__main__":
    sys.exit(main())
