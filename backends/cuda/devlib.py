"""The names generated kernels call besides `cuda`: libdevice as `nv`, typed casts, NAN/INF.

Every generated kernel module starts with `from jitc.backends.cuda.devlib import ...`, so one
kernel text serves both ways this process can run CUDA code:

- real target (a GPU, or PTX generation without one): `nv` is numba-cuda's libdevice binding
  (`nv.expf` is `__nv_expf`), the casts are numba's types. Kernels call libdevice directly
  rather than device functions of ours: numba-cuda compiles a device function for the
  *current device*, so a kernel calling one cannot be compiled to PTX without a GPU.
- simulator (`NUMBA_ENABLE_CUDASIM=1`): libdevice does not exist, and Python's `math` raises
  (OverflowError, ValueError) where CUDA returns Inf/NaN, so `nv` maps each libdevice name to
  the NumPy ufunc with IEEE semantics, rounded to the libdevice function's type. The
  simulator therefore checks everything a kernel does except the libdevice routines
  themselves (their ulp accuracy needs a GPU).
"""

from __future__ import annotations

import types

import numpy as np

from jitc.backends.cuda import toolchain
from jitc.backends.cuda.lowering import CAST, LIBDEVICE

NAN = float("nan")
INF = float("inf")


def _simulated_libdevice():
    """libdevice's names over NumPy ufuncs. Arguments go in as 1-element arrays, not scalars:
    on 0-d operands np.power takes a sqrt shortcut for ** 0.5 (-inf ** 0.5 = nan), where
    libdevice's pow, like C's, gives inf."""
    ns = types.SimpleNamespace()
    for ufunc, base in LIBDEVICE.items():
        fn = getattr(np, ufunc)
        for t in (np.float32, np.float64):
            if base == "signbit":
                name = "signbitf" if t is np.float32 else "signbitd"
                setattr(ns, name, lambda x, fn=fn, t=t: np.int32(fn(t(x))))
            else:
                name = base + ("f" if t is np.float32 else "")
                setattr(ns, name, lambda *xs, fn=fn, t=t: fn(*[np.full(1, x, t) for x in xs])[0])
    for name, t in (("fmul_rn", np.float32), ("dmul_rn", np.float64)):  # lowering.multiply
        setattr(ns, name, lambda x, y, t=t: np.multiply(np.full(1, x, t), np.full(1, y, t))[0])
    return ns


# The cast names generated code calls: the dtypes jitc computes in (lowering.CAST), float16
# for storing float16 arrays, and b1, the bool dtype of shared/local arrays (bool values
# need no cast).
TYPES = {
    **{name: np.dtype(d) for d, name in CAST.items()},
    "f16": np.dtype(np.float16),
    "b1": np.dtype(np.bool_),
}


def _bind():
    import numba.cuda  # noqa: F401  (fixes this process's choice: simulator or not)

    if toolchain.simulator_enabled():
        return _simulated_libdevice(), {name: d.type for name, d in TYPES.items()}
    from numba import types as nb
    from numba.cuda import libdevice

    return libdevice, {
        name: nb.boolean if d.kind == "b" else getattr(nb, d.name) for name, d in TYPES.items()
    }


nv, _casts = _bind()
globals().update(_casts)

__all__ = ["nv", "NAN", "INF", *TYPES]
