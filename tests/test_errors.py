"""Errors say what went wrong, where in the user's code, and how to fix it.

Every message is checked for the NumPy function (or parameter) it is about and, for trace-time
errors, the user's file:line, i.e. the line of THIS file that made the call.
"""

import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitc
from jitc.core.errors import JitcError, ShapeError, TracerError, UnsupportedError
from jitc.trace.control import LoopError

HERE = os.path.abspath(__file__)
X = np.arange(12, dtype=np.float32).reshape(3, 4)


def _line_of(fn, text):
    """The line number in this file of the source line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


def _raises(exc, fn, *args, backend="reference", **jit_kwargs):
    with pytest.raises(exc) as info:
        jitc.jit(fn, backend=backend, **jit_kwargs)(*args)
    return str(info.value)


def _assert_at(message, fn, text):
    assert f"{HERE}:{_line_of(fn, text)}" in message, message


# ----------------------------------------------------------------------------- unsupported


def uses_lexsort(x):
    return np.lexsort((x[0], x[1])) * 2


def uses_unique(x):
    y = x + 1
    return np.unique(y, axis=0)


def uses_setitem(x):
    y = x * 2
    y[x > 3] = np.arange(8.0)
    return y


def uses_linalg(x):
    return np.linalg.eig(x[:, :3])


def uses_method(x):
    return x.compress([True, False], axis=0)


def uses_mask(x):
    return x[x > 3].reshape(2, -1)


def uses_nonzero(x):
    return np.where(x > 3)[0].shape


def uses_accumulate(x):
    return np.subtract.accumulate(x)


def uses_out(x):
    return np.exp(x, where=x > 3)


def uses_diag_einsum(x):
    return np.einsum("ii->i", x[:, :3])


def uses_pad_ramp(x):
    return np.pad(x, 1, mode="linear_ramp")


def uses_pad_odd(x):
    return np.pad(x, 1, mode="reflect", reflect_type="odd")


def uses_pad_traced_value(x):
    return np.pad(x, 1, constant_values=x[0, 0])


def uses_tile_traced_reps(x):
    return np.tile(x, (2, x.shape[0] + x[0, 0].astype(np.int32)))


def uses_repeat_traced(x):
    return np.repeat(x, x[0, 0].astype(np.int32))


def uses_take_out(x):
    return np.take(x, [0], out=x[:1])


def uses_trace_out(x):
    return np.trace(x, out=x[0, 0])


def uses_cond(x):
    return np.linalg.cond(x)


def uses_ptp_out(x):
    return np.ptp(x, out=x[0])


def uses_average_returned(x):
    return np.average(x, returned=True)


def uses_average_2d_weights(x):
    return np.average(x, axis=1, weights=x[:2])


def uses_gradient_traced_coordinates(x):
    return np.gradient(x, x[:, 0] * 2, 1.0)


def uses_digitize_traced_bins(x):
    return np.digitize(x, x[0])


def uses_searchsorted_sorter(x):
    return np.searchsorted(x[0], x[1], sorter=np.arange(4))


def uses_roll_traced_shift(x):
    return np.roll(x, x.shape[0] + x[0, 0].astype(np.int32))


@pytest.mark.parametrize(
    "fn,name,line",
    [
        (uses_lexsort, "np.lexsort", "np.lexsort((x[0]"),
        (uses_unique, "np.unique(axis=0)", "np.unique(y"),
        (uses_setitem, "x[mask] = v", "y[x > 3] = np.arange"),
        (uses_linalg, "np.linalg.eig", "np.linalg.eig"),
        (uses_method, "ndarray.compress", "x.compress"),
        (uses_mask, "boolean mask index", "x[x > 3]"),
        (uses_nonzero, "np.where's result", "np.where(x > 3)"),
        (uses_accumulate, "np.subtract.accumulate", "np.subtract.accumulate(x)"),
        (uses_out, "where= without out=", "np.exp(x, where"),
        (uses_diag_einsum, "einsum", "np.einsum"),
        (uses_pad_ramp, "np.pad mode='linear_ramp'", "np.pad(x, 1, mode="),
        (uses_pad_odd, "reflect_type='odd'", "np.pad(x, 1, mode="),
        (uses_pad_traced_value, "np.pad constant_values", "np.pad(x, 1, constant_values"),
        (uses_roll_traced_shift, "np.roll shift", "np.roll(x,"),
        (uses_digitize_traced_bins, "np.digitize bins", "np.digitize(x,"),
        (uses_searchsorted_sorter, "sorter=", "np.searchsorted(x[0]"),
        (uses_gradient_traced_coordinates, "np.gradient coordinates", "np.gradient(x,"),
        (uses_tile_traced_reps, "np.tile reps", "np.tile(x,"),
        (uses_repeat_traced, "np.repeat repeats", "np.repeat(x,"),
        (uses_take_out, "np.take: out=", "np.take(x,"),
        (uses_trace_out, "np.trace: out=", "np.trace(x,"),
        (uses_cond, "np.linalg.cond", "np.linalg.cond(x)"),
        (uses_ptp_out, "np.ptp: out=", "np.ptp(x,"),
        (uses_average_returned, "returned=True", "np.average(x,"),
        (uses_average_2d_weights, "np.average: weights of shape", "np.average(x,"),
    ],
)
def test_unsupported_names_the_function_and_the_users_line(fn, name, line):
    before = X.copy()
    message = _raises(UnsupportedError, fn, X)
    assert name in message, message
    _assert_at(message, fn, line)
    assert np.array_equal(X, before)


def test_unsupported_is_a_jitc_error_and_never_a_silent_numpy_fallback():
    assert issubclass(UnsupportedError, JitcError)
    with pytest.raises(UnsupportedError):
        jitc.jit(uses_lexsort, backend="reference").lower(jitc.spec("f32[3,4]"))


def test_unsupported_methods_still_look_missing_to_hasattr():
    seen = {}

    def f(x):
        seen["has"] = hasattr(x, "compress")
        return x + 1

    jitc.jit(f, backend="reference")(X)
    assert seen["has"] is False


def test_unknown_attributes_are_attribute_errors():
    with pytest.raises(AttributeError, match="no_such_thing"):
        jitc.jit(lambda x: x.no_such_thing, backend="reference")(X)


# ----------------------------------------------------------------------------- tracer errors


def branches(x):
    if x.sum() > 0:
        return x
    return -x


def loops(x):
    while x.max() > 1:
        x = x / 2
    return x


def uses_int(x):
    return x[: int(x.sum())]


def uses_float(x):
    return float(x[0, 0]) * x


def uses_bool(x):
    return bool(x.any())


def uses_and(x):
    return (x > 0) and (x < 5)


def uses_item(x):
    return x.sum().item()


def uses_index(x):
    return np.zeros(3)[x.argmax()] + range(x.argmax())[0]


def stores_into_numpys_array(x):
    a = np.arange(4.0)
    a[:] = x[0]
    return a


@pytest.mark.parametrize(
    "fn,what,line",
    [
        (uses_int, "int()", "int(x.sum())"),
        (uses_float, "float()", "float(x[0, 0])"),
        (uses_bool, "bool()", "bool(x.any())"),
        (uses_and, "bool()", "(x > 0) and (x < 5)"),
        (uses_item, ".item()", "x.sum().item()"),
        (stores_into_numpys_array, "conversion to a NumPy array", "a[:] = x[0]"),
    ],
)
def test_python_control_flow_on_traced_values_says_what_to_do(fn, what, line):
    message = _raises(TracerError, fn, X)
    assert what in message, message
    assert "np.where" in message and "static" in message, message
    _assert_at(message, fn, line)


def test_a_return_in_a_traced_branch_says_what_keeps_it_python():
    """A `while` on a traced value compiles as a loop (trace/autograph.py); an `if` holding
    a `return` cannot, and says so at its line."""
    np.testing.assert_array_equal(jitc.jit(loops, backend="reference")(X), loops(X))
    message = _raises(LoopError, branches, X)
    assert "holds a `return`" in message and "np.where" in message, message
    _assert_at(message, branches, "if x.sum() > 0")


def test_tracer_errors_are_type_errors_too():
    assert issubclass(TracerError, TypeError) and issubclass(TracerError, JitcError)
    with pytest.raises(TypeError):
        jitc.jit(uses_index, backend="reference")(X)


def test_a_static_argument_makes_the_branch_legal():
    def f(x, flip):
        return -x if flip else x

    g = jitc.jit(f, backend="reference", static_argnames="flip")
    np.testing.assert_array_equal(g(X, flip=True), -X)
    np.testing.assert_array_equal(g(X, flip=False), X)


# ----------------------------------------------------------------------------- shape errors


def bad_matmul(x):
    y = x * 2
    return y @ y


def bad_add(x):
    return x + np.ones(5, np.float32)


def bad_concat(x):
    return np.concatenate([x, x.T])


def bad_where(x):
    return np.where(x > 0, x, np.zeros((2, 2)))


def bad_einsum(x):
    return np.einsum("ij,jk->ik", x, x)


def bad_tensordot(x):
    return np.tensordot(x, x, axes=([0], [1]))


def bad_broadcast(x):
    return np.broadcast_to(x, (4, 3))


@pytest.mark.parametrize(
    "fn,op,shapes,line",
    [
        (bad_matmul, "matmul", ["(3, 4)"], "y @ y"),
        (bad_add, "np.add", ["(3, 4)", "(5,)"], "x + np.ones"),
        (bad_concat, "np.concatenate", ["(3, 4)", "(4, 3)"], "np.concatenate"),
        (bad_where, "np.where", ["(3, 4)", "(2, 2)"], "np.where"),
        (bad_einsum, "einsum", [], "np.einsum"),
        (bad_tensordot, "tensordot", ["(3, 4)"], "np.tensordot"),
        (bad_broadcast, "broadcast_to", ["(3, 4)", "(4, 3)"], "np.broadcast_to"),
    ],
)
def test_shape_errors_name_the_op_the_shapes_and_the_line(fn, op, shapes, line):
    with pytest.raises(ValueError) as info:  # ShapeError is a ValueError, as NumPy's are
        jitc.jit(fn, backend="reference")(X)
    message = str(info.value)
    assert op in message, message
    for s in shapes:
        assert s in message, message
    _assert_at(message, fn, line)


def test_shape_errors_are_jitc_shape_errors():
    with pytest.raises(ShapeError):
        jitc.jit(bad_matmul, backend="reference")(X)


def test_axis_and_index_errors_match_numpys_types():
    with pytest.raises(np.exceptions.AxisError):
        jitc.jit(lambda x: x.sum(axis=2), backend="reference")(X)
    with pytest.raises(IndexError, match="out of bounds"):
        jitc.jit(lambda x: x[3], backend="reference")(X)
    with pytest.raises(IndexError, match="too many indices"):
        jitc.jit(lambda x: x[0, 0, 0], backend="reference")(X)


# ----------------------------------------------------------------------------- Compiled signatures


def _layer(x, w):
    return np.tanh(x @ w)


def test_compiled_with_a_wrong_dtype_is_a_type_error_naming_the_parameter():
    c = (
        jitc.jit(_layer, backend="reference")
        .lower(jitc.spec("f32[2,4]"), jitc.spec("f32[4,3]"))
        .compile()
    )
    with pytest.raises(TypeError, match=r"'w'.*float32.*float64"):
        c(np.ones((2, 4), np.float32), np.ones((4, 3), np.float64))
    with pytest.raises(TypeError, match=r"'x'.*int32"):
        c(np.ones((2, 4), np.int32), np.ones((4, 3), np.float32))


def test_compiled_with_a_wrong_shape_is_a_value_error_naming_the_parameter():
    c = (
        jitc.jit(_layer, backend="reference")
        .lower(jitc.spec("f32[2,4]"), jitc.spec("f32[4,3]"))
        .compile()
    )
    with pytest.raises(ValueError, match=r"'x'.*\(2, 4\).*\(3, 4\)"):
        c(np.ones((3, 4), np.float32), np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"'w'"):
        c(np.ones((2, 4), np.float32), np.ones((4,), np.float32))


def test_compiled_with_the_wrong_number_of_arguments_is_a_type_error():
    c = (
        jitc.jit(_layer, backend="reference")
        .lower(jitc.spec("f32[2,4]"), jitc.spec("f32[4,3]"))
        .compile()
    )
    with pytest.raises(TypeError):
        c(np.ones((2, 4), np.float32))


@pytest.mark.parametrize("dtype", [np.clongdouble, np.longdouble, np.datetime64, object])
def test_unsupported_argument_dtypes_name_the_argument(dtype):
    x = np.ones((2, 3), dtype=dtype)
    with pytest.raises(UnsupportedError, match=r"argument 'vec'.*" + np.dtype(dtype).name):
        jitc.jit(lambda mat, vec: mat * vec, backend="reference")(np.ones((2, 3)), x)


def test_unsupported_scalars_and_constants_are_clear():
    with pytest.raises(UnsupportedError, match="longdouble|float128"):
        jitc.jit(lambda x: x * np.longdouble(2), backend="reference")(X)
    w = np.ones(4, np.clongdouble)  # a captured array of a dtype jitc lacks
    with pytest.raises(UnsupportedError, match="complex256|clongdouble"):
        jitc.jit(lambda x: x * w, backend="reference")(X)


@pytest.mark.parametrize("value", ["a string", b"bytes", object(), {1, 2}, len])
def test_a_non_array_argument_says_to_mark_it_static(value):
    with pytest.raises(TypeError, match=r"'mode'.*static"):
        jitc.jit(lambda x, mode: x, backend="reference")(X, value)


def test_specs_that_do_not_parse_say_the_format():
    with pytest.raises(ValueError, match=r"f32\[1,512\]"):
        jitc.spec("float[3]")
    with pytest.raises(ValueError):
        jitc.spec("f32[3")


def test_shapes_no_numpy_array_can_have_are_refused():
    with pytest.raises(ValueError, match=r"f32\[99999999999,99999999999\] is larger than any"):
        jitc.spec("f32[99999999999,99999999999]")  # the element count overflows int64
    with pytest.raises(ValueError, match="larger than any NumPy array"):
        jitc.ShapeDtype((0, 2**61), np.float32)  # the bytes do, as NumPy counts them
    jitc.ShapeDtype((0, 2**61 - 1), np.float32)  # the largest NumPy allows
    with pytest.raises(ValueError, match=r"shape \[2, -1\] has a negative dimension"):
        jitc.ShapeDtype((2, -1), np.float32)


def test_an_unknown_backend_is_a_jitc_error_listing_the_backends():
    with pytest.raises(JitcError, match="reference"):
        jitc.jit(_layer, backend="tpu")


# ----------------------------------------------------------------------------- robustness

_CRASHERS = textwrap.dedent("""
    import numpy as np, jitc, sys
    backend = sys.argv[1]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    cases = [
        ("traced index out of range", lambda x, i: x[i], (x, np.array([0, 7, -9], np.int64))),
        ("traced index INT_MIN", lambda x, i: x[i], (x, np.array([-2**31], np.int32))),
        ("np.take out of range", lambda x, i: np.take(x, i, axis=1),
         (x, np.array([100], np.int32))),
        ("huge reshape", lambda x: x.reshape(-1, 1) * x.reshape(1, -1), (x,)),
        ("zero-size everything", lambda x: (x[:0].sum(), x[:, :0] @ x[:, :0].T, x[:0][::-1]),
         (x,)),
        ("int division by zero", lambda x: (x // 0, x % 0, x.astype(np.int32) // 0),
         (x.astype(np.int64),)),
        ("INT_MIN // -1", lambda x: (x // -1, x % -1, -x, abs(x)),
         (np.array([-2**63, -2**63 + 1], np.int64),)),
        ("nan to int", lambda x: (x / 0).astype(np.int32), (x,)),
        ("shift by 64", lambda x: (x << 64, x >> 64, x << -1), (x.astype(np.int64),)),
    ]
    for name, fn, args in cases:
        try:
            jitc.jit(fn, backend=backend)(*args)
            print("ran", name, flush=True)
        except Exception as e:
            print("raised", name, type(e).__name__, flush=True)
    print("survived")
""")


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_hostile_inputs_never_crash_the_interpreter(backend):
    if backend not in jitc.backends.available():
        pytest.skip(f"backend {backend} is not available here")
    out = subprocess.run(
        [sys.executable, "-c", _CRASHERS, backend], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout}\n{out.stderr[-3000:]}"
    assert out.stdout.strip().endswith("survived"), out.stdout
    # An out-of-range traced index is an error (as in NumPy), never garbage memory.
    for line in out.stdout.splitlines():
        if "traced index" in line or "np.take" in line:
            assert line.startswith("raised") and "IndexError" in line, out.stdout


# ------------------------------------------------------------ arrays with their own semantics


class _DuckArray:
    """An array type that implements NumPy functions itself, as dask or pint arrays do."""

    def __array__(self, dtype=None, copy=None):
        return np.ones((2, 2))

    def __array_function__(self, func, types, args, kwargs):
        return NotImplemented


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize(
    "make, what",
    [
        (np.matrix, r"numpy\.matrix, an ndarray subclass"),
        (lambda a: np.ma.array(a, mask=a > 2), r"MaskedArray, .*mask would be lost"),
        (lambda a: _DuckArray(), r"_DuckArray, an array type that implements NumPy functions"),
    ],
)
def test_arrays_whose_operations_mean_something_else_are_refused_by_name(backend, make, what):
    """Before: np.matrix got elementwise `*` (NumPy: a matrix product) and a masked array lost
    its mask, silently; the fast path took them once a plain call had compiled."""
    f = jitc.jit(lambda a, b: a * b, backend=backend)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(f(x, x), x * x)
    np.testing.assert_array_equal(f(x, x), x * x)  # now through the fast path
    with pytest.raises(TypeError, match=r"argument 'a' is a .*" + what):
        f(make(x), x)


def test_a_memmap_is_a_plain_array(tmp_path):
    f = jitc.jit(lambda a, b: a * b + 1.0)
    x = np.arange(6.0).reshape(2, 3)
    m = np.memmap(tmp_path / "m.bin", dtype=np.float64, mode="w+", shape=(2, 3))
    m[:] = x
    f(x, x)
    np.testing.assert_array_equal(f(m, x), np.asarray(m * x + 1.0))


def test_several_index_arrays_refuse_one_out_of_its_axis_range(backend):
    """The arrays are merged into one linear index: j = 6 on an axis of 6 must not read the
    next row's first element (the linear index alone would still be in range)."""
    x = np.arange(2 * 3 * 6 * 6, dtype=np.float64).reshape(2, 3, 6, 6)
    k = np.array([0, 1, 2])
    i = np.array([1, -6, 5])
    f = jitc.jit(lambda x, k, i, j: x[:, k, i, j], backend=backend)
    np.testing.assert_array_equal(f(x, k, i, np.array([0, 5, 3])), x[:, k, i, [0, 5, 3]])
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, k, i, np.array([0, 6, 3]))


# ----------------------------------------------------------------------------- Run-time failures


def takes(x, i):
    return np.take(x, i) * 2


def scatters(x, i):
    x[i] = 1.0
    return x


def powers(a, b):
    return a**b


def two_gathers(x, i, j):
    return x[i] + x[j]


def _runtime_cases():
    x, ints = np.arange(5.0), np.arange(3)
    return [
        (takes, (x, np.array([1, 7])), IndexError, "out of bounds", r"np\.take", "np.take"),
        (
            scatters,
            (x.copy(), np.array([0, -6])),
            IndexError,
            "out of bounds",
            r"x\[\.\.\.\] = \.\.\.",
            "x[i] =",
        ),
        (
            powers,
            (ints, np.array([1, -1, 2])),
            ValueError,
            "negative integer powers",
            r"np\.power",
            "a**b",
        ),
    ]


@pytest.mark.parametrize("case", range(3))
def test_runtime_failures_name_the_numpy_call_and_the_line(backend, case):
    """A kernel reports only a kind of failure: the error still names the NumPy call and
    this file's line that traced the failing node."""
    fn, args, error, message, api, text = _runtime_cases()[case]
    with pytest.raises(
        error,
        match=rf"{message}.* in {api} at "
        rf"{HERE}:{_line_of(fn, text)}$",
    ):
        jitc.jit(fn, backend=backend)(*args)


def test_runtime_failure_with_several_candidates_names_each(backend):
    """Two gathers in one function: the kernel does not say which failed, so both lines are
    named (the failure path looks them up; the kernels do no extra work per call)."""
    line = _line_of(two_gathers, "x[i] + x[j]")
    x, ok = np.arange(5.0), np.array([0, 1])
    match = (
        rf"out of bounds.* in x\[\.\.\.\] at {HERE}:{line}$"
        if backend == "reference"
        else rf"out of bounds.* in x\[\.\.\.\] at {HERE}:{line}"
        rf"( or x\[\.\.\.\] at {HERE}:{line})?$"
    )
    with pytest.raises(IndexError, match=match):
        jitc.jit(two_gathers, backend=backend)(x, ok, np.array([9, 0]))


def two_scatters(x, i, j):
    y = x.copy()
    y[i] = 1.0
    y[j] = 2.0
    return y


def test_runtime_failure_names_the_failing_launch_also_on_the_fast_path(backend):
    """After a good call (later calls take the fast path, runtime/fastpath.py), a failing one
    still names the line: on cpu the one scatter whose launch failed (the driver notes it),
    on cuda either scatter (its kernels share one error flag)."""
    first, second = (_line_of(two_scatters, t) for t in ("y[i] = 1.0", "y[j] = 2.0"))
    f = jitc.jit(two_scatters, backend=backend)
    x = np.zeros(4)
    np.testing.assert_array_equal(f(x, np.array([1]), np.array([2])), [0, 1, 2, 0])
    for i, j, line in (([1], [7], second), ([9], [1], first)):
        at = rf"x\[\.\.\.\] = \.\.\. at {HERE}:"
        match = (
            rf"out of bounds.* in {at}{first} or {at}{second}$"
            if backend == "cuda"
            else rf"out of bounds.* in {at}{line}$"
        )
        with pytest.raises(IndexError, match=match):
            f(x, np.array(i), np.array(j))


def zeros_of_traced_size(n):
    return np.zeros(n) + 1.0


def eye_of_traced_size(n):
    return np.eye(N=n)


@pytest.mark.parametrize(
    "fn, name, text",
    [(zeros_of_traced_size, "zeros", "np.zeros(n)"), (eye_of_traced_size, "eye", "np.eye(N=n)")],
)
def test_an_array_of_a_traced_size_says_to_make_the_size_static(fn, name, text):
    with pytest.raises(
        TracerError,
        match=rf"np\.{name}: its shape is a traced value \(at "
        rf"{HERE}:{_line_of(fn, text)}\).*static_argnames",
    ):
        jitc.jit(fn)(4)
    np.testing.assert_array_equal(jitc.jit(fn, static_argnames="n")(4), fn(4))
