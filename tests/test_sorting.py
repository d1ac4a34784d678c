"""np.sort, np.argsort, np.partition, np.argpartition and the ndarray methods against NumPy
on every backend: NumPy's order (NaN last, -0.0 beside 0.0 in input order under
kind='stable'), every axis, every dtype with its extremes, non-contiguous inputs, the
caller's arrays after x.sort(), np.partition's contract, and errors naming the call.

jitc sorts stably, so argsort ties are compared with NumPy's kind='stable' only; the default
kind is compared on tie-free data."""

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError
from tests.conftest import FULL_SURFACE, backend_dtypes

# float16: the cpu kernel's arrays hold its bits, so its keys are float32 values
DTYPES = [np.bool_, np.uint8, np.int64, np.uint64, np.float16, np.float32, np.float64]


def every_sort(x):
    return (
        np.sort(x),
        np.sort(x, axis=0),
        np.sort(x, axis=1, kind="stable"),
        np.sort(x, axis=-2, kind="heapsort"),
        np.sort(x, axis=None),
        np.argsort(x, kind="stable"),
        np.argsort(x, axis=0, stable=True),
        x.argsort(axis=1, kind="mergesort"),
        np.argsort(x, axis=None, kind="stable"),
    )


def _values(dtype, shape, rng):
    """Many ties, and the dtype's extremes (NaN, +-inf, -0.0 for floats)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -3), 4, shape).astype(dtype)
        x.flat[[1, 8, 30, 41]] = [info.min, info.max, info.max, info.min]
        return x
    x = rng.integers(-3, 4, shape).astype(dtype) * dtype.type(0.5)
    x.flat[[3, 17, 40, 44, 5, 6, 20]] = [np.nan, np.inf, -np.inf, np.nan, -0.0, 0.0, -0.0]
    return x


def _same(got, want):
    """Equal values, dtypes and shapes, and the same signs of zero (NaN equal to NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _stable(fn, x):
    """fn(x) under NumPy with every sort stable (the order jitc promises for ties)."""
    real_sort, real_argsort = np.sort, np.argsort
    np.sort = lambda a, axis=-1, kind=None, **k: real_sort(a, axis, kind="stable")
    np.argsort = lambda a, axis=-1, kind=None, **k: real_argsort(a, axis, kind="stable")
    try:
        return fn(x)
    finally:
        np.sort, np.argsort = real_sort, real_argsort


@pytest.mark.parametrize(
    "backend, dtype", backend_dtypes(DTYPES, [np.bool_, np.uint64, np.float16, np.float64])
)
def test_every_sort_over_every_axis_is_numpys_stable_sort(backend, dtype):
    # rows of 37 and 3: insertion-sorted runs, then merges (an odd and an even count)
    x = _values(dtype, (3, 37, 2), np.random.default_rng(0))
    got = jitc.jit(every_sort, backend=backend)(x)
    # x.argsort(kind="mergesort") is NumPy's stable sort already
    want = _stable(every_sort, x)
    for g, w in zip(got, want):
        _same(g, w)


def _full_range(dtype, shape, rng):
    """Every bit pattern equally likely (all of a radix sort's bytes vary), with extremes."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    x = rng.integers(0, 256, shape + (dtype.itemsize,), dtype=np.uint8).view(dtype)[..., 0]
    if dtype.kind == "f":
        x[np.isnan(x)] = 1  # NaN payloads: NumPy's sort keeps them, arrays compare them equal
        x.flat[[3, 17, 40, 44, 5, 6, 20]] = [np.nan, np.inf, -np.inf, np.nan, -0.0, 0.0, -0.0]
    return x


# one per key width and kind (CI; JITC_FULL_SURFACE=1 adds bool, int8, int64 and uint32)
RADIX_DTYPES = [np.uint8, np.int16, np.int32, np.uint64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize(
    "dtype", RADIX_DTYPES if not FULL_SURFACE else DTYPES + [np.int8, np.int16, np.uint32, np.int32]
)
def test_rows_long_enough_for_the_radix_sort(dtype):
    """Rows of 300 and 1800 (RADIX_MIN is 256): the cpu kernel sorts them by bytes."""
    rng = np.random.default_rng(2)
    f = jitc.jit(every_sort)
    for x in (_values(dtype, (3, 300, 2), rng), _full_range(dtype, (3, 300, 2), rng)):
        for g, w in zip(f(x), _stable(every_sort, x)):
            _same(g, w)


def test_long_rows_and_non_contiguous_inputs(backend):
    """100 elements: three merge passes; views of the caller's array and inside the trace."""

    def views(x):
        return (
            np.sort(x),
            np.argsort(x, kind="stable"),
            np.sort(x[:, ::2], axis=0),
            np.argsort(x[::-1, 1:], axis=0, kind="stable"),
            np.sort(np.abs(x)) * 2,
        )

    x = _values(np.float32, (6, 100), np.random.default_rng(1))
    f = jitc.jit(views, backend=backend)
    for arg in (x, x.T.copy().T, np.asfortranarray(x)):
        for g, w in zip(f(arg), _stable(views, arg)):
            _same(g, w)
    t = np.ascontiguousarray(x.T)
    for g, w in zip(f(t.T), _stable(views, t.T)):  # a transposed argument
        _same(g, w)


def test_default_kind_on_tie_free_data_is_numpys(backend):
    x = np.random.default_rng(2).permutation(60).reshape(3, 20).astype(np.float64) - 30

    def defaults(x):
        return np.argsort(x), np.argsort(x, axis=0), x.argsort(axis=None), np.sort(x.T)

    for g, w in zip(jitc.jit(defaults, backend=backend)(x), defaults(x)):
        _same(g, w)


def test_empty_0d_and_1d(backend):
    def edges(e, s, v):
        return (
            np.sort(e),
            np.argsort(e, axis=0),
            np.sort(s, axis=None),
            np.argsort(s),
            np.sort(v),
            np.partition(v, 0),
        )

    args = (np.ones((0, 3)), np.float64(2.5), np.array([3, 1, 2], np.int32))
    for g, w in zip(jitc.jit(edges, backend=backend)(*args), edges(*args)):
        _same(np.asarray(g), np.asarray(w))


def _check_partition(got, x, kth, axis):
    """np.partition's contract: every kth in its sorted place (NumPy's value there), nothing
    larger before it, nothing smaller after it, and the same elements."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    want = np.partition(x, kth, axis=axis)
    got, want, x = (np.moveaxis(a, axis, -1) for a in (got, want, x))
    n = x.shape[-1]
    np.testing.assert_array_equal(np.sort(got, axis=-1), np.sort(x, axis=-1))
    order = np.where(np.isnan(got), np.inf, got) if got.dtype.kind == "f" else got  # NaN last
    for k in np.atleast_1d(kth) % n:
        np.testing.assert_array_equal(got[..., k], want[..., k])
        assert (order[..., :k] <= order[..., k : k + 1]).all()
        assert (order[..., k + 1 :] >= order[..., k : k + 1]).all()


PARTITIONS = [(3, -1), ([0, -1], 0), (2, None), ([1, 4, 5], 1)]


def partitions(x):
    """Each of PARTITIONS by np.partition, then by np.argpartition (the last as a method)."""
    (k, a) = PARTITIONS[-1]
    return (
        tuple(np.partition(x, k, axis=a) for k, a in PARTITIONS)
        + tuple(np.argpartition(x, k, axis=a) for k, a in PARTITIONS[:-1])
        + (x.argpartition(k, axis=a),)
    )


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_partition_contract(backend, dtype):
    x = _values(dtype, (4, 7, 6), np.random.default_rng(3))
    got = jitc.jit(partitions, backend=backend)(x)
    n = len(PARTITIONS)
    for (k, a), part, idx in zip(PARTITIONS, got[:n], got[n:]):
        _check_partition(part, x, k, a)
        assert idx.dtype == np.int64
        _check_partition(np.take_along_axis(x, idx, axis=a), x, k, a)


class Holder:
    def __init__(self, buf):
        self.buf = buf

    def sort_rows(self):
        self.buf.sort()
        return self.buf[:, 0]


def in_place(x, y, z):
    x.sort(kind="stable")
    y[:, ::2].sort(axis=0, stable=True)
    z.partition(2, axis=0)
    return x.sum(), np.sort(z, axis=0)


def test_in_place_sorts_write_the_callers_arrays(backend):
    rng = np.random.default_rng(4)
    args = [_values(np.float32, (5, 9), rng) for _ in range(3)]
    args[2] += 0.0  # -0.0 -> 0.0: NumPy's partition places the zeros in either order
    want_args = [a.copy() for a in args]
    want = in_place(*want_args)
    got = jitc.jit(in_place, backend=backend)(*args)
    for g, w in zip(got, want):
        _same(np.asarray(g), np.asarray(w))
    _same(args[0], want_args[0])
    _same(args[1], want_args[1])
    _check_partition(args[2], want_args[2], 2, 0)
    np.testing.assert_array_equal(np.sort(args[2], axis=0), np.sort(want_args[2], axis=0))

    tie_free = rng.permutation(40).reshape(4, 10) - 20.0
    h, ref = Holder(tie_free.copy()), Holder(tie_free.copy())
    _same(jitc.jit(Holder.sort_rows, backend=backend)(h), ref.sort_rows())
    _same(h.buf, ref.buf)


def test_cpu_sorts_in_place_and_takes_elementwise_neighbours():
    if "cpu" not in jitc.backends.available():
        pytest.skip("cpu backend unavailable")
    x = np.ones((8, 16), np.float32)
    c = jitc.jit(lambda x: x.sort()).lower(x).compile()
    assert c.stats()["temp_bytes"] == 0 and c.stats()["kernels"] == 1  # straight into x
    c = jitc.jit(lambda x: np.sort(np.abs(x) + 1, axis=0) * 2).lower(x).compile()
    assert c.stats()["kernels"] <= 3


def test_errors_name_the_call(backend):
    x = np.arange(6.0).reshape(2, 3)

    def fails(fn, exc, match):
        with pytest.raises(exc, match=match):
            jitc.jit(fn, backend=backend)(x)

    fails(lambda x: np.sort(x, order="f"), UnsupportedError, r"np\.sort: order=.*test_sorting")
    fails(lambda x: np.argsort(x, order=["f"]), UnsupportedError, r"np\.argsort: order=")
    fails(lambda x: np.partition(x, 1, order="f"), UnsupportedError, r"np\.partition: order=")
    fails(
        lambda x: np.sort(x, axis=2),
        np.exceptions.AxisError,
        "axis 2 is out of bounds.*test_sorting",
    )
    fails(lambda x: np.sort(x, kind="bogo"), ValueError, "np.sort: sort kind must be one of")
    fails(
        lambda x: np.argsort(x, kind="stable", stable=True),
        ValueError,
        r"np\.argsort: `kind` and keyword",
    )
    fails(
        lambda x: np.partition(x, 3),
        ValueError,
        r"np\.partition: kth\(=3\) out of bounds \(3\).*test_sorting",
    )
    fails(
        lambda x: np.argpartition(x, [0, -3], axis=0),
        ValueError,
        r"np\.argpartition: kth\(=-3\) out of bounds \(2\)",
    )
    fails(
        lambda x: np.partition(x, 6, axis=None),
        ValueError,
        r"np\.partition: kth\(=6\) out of bounds \(6\)",
    )
    fails(
        lambda x: np.partition(x, 1, kind="quicksort"),
        ValueError,
        "np.partition: select kind must be 'introselect'",
    )
    fails(lambda x: np.partition(x, 1.5), TypeError, "np.partition: Partition index must be")
    fails(lambda x: np.partition(x, True), ValueError, "np.partition: Booleans unacceptable")
    fails(lambda x: np.partition(x, [[1]]), ValueError, "kth must be an int or a 1-d")
    fails(
        lambda x: np.partition(x, x[0, 0].astype(np.int64)),
        UnsupportedError,
        "np.partition: kth must be a static int",
    )
    fails(lambda x: x.sort(axis=None), TypeError, "ndarray.sort: axis must be an integer")
    fails(
        lambda x: x.partition(1, axis=None), TypeError, "ndarray.partition: axis must be an integer"
    )
    fails(lambda x: x.partition(5), ValueError, r"ndarray\.partition: kth\(=5\)")


def test_the_primitives_check_their_axis():
    """The shape rule the verifier and the tracer share (core/primitives.py)."""
    from jitc.core.errors import ShapeError
    from jitc.core.primitives import PRIMITIVES

    f32 = np.dtype(np.float32)
    assert PRIMITIVES["argsort"].infer([((2, 3), f32)], {"axis": 1}) == ((2, 3), np.int64)
    for name in ("sort", "argsort"):
        with pytest.raises(ShapeError, match=f"{name}: axis 2 out of range"):
            PRIMITIVES[name].infer([((2, 3), f32)], {"axis": 2})
