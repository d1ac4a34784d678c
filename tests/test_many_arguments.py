"""Functions of many arrays (issue 14): a sum of 300 arguments took 37-47 s to compile, as one
kernel of 300 arrays and one driver of 300 arguments. Now fusions hold at most MAX_ARRAYS
arrays (kernels that repeat their structure share compiled code) and a function of more
than MAX_NARROW_ARRAYS arrays runs the one wide driver over collected pointers
(backends/cpu/wide.py). Compile time is measured in benchmarks/bench_first_call.py; these
tests hold the structure that keeps it low and the answers NumPy gives."""

import numpy as np
import pytest

import jitc
from jitc.backends.cpu.wide import MAX_NARROW_ARRAYS
from jitc.fusion.fuse import MAX_ARRAYS


def total(*xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = acc + x
    return acc


def test_a_sum_of_300_arguments_is_numpys_and_compiles_few_kernels():
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(1000) for _ in range(300)]
    compiled = jitc.jit(total).lower(*xs).compile()
    np.testing.assert_array_equal(compiled(*xs), total(*xs))  # same order of adds
    executable = compiled.executable
    assert executable.checked_run.__name__ == "run"  # the wide path, not a 300-argument driver
    fusions = [n for n in compiled.graph.nodes if n.op == "fusion"]
    assert len(fusions) >= 300 // MAX_ARRAYS
    assert all(len(f.operands) + 1 <= MAX_ARRAYS for f in fusions)
    # chunks of the chain share their source: compile time does not grow with the chain
    assert len(executable.kernel_modules) <= 3


def test_an_sgd_step_over_a_dict_of_parameters_updates_them_in_place():
    """What real code with hundreds of arrays looks like: an optimizer step over a model's
    parameters, written in place; the caller's arrays are compared with NumPy's."""
    rng = np.random.default_rng(1)
    shapes = [(4, 3), (3,), (3, 5), (5,), ()] * 8
    params = {f"p{i}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    grads = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}

    def sgd(params, grads, lr):
        for k in params:
            params[k] -= lr * grads[k]
        return sum(float(0) + np.sum(g * g) for g in grads.values())

    want_params = {k: v.copy() for k, v in params.items()}
    want = sgd(want_params, grads, 0.1)
    step = jitc.jit(sgd)
    got = step(params, grads, 0.1)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for k in params:
        np.testing.assert_array_equal(params[k], want_params[k])
    again = step(params, grads, 0.1)  # the fast path, in place again
    want_again = sgd(want_params, grads, 0.1)
    np.testing.assert_allclose(again, want_again, rtol=1e-5)
    for k in params:
        np.testing.assert_array_equal(params[k], want_params[k])


def _mixed(n):
    rng = np.random.default_rng(2)
    kinds = [
        lambda: rng.standard_normal((3, 4)).astype(np.float32),
        lambda: rng.integers(-5, 5, 4),
        lambda: np.float64(rng.standard_normal()) * np.ones(()),
    ]
    return [kinds[i % 3]() for i in range(n)]


def mixed_sum(*xs):
    return total(*[x.astype(np.float64) for x in xs]), xs[1] * 2


def test_arrays_of_several_dtypes_and_ranks_past_the_narrow_limit():
    xs = _mixed(MAX_NARROW_ARRAYS + 5)
    f = jitc.jit(mixed_sum)
    for got, want in zip(f(*xs), mixed_sum(*xs)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert got.dtype == want.dtype and got.shape == want.shape


@pytest.mark.parametrize("change", ["shape", "dtype", "layout"])
def test_the_wide_path_refuses_other_arguments_and_the_call_retraces(change):
    """One argument of many differs from the compiled signature: the wide driver's shape
    check (SignatureMiss) or the collectors' dispatch (TypeError) sends the call to the
    slow path, which compiles for it; NumPy's answer either way."""
    xs = _mixed(MAX_NARROW_ARRAYS + 5)
    f = jitc.jit(mixed_sum)
    f(*xs)
    other = list(xs)
    if change == "shape":
        other[3] = np.ones((3, 1), np.float32)  # broadcasts against the (3, 4) arrays
    elif change == "dtype":
        other[3] = xs[3].astype(np.float64)
    else:
        other[3] = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(4, 3)).T
    for got, want in zip(f(*other), mixed_sum(*other)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(f(*xs), mixed_sum(*xs)):  # and back
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_compiled_object_names_a_wrong_argument_past_the_narrow_limit():
    xs = _mixed(MAX_NARROW_ARRAYS + 5)
    compiled = jitc.jit(mixed_sum).lower(*xs).compile()
    bad = list(xs)
    bad[4] = np.zeros(5, np.int64)
    with pytest.raises(ValueError, match="expected shape"):
        compiled(*bad)


def test_a_kernel_error_is_raised_on_the_wide_path():
    xs = [np.arange(5.0) + i for i in range(MAX_NARROW_ARRAYS + 2)]

    def gather_sum(idx, *xs):
        return total(*xs)[idx]

    f = jitc.jit(gather_sum)
    idx = np.array([0, 4, -1])
    np.testing.assert_array_equal(f(idx, *xs), gather_sum(idx, *xs))
    with pytest.raises(IndexError, match="index out of bounds"):
        f(np.array([0, 7, 1]), *xs)
    with pytest.raises(IndexError):
        gather_sum(np.array([0, 7, 1]), *xs)
