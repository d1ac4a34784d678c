"""SciPy's banded solvers on traced arrays: scipy.linalg.solve_banded and
scipy.linalg.lapack.dgtsv / sgtsv, computed by the LAPACK routines SciPy calls (?gtsv for a
tridiagonal system, ?gbsv for any other band) as kinds of the `linalg` primitive.

SciPy's functions convert their arguments with np.asarray, so no NumPy protocol hands them
to jitc: while a trace runs their names in scipy.linalg and scipy.linalg.lapack are bound to
wrappers (trace/rebind.py) that trace a call with a traced argument and run SciPy's own
function otherwise. solve_banded takes SciPy's stacks (ab (..., l+u+1, n), b (..., n) or
(..., n, k)), one kernel for the whole stack; dgtsv takes one system, as SciPy's does.
SciPy's check_finite is not done (a traced array's values are not known when tracing).
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from jitc.core.source import where
from jitc.numpy_api.core import _mark, find_ctx, is_tracer, lift
from jitc.numpy_api.linalg_factor import factor
from jitc.trace import lax, rebind


def _linalg_dtype(*xs):
    """SciPy's LAPACK type for these arrays: float32 when all are float32, else float64."""
    return np.dtype(np.float32 if all(x.dtype == np.float32 for x in xs) else np.float64)


def _stack_to(x, stack, core):
    return lax.broadcast_to(x, stack + core)


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """x with a @ x = b, a the banded matrix held in `ab` (ab[u + i - j, j] == a[i, j])."""
    try:
        lower, upper = (operator.index(v) for v in l_and_u)
    except TypeError:
        raise TypeError(
            f"scipy.linalg.solve_banded: l_and_u must be two Python ints (the numbers of "
            f"lower and upper diagonals), got {l_and_u!r}{where()}"
        ) from None
    ctx = find_ctx([ab, b])
    ab, b = lift(ctx, ab), lift(ctx, b)
    dtype = _linalg_dtype(ab, b)
    ab, b = lax.convert(ab, dtype), lax.convert(b, dtype)
    vector = b.ndim < 2
    if ab.ndim < 2 or b.ndim < 1:
        raise ValueError(
            f"scipy.linalg.solve_banded: ab must be (..., l+u+1, n) and b (..., n) or "
            f"(..., n, k), got ab {ab.shape}, b {b.shape}{where()}"
        )
    if vector:
        b = lax.reshape(b, b.shape + (1,))
    n = ab.shape[-1]
    if b.shape[-2] != n:
        raise ValueError(
            f"scipy.linalg.solve_banded: shapes of ab {ab.shape} and b "
            f"{b.shape[:-1] if vector else b.shape} are not compatible.{where()}"
        )
    if lower + upper + 1 != ab.shape[-2]:
        raise ValueError(
            f"scipy.linalg.solve_banded: invalid values for the number of lower and upper "
            f"diagonals: l+u+1 ({lower + upper + 1}) does not equal ab.shape[-2] "
            f"({ab.shape[-2]}){where()}"
        )
    stack = np.broadcast_shapes(ab.shape[:-2], b.shape[:-2])
    ab, b = _stack_to(ab, stack, ab.shape[-2:]), _stack_to(b, stack, b.shape[-2:])
    if b.size == 0:
        x = b
    elif n == 1:  # SciPy divides by the one element of a
        x = lax.emit(ctx, "divide", [b, lax.broadcast_to(ab[..., upper : upper + 1, :], b.shape)])
    elif lower == upper == 1:
        x = factor("gtsv_solve", ab[..., 2, : n - 1], ab[..., 1, :], ab[..., 0, 1:], b)["x"]
    else:
        x = factor(f"gbsv:{lower}:{upper}", ab, b)["x"]
    return lax.reshape(x, x.shape[:-1]) if vector else x


def _gtsv(
    dtype, routine, dl, d, du, b, overwrite_dl=0, overwrite_d=0, overwrite_du=0, overwrite_b=0
):
    """SciPy's ?gtsv: (du2, d, du, x, info), info > 0 where the system is singular."""
    ctx = find_ctx([dl, d, du, b])
    dl, d, du, b = (lax.convert(lift(ctx, x), dtype) for x in (dl, d, du, b))
    for x, name in ((dl, "dl"), (d, "d"), (du, "du")):
        if x.ndim != 1:
            raise ValueError(f"{routine}: {name} must be 1-d, got shape {x.shape}{where()}")
    n = d.shape[0]
    if (
        dl.shape != (max(n - 1, 0),)
        or du.shape != dl.shape
        or b.ndim not in (1, 2)
        or (b.shape[0] != n)
    ):
        raise ValueError(
            f"{routine}: dl {dl.shape}, d {d.shape}, du {du.shape} and b {b.shape} do not "
            f"fit one system: dl and du ({n - 1},), b ({n},) or ({n}, k){where()}"
        )
    vector = b.ndim == 1
    parts = factor("gtsv", dl, d, du, lax.reshape(b, (n, 1)) if vector else b)
    x = lax.reshape(parts["x"], (n,)) if vector else parts["x"]
    info = lax.convert(lax.reshape(parts["info"], ()), np.int32)
    return parts["du2"], parts["d"], parts["du"], x, _mark(info, True)


_IMPLEMENTATIONS = {
    ("scipy.linalg", "solve_banded"): solve_banded,
    ("scipy.linalg.lapack", "dgtsv"): functools.partial(_gtsv, np.float64, "dgtsv"),
    ("scipy.linalg.lapack", "sgtsv"): functools.partial(_gtsv, np.float32, "sgtsv"),
}


def _tracing(implementation, original):
    """SciPy's `original`, traced by `implementation` when an argument is traced."""

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if any(is_tracer(a) for a in (*args, *kwargs.values())):
            return implementation(*args, **kwargs)
        return original(*args, **kwargs)

    return wrapper


for (_module, _name), _implementation in _IMPLEMENTATIONS.items():
    rebind.rebind(_module, _name, functools.partial(_tracing, _implementation))
del _module, _name, _implementation
