"""Plain Python loops and branches compiled (issue 36, capture): `for` over range(), `while`
and `if` on traced values, written as NumPy users write them. NumPy running the very same
function is the oracle (values, dtypes, the caller's arrays after the call); the graph is
checked to hold loops, not unrolled bodies, where the statement compiles as one."""

import numpy as np
import pytest
from numpy import zeros

import jitc
from benchmarks.workloads import cholesky_loops as cholesky  # three loops, an if on indices
from jitc.core.errors import TracerError, UnsupportedError
from jitc.trace import statements
from jitc.trace.control import LoopError
from tests.fresh import run
from tests.test_loops import aot_matches_numpy, matches_numpy

BACKENDS = ("reference", "cpu")


def time_steps(u, steps, k):
    """A time loop whose trip count is an argument, writing the caller's array."""
    for _ in range(steps):
        u[1:-1] += k * (u[:-2] - 2 * u[1:-1] + u[2:])
    return u


def backwards(x, n):
    """A negative step, a Python int carried (`s = 0`, then a float: NumPy's float64)."""
    s = 0
    for i in range(n - 1, -1, -2):
        s += x[i] * i
    return s


def conjugate_gradient(A, b, tol):
    """`while` on a traced residual and a counter, with `and` between them."""
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    it = 0
    while np.sqrt(rs) > tol and it < 200:
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + (rs_new / rs) * p
        rs = rs_new
        it += 1
    return x, it


def branchy(x, t):
    """if/elif/else on traced scalars, each side's results used after it; a conditional
    expression, not, or, max, min and abs of traced scalars."""
    s = x.sum()
    scale = 1.0
    if s > t:
        y = x * 2.0
        scale = 3.0
    elif s < -t:
        y = -x
    else:
        y = np.tanh(x)
        scale = scale * 0.5
    flag = 1.0 if not (s > 0 or x[0] > 0.9) else -1.0
    return y * scale, flag, max(s, t, 0.5), min(s, -abs(t)), abs(s - t)


def python_tests(x, n):
    """Tests Python decides at trace time (a static argument, a shape, a Python counter)
    run as Python does; a short static range keeps its index a literal."""
    k = 0
    while k < n:
        x = x + k
        k += 1
    if x.shape[0] > 3:
        x = x * 2
    for j in range(3):
        x[j] = j
    return x, k


def zero_trips(x, n):
    for i in range(n):
        x = x + i
    return x


def last_index(x):
    """The index after a loop run as Python is Python's (the last one), and one bound
    before a loop of no iterations keeps its value."""
    i = 7
    for i in range(0):  # noqa: B007 - i after the loop is the point
        x = x * 100.0
    for j in range(3):
        x = x + j
    return x * i + j


def carried_tuples(x, steps):
    """An LSTM-like state: a tuple of pairs the loop rebinds, a dict beside it."""
    state = ((x, x * 0.5), (x + 1.0, x))
    stats = {"n": 0, "peak": x.max()}
    for _ in range(steps):
        (h, c), (h2, c2) = state
        c = 0.9 * c + 0.1 * np.tanh(h)
        state = ((np.tanh(c), c), (h2 * 0.5 + c, c2))
        stats = {"n": stats["n"] + 1, "peak": max(stats["peak"], c.max())}
    return state, stats


def swapping(x, n):
    """A Python float and an array's element trade places every step."""
    a, b = 0.5, x[0]
    for _ in range(n):
        a, b = b, a
    return a * x, b * x


def walrus_test(x):
    """A `:=` in a while test binds the name where Python binds it: the loop stays
    Python's (its test is Python's here), and a `:=` in an if test is the function's."""
    k = 0
    while (m := k * 2) < 6:
        k += 1
    if (s := x.sum()) > 0:
        x = x * s
    return x + m + k


def stacked(x):
    """A static range longer than unrolled ranges: one loop carrying an int32 array."""
    c = np.zeros(3, np.int32)
    for i in range(40):
        c = c + i % 3
        x = x * 0.99 + c.astype(x.dtype)
    return x, c


RNG = np.random.default_rng(5)
_M = RNG.standard_normal((10, 10))
SPD = _M @ _M.T + 10 * np.eye(10)
PROGRAMS = [
    (cholesky, lambda: (SPD.copy(),), ()),
    (time_steps, lambda: (RNG.random(12), 30, 0.2), ()),
    (backwards, lambda: (RNG.random(9), 9), ()),
    (conjugate_gradient, lambda: (SPD.copy(), RNG.random(10), 1e-10), ()),
    (branchy, lambda: (RNG.random(5), 2.0), ()),
    (branchy, lambda: (-RNG.random(5), 2.0), ()),
    (branchy, lambda: (RNG.random(5) - 0.5, 2.0), ()),
    (python_tests, lambda: (RNG.random(5), 4), ("n",)),
    (zero_trips, lambda: (RNG.random(4), 0), ()),
    (last_index, lambda: (RNG.random(4),), ()),
    (stacked, lambda: (RNG.random(3).astype(np.float32),), ()),
    (carried_tuples, lambda: (RNG.random(4), 12), ()),
    (swapping, lambda: (RNG.random(3).astype(np.float32), 11), ()),
    (walrus_test, lambda: (RNG.random(3),), ()),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make,static", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_python_loops_and_branches_match_numpy(fn, make, static, backend):
    matches_numpy(fn, make(), static, backend, rtol=1e-12, atol=1e-14)


def _loops(fn, *args, **options) -> int:
    graph = jitc.jit(fn, backend="reference", **options).lower(*args).graph
    return [n.op for n in graph.nodes].count("while")


def test_loops_with_traced_or_long_bounds_are_one_loop_and_short_ones_unrolled():
    assert _loops(cholesky, SPD) == 1  # the inner loops are inside the outer one's step
    assert _loops(time_steps, np.zeros(12), 30, 0.2) == 1
    assert _loops(stacked, np.zeros(3, np.float32)) == 1
    assert _loops(python_tests, np.zeros(5), 4, static_argnames="n") == 0
    assert _loops(stacked, np.zeros(3, np.float32), unroll=True) == 0
    assert _loops(carried_tuples, np.zeros(4), 12) == 1


def test_a_trip_count_argument_compiles_once_and_the_graph_does_not_grow_with_it():
    f = jitc.jit(time_steps)
    u = np.zeros(12)
    assert f.lower(u, 10, 0.1).graph.count_ops() == f.lower(u, 10_000, 0.1).graph.count_ops()
    for steps in (10, 500):
        u = RNG.random(12)
        np.testing.assert_allclose(f(u.copy(), steps, 0.2), time_steps(u.copy(), steps, 0.2))
    assert len(f._cache) == 1


def heat_then_settle(u, steps):
    """A time loop with a traced trip count, then a while on a traced test with a branch
    inside: every statement in the object's entry."""
    for _ in range(steps):
        u[1:-1] += 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    x = np.abs(u) + 1.0
    r = np.sqrt(x)
    while np.abs(r * r - x).max() > 1e-12:
        r = 0.5 * (r + x / r)
        if r.sum() > 1e6:
            r = r * 0.5
    return r


def test_python_loops_compile_ahead_of_time_into_the_object(tmp_path):
    aot_matches_numpy(
        heat_then_settle, ("f64[64]", "i64[]"), lambda: (RNG.random(64), np.int64(37)), tmp_path
    )


def relax(u, sweeps):
    """A helper the jitted function calls: its loop compiles as the caller's does."""
    for _ in range(sweeps):
        u = 0.5 * u + 0.25 * (np.roll(u, 1) + np.roll(u, -1))
    return u


class Smoother:
    def __init__(self, k):
        self.k = k

    def run(self, u, sweeps):
        """A method the jitted function calls, with a loop and a branch inside."""
        for _ in range(sweeps):
            if u.max() > 0.9:
                u = u * self.k
            u = relax(u, 1)
        return u


def calls_helpers(u, sweeps):
    return Smoother(0.5).run(relax(u, sweeps), sweeps)


def test_functions_and_methods_it_calls_compile_their_loops_too():
    u = RNG.random(16)
    graph = jitc.jit(calls_helpers, backend="reference").lower(u, 20).graph
    assert [n.op for n in graph.nodes].count("while") == 2
    np.testing.assert_allclose(jitc.jit(calls_helpers)(u, 20), calls_helpers(u, 20), rtol=1e-13)


class Private:
    """A method whose private name its class mangles: compiled again from its source
    outside the class it would not be, so it runs as written (its short loop unrolled)."""

    def __init__(self):
        self.__k = 0.5

    def scaled(self, x):
        for i in range(3):
            x = x * self.__k + i
        return x


class Accumulator:
    def __init__(self):
        self.total = np.zeros(3)

    def run(self, x, n):
        """An attribute rebound in the loop: an effect on the object, not a carried name."""
        for _ in range(n):
            self.total = self.total + x
        return self.total


def test_a_loop_setting_an_attribute_unrolls_if_static_and_is_refused_if_traced():
    acc, want = Accumulator(), Accumulator()
    got = jitc.jit(acc.run, static_argnames="n", backend="reference")(np.ones(3), 12)
    np.testing.assert_array_equal(got, want.run(np.ones(3), 12))
    np.testing.assert_array_equal(acc.total, want.total)  # the object, after the call
    with pytest.raises(LoopError, match="traced bounds.*sets an attribute"):
        jitc.jit(Accumulator().run, backend="reference")(np.ones(3), 12)


def doubles_items(xs, n):
    """Items of the caller's list replaced: a change to the list itself."""
    for i in range(n):
        xs[i % 2] = xs[i % 2] * 2.0
    return xs[0] + xs[1]


def test_a_loop_assigning_items_of_a_python_list_is_refused_not_carried():
    """Carried, the list would be a new one after the loop and the caller's unchanged; run
    as Python, the change to an argument's list is jitc's usual refusal."""
    with pytest.raises(UnsupportedError, match="argument 'xs' was changed while tracing"):
        jitc.jit(doubles_items, static_argnames="n", backend="reference")([np.ones(2)] * 2, 12)
    with pytest.raises(LoopError, match="assigns items of the Python list xs"):
        jitc.jit(doubles_items, backend="reference")([np.ones(2), np.ones(2)], 12)


def test_functions_compiled_again_would_differ_run_as_written():
    p = Private()
    np.testing.assert_array_equal(
        jitc.jit(p.scaled, backend="reference")(np.ones(3)), p.scaled(np.ones(3))
    )


def half_defined(x):
    if x.sum() > 0:
        y = x * 2
    return y


def index_after(x, n):
    for i in range(n):
        x = x + i
    return x * i


def test_the_index_of_a_compiled_loop_has_no_value_after_it():
    with pytest.raises(TracerError, match="i has no value here: it is the index of the loop"):
        jitc.jit(index_after, backend="reference")(np.ones(3), 5)


def test_a_name_one_traced_branch_leaves_unbound_says_so_where_it_is_used():
    with pytest.raises(TracerError, match="y has no value here: only one branch of the if"):
        jitc.jit(half_defined, backend="reference")(np.ones(3))


def early_return(x):
    if x.sum() > 0:
        return x
    return -x


def breaking(x, n):
    for _ in range(n):
        x = x * 0.5
        if x.sum() < 1e-3:
            break
    return x


def searching(x):
    while x.sum() > 1.0:
        x = x * 0.5
    else:
        x = -x
    return x


def test_a_statement_that_cannot_compile_says_what_keeps_it_python():
    """A `return` in a traced branch, a `break` in a loop with a traced bound, a `while`
    with an `else`: each refused at its line, naming the statement that stops it."""
    with pytest.raises(
        LoopError, match=r"this if tests a traced value \(at .*:\d+\), but it holds a `return`"
    ):
        jitc.jit(early_return, backend="reference")(np.ones(3))
    with pytest.raises(LoopError, match="this for loop has a traced bound .* holds a `break`"):
        jitc.jit(breaking, backend="reference")(np.ones(3), 40)
    with pytest.raises(LoopError, match="this while loop tests .* holds an `else` clause"):
        jitc.jit(searching, backend="reference")(np.ones(3))
    with pytest.raises(LoopError, match="this if tests .* holds a `break`"):  # static n
        jitc.jit(breaking, static_argnames="n", backend="reference")(np.ones(3), 4)


def appending(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    return out


def test_a_loop_with_python_side_effects_unrolls_if_static_and_is_refused_if_traced():
    got = jitc.jit(appending, static_argnames="n", backend="reference")(np.ones(2), 12)
    for g, w in zip(got, appending(np.ones(2), 12)):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(LoopError, match=r"test_autograph.py:\d+ has traced bounds.*Python list"):
        jitc.jit(appending, backend="reference")(np.ones(2), 12)


def traced_step(x, n, step):
    for i in range(0, n, step):
        x = x + i
    return x


def zero_step(x, n):
    for i in range(0, n, 0):
        x = x + i
    return x


def while_appending(x):
    seen = []
    while x.sum() > 1.0:
        seen.append(x)
        x = x * 0.5
    return x, seen


def branch_makes_a_list(x):
    if x.sum() > 0:
        parts = [x]
    else:
        parts = [x * 2.0]
    return parts


def branches_of_two_shapes(x):
    y = x
    if x.sum() > 0:
        y = x[:2]
    return y


def restructured(x, n):
    state = (x, x)
    for _ in range(n):
        state = (state[0] + state[1],)
    return state


def loses_a_value(x, n):
    a = x
    for _ in range(n):
        if x.sum() > 0:
            t = x * 2.0
        a = t
    return a


def shrinking(x):
    while x.sum() > 1.0:
        x = x[:-1]
    return x


@pytest.mark.parametrize(
    "fn,args,error,match",
    [
        (traced_step, (np.ones(2), 5, 2), LoopError, "step is traced"),
        (zero_step, (np.ones(2), 5), ValueError, "must not be zero"),
        (while_appending, (np.ones(2),), LoopError, "while loop at .* changes a Python list"),
        (branch_makes_a_list, (np.ones(2),), LoopError, "makes a list of a value it carries"),
        (branches_of_two_shapes, (np.ones(3),), LoopError, r"y has shape \(2,\) in one branch"),
        (restructured, (np.ones(2), 5), LoopError, "changes the structure of state"),
        (shrinking, (np.ones(4),), LoopError, "x changes shape from"),
        (loses_a_value, (np.ones(2), 12), LoopError, "leaves a without a value"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_what_a_compiled_statement_cannot_carry_is_refused_at_its_line(fn, args, error, match):
    with pytest.raises(error, match=match) as info:
        jitc.jit(fn, backend="reference")(*args)
    if error is LoopError:
        text = str(info.value) + " ".join(getattr(info.value, "__notes__", []))
        assert "test_autograph.py:" in text, text


def growing(x):
    for _ in range(statements.UNROLL_BUDGET + 1):
        x = np.concatenate([x, x[:1]])
    return x


def growing_a_little(x):
    for i in range(20):
        x = np.concatenate([x, x[:1] * i])
    return x


SCALES = {k: 0.5 + k for k in range(12)}


def looks_up(x):
    """A Python dict indexed by the loop index: its index must be Python's, so the loop is
    unrolled (a traced index is no dict key)."""
    for i in range(12):
        x = x * SCALES[i]
    return x


def test_a_loop_whose_body_needs_a_python_index_is_unrolled():
    np.testing.assert_allclose(
        jitc.jit(looks_up, backend="reference")(np.ones(2)), looks_up(np.ones(2))
    )


def test_a_loop_that_changes_a_shape_unrolls_within_the_budget_and_is_refused_past_it():
    got = jitc.jit(growing_a_little, backend="reference")(np.ones(2))
    np.testing.assert_array_equal(got, growing_a_little(np.ones(2)))
    with pytest.raises(LoopError, match="changes shape.*unroll=True"):
        jitc.jit(growing, backend="reference")(np.ones(2))


def test_the_log_names_each_decision(caplog):
    import logging

    caplog.set_level(logging.INFO, logger="jitc")
    jitc.jit(growing_a_little, backend="reference").lower(np.ones(2))
    jitc.jit(time_steps, backend="reference").lower(np.ones(5), 3, 0.1)
    text = caplog.text
    assert "the for loop is unrolled, 20 iterations" in text
    assert "the for loop compiles as one loop" in text


def test_a_jitted_function_called_inside_another_compiles_its_loops():
    inner = jitc.jit(time_steps)

    def outer(u, steps):
        return inner(u, steps, 0.1) * 2.0

    u = RNG.random(10)
    graph = jitc.jit(outer, backend="reference").lower(u, 7).graph
    assert [n.op for n in graph.nodes].count("while") == 1
    np.testing.assert_allclose(
        jitc.jit(outer)(u.copy(), 7), time_steps(u.copy(), 7, 0.1) * 2.0, rtol=1e-13
    )


def test_a_plain_python_loop_runs_in_a_fresh_process_with_the_default_settings(tmp_path):
    """Twice over one cache directory: cold, then warm (the second process loads what the
    first compiled)."""
    script = """
        import numpy as np, jitc

        @jitc.jit
        def smooth(u, steps):
            for t in range(steps):
                if t % 2 == 0:
                    u[1:-1] = 0.5 * (u[:-2] + u[2:])
                else:
                    u[1:-1] = u[1:-1] * 0.9
            return u.sum()

        def oracle(u, steps):
            return smooth.__wrapped__(u, steps)

        for steps in (3, 40, 41):
            a, b = np.linspace(0, 1, 16), np.linspace(0, 1, 16)
            got, want = smooth(a, steps), oracle(b, steps)
            assert np.allclose(got, want) and np.array_equal(a, b), (steps, got, want)
        print("ok")
        """
    for _ in ("cold", "warm"):
        assert run(tmp_path, script).strip() == "ok"


def _filled_by_a_name_import(x):
    out = zeros(x.shape)  # a global bound at import: NumPy's own function
    out[1:] = x[:-1]
    return out


def test_a_function_it_calls_makes_arrays_through_names_imported_from_numpy():
    """A converted callee's `zeros` (NumPy's own, bound by name) makes a traced array, as
    the jitted function's own globals do: writing traced values into it works."""

    def f(x):
        return _filled_by_a_name_import(x) + 1

    x = np.arange(5.0)
    np.testing.assert_array_equal(jitc.jit(f)(x), f(x))
