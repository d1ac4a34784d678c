"""scipy.special's elementwise functions on Tracers, written in jitc's own primitives.

Each is a formula over exp, log, polynomials and selects, so it fuses with its neighbours
and vectorizes on every backend (no libm call). SciPy computes float32 in float64 and rounds
the result, and so do these. erf and erfc follow W. J. Cody's rational approximations
(ACM TOMS 715, CALERF), accurate to about 1e-16 relative on three intervals of |x|, with
exp(-x*x) split so its argument's rounding error does not grow with x. gammaln follows
cephes' lgam, as SciPy does.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import _dtype_key, _mark, find_ctx, lift
from jitc.trace import lax

# CALERF's coefficients (Cody 1969/1993): erf on |x| <= 0.46875, erfc on (0.46875, 4],
# erfc on (4, inf).
_A = (
    3.16112374387056560e0,
    1.13864154151050156e2,
    3.77485237685302021e2,
    3.20937758913846947e3,
    1.85777706184603153e-1,
)
_B = (2.36012909523441209e1, 2.44024637934444173e2, 1.28261652607737228e3, 2.84423683343917062e3)
_C = (
    5.64188496988670089e-1,
    8.88314979438837594e0,
    6.61191906371416295e1,
    2.98635138197400131e2,
    8.81952221241769090e2,
    1.71204761263407058e3,
    2.05107837782607147e3,
    1.23033935479799725e3,
    2.15311535474403846e-8,
)
_D = (
    1.57449261107098347e1,
    1.17693950891312499e2,
    5.37181101862009858e2,
    1.62138957456669019e3,
    3.29079923573345963e3,
    4.36261909014324716e3,
    3.43936767414372164e3,
    1.23033935480374942e3,
)
_P = (
    3.05326634961232344e-1,
    3.60344899949804439e-1,
    1.25781726111229246e-1,
    1.60837851487422766e-2,
    6.58749161529837803e-4,
    1.63153871373020978e-2,
)
_Q = (
    2.56852019228982242e0,
    1.87295284992346047e0,
    5.27905102951428412e-1,
    6.05183413124413191e-2,
    2.33520497626869185e-3,
)
_THRESH, _SQRPI = 0.46875, 0.56418958354775628695
_MAXLOG = 7.09782712893383996843e2  # SciPy's erfc is 0 where x*x exceeds log(DBL_MAX)


def _small(x):
    """erf(x) for |x| <= 0.46875."""
    ysq = x * x
    num, den = _A[4] * ysq, ysq
    for a, b in zip(_A[:3], _B[:3]):
        num, den = (num + a) * ysq, (den + b) * ysq
    return x * (num + _A[3]) / (den + _B[3])


def _exp_minus_square(y):
    """exp(-y*y), with y*y split as ysq*ysq + del (ysq = y truncated to 1/16ths, exact)."""
    ysq = np.trunc(y * 16.0) / 16.0
    return np.exp(-ysq * ysq) * np.exp(-((y - ysq) * (y + ysq)))


def _erfc_positive(y):
    """erfc(y) for y > 0.46875 (0 where y*y > _MAXLOG, as SciPy's)."""
    mid_num, mid_den = _C[8] * y, y
    for c, d in zip(_C[:7], _D[:7]):
        mid_num, mid_den = (mid_num + c) * y, (mid_den + d) * y
    mid = (mid_num + _C[7]) / (mid_den + _D[7])
    big = np.minimum(y, 27.0)  # keeps the unused branch finite
    ysq = 1.0 / (big * big)
    num, den = _P[5] * ysq, ysq
    for p, q in zip(_P[:4], _Q[:4]):
        num, den = (num + p) * ysq, (den + q) * ysq
    tail = (_SQRPI - ysq * (num + _P[4]) / (den + _Q[4])) / big
    result = np.where(y <= 4.0, mid, tail) * _exp_minus_square(np.where(y <= 4.0, y, big))
    return np.where(y * y > _MAXLOG, 0.0, result)


def erf(x):
    y = np.abs(x)
    large = 1.0 - _erfc_positive(np.maximum(y, _THRESH))
    return np.where(
        y <= _THRESH, _small(np.where(y <= _THRESH, x, 0.0)), np.where(x < 0, -large, large)
    )


def erfc(x):
    y = np.abs(x)
    positive = _erfc_positive(np.maximum(y, _THRESH))
    return np.where(
        y <= _THRESH,
        1.0 - _small(np.where(y <= _THRESH, x, 0.0)),
        np.where(x < 0, 2.0 - positive, positive),
    )


def ndtr(x):
    """The standard normal CDF, as SciPy: 0.5 + 0.5 erf near 0, from erfc in the tails."""
    z = x * math.sqrt(0.5)
    tail = 0.5 * erfc(np.abs(z))
    return np.where(
        np.abs(z) < math.sqrt(0.5), 0.5 + 0.5 * erf(z), np.where(z > 0, 1.0 - tail, tail)
    )


def log_ndtr(x):
    """log(ndtr(x)): log1p(-ndtr(-x)) above 0, log(ndtr(x)) down to -20, an asymptotic
    series below."""
    a = np.minimum(x, -20.0)
    inv = 1.0 / (a * a)
    series, term = 1.0, 1.0
    for i in range(1, 11):
        term = term * -(2 * i - 1) * inv
        series = series + term
    asymptotic = -0.5 * a * a - np.log(-a) - 0.5 * math.log(2 * math.pi) + np.log(series)
    middle = np.log(ndtr(np.maximum(x, -20.0)))
    upper = -ndtr(-np.maximum(x, 0.0))
    return np.where(x > 0.0, np.log1p(upper), np.where(x > -20.0, middle, asymptotic))


def expit(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def logit(p):
    s = 2.0 * (p - 0.5)
    near_half = np.log1p(s) - np.log1p(-s)
    return np.where((p < 0.3) | (p > 0.65), np.log(p / (1.0 - p)), near_half)


def xlogy(x, y):
    return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


_LGAM_A = (
    8.11614167470508450300e-4,
    -5.95061904284301438324e-4,
    7.93650340457716943945e-4,
    -2.77777777730099687205e-3,
    8.33333333333331927722e-2,
)
_LGAM_B = (
    -1.37825152569120859100e3,
    -3.88016315134637840924e4,
    -3.31612992738871184744e5,
    -1.16237097492762307383e6,
    -1.72173700820839662146e6,
    -8.53555664245765465627e5,
)
_LGAM_C = (
    -3.51815701436523470549e2,
    -1.70642106651881159223e4,
    -2.20528590553854454839e5,
    -1.13933444367982507207e6,
    -2.53252307177582951285e6,
    -2.01889141433532773231e6,
)
_LS2PI, _LOGPI, _MAXLGM = 0.91893853320467274178, 1.14472988584940017414, 2.556348e305


def _polevl(x, coefs, leading_one=False):
    """Horner's rule over `coefs` (highest power first), after a leading 1 if asked."""
    acc = x + coefs[0] if leading_one else coefs[0]
    for c in coefs[1:]:
        acc = acc * x + c
    return acc


def _gammaln_positive(x):
    """log(gamma(x)) for x > 0: cephes' lgam (SciPy's), its loops unrolled into selects.
    Below 13, x moves onto [2, 3) by the recurrence (at most 10 steps down, 2 up) and a
    rational function finishes; from 13, Stirling's series."""
    small = np.minimum(x, 13.0)
    z, p = 1.0, 0.0
    for j in range(1, 11):
        down = small - j >= 2.0
        z = np.where(down, z * (small - j), z)
        p = np.where(down, -float(j), p)
    for k in range(2):
        up = small + k < 2.0
        z = np.where(up, z / (small + k), z)
        p = np.where(up, float(k + 1), p)
    r = small + (p - 2.0)
    low = np.log(z) + r * _polevl(r, _LGAM_B) / _polevl(r, _LGAM_C, leading_one=True)
    big = np.maximum(x, 13.0)
    q = (big - 0.5) * np.log(big) - big + _LS2PI
    w = 1.0 / (big * big)
    mid = _polevl(w, _LGAM_A) / big
    far = (
        (7.9365079365079365079365e-4 * w - 2.7777777777777777777778e-3) * w
        + 0.0833333333333333333333
    ) / big
    q = np.where(big > 1e8, q, q + np.where(big >= 1000.0, far, mid))
    return np.where(x < 13.0, low, np.where(x > _MAXLGM, np.inf, q))


def gammaln(x):
    """log|gamma(x)|. Negative x by the reflection formula over gammaln(|x|) (cephes
    recurs below -34 the same way, and by up to 36 division steps on [-34, 0): near a root
    of the result there, e.g. x = -2.457, the two differ by ~3e-16 absolute). Poles
    (0, negative integers) are inf, -inf stays -inf, as SciPy."""
    q = np.abs(x)
    w = _gammaln_positive(q)
    p = np.floor(q)
    z = q - p
    z = np.where(z > 0.5, (p + 1.0) - q, z)
    sine = np.sin(math.pi * z)
    # log(q * sine) in two logs below 1, where q * sine ~ pi * q * q underflows
    log_s = np.where(q < 1.0, np.log(q) + np.log(sine), np.log(q * sine))
    negative = _LOGPI - log_s - w
    pole = (x <= 0.0) & (z == 0.0)
    result = np.where(pole, np.inf, np.where(x < 0.0, negative, w))
    return np.where(np.isfinite(x), result, x)


_IMPLEMENTATIONS = {
    "erf": erf,
    "erfc": erfc,
    "ndtr": ndtr,
    "log_ndtr": log_ndtr,
    "expit": expit,
    "logit": logit,
    "xlogy": xlogy,
    "gammaln": gammaln,
}


def scipy_ufunc(ufunc) -> str | None:
    """'scipy.special.NAME' when `ufunc` is one of scipy.special's, else None."""
    name = ufunc.__name__
    # scipy.special.NAME is the ufunc itself, or with SCIPY_ARRAY_API=1 a wrapper that
    # calls it (scipy/special/_support_alternative_backends.py) from scipy.special._ufuncs
    for module in ("scipy.special", "scipy.special._ufuncs"):
        if getattr(sys.modules.get(module), name, None) is ufunc:
            return f"scipy.special.{name}"
    return None


def apply_special(ufunc, inputs):
    """scipy.special's `ufunc` on these inputs: computed in float64 (SciPy's loops for
    float32 call the double versions), cast to the loop's result dtype."""
    label = scipy_ufunc(ufunc)
    impl = _IMPLEMENTATIONS.get(ufunc.__name__)
    if impl is None:
        raise UnsupportedError(
            f"{label} is not supported by jitc (supported: "
            f"{', '.join(f'scipy.special.{n}' for n in _IMPLEMENTATIONS)})"
            f"{where()}; see the NumPy surface in the README "
            "(python -m jitc.numpy_api.surface)"
        )
    from jitc.numpy_api.complex import refuse_complex
    from jitc.numpy_api.ufuncs import _resolve

    refuse_complex(label, inputs)  # SciPy's complex loops (erf of z) are not jitc's

    if len(inputs) != ufunc.nin:
        raise TypeError(f"{label} takes {ufunc.nin} arguments, got {len(inputs)}{where()}")
    ctx = find_ctx(inputs)
    loop = _resolve(ufunc, tuple(_dtype_key(x) for x in inputs))  # NEP 50, as SciPy
    result = impl(*(lift(ctx, x, np.float64) for x in inputs))
    result = lax.convert(result, loop[-1])
    return _mark(result, result.ndim == 0)
