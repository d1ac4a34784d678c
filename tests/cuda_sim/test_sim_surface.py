"""A representative slice of the NumPy surface table (tests/test_surface.py) on backend="cuda".

Same cases, same runner, NumPy as the oracle: every elementwise primitive (special and extreme
values included), NumPy 2 promotion, operators and scalars, integer edge values, every
reduction with several axis/keepdims forms, NaN propagation, products (tile and skinny dot
kernels, batched and transposed operands), shape ops, gathers, creation functions and whole
programs; cases in LAYOUTS_EVERYWHERE also run on Fortran-order, strided and negative-stride
inputs. The hypothesis tests add random broadcasting, reduction axes and slicing.
The whole table runs too with JITC_FULL_SURFACE=1 (about 8 minutes in the simulator).
"""

import numpy as np
import pytest

import jitc
import tests.test_surface as surface
from tests.conftest import FULL_SURFACE

REDUCTIONS = [
    "np.sum(axis=1, keepdims=True)",
    "np.sum 0-d, empty, 1-d",
    "np.sum empty axis",
    "np.mean(axis=(0, 2), keepdims=True)",
    "np.prod(axis=-1, keepdims=False)",
    "np.prod empty axis",
    "np.max(axis=None, keepdims=False)",
    "np.max 0-d, empty, 1-d",
    "np.amax(axis=0, keepdims=True)",
    "np.min(axis=(-1, 0), keepdims=False)",
    "np.amin(axis=(), keepdims=True)",
    "np.var(axis=1, keepdims=True)",
    "np.std(axis=0, keepdims=False)",
    "np.any(axis=0, keepdims=True)",
    "np.all(axis=(0, 2), keepdims=False)",
    "np.all empty axis",
    "np.argmax(axis=1, keepdims=False)",
    "np.argmax 0-d, 1-d, empty",
    "np.argmin(axis=None, keepdims=True)",
    "np.argmin(axis=0, keepdims=False)",
    "reduction dtype=",
    "var/std ddof",
    "ufunc.reduce",
    "NaN in max/min/argmax/argmin/fmax",
    "sum/mean/var with Inf and NaN",
    "reduction errors",
    "reduction duplicate axis",
]
PRODUCTS = [
    "np.matmul",
    "x @ y mixed dtypes",
    "np.dot",
    "np.dot 0-d",
    "np.einsum bhqd,bhkd->bhqk",
    "np.einsum ij,kj",
    "np.einsum ijk,ikl->jl",
    "np.tensordot axes=([2], [1])",
    "np.inner",
    "np.outer",
]
SHAPES = [
    "transpose",
    "swapaxes",
    "moveaxis",
    "broadcast_to",
    "concatenate",
    "concatenate empty",
    "stack",
    "hstack/vstack",
    "split",
    "x[::-1]",
    "x[1:-1:2, 1::3]",
    "x[:, None, 1:]",
    "x[5:1:-2, :, ::-1]",
    "x[::-1][1:]",
    "W[ids] (embedding lookup)",
    "x[:, ids], x[ids, 1], x[1, :, ids], x[..., ids]",
    "np.take",
    "list/range/array constant indices",
    "astype",
    "astype to int",
    "*_like",
    "full_like traced fill",
    "creation with static args",
    "tril/triu",
    "causal mask",
    "np.round",
    "copy",
    "atleast",
]
PROGRAMS = ["softmax(relu(x @ W + b))", "layernorm", "gelu tanh", "sigmoid, logsumexp"]
SURFACE = [  # functions traced into primitives (issue 13): the same kernels as the rest
    "np.roll",
    "np.pad edge/reflect/symmetric/wrap",
    "np.pad constant",
    "np.diff",
    "np.gradient",
    "x[:, k, i, j] (several index arrays)",
    "np.diagonal/np.trace",
    "np.take_along_axis",
    "np.searchsorted/np.digitize",
    "np.linalg.norm vectors",
    "nan-reductions",
    "np.tile",
    "np.repeat",
    "np.flip/fliplr/flipud",
    "np.isclose/np.nan_to_num",
    "np.kron",
]

# Everything before the reductions: every elementwise ufunc, promotion, operators, scalars,
# integer edge values, where and clip (cheap: one small kernel each).
FIRST_REDUCTION = next(i for i, c in enumerate(surface.CASES) if c.name.startswith("np.sum("))
SLICE = (
    [c.name for c in surface.CASES[:FIRST_REDUCTION]]
    + REDUCTIONS
    + PRODUCTS
    + SHAPES
    + PROGRAMS
    + SURFACE
)
CASES = surface.CASES if FULL_SURFACE else [c for c in surface.CASES if c.name in SLICE]


def test_the_slice_names_existing_cases_and_every_elementwise_op():
    names = {c.name for c in surface.CASES}
    assert set(SLICE) <= names, set(SLICE) - names
    from jitc.core import ops

    ufuncs = ops.UNARY | ops.PREDICATES | ops.BINARY | ops.COMPARE
    assert {f"np.{op}" for op in ufuncs} <= set(SLICE)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_numpy_surface_on_cuda(case, request):
    reason = case.xfail.get("cuda") or case.xfail.get("*")
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    surface.run_case(case, "cuda")


def test_broadcasting_binary_ops():
    surface.test_broadcasting_binary_ops(backend="cuda")


def test_reduction_axes():
    surface.test_reduction_axes(backend="cuda")


def test_basic_slicing():
    surface.test_basic_slicing(backend="cuda")


@pytest.mark.parametrize("name", ["erf", "erfc", "ndtr", "log_ndtr", "expit", "logit"])
def test_scipy_special_within_a_few_ulp_of_the_exact_value(name):
    from tests.test_special import test_within_a_few_ulp_of_the_exact_value

    test_within_a_few_ulp_of_the_exact_value("cuda", name)


def test_scipy_special_gammaln_matches_scipy_and_the_exact_value():
    from tests.test_special import (
        test_gammaln_matches_scipy,
        test_gammaln_within_a_few_ulp_of_the_exact_value,
    )

    test_gammaln_matches_scipy("cuda", np.float64)
    test_gammaln_within_a_few_ulp_of_the_exact_value("cuda")


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32, np.float64])
def test_scans(dtype):
    from tests import test_scans as scans

    scans.test_every_scan_over_every_axis_is_numpys("cuda", dtype)
    if dtype == np.float32:
        scans.test_scalars_empty_axes_and_out("cuda")
        scans.test_a_sampler_with_in_place_updates("cuda")


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
def test_sorting(dtype):
    from tests import test_sorting as sorting

    sorting.test_every_sort_over_every_axis_is_numpys_stable_sort("cuda", dtype)
    if dtype == np.float32:
        sorting.test_long_rows_and_non_contiguous_inputs("cuda")
        sorting.test_partition_contract("cuda", np.float64)
        sorting.test_in_place_sorts_write_the_callers_arrays("cuda")
        sorting.test_empty_0d_and_1d("cuda")
        sorting.test_default_kind_on_tie_free_data_is_numpys("cuda")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_linalg(dtype):
    """np.linalg.solve, inv, cholesky, det, slogdet: a thread per matrix."""
    from tests import test_linalg_lapack as linalg

    jitted = {}
    for batch, n in [((), 5), ((2, 3), 3)]:
        linalg.test_every_function_is_numpys(
            "cuda",
            lambda b: jitted.setdefault(b, jitc.jit(linalg.everything, backend=b)),
            dtype,
            batch,
            n,
        )
    if dtype == np.float64:
        linalg.test_results_in_numpys_dtypes("cuda")
        linalg.test_non_contiguous_operands("cuda")
        linalg.test_solve_b_follows_numpy2("cuda")
        linalg.test_singular_and_not_positive_definite_raise_numpys_linalgerror("cuda")
        linalg.test_singular_det_is_exactly_zero("cuda")
        linalg.test_lower_triangle_is_what_cholesky_reads("cuda")
        linalg.test_writing_the_inverse_over_its_matrix("cuda")
        linalg.test_ridge_regression_and_gaussian_loglik_are_numpys("cuda")
        for a, b in [(np.zeros((0, 0)), np.zeros((0, 3))), (np.zeros((2, 0, 0)), np.zeros(0))]:
            linalg.test_empty_matrices_and_stacks("cuda", a, b)


def test_histograms():
    from tests import test_histograms as histograms

    histograms.test_histograms_are_numpys("cuda", np.float32)
    histograms.test_bincount_is_numpys("cuda")
    histograms.test_bincount_out_of_range_names_bincount_and_the_line("cuda", [0, 5])


def test_convolve_and_correlate():
    from tests import test_convolve as convolve

    convolve.test_every_mode_and_order_is_numpys("cuda")


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_array_api_functions(dtype):
    """The Array API functions traced for issue 13 (compositions, and nextafter's
    libdevice call), on a slice of their dtypes."""
    from tests import test_array_api_namespace as array_api

    array_api.test_shape_functions_over_dtypes("cuda", dtype)
    array_api.test_products_over_dtypes("cuda", dtype)
    if dtype != np.int32:
        array_api.test_vector_and_matrix_norms("cuda", dtype)
        array_api.test_nextafter_is_numpys_bit_for_bit("cuda", dtype)


def test_runtime_failures_name_the_numpy_call_and_the_line():
    from tests import test_errors as errors

    for case in range(3):
        errors.test_runtime_failures_name_the_numpy_call_and_the_line("cuda", case)
    errors.test_runtime_failure_with_several_candidates_names_each("cuda")
    errors.test_runtime_failure_names_the_failing_launch_also_on_the_fast_path("cuda")
