"""The op vocabulary: every primitive's name, grouped so passes read `if op in ELEMENTWISE`.

Elementwise op names are NumPy's ufunc names, so `np.<name>` is their reference meaning.
"""

UNARY = frozenset(
    {
        "negative",
        "absolute",
        "sign",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "cbrt",
        "square",
        "reciprocal",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "floor",
        "ceil",
        "rint",
        "trunc",
        "logical_not",
        "invert",
        "deg2rad",
        "rad2deg",
    }
)
PREDICATES = frozenset({"isnan", "isinf", "isfinite", "signbit"})
BINARY = frozenset(
    {
        "add",
        "subtract",
        "multiply",
        "divide",
        "floor_divide",
        "remainder",
        "fmod",
        "power",
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "arctan2",
        "hypot",
        "copysign",
        "logaddexp",
        "logaddexp2",
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "left_shift",
        "right_shift",
        "nextafter",
    }
)
COMPARE = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
# The parts of a complex number and its conjugate (emitted on complex operands only).
PARTS = frozenset({"real", "imag", "conjugate"})
ELEMENTWISE = UNARY | PREDICATES | BINARY | COMPARE | PARTS | {"select", "convert"}

# Elementwise ops a backend computes with a transcendental function: never duplicated by fusion.
EXPENSIVE = frozenset(
    {
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "cbrt",
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "sinh",
        "cosh",
        "tanh",
        "arcsinh",
        "arccosh",
        "arctanh",
        "power",
        "arctan2",
        "hypot",
        "logaddexp",
        "logaddexp2",
        "divide",
        "remainder",
        "fmod",
        "floor_divide",
    }
)

# Complex ops NumPy computes with the C library's complex functions (the C99 name its loop
# calls; the others with libm's real and complex functions): the cpu backend calls the same
# ones (backends/cpu/complexlibm.py), which AOT objects, importing nothing, cannot.
COMPLEX_C99 = {
    "sin": "csin",
    "cos": "ccos",
    "tan": "ctan",
    "arcsin": "casin",
    "arccos": "cacos",
    "arctan": "catan",
    "sinh": "csinh",
    "cosh": "ccosh",
    "tanh": "ctanh",
    "arcsinh": "casinh",
    "arccosh": "cacosh",
    "arctanh": "catanh",
}
COMPLEX_LIBM = frozenset(COMPLEX_C99) | {"expm1", "log1p", "exp2", "log2", "log10", "power"}

# What jitc computes on complex64/complex128 (anything else is refused by name at trace
# time, lax.emit): NumPy's complex loops for these, reductions of kind sum/prod only.
COMPLEX = (
    frozenset(
        {
            "add",
            "subtract",
            "multiply",
            "divide",
            "negative",
            "square",
            "absolute",
            "exp",
            "log",
            "sqrt",
            "sign",
            "reciprocal",
            "equal",
            "not_equal",
            "isnan",
            "isinf",
            "isfinite",
            "select",
            "convert",
            "parameter",
            "constant",
            "broadcast_in_dim",
            "reshape",
            "transpose",
            "slice",
            "concatenate",
            "gather",
            "update_slice",
            "scatter",
            "reduce",
            "dot_general",
            "fusion",
            "get",
            "fft",
        }
    )
    | PARTS
    | COMPLEX_LIBM
)
COMPLEX_REDUCE_KINDS = ("sum", "prod")
# What a refusal of a complex value lists as computed.
COMPLEX_COMPUTED = (
    "complex arithmetic, abs, angle, conj, real/imag, sign, reciprocal, power, the "
    "exponentials, logarithms, square roots, trigonometric and hyperbolic functions and their "
    "inverses, sum/prod/mean, where, matmul and vecdot"
)


SOURCES = frozenset({"parameter", "constant", "iota"})
SHAPE_OPS = frozenset({"broadcast_in_dim", "reshape", "transpose", "slice", "concatenate"})
REDUCTIONS = frozenset({"reduce", "argmax", "argmin"})
REDUCE_KINDS = ("sum", "prod", "max", "min", "and", "or")
# Running reductions along one axis (ufunc.accumulate): one kernel each, never fused.
SCANS = frozenset({"cumulative"})
# Stable sorts along one axis: the values, or the permutation (int64) that sorts them.
SORTS = frozenset({"sort", "argsort"})
# Dense linear algebra on the last two axes (LAPACK on the cpu, a thread per matrix on cuda):
# one kernel each, never fused.
LINALG = frozenset({"linalg"})
# kind -> the NumPy function(s) it computes, for messages
LINALG_KINDS = {
    "solve": "np.linalg.solve",
    "inv": "np.linalg.inv",
    "cholesky": "np.linalg.cholesky",
    "cholesky_upper": "np.linalg.cholesky",
    "slogdet": "np.linalg.det/slogdet",
    # the factorizations (core/linalg_layout.py: their operands and packed results)
    "eigh_L": "np.linalg.eigh",
    "eigh_U": "np.linalg.eigh",
    "eigvalsh_L": "np.linalg.eigvalsh",
    "eigvalsh_U": "np.linalg.eigvalsh",
    "svd_full": "np.linalg.svd",
    "svd_reduced": "np.linalg.svd",
    "svdvals": "np.linalg.svd/svdvals",
    "qr_reduced": "np.linalg.qr",
    "qr_complete": "np.linalg.qr",
    "qr_r": "np.linalg.qr",
    "qr_raw": "np.linalg.qr",
    "gtsv": "scipy.linalg.lapack.?gtsv",
    "gtsv_solve": "scipy.linalg.solve_banded",
    "gbsv": "scipy.linalg.solve_banded",
}
# Discrete Fourier transforms over whole axes (rocket-fft's DUCC0 on the cpu): one kernel
# each, never fused. kind -> the NumPy function it computes, for messages
FFT = frozenset({"fft"})
FFT_KINDS = {
    "fft": "np.fft.fft",
    "ifft": "np.fft.ifft",
    "rfft": "np.fft.rfft",
    "irfft": "np.fft.irfft",
}
FFT_NORMS = ("backward", "ortho", "forward")
OTHER = frozenset({"gather", "dot_general", "fusion", "get", "while"})
# Ops holding a nested graph: a fusion's body, a loop's step (`while`: operands are the
# first test's flag, the carried values' first versions, then the values the step reads
# unchanged; its step graph maps (carried, invariants) to (carried, the next flag)).
NESTED = frozenset({"fusion", "while"})
# Functional writes (trace/mutation/functional.py records them; fusion/expand.py lowers them): a new
# version of a buffer with a region or scattered rows replaced.
UPDATES = frozenset({"update_slice", "scatter"})
SCATTER_MODES = ("set",) + tuple(sorted(BINARY))

ALL = (
    ELEMENTWISE | SOURCES | SHAPE_OPS | REDUCTIONS | SCANS | SORTS | LINALG | FFT | OTHER | UPDATES
)
