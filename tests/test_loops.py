"""Loops traced once (issue 36): `jitc.fori_loop` and `jitc.while_loop` record one `while`
node whose step graph the backends run until its flag is false. Outside a trace the same
calls are Python loops, so NumPy running the same function is the oracle: values, dtypes
and the caller's arrays after the call, on the reference and cpu backends, in the suite's
process and in a fresh one with the default settings."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitc
from jitc import backends
from jitc.core.errors import JitcError
from jitc.stages import optimized
from jitc.trace.control import LoopError
from jitc.trace.mutation.functional import LoopWriteError
from tests.fresh import run
from tests.test_region_writes import make_program, write_programs

BACKENDS = ("reference", "cpu")
W = np.random.default_rng(0).random((5, 5)) * 0.3  # a captured array the body reads


def jacobi(u, steps):
    """A time loop whose step makes a new array."""

    def step(i, u):
        v = u.copy()
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        return v

    return jitc.fori_loop(0, steps, step, u)


def newton_sqrt(a, tol):
    """A while loop on a traced test, carrying an array and a Python int."""

    def unsettled(state):
        x, _ = state
        return np.abs(x * x - a).max() > tol

    def step(state):
        x, count = state
        return 0.5 * (x + a / x), count + 1

    return jitc.while_loop(unsettled, step, (a.copy(), 0))


def rnn(h, xs):
    """A captured matrix and an argument read inside the body, a row picked by the index."""
    return jitc.fori_loop(0, xs.shape[0], lambda t, h: np.tanh(W @ h + xs[t]), h)


def nested(A):
    """A loop inside a loop, the inner one reading the outer one's index; a float scalar
    carried."""

    def row(i, total):
        return jitc.fori_loop(0, A.shape[1], lambda j, t: t + A[i, j] * (i - j), total)

    return jitc.fori_loop(0, A.shape[0], row, 0.0)


def traced_bounds(x, lo, hi):
    """Bounds that are arrays of two integer dtypes, the index scaling a float32 array."""
    return jitc.fori_loop(lo, hi, lambda i, v: v + i * x, np.zeros_like(x))


def zero_trip(x):
    return jitc.fori_loop(3, 1, lambda i, v: v * 100.0, x)


def rows_in_place(A):
    """Every step writes a row of its carried array and returns that array: the caller's A
    is written, as under NumPy."""

    def step(i, A):
        A[i, :] = A[i - 1, :] * 2.0 + 1.0
        return A

    return jitc.fori_loop(1, A.shape[0], step, A)


def scattered_in_place(A, n):
    """Writes at indices computed from the traced index; the function returns whether the
    loop's result is the caller's array."""

    def step(i, A):
        A[i % A.shape[0]] += A[(i + 1) % A.shape[0]] * 0.5
        return A

    out = jitc.fori_loop(0, n, step, A)
    return out, np.float64(out is A)


def carried_dict(x):
    """A dict of an int32 array and a float32 one carried together; two loops in turn."""

    def step(i, s):
        return {
            "n": s["n"] + np.int32(1),
            "x": s["x"] * np.float32(0.5) + s["n"].astype(np.float32),
        }

    first = jitc.fori_loop(0, 4, step, {"n": np.zeros(3, np.int32), "x": x})
    return jitc.fori_loop(0, 2, step, first)


def branches(x, t):
    """A branch on a traced test, each side returning an array and a Python int."""
    return jitc.cond(
        x.sum() > t, lambda a, b: (a * 2.0, b + 1), lambda a, b: (np.tanh(a), b - 1), x, 3
    )


def running_sums(xs):
    """A scan carrying a row, stacking an array and a scalar per step."""

    def step(total, x):
        total = total + x
        return total, (total * 2.0, total.sum())

    return jitc.scan(step, np.zeros(xs.shape[1]), xs)


def alternating(x):
    """A branch on the loop's index inside the loop."""

    def step(i, v):
        return jitc.cond(i % 2 == 0, lambda v: v + 1.0, lambda v: v * 0.5, v)

    return jitc.fori_loop(0, 7, step, x)


RNG = np.random.default_rng(1)
PROGRAMS = [
    (jacobi, lambda: (RNG.random(20), 50), ("steps",)),
    (newton_sqrt, lambda: (RNG.random(6) + 1.0, 1e-12), ("tol",)),
    (rnn, lambda: (RNG.random(5), RNG.random((7, 5))), ()),
    (nested, lambda: (RNG.random((4, 3)),), ()),
    (traced_bounds, lambda: (RNG.random(3).astype(np.float32), np.int64(2), np.int32(7)), ()),
    (zero_trip, lambda: (RNG.random(3),), ()),
    (rows_in_place, lambda: (RNG.random((6, 3)),), ()),
    (scattered_in_place, lambda: (np.arange(5.0), 7), ("n",)),
    (carried_dict, lambda: (RNG.random(3).astype(np.float32),), ()),
    (branches, lambda: (RNG.random(5), 2.0), ()),
    (branches, lambda: (RNG.random(5), 4.0), ()),
    (running_sums, lambda: (RNG.random((6, 3)),), ()),
    (alternating, lambda: (RNG.random(5),), ()),
]


def _leaves(tree):
    return jitc.core.pytree.flatten(tree)[0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make,static", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_loops_match_numpy(fn, make, static, backend):
    matches_numpy(fn, make(), static, backend, rtol=1e-13, atol=0)


def matches_numpy(fn, args, static, backend, rtol, atol):
    """jitc's call of fn on copies of `args` gives NumPy's values and dtypes, and leaves
    the caller's arrays as NumPy's run of the same function leaves its copies."""
    numpy_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*numpy_args)
    got = jitc.jit(fn, static_argnames=static, backend=backend)(*mine)
    for w, g in zip(_leaves(want), _leaves(got)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    for w, g in zip(numpy_args, mine):  # the caller's arrays after the call (a sum's
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)  # order may differ: a dot)


def test_the_graph_holds_one_loop_and_a_second_trip_count_compiles_no_kernel():
    """The step is traced once whatever the trip count; the count is a value the kernels
    read, so another count compiles nothing new."""
    f = jitc.jit(jacobi, static_argnames=("steps",))
    u = np.zeros(20)
    short, long = f.lower(u, 10), f.lower(u, 1000)
    assert short.graph.count_ops() == long.graph.count_ops()
    assert [n.op for n in short.graph.nodes].count("while") == 1
    f(u, 10)
    assert backends.get("cpu").cached(optimized(long))
    assert short.compile().stats()["loops"] == 1


def test_a_loop_runs_in_a_fresh_process_with_the_default_settings(tmp_path):
    """Tiered compiles and a cold cache: the first calls, a second trip count and a loop
    writing the caller's array, each compared with NumPy running the same function."""
    out = run(
        tmp_path,
        """
        import numpy as np, jitc

        def heat(u, steps, k):
            def step(i, u):
                u[1:-1] += k * (u[:-2] - 2 * u[1:-1] + u[2:])
                return u
            return jitc.fori_loop(0, steps, step, u)

        f = jitc.jit(heat)
        for steps in (5, 5, 40, 3):
            u0 = np.sin(np.linspace(0, 3, 64))
            mine, theirs = u0.copy(), u0.copy()
            got = f(mine, steps, 0.25)
            want = heat(theirs, steps, 0.25)
            assert got is mine and np.array_equal(mine, theirs), steps
        print("ok")
        """,
    )
    assert out.strip() == "ok"


def _bad_shape(x):
    return jitc.fori_loop(0, 3, lambda i, v: v[1:], x)


def _bad_dtype(x):
    return jitc.fori_loop(0, 3, lambda i, v: v.astype(np.float32), x)


def _bad_structure(x):
    return jitc.while_loop(lambda v: v.sum() > 0, lambda v: (v, v), x)


def _bad_test(x):
    return jitc.while_loop(lambda v: v > 0, lambda v: v - 1.0, x)


def _writes_around(x, y):
    def step(i, v):
        y[0] = v[0]  # y is not carried
        return v + 1.0

    return jitc.fori_loop(0, 3, step, x)


def _writes_then_rebinds(x):
    def step(i, v):
        v[0] = 1.0
        return v * 2.0

    return jitc.fori_loop(0, 3, step, x)


def _reads_around(x):
    def step(i, v):
        v[1] = x[0] + 1.0  # x is the carried array, read from the code around the loop
        return v

    return jitc.fori_loop(0, 3, step, x)


def _escapes(x):
    kept = []

    def step(i, v):
        kept.append(v * 2.0)
        return v

    jitc.fori_loop(0, 3, step, x)
    return kept[0] + x


def _float_bound(x):
    return jitc.fori_loop(0, x[0], lambda i, v: v, x)


def _branches_disagree(x):
    return jitc.cond(x[0] > 0, lambda v: v, lambda v: v[:2], x)


def _array_pred(x):
    return jitc.cond(x > 0, lambda v: v, lambda v: -v, x)


def _uneven_xs(x):
    return jitc.scan(lambda c, r: (c, r), 0.0, (x, x[1:]))


def _empty_scan(x):
    return jitc.scan(lambda c, r: (c, r), 0.0, x[:0])


@pytest.mark.parametrize(
    "fn,args,error,words",
    [
        (_bad_shape, (np.zeros(4),), LoopError, "changes val from f64[4] to f64[3]"),
        (_bad_dtype, (np.zeros(4),), LoopError, "changes val from f64[4] to f32[4]"),
        (_bad_structure, (np.zeros(4),), LoopError, "carried values' structure"),
        (_bad_test, (np.zeros(4),), LoopError, "cond_fun must return a bool scalar"),
        (_writes_around, (np.zeros(4), np.zeros(4)), LoopWriteError, "from outside the loop"),
        (_writes_then_rebinds, (np.zeros(4),), LoopError, "returns another array"),
        (_reads_around, (np.zeros(4),), LoopError, "both as its carried value"),
        (_escapes, (np.zeros(4),), JitcError, "used after the loop"),
        (_float_bound, (np.zeros(4),), LoopError, "upper must be an integer scalar"),
        (_branches_disagree, (np.zeros(4),), LoopError, "false_fun changes result from"),
        (_array_pred, (np.zeros(4),), LoopError, "pred must be a bool scalar, not pred[4]"),
        (_uneven_xs, (np.zeros(4),), LoopError, "xs must share their first axis"),
        (_empty_scan, (np.zeros(4),), LoopError, "no steps to scan"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_bad_loops_get_errors_naming_the_line(fn, args, error, words):
    with pytest.raises(error, match=re.escape(words)) as caught:
        jitc.jit(fn, backend="reference")(*args)
    assert "test_loops.py:" in str(caught.value)


def test_loop_functions_must_be_callable():
    with pytest.raises(LoopError, match="true_fun must be callable"):
        jitc.cond(True, None, abs, 1.0)
    with pytest.raises(LoopError, match="scan: f must be callable"):
        jitc.scan(None, 0.0, np.zeros(3))
    with pytest.raises(LoopError, match="body_fun must be callable"):
        jitc.jit(lambda x: jitc.fori_loop(0, 2, None, x), backend="reference")(np.zeros(2))
    with pytest.raises(LoopError, match="cond_fun must be callable"):
        jitc.jit(lambda x: jitc.while_loop(1, lambda v: v, x), backend="reference")(np.zeros(2))


def heat(u, steps):
    """A time loop writing its argument in place (an AOT in-out argument), its trip count
    an argument."""

    def step(i, u):
        u[1:-1] += 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        return u

    return jitc.fori_loop(0, steps, step, u)


def settle(a):
    """newton_sqrt with its tolerance fixed (of a positive array: the artifact's golden
    inputs are normal samples), and a branch."""
    x, count = newton_sqrt(np.abs(a) + 1.0, 1e-12)
    return jitc.cond(count > 3, lambda: x * 2.0, lambda: x), count


@pytest.mark.parametrize(
    "fn,specs,make",
    [
        (heat, ("f64[64]", "i64[]"), lambda: (RNG.random(64), np.int64(37))),
        (settle, ("f64[6]",), lambda: (RNG.random(6) + 1.0,)),
    ],
    ids=["heat", "settle"],
)
def test_loops_compile_ahead_of_time_into_the_object(fn, specs, make, tmp_path):
    """The loop's branches are in the object's entry (no Python): its C test and its
    loader's call give NumPy's values, the in-out argument written as NumPy writes it."""
    aot_matches_numpy(fn, specs, make, tmp_path)


def aot_matches_numpy(fn, specs, make, tmp_path):
    """fn compiled ahead of time for `specs`: its C test passes, and its loader's call on
    make()'s arrays gives fn's values under NumPy and writes the arrays as NumPy does."""
    from tests.test_aot import _load, run_c_test

    art = jitc.aot.compile(fn, *(jitc.spec(s) for s in specs))
    paths = art.write(str(tmp_path), emit_test=True)
    out = run_c_test(paths, tmp_path)
    assert out is None or "match" in out
    args = make()
    numpy_args = [a.copy() for a in args]
    got, want = (
        jitc.core.pytree.flatten(_load(str(tmp_path), fn.__name__)(*args))[0],
        (jitc.core.pytree.flatten(fn(*numpy_args))[0]),
    )
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    for g, w in zip(args, numpy_args):
        np.testing.assert_array_equal(g, w)


def _rnn_of(h, xs, M, steps):
    """Its trip count an argument: a scalar the report's timed calls seed too."""
    return jitc.fori_loop(0, steps, lambda t, h: np.tanh(M @ h + xs[t % xs.shape[0]]), h)


def test_the_report_times_a_loop_step_by_step(tmp_path):
    """A profiled call names each launch of a loop's step every time it runs; the time
    table has a row for the loop and one per kernel of its step."""
    args = (np.zeros(5), np.zeros((7, 5)), W, np.int64(9))
    compiled = jitc.jit(_rnn_of).lower(*args).compile()
    _, spans = compiled.executable.profiled_call(*args)
    launches = [launch for launch, _, _ in spans]
    assert len(launches) > len(set(launches)) and max(launches) < len(
        compiled.executable.launch_kernels
    )
    page = compiled.report(tmp_path / "rnn.html").read_text()
    for name in compiled.stats()["kernel_names"]:
        assert name in page


def _smooth(x):
    return jitc.fori_loop(0, 5, lambda i, v: 0.5 * v + 0.25 * np.tanh(v) + i, x)


def test_a_loop_on_dask_arrays_runs_whole_and_submit_runs_it_too():
    """Dask partitioning runs a loop whole (its arrays unchunked); `submit` runs it on the
    executor; a loop of one step."""
    da = pytest.importorskip("dask.array")
    X = RNG.random((50, 4))
    f = jitc.jit(_smooth)
    lazy = f(da.from_array(X, chunks=(20, 4)))
    np.testing.assert_allclose(lazy.compute(), _smooth(X), rtol=1e-13)
    np.testing.assert_allclose(f.submit(X).result(), _smooth(X), rtol=1e-13)
    one = jitc.jit(lambda x: jitc.fori_loop(2, 3, lambda i, v: v * i, x))
    np.testing.assert_array_equal(one(X), X * 2)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=write_programs(), trips=st.integers(0, 4))
def test_random_loop_bodies_of_region_writes_match_numpy(program, trips, backend):
    """Hypothesis' sequences of region writes (tests/test_region_writes.py) as the body of a
    loop writing its carried array in place, the trip count a traced argument."""
    shape, writes = program
    writes_into = make_program(writes)

    def f(x, v, n):
        def step(i, x):
            writes_into(x, v)
            x *= 0.5
            x += i
            return x

        return jitc.fori_loop(0, n, step, x)

    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(shape), rng.standard_normal(int(np.prod(shape)))
    mine, theirs = x.copy(), x.copy()
    got = jitc.jit(f, backend=backend)(mine, v, trips)
    want = f(theirs, v, trips)
    assert got is mine
    np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(got, want)
