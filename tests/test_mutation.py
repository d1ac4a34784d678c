"""NumPy's mutation semantics under @jitc.jit, with NumPy itself as the oracle.

Every program runs twice on fresh copies of its inputs: once under NumPy, once jitted. The
returned values (and dtypes), the identity of returned objects (NumPy returns the argument
itself for `x += 1; return x`, a view for `return x[1:]`), and every argument and captured
array after the call must match. Each jitted program is called twice, so the second call
takes the generated fast path.
"""

import threading
import types

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError

BACKENDS = ["reference", "cpu"]
RNG = np.random.default_rng(7)
F = RNG.standard_normal((6, 7))
V = RNG.standard_normal(10)
I = np.arange(10, dtype=np.int64)


# ----------------------------------------------------------------------------- programs


def iadd_arg(acc, x):
    acc += x


def alias_then_write(x):
    y = x
    y += 1
    return x


def write_through_view(x):
    v = x[:2]
    v += 100
    return x.sum()


def chained_views(x):
    v = x[1:, ::2]
    w = v.T[::-1]
    w *= -1
    return x


def slice_inplace(x):
    x[1:-1] *= 2
    return x


def strided_view(x):
    v = x[::2]
    v -= 1
    x[1::3] *= 3
    return x


def stencil(u):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def set_int_and_ellipsis(x):
    x[0] = 7.0
    x[..., -1] = x[..., 0]
    x[2, None, 1:3] = 5.0
    return x.mean()


def setitem_int_array_last_wins(x):
    x[[0, 2, 0]] = np.array([5.0, 6.0, 7.0])
    x[np.array([-1, 3])] += 1.0  # op= applies once per index, as x[i] = x[i] + v
    return x


def setitem_traced_index(x, i):
    x[i[:3]] = -1.0
    return x


def setitem_advanced_with_slices(x):
    x[:, [1, 3]] = 0.0
    x[[0, 1], 2:4] = 9.0
    x[
        0,
        :,
    ][[2, 4]] = 1.0  # a copy (advanced index), as in NumPy: x unchanged there
    return x


def setitem_mask(x):
    x[x > 0.5] = 0.0
    x[np.abs(x) < 0.1] *= 10
    return x


def setitem_row_mask(x):
    rows = x[:, 0] > 0
    x[rows] = np.arange(7.0)
    return x


def ufunc_out(a, b, c):
    np.multiply(a, b, out=c)
    np.add(a, 1.0, out=a, where=b > 0)
    return c


def reduction_out(x, s, m):
    np.sum(x, axis=0, out=s)
    x.max(axis=1, out=m)
    return s, m


def add_at(x, i):
    np.add.at(x, [1, 1, 3, 1], 1.0)
    np.maximum.at(x, i[:4], 0.5)
    return x


def copyto_and_put(x, y):
    np.copyto(x, y[0])
    np.put_along_axis(x, np.array([[0], [2], [1], [0], [3], [1]]), -5.0, axis=1)
    return x


def masked_compute(x):
    x[x > 0] = x[x > 0] ** -1.5  # the two masks are one computation
    t = x[x < -1]
    t *= 3
    x[x < -1] = t
    return x[x > 1].sum(), np.mean(x[x < 0]), x


def preallocated_output(x):
    out = np.zeros((x.shape[0], 3))
    out[:, 0] = x[:, 0]
    out[:, 1:] = x[:, 1:3] * 2
    out[2] += 100
    return out


def int_inplace(n):
    n //= 2
    n += 3
    n <<= 1
    return n


def float32_inplace(x):
    x *= 0.5  # a Python float stays float32
    x += np.float32(1)
    return x


def returns_views(x):
    return x[1:], x.T, x.reshape(-1)


def returns_copy_of_written(x):
    x += 1
    return x.copy(), x


def scalar_rebinds(x):
    s = x[0, 0]  # a NumPy scalar: a copy
    s += 100
    return s, x


def fill_method(x):
    x[1].fill(3.0)
    return x


def matmul_inplace(a, b):
    a @= b
    return a


PROGRAMS = [
    (iadd_arg, lambda: (np.zeros((6, 7)), F.copy())),
    (alias_then_write, lambda: (F.copy(),)),
    (write_through_view, lambda: (V.copy(),)),
    (chained_views, lambda: (F.copy(),)),
    (slice_inplace, lambda: (V.copy(),)),
    (strided_view, lambda: (V.copy(),)),
    (stencil, lambda: (F.copy(),)),
    (set_int_and_ellipsis, lambda: (F.copy(),)),
    (setitem_int_array_last_wins, lambda: (V.copy(),)),
    (setitem_traced_index, lambda: (V.copy(), I[::-1].copy())),
    (setitem_advanced_with_slices, lambda: (F.copy(),)),
    (setitem_mask, lambda: (F.copy(),)),
    (setitem_row_mask, lambda: (F.copy(),)),
    (masked_compute, lambda: (F.copy(),)),
    (ufunc_out, lambda: (F.copy(), F[::-1].copy(), np.zeros((6, 7)))),
    (reduction_out, lambda: (F.copy(), np.zeros(7), np.zeros(6))),
    (add_at, lambda: (V.copy(), I.copy())),
    (copyto_and_put, lambda: (np.zeros((6, 4)), F[:, :4].copy())),
    (preallocated_output, lambda: (F.copy(),)),
    (int_inplace, lambda: (I.copy(),)),
    (float32_inplace, lambda: (F.astype(np.float32),)),
    (returns_views, lambda: (F.copy(),)),
    (returns_copy_of_written, lambda: (F.copy(),)),
    (scalar_rebinds, lambda: (F.copy(),)),
    (fill_method, lambda: (F.copy(),)),
    (matmul_inplace, lambda: (F[:, :6].copy(), F[:6, :6].T.copy())),
]


def _leaves(tree):
    return list(tree) if isinstance(tree, (tuple, list)) else [tree]


def assert_same_effects(fn, make, jitted, calls=2):
    for _ in range(calls):
        np_args, j_args = make(), make()
        expected = fn(*np_args)
        got = jitted(*j_args)
        for k, (e, g) in enumerate(zip(np_args, j_args)):
            np.testing.assert_allclose(g, e, rtol=1e-12, err_msg=f"argument {k} after call")
        assert type(got) is type(expected)
        for e, g in zip(_leaves(expected), _leaves(got)):
            if e is None:
                assert g is None
                continue
            assert np.asarray(g).dtype == np.asarray(e).dtype
            np.testing.assert_allclose(g, e, rtol=1e-12)
            assert type(g) is type(e)
            for a_np, a_j in zip(np_args, j_args):  # identity and views of the arguments
                assert (e is a_np) == (g is a_j)
                if isinstance(e, np.ndarray):
                    assert np.shares_memory(e, a_np) == np.shares_memory(g, a_j)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_matches_numpy_including_the_arguments(fn, make, backend):
    assert_same_effects(fn, make, jitc.jit(fn, backend=backend))


def test_same_array_passed_twice_is_one_buffer():
    def f(a, b):
        a += 1
        return b * 2

    x, y = F.copy(), F.copy()
    jf = jitc.jit(f)
    np.testing.assert_allclose(jf(x, x), f(y, y))
    np.testing.assert_allclose(x, y)
    x2, y2 = F.copy(), F.copy()  # and separate arrays again: another signature
    np.testing.assert_allclose(jf(x2, F.copy()), f(y2, F.copy()))
    np.testing.assert_allclose(x2, y2)


def test_overlapping_arguments_that_are_written_are_refused():
    def f(a, b):
        a += b

    x = V.copy()
    with pytest.raises(UnsupportedError, match="'a' and 'b' share memory"):
        jitc.jit(f)(x[1:], x[:-1])


def test_same_kind_casting_error_like_numpy():
    def f(n):
        n *= 1.5

    with pytest.raises(TypeError) as numpy_error:
        f(I.copy())
    with pytest.raises(np._core._exceptions._UFuncOutputCastingError) as info:
        jitc.jit(f)(I.copy())
    assert str(numpy_error.value) in str(info.value)
    assert "test_mutation.py" in str(info.value)


def test_broadcast_view_is_read_only():
    def f(x):
        b = np.broadcast_to(x, (3, 10))
        b += 1

    with pytest.raises(ValueError, match="read-only"):
        jitc.jit(f)(V.copy())


def test_out_shape_mismatch_is_an_error():
    def f(x, out):
        np.exp(x, out=out)

    with pytest.raises(ValueError, match="non-broadcastable output"):
        jitc.jit(f)(F.copy(), np.zeros(7))


def test_results_that_do_not_depend_on_arguments_are_fresh():
    def f(x):
        return np.zeros((2, 3)), np.eye(3), x + 1

    jf = jitc.jit(f)
    a = jf(V)
    a[0][0, 0] = 5
    a[1][0, 0] = 5
    b = jf(V)
    assert b[0][0, 0] == 0 and b[1][0, 0] == 1


def test_threads_writing_different_arrays_do_not_see_each_other():
    def step(x, k):
        x += k
        x *= 2
        return x.sum()

    jf = jitc.jit(step)
    arrays = [np.full(1000, float(t)) for t in range(8)]
    errors = []

    def work(t):
        for _ in range(50):
            jf(arrays[t], float(t))
        expect = np.full(1000, float(t))
        for _ in range(50):
            expect = (expect + t) * 2
        if not np.allclose(arrays[t], expect):
            errors.append(t)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


def test_mutation_shows_in_the_traced_graph():
    text = jitc.jit(stencil).lower(F).as_text()
    assert "update_slice" in text
    text = jitc.jit(setitem_traced_index).lower(V, I).as_text()
    assert "scatter" in text


# ----------------------------------------------------------------------------- captured state

COUNTS = np.zeros(3)
SCALE = np.full(3, 2.0)


def count_into_global(x):
    COUNTS[:] += x  # a module global written in place
    return x * SCALE  # and one read: its current contents on every call


@pytest.mark.parametrize("backend", BACKENDS)
def test_globals_are_written_and_reread_on_every_call(backend):
    COUNTS[:] = 0
    SCALE[:] = 2.0
    jf = jitc.jit(count_into_global, backend=backend)
    x = np.arange(3.0)
    np.testing.assert_array_equal(jf(x), x * 2)
    SCALE[:] = 5.0  # changed between calls: NumPy reads the new value
    np.testing.assert_array_equal(jf(x), x * 5)
    np.testing.assert_array_equal(COUNTS, 2 * x)


class Model:
    def __init__(self):
        self.V = np.ones(4)
        self.table = np.arange(20.0).reshape(10, 2)

    def rebind(self, g):
        self.V = self.V - 0.5 * g  # a new array bound to the attribute, as in NumPy
        return self.V.sum()

    def lookup(self, ids):
        return self.table[ids] + np.take(self.table, ids, axis=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_attributes_rebound_and_tables_gathered_with_traced_indices(backend):
    m, ref = Model(), Model()
    rebind = jitc.jit(Model.rebind, backend=backend)
    g = np.arange(4.0)
    for _ in range(2):
        assert rebind(m, g) == ref.rebind(g)
        np.testing.assert_array_equal(m.V, ref.V)
    ids = np.array([3, 0, 9, 3])
    np.testing.assert_array_equal(jitc.jit(Model.lookup, backend=backend)(m, ids), ref.lookup(ids))


def test_closure_list_of_arrays_is_written_in_place():
    mems = [np.zeros(3), np.zeros(2)]
    before = [id(m) for m in mems]

    def accumulate(g0, g1):
        for m, g in zip(mems, (g0, g1)):
            m += g * g

    jf = jitc.jit(accumulate)
    for _ in range(3):
        jf(np.ones(3), np.full(2, 2.0))
    np.testing.assert_array_equal(mems[0], np.full(3, 3.0))
    np.testing.assert_array_equal(mems[1], np.full(2, 12.0))
    assert [id(m) for m in mems] == before


def test_python_state_changed_while_tracing_is_an_error():
    history = {"calls": 0, "last": np.zeros(2)}

    def f(x):
        history["calls"] += 1  # would happen once, at trace time
        return x + history["last"]

    with pytest.raises(UnsupportedError, match=r"history\['calls'\] was changed while tracing"):
        jitc.jit(f)(np.ones(2))


HISTORY = []
STATE = types.ModuleType("state")  # a module used as a namespace of settings and state
_SEEN = []


def _remember(y):
    _SEEN.append(y)  # a helper keeping values in its own module


def _with_default(x, cache=[]):  # noqa: B006  (the classic mutable default)
    cache.append(x + 1)
    return x


def _appends_to_global(x):
    y = x * 2
    HISTORY.append(y)
    return y


def _sets_module_attribute(x):
    STATE.last = x - 1
    return x


def _calls_helper(x):
    _remember(x * 3)
    return x


@pytest.mark.parametrize(
    "fn,place",
    [
        (_appends_to_global, r"the global 'HISTORY'\[0\]"),
        (_with_default, r"the default of 'cache'\[0\]"),
        (_sets_module_attribute, r"STATE\.last"),
        (_calls_helper, r"tests\.test_mutation\._SEEN\[0\]"),
    ],
)
def test_traced_values_stored_outside_the_function_are_errors(fn, place):
    """Never a leaked Tracer: the error names the place and the line that made the value."""
    with pytest.raises(UnsupportedError, match=place + " holds a traced value") as e:
        jitc.jit(fn, backend="reference")(np.ones(3))
    assert "test_mutation.py" in str(e.value)
    for kept in (HISTORY, _SEEN, _with_default.__defaults__[0]):
        kept.clear()
    vars(STATE).pop("last", None)


def _logs_into_argument(x, log):
    log.append(x * 2)
    return x


def _rebinds_list_item(params):
    params[0] = params[0] * 2
    return params[1]


@pytest.mark.parametrize(
    "fn,args,name",
    [
        (_logs_into_argument, lambda: (np.ones(3), []), "'log'"),
        (_rebinds_list_item, lambda: ([np.ones(3), np.ones(3)],), "'params'"),
    ],
)
def test_list_arguments_changed_while_tracing_are_errors(fn, args, name):
    """The function gets copies of list arguments: a change would silently not reach the
    caller, so it is an error naming the argument."""
    with pytest.raises(UnsupportedError, match=f"argument {name} was changed while tracing"):
        jitc.jit(fn, backend="reference")(*args())


# ----------------------------------------------------------------------------- boolean masks


@pytest.mark.parametrize(
    "fn,what",
    [
        (lambda x: x[x > 0].shape, ".shape"),
        (lambda x: x[x > 0] + x, "combining an array"),
        (lambda x: len(x[x > 0]), "len()"),
        (lambda x: x[x > 0].tolist(), ".tolist"),
    ],
)
def test_data_dependent_shapes_from_masks_are_clear_errors(fn, what):
    with pytest.raises(UnsupportedError, match="boolean mask index") as e:
        jitc.jit(fn, backend="reference")(F.copy())
    assert what in str(e.value) and "test_mutation.py" in str(e.value)


def test_masks_must_be_the_same_computation():
    def f(x, y):
        x[x > 0] = y[y > 0]
        return x

    with pytest.raises(UnsupportedError, match="same computation"):
        jitc.jit(f, backend="reference")(F.copy(), F.copy())

    def g(x, y):
        return x[x > 0] * y[y > 0]

    with pytest.raises(UnsupportedError, match="same computation"):
        jitc.jit(g, backend="reference")(F.copy(), F.copy())


# ----------------------------------------------------------------------------- compiled form


def test_unrolled_stencil_computes_each_step_once():
    """A stencil step reads the previous step at several offsets: fusing the steps into one
    kernel would compute each earlier step once per offset (5**steps work)."""

    def heat(u, steps):
        for _ in range(steps):
            u[1:-1] += 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
        return u

    jf = jitc.jit(heat, static_argnames="steps")
    u, ref = V.copy(), V.copy()
    np.testing.assert_allclose(jf(u, steps=6), heat(ref, 6))
    np.testing.assert_allclose(u, ref)
    stats = jf.lower(V, steps=6).compile().stats()
    assert stats["kernels"] == 6 and stats["ops"] < 6 * 20, stats


def test_weights_updated_in_place_are_computed_into_the_callers_arrays():
    """`W -= lr * (x.T @ g)`: the epilogue of the dot writes W's new contents straight into
    the caller's W (the dot accumulates aside), so no whole-array copy follows the call."""

    def sgd(W1, W2, x, y):
        h = np.tanh(x @ W1)
        err = h @ W2 - y
        W2 -= 0.1 * (h.T @ err)
        W1 -= 0.1 * (x.T @ ((err @ W2.T) * (1 - h * h)))

    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in ((8, 16), (16, 4), (32, 8), (32, 4))]
    ref = [a.copy() for a in args]
    compiled = jitc.jit(sgd).lower(*args).compile(backend="cpu")
    outputs = {w.target: w.output for w in compiled.lowered.writebacks if w.kind == "arg"}
    assert all(compiled.executable.can_write_into(i, outputs[i]) for i in (0, 1))
    jitc.jit(sgd, backend="cpu")(*args)
    sgd(*ref)
    for a, b in zip(args, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_aot_writes_arguments_in_out_and_refuses_captured_writes():
    from jitc.aot import AotLinkError
    from jitc.aot import compile as aot_compile

    assert aot_compile(iadd_arg, jitc.spec("f64[6,7]"), jitc.spec("f64[6,7]")).plan.inout == (0,)
    with pytest.raises(AotLinkError, match="COUNTS.*read-only data"):
        aot_compile(count_into_global, jitc.spec("f64[3]"))
