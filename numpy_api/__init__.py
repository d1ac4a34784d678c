"""NumPy functions on Tracers, decomposed into primitives (jitc's jax.numpy), by family.

Dtypes follow NumPy 2 exactly by asking NumPy itself (core.py). FUNCTIONS maps each
supported NumPy function to its implementation (each family module registers its own with
`implements`); anything else raises UnsupportedError, never a silent NumPy fallback.

    core        tracer detection, lifting values into a trace, dtype rules, axes
    ufuncs      ufuncs and operators, where/clip/round/astype/copy
    complex     real, imag, angle; which functions take complex values
    reductions  sum ... argmin, with NumPy's accumulator dtypes
    scans       cumsum, cumprod, cumulative_sum/prod, ufunc.accumulate
    shapes      views, joins, shape queries
    shifts      np.roll, np.pad, np.diff (slices and joins)
    sorting     sort, argsort, partition, argpartition (and the methods)
    creation    the *_like family, tril/triu (np.zeros and friends: trace/creation.py)
    data_sized  nonzero, argwhere, extract, compress, unique*: results of run-time size
    indexing    np.take (x[key] itself: trace/indexing.py)
    convolve    np.convolve, np.correlate (1-d)
    fft         np.fft's transforms (fft ... ihfft, 2-d and n-d)
    histograms  np.histogram with bins known when tracing
    histograms_nd  np.histogramdd, np.histogram2d
    statistics  np.cov, np.corrcoef
    linalg      matmul, dot, tensordot, einsum (einsum.py)
    linalg_lapack  solve, inv, cholesky, det, slogdet (LAPACK)
    linalg_factor  eigh, eigvalsh, svd, svdvals, qr (LAPACK); pinv, matrix_rank, lstsq on the SVD
    scipy_linalg  scipy.linalg.solve_banded, scipy.linalg.lapack.dgtsv/sgtsv (LAPACK)
    linalg_namespace  np.linalg's Array API functions (vector_norm, matrix_norm, cross...)
    refused     functions refused with their reason (eig, cond)
    random      np.random, refused while tracing (it draws anew on every call)
    writes      out=, in-place operators, copyto, put_along_axis, ufunc.at
"""

from jitc.numpy_api import (
    complex,
    convolve,
    creation,
    data_sized,  # noqa: F401 (registers its functions)
    fft,
    histograms,
    histograms_nd,
    indexing,
    linalg,
    linalg_factor,
    linalg_lapack,
    linalg_namespace,
    random,
    reductions,
    scans,
    scipy_linalg,
    shapes,
    shifts,
    sorting,
    statistics,
    ufuncs,
    writes,
)
from jitc.numpy_api.core import FUNCTIONS, find_ctx, implements, is_tracer, lift, result_type
from jitc.numpy_api.linalg import dot, matmul
from jitc.numpy_api.reductions import (  # noqa: A004
    all_,
    amax,
    amin,
    any_,
    argmax,
    argmin,
    mean,
    prod,
    std,
    sum,
    var,
)
from jitc.numpy_api.shapes import ravel, reshape, squeeze, swapaxes, transpose
from jitc.numpy_api.ufuncs import apply_operator, astype, clip, round_, ufunc_dispatch

__all__ = [
    "FUNCTIONS",
    "implements",
    "find_ctx",
    "is_tracer",
    "lift",
    "result_type",
    "complex",
    "convolve",
    "creation",
    "fft",
    "histograms",
    "histograms_nd",
    "indexing",
    "linalg",
    "linalg_factor",
    "linalg_lapack",
    "linalg_namespace",
    "random",
    "reductions",
    "scans",
    "scipy_linalg",
    "shapes",
    "shifts",
    "sorting",
    "statistics",
    "ufuncs",
    "writes",
    "dot",
    "matmul",
    "all_",
    "amax",
    "amin",
    "any_",
    "argmax",
    "argmin",
    "mean",
    "prod",
    "std",
    "sum",
    "var",
    "ravel",
    "reshape",
    "squeeze",
    "swapaxes",
    "transpose",
    "apply_operator",
    "astype",
    "clip",
    "round_",
    "ufunc_dispatch",
]
