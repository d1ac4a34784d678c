"""NumPy functions jitc refuses for a reason it can name, beyond "not supported".

np.trim_zeros cuts both ends of an array by its values, and the rest need a factorization
jitc does not compute (nonsymmetric eigendecompositions). The tracer's UnsupportedError
gives the reason, so the user knows what to change (do that part outside the jitc
function, or slice the result instead).
"""

from __future__ import annotations

import numpy as np

_DATA_DEPENDENT = (
    "its result's shape depends on the values along more than one axis, and jitc's results "
    "of run-time size have it along one (slice the result instead)"
)
_FACTORIZATION = (
    "it needs {what}, which jitc does not compute (jitc's LAPACK: solve, inv, "
    "cholesky, det, slogdet, eigh, eigvalsh, svd, svdvals, qr, pinv, matrix_rank, lstsq)"
)

REFUSED: dict = {
    np.trim_zeros: _DATA_DEPENDENT,
    np.linalg.eig: _FACTORIZATION.format(what="a nonsymmetric eigendecomposition"),
    np.linalg.eigvals: _FACTORIZATION.format(what="a nonsymmetric eigendecomposition"),
    np.linalg.cond: _FACTORIZATION.format(what="a singular value decomposition"),
}


def reason(func) -> str | None:
    """Why jitc refuses `func`, or None where it has no particular reason."""
    try:
        return REFUSED.get(func)
    except TypeError:  # an unhashable callable
        return None
