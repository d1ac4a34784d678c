"""Advanced indexing and np.pad against NumPy on random cases (hypothesis): shapes with
0-size axes, integer-array indices (negative, broadcast together, traced or captured)
mixed with ints, slices, None and Ellipsis anywhere (advanced axes that a slice separates
go to the front), boolean masks, np.ix_; np.pad in every mode with random widths per axis,
wider than the axis too. The reference backend takes the broad sweep, the cpu backend a
smaller one (each case compiles kernels)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import jitc

_SETTINGS = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BROAD, NARROW = 150, 4  # cpu: ~1.5 s of kernel compiles per case, cache cold


def _examples(backend):
    return BROAD if backend == "reference" else NARROW


@st.composite
def shapes(draw, min_dims=1, max_dims=4, sizes=None):
    sizes = st.integers(0, 4) if sizes is None else sizes
    return tuple(draw(st.lists(sizes, min_size=min_dims, max_size=max_dims)))


@st.composite
def index_keys(draw, shape):
    """A key for an array of `shape`: (key with arrays as placeholders, the arrays, which
    of them are traced). Each component consumes the axes NumPy says it does."""
    dims = list(shape)
    ellipsis = draw(st.booleans())
    broadcast = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    key, arrays, traced = [], [], []
    axis = 0
    budget = len(dims)
    while True:
        choices = ["none"]
        if axis < len(dims):
            choices += ["slice", "int", "array", "array", "mask"]
        if ellipsis and "..." not in key:
            choices.append("ellipsis")
        if axis >= len(dims) and ("..." in key or not ellipsis):
            choices.append("stop")
        kind = draw(st.sampled_from(choices))
        if kind == "stop" or len(key) > budget + 3:
            break
        if kind == "none":
            key.append(None)
        elif kind == "ellipsis":
            key.append("...")
            # the components after it index the last `rest` axes
            rest = draw(st.integers(0, len(dims) - _consumed(key[:-1])))
            axis = len(dims) - rest
        elif kind == "slice":
            n = dims[axis]
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2]))
            key.append(slice(start, stop, step))
            axis += 1
        elif kind == "int":
            n = dims[axis]
            if n == 0:
                key.append(slice(None))
            else:
                key.append(draw(st.integers(-n, n - 1)))
            axis += 1
        elif kind == "array":
            n = dims[axis]
            if n == 0:
                key.append(slice(None))
            else:
                # a suffix of the common broadcast shape, some axes of it 1
                k = draw(st.integers(0, len(broadcast)))
                shape_ = tuple(
                    1 if draw(st.booleans()) else b for b in broadcast[len(broadcast) - k :]
                )
                values = draw(
                    st.lists(
                        st.integers(-n, n - 1),
                        min_size=int(np.prod(shape_)),
                        max_size=int(np.prod(shape_)),
                    )
                )
                key.append(("array", len(arrays)))
                arrays.append(
                    np.array(
                        values, dtype=draw(st.sampled_from([np.int64, np.int32, np.intp]))
                    ).reshape(shape_)
                )
                traced.append(draw(st.booleans()))
            axis += 1
        else:  # a boolean mask over 1 or 2 axes, captured (its count fixes the shape)
            k = draw(st.integers(1, min(2, len(dims) - axis)))
            mshape = tuple(dims[axis : axis + k])
            bits = draw(
                st.lists(
                    st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))
                )
            )
            key.append(("mask", np.array(bits, dtype=bool).reshape(mshape)))
            axis += k
    return key, arrays, traced


def _consumed(key):
    return sum(
        0
        if c is None or c == "..."
        else (c[1].ndim if isinstance(c, tuple) and c[0] == "mask" else 1)
        for c in key
    )


def _build(key, arrays):
    out = []
    for c in key:
        if isinstance(c, str):
            out.append(Ellipsis)
        elif isinstance(c, tuple) and c[0] == "array":
            out.append(arrays[c[1]])
        elif isinstance(c, tuple):
            out.append(c[1])
        else:
            out.append(c)
    return tuple(out)


def _numpy_or_error(fn):
    try:
        return fn(), None
    except (IndexError, ValueError, TypeError) as e:
        return None, type(e)


def _check(got_fn, want):
    value, error = want
    if error is not None:
        with pytest.raises(error):
            got_fn()
        return
    got = got_fn()
    assert got.dtype == value.dtype and got.shape == value.shape
    np.testing.assert_array_equal(got, value)


def _indexed(backend, data, setting):
    shape = data.draw(shapes())
    key, arrays, traced = data.draw(index_keys(shape))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 3
    full = _build(key, arrays)
    note(f"shape={shape} key={full!r} traced={traced}")
    traced_arrays = [a for a, t in zip(arrays, traced) if t]

    def jitted_key(args):
        it = iter(args)
        return _build(key, [next(it) if t else a for a, t in zip(arrays, traced)])

    if not setting:

        def fn(x, *args):
            return x[jitted_key(args)]

        _check(
            lambda: jitc.jit(fn, backend=backend)(x, *traced_arrays),
            _numpy_or_error(lambda: x[full]),
        )
        return

    def assign(x, *args):
        y = x.copy()
        k = jitted_key(args)
        y[k] = y[k] * 2 + 1
        return y

    def numpy_assign():
        y = x.copy()
        y[full] = y[full] * 2 + 1
        return y

    want = _numpy_or_error(numpy_assign)
    before = x.copy()
    _check(lambda: jitc.jit(assign, backend=backend)(x, *traced_arrays), want)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("setting", [False, True], ids=["get", "set"])
def test_advanced_indexing_is_numpys(backend, setting):
    @settings(max_examples=_examples(backend), **_SETTINGS)
    @given(st.data())
    def run(data):
        _indexed(backend, data, setting)

    run()


def test_ix_is_numpys(backend):
    @settings(max_examples=_examples(backend), **_SETTINGS)
    @given(st.data())
    def run(data):
        shape = data.draw(shapes(2, 3))
        picks = [
            np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=3)), dtype=np.int64)
            if n
            else np.zeros(0, np.int64)
            for n in shape
        ]
        x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
        note(f"shape={shape} picks={picks}")
        want = _numpy_or_error(lambda: x[np.ix_(*picks)])
        _check(lambda: jitc.jit(lambda x: x[np.ix_(*picks)], backend=backend)(x), want)

    run()


@st.composite
def pad_cases(draw):
    shape = draw(shapes(1, 3, st.sampled_from([0, 1, 2, 3, 4, 5, 1, 2, 3, 4])))
    mode = draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    form = draw(st.sampled_from(["int", "pair", "per-axis"]))
    width = st.integers(0, 9)
    if form == "int":
        widths = draw(width)
    elif form == "pair":
        widths = (draw(width), draw(width))
    else:
        widths = tuple((draw(width), draw(width)) for _ in shape)
    kwargs = {}
    if mode == "constant" and draw(st.booleans()):
        kwargs["constant_values"] = draw(
            st.integers(-5, 5) | st.tuples(st.integers(-5, 5), st.integers(-5, 5))
        )
    return shape, mode, widths, kwargs


def test_pad_is_numpys(backend):
    @settings(max_examples=_examples(backend), **_SETTINGS)
    @given(pad_cases())
    def run(case):
        shape, mode, widths, kwargs = case
        x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5
        want = _numpy_or_error(lambda: np.pad(x, widths, mode=mode, **kwargs))
        _check(
            lambda: jitc.jit(lambda x: np.pad(x, widths, mode=mode, **kwargs), backend=backend)(x),
            want,
        )

    run()


def test_regression_nd_constant_mask_inside_a_key(backend):
    """Found by the sweep: a 2-d constant mask beside other indices was refused; NumPy
    reads it as its nonzero() arrays, and so does jitc now (and checks its shape)."""

    def masked(x):
        mask = np.array([[True, False, True], [False, False, True]])  # made here: a constant
        big = np.array([[True, False, False, True]] * 3)
        return x[None, mask, 1:], x[1, None, big], x[mask, ::-1]

    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    got, want = jitc.jit(masked, backend=backend)(x), masked(x)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    with pytest.raises(IndexError, match="boolean index did not match.*test_indexing_hyp"):
        jitc.jit(lambda x: x[:, np.array([[True] * 3] * 3)], backend="reference")(x)


def test_regression_ix(backend):
    """Found by the sweep: np.ix_ was not traced (captured index arrays reach it as traced
    arrays); a traced boolean array is refused, its count being known only at run time."""
    x = np.arange(12).reshape(3, 4)
    rows, cols = np.array([2, -3]), np.array([True, False, False, True])
    got = jitc.jit(
        lambda x, r: x[np.ix_(r, np.array([True, False, False, True]))], backend=backend
    )(x, rows)
    np.testing.assert_array_equal(got, x[np.ix_(rows, cols)])
    with pytest.raises(jitc.core.errors.UnsupportedError, match="np.ix_ of a traced boolean"):
        jitc.jit(lambda x, c: x[np.ix_(rows, c)], backend="reference")(x, cols)
    with pytest.raises(ValueError, match="np.ix_: Cross index must be 1 dimensional"):
        jitc.jit(lambda x, r: x[np.ix_(r.reshape(1, 2))], backend="reference")(x, rows)
