"""NumPy functions jitc refuses for a reason it can name, beyond "not supported".

A compiled function has one result shape per input shape; these functions' result shapes
depend on the values (unique, nonzero), or they need a factorization jitc does not compute
(SVD, eigendecompositions, QR), or a transform it has no kernel for (FFT). The tracer's
UnsupportedError gives the reason, so the user knows what to change (do that part outside
the jitc function, or, for a data-dependent shape, use a fixed-size formulation such as
np.where(cond, x, fill) or a mask).
"""

from __future__ import annotations

import numpy as np

_DATA_DEPENDENT = (
    "its result's shape depends on the values, and a compiled function has "
    "one result shape per input shape (use a mask or np.where instead)"
)
_FACTORIZATION = (
    "it needs {what}, which jitc does not compute (jitc's LAPACK: solve, inv, "
    "cholesky, det, slogdet)"
)
_FFT = "jitc has no FFT kernels; call np.fft outside the jitc function"

REFUSED: dict = {
    **{
        f: _DATA_DEPENDENT
        for f in (
            np.unique,
            np.unique_all,
            np.unique_counts,
            np.unique_inverse,
            np.unique_values,
            np.nonzero,
            np.argwhere,
            np.flatnonzero,
            np.extract,
            np.compress,
            np.trim_zeros,
        )
    },
    np.linalg.svd: _FACTORIZATION.format(what="a singular value decomposition"),
    np.linalg.svdvals: _FACTORIZATION.format(what="a singular value decomposition"),
    np.linalg.pinv: _FACTORIZATION.format(what="a singular value decomposition"),
    np.linalg.matrix_rank: _FACTORIZATION.format(what="a singular value decomposition"),
    np.linalg.eigh: _FACTORIZATION.format(what="a symmetric eigendecomposition"),
    np.linalg.eigvalsh: _FACTORIZATION.format(what="a symmetric eigendecomposition"),
    np.linalg.eig: _FACTORIZATION.format(what="an eigendecomposition"),
    np.linalg.eigvals: _FACTORIZATION.format(what="an eigendecomposition"),
    np.linalg.qr: _FACTORIZATION.format(what="a QR factorization"),
    np.linalg.lstsq: _FACTORIZATION.format(what="a singular value decomposition"),
    np.linalg.cond: _FACTORIZATION.format(what="a singular value decomposition"),
    **{
        getattr(np.fft, name): _FFT
        for name in np.fft.__all__
        if name not in ("fftshift", "ifftshift")
    },  # those two are rolls (shifts.py)
}


def reason(func) -> str | None:
    """Why jitc refuses `func`, or None where it has no particular reason."""
    try:
        return REFUSED.get(func)
    except TypeError:  # an unhashable callable
        return None
