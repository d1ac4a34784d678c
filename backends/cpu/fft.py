"""The `fft` primitive's kernel: one call of rocket-fft's DUCC0 transform (c2c, r2c, c2r;
DUCC0 is the successor of the pocketfft NumPy computes with) from the materialized operand
into the result, scaled by NumPy's factor.

The factor is computed in the kernel from the lengths it transforms, so a kernel's source
depends on the kind, axes, norm and dtypes only, and a cached kernel serves every shape.
DUCC0 runs on numba's thread count; it splits a transform over threads only where that
gains.
"""

from __future__ import annotations

import importlib.util

from jitc.backends.cpu.abi import thread_count
from jitc.backends.cpu.lowering import TYPE_NAMES
from jitc.backends.cpu.threads import start_thread_pool
from jitc.core.primitives import real_dtype

# kind -> (rocket-fft's transform, forward)
CALLS = {
    "fft": ("c2c", True),
    "ifft": ("c2c", False),
    "rfft": ("r2c", True),
    "irfft": ("c2r", False),
}


def _factor(kind: str, norm: str, axes: tuple, dtype) -> str:
    """NumPy's fct (numpy/fft/_pocketfft.py): 1, 1/sqrt(N) or 1/N by norm and direction, N
    the product of the transformed lengths (irfft's last one: its result's), in the real
    dtype NumPy rounds it to."""
    inverse = kind in ("ifft", "irfft")
    if norm == "backward" and not inverse or norm == "forward" and inverse:
        return "1.0"
    lengths = [f"a.shape[{d}]" for d in axes[:-1]]
    lengths.append(f"{'out' if kind == 'irfft' else 'a'}.shape[{axes[-1]}]")
    t = TYPE_NAMES[real_dtype(dtype)]
    size = f"{t}({' * '.join(lengths)})"
    return f"float({t}(1) / {'np.sqrt(' + size + ')' if norm == 'ortho' else size})"


def fft_available() -> bool:
    """Is rocket-fft installed (pyproject's `fft` extra)?"""
    return importlib.util.find_spec("rocket_fft") is not None


def fft_source(kind: str, axes: tuple, norm: str, dtype) -> str:
    """`def BODY(a, out, lo, hi, n)`: the transform of all of `a` into `out` (one call)."""
    call, forward = CALLS[kind]
    return (
        "def BODY(a, out, lo, hi, n):\n"
        f"    fft_{call}(a, out, np.array({tuple(axes)!r}, np.int64), {forward}, "
        f"{_factor(kind, norm, axes, dtype)}, fft_threads())\n"
    )


def kernel_globals() -> dict:
    """The names fft_source's bodies call (fft_*), for the kernel modules that call them
    (driver._OPTIONAL_IMPORTS).
    rocket-fft's code calls DUCC0 by symbol, which importing rocket-fft loads: importing it
    here lets a kernel loaded from the disk cache in a new process find the library (numba
    imports it too, as a numba extension). thread_count links against numba's pool, which
    must be started first."""
    from rocket_fft.lowlevel import c2c, c2r, r2c

    start_thread_pool()
    return {"fft_c2c": c2c, "fft_c2r": c2r, "fft_r2c": r2c, "fft_threads": thread_count}
