"""NumPy functions jitc refuses for a reason it can name, beyond "not supported".

A compiled function has one result shape per input shape; these functions' result shapes
depend on the values (unique, nonzero), or they need a factorization jitc does not compute
(SVD, eigendecompositions, QR). The tracer's UnsupportedError gives the reason, so the user
knows what to change (do that part outside the jitc function, or, for a data-dependent
shape, use a fixed-size formulation such as np.where(cond, x, fill) or a mask).
"""

from __future__ import annotations

import numpy as np

_DATA_DEPENDENT = (
    "its result's shape depends on the values, and a compiled function has "
    "one result shape per input shape (use a mask or np.where instead)"
)
_FACTORIZATION = (
    "it needs {what}, which jitc does not compute (jitc's LAPACK: solve, inv, "
    "cholesky, det, slogdet, eigh, eigvalsh, svd, svdvals, qr, pinv, matrix_rank, lstsq)"
)

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
