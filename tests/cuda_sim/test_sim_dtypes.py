"""int8, int16, uint8, uint16, uint32, uint64 and float16 on backend="cuda" (issue 13): the
cpu backend's oracle suites (tests/test_dtypes_int.py, tests/test_dtypes_float16.py) run on
cuda under the simulator, NumPy as the oracle, at sizes the simulator runs in seconds.

Integers: wraparound, division and remainder by zero, INT_MIN // -1, abs(INT_MIN), shifts
past the width, NEP 50 promotion against every other dtype, casts both ways, Python scalars,
reductions' accumulator dtypes, integer dots, unsigned gather indices. float16: each op in
float32 rounded to float16 (bit for bit), casts (float64 rounds once), data movement, sums
in NumPy's order (every add rounded along a kept inner axis: one lane per row), scans,
matmul, in-place updates and a half-precision layer. tests/test_cuda_backend.py assembles the
same kinds of kernels for the GPU with ptxas.
"""

import numpy as np
import pytest

import tests.test_dtypes_float16 as halves
import tests.test_dtypes_int as ints

CUDA = "cuda"


@pytest.mark.parametrize("dtype", ["int8", "uint8", "uint64"])
def test_integer_arithmetic_wraps_like_numpy(dtype):
    ints.test_integer_arithmetic_wraps_like_numpy(dtype, backend=CUDA)


def test_integer_arithmetic_of_the_middle_widths():
    ints.test_integer_arithmetic_of_the_middle_widths(backend=CUDA)


def test_mixed_dtype_arithmetic_and_comparison():
    ints.test_mixed_dtype_arithmetic_and_comparison_compiled(backend=CUDA)


def test_astype_from_floats_and_between_integers():
    ints.test_astype_from_floats_to_every_integer_dtype(backend=CUDA)
    ints.test_astype_between_integer_dtypes(backend=CUDA)


@pytest.mark.parametrize("dtype", ["uint8", "uint64"])
def test_python_ints_with_small_and_unsigned_integers(dtype):
    ints.test_python_ints_stay_weak_and_out_of_range_ones_raise_naming_the_argument(
        dtype, backend=CUDA
    )


def test_integer_programs():
    ints.test_a_uint8_image_program(backend=CUDA)
    ints.test_an_int8_quantized_dot_product_program(backend=CUDA)
    ints.test_math_numpy_computes_in_float16_is_float16(backend=CUDA)


def test_unsigned_index_arrays_gather_and_too_big_ones_are_out_of_bounds():
    ints.test_unsigned_index_arrays_gather_and_too_big_ones_are_out_of_bounds(backend=CUDA)


def test_float16_promotion_and_scalars():
    halves.test_mixed_float16_arithmetic_compiled(backend=CUDA)
    halves.test_python_and_numpy_scalars_with_float16(CUDA)


def test_float16_elementwise_chains_bit_for_bit():
    halves.test_elementwise_chains_are_numpys_bit_for_bit(backends=(CUDA,))


def test_float16_transcendentals_on_every_16th_float16():
    """Under the simulator libdevice is NumPy's float32 math (devlib.py): this checks the
    rounding around it; the GPU's own ulps need a GPU."""
    halves.test_transcendentals_within_one_ulp_of_numpy_over_every_float16(backend=CUDA, step=16)


def test_float16_casts_creation_and_data_movement():
    halves.test_casts_both_ways_are_numpys(backends=(CUDA,))
    halves.test_creation_and_constants_in_float16(backends=(CUDA,))
    halves.test_data_movement_of_float16_is_exact(backends=(CUDA,))


def test_float16_reductions_follow_numpy():
    halves.test_reductions_follow_numpy(backend=CUDA)
    halves.test_reductions_follow_numpys_memory_order_bit_for_bit(CUDA, shape=(30, 20))
    halves.test_running_sums_round_every_step_as_numpy(backend=CUDA)


def test_float16_matmul_updates_and_a_layer():
    halves.test_matmul_and_dot_within_the_float32_accumulation_bound(backend=CUDA)
    halves.test_in_place_updates_of_a_callers_float16_array(backends=(CUDA,))
    halves.test_half_precision_layernorm_and_mlp_layer_against_numpy(backend=CUDA)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint64, np.float16])
def test_sorts_and_scans(dtype):
    """Sorts compare float16 keys as float32 values (NaN last, -0.0 in input order); scans
    round every float16 step."""
    from tests import test_scans as scans
    from tests import test_sorting as sorting

    sorting.test_every_sort_over_every_axis_is_numpys_stable_sort(CUDA, dtype)
    scans.test_every_scan_over_every_axis_is_numpys(CUDA, dtype)
