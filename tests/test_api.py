"""The public API of DESIGN.md: jit, static arguments, pytrees, constants, the compile
cache, JITC_LOG / JITC_DISABLE_JIT, ShapeDtype / spec, lower().compile(), threads."""

import collections
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jitc
from tests.conftest import BACKENDS

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((8, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def _same(got, want):
    """Same type, dtype, shape and values (a few ulp) as NumPy's result."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _same(got[k], want[k])
    elif want is None:
        assert got is None
    else:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


# ----------------------------------------------------------------------------- jit forms


def test_jit_as_a_plain_decorator(backend):
    @jitc.jit
    def layer(x, w, b):
        return np.maximum(x @ w + b, 0)

    assert isinstance(layer, jitc.Jitted)
    _same(layer(X, W, B), layer.fun(X, W, B))
    _same(layer.lower(X, W, B).compile(backend=backend)(X, W, B), layer.fun(X, W, B))


def test_jit_as_a_decorator_factory(backend):
    @jitc.jit(backend=backend, static_argnames=("axis",))
    def softmax(x, axis=-1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    for axis in (0, 1, -1):
        _same(softmax(X, axis=axis), softmax.fun(X, axis=axis))
    assert softmax.__name__ == "softmax" and softmax.__wrapped__ is softmax.fun


def test_jit_called_on_a_function(backend):
    def f(x):
        return np.tanh(x) * 2

    g = jitc.jit(f, backend=backend)
    _same(g(X), f(X))
    assert g.fun is f


def test_jit_on_a_method(backend):
    class Layer:
        def __init__(self):
            self.w = W

        @jitc.jit(backend=backend, static_argnums=0)
        def __call__(self, x):
            return x @ self.w

    layer = Layer()
    _same(layer(X), X @ W)


def test_a_jitted_function_called_inside_another_is_inlined(backend):
    inner = jitc.jit(lambda x: np.exp(x) + 1, backend=backend)
    inner(X)  # compiled for X's shape: the call inside the trace must not use it

    @jitc.jit(backend=backend)
    def outer(x):
        return inner(x) * 2

    _same(outer(X), (np.exp(X) + 1) * 2)
    assert "exp" in outer.lower(X).as_text()


def test_the_default_backend_is_cpu():
    if "cpu" not in jitc.backends.available():
        pytest.skip("the cpu backend cannot run here")
    assert jitc.jit(lambda x: x).backend == "cpu"


# ----------------------------------------------------------------------------- static arguments


def _tracing(x):
    return not isinstance(x, (np.ndarray, np.generic, float, int))


def test_static_argnums_recompile_per_value(backend):
    traces = []

    def f(x, n, scale):
        if _tracing(x):
            traces.append(n)
        y = x
        for _ in range(n):  # Python control flow on a static value is fine
            y = y * scale
        return y

    g = jitc.jit(f, backend=backend, static_argnums=(1,))
    _same(g(X, 2, 0.5), f(X, 2, 0.5))
    _same(g(X, 3, 0.5), f(X, 3, 0.5))
    _same(g(X, 2, 0.25), f(X, 2, 0.25))  # scale is traced: no new trace
    _same(g(X, 3, 0.5), f(X, 3, 0.5))
    g(X, 2, 0.75)
    g(X, 3, 2.0)
    assert traces == [2, 3]


def test_static_argnames_and_negative_argnums(backend):
    count = collections.Counter()

    def f(x, axis, keepdims=False):
        count[(axis, keepdims)] += _tracing(x)
        return x.sum(axis=axis, keepdims=keepdims)

    g = jitc.jit(f, backend=backend, static_argnames=("axis", "keepdims"))
    for axis, keep in [(0, False), (1, True), (0, False), (1, True), (-1, False)]:
        _same(g(X, axis=axis, keepdims=keep), X.sum(axis=axis, keepdims=keep))
    assert count == {(0, False): 1, (1, True): 1, (-1, False): 1}
    h = jitc.jit(lambda x, axis: x.max(axis=axis), backend=backend, static_argnums=-1)
    _same(h(X, 1), X.max(axis=1))


def test_static_argnums_and_argnames_refer_to_the_same_parameter(backend):
    g = jitc.jit(lambda x, axis: x.mean(axis=axis), backend=backend, static_argnums=1)
    _same(g(X, axis=0), X.mean(axis=0))
    _same(g(X, 1), X.mean(axis=1))


def test_an_unhashable_static_argument_is_a_type_error():
    g = jitc.jit(lambda x, axes: x.sum(axis=axes), backend="reference", static_argnames="axes")
    with pytest.raises(TypeError, match="axes.*hashable"):
        g(X, axes=[0, 1])
    _same(g(X, axes=(0, 1)), X.sum(axis=(0, 1)))


def test_static_strings_configure_the_computation(backend):
    def act(x, kind):
        return {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh}[kind](x)

    g = jitc.jit(act, backend=backend, static_argnames="kind")
    for kind in ("relu", "tanh"):
        _same(g(X, kind=kind), act(X, kind))


# ----------------------------------------------------------------------------- pytrees

Params = collections.namedtuple("Params", ["w", "b"])


def test_pytrees_in_arguments_keyword_arguments_and_results(backend):
    def f(xs, params, *, extra=None, opts):
        a, b = xs
        y = a @ params["w"] + params["b"]
        z = b.sum() if extra is None else b.sum() + extra[0]
        return {"y": y, "pair": (z, [a.T, None]), "opts": opts["scale"] * y}

    g = jitc.jit(f, backend=backend)
    args = ((X, X[:, :2]), {"w": W, "b": B})
    for extra in (None, [np.float32(2.0)]):
        kwargs = {"extra": extra, "opts": {"scale": 3.0}}
        _same(g(*args, **kwargs), f(*args, **kwargs))


def test_namedtuples_go_in_and_come_out(backend):
    def f(p, x):
        return Params(w=p.w * 2, b=x @ p.w + p.b)

    g = jitc.jit(f, backend=backend)
    got = g(Params(W, B), X)
    assert isinstance(got, Params)
    _same(tuple(got), tuple(f(Params(W, B), X)))


def test_a_value_returned_twice_is_one_array_as_in_numpy(backend):
    def f(x):
        h = np.tanh(x)
        return h, (h, x + 1)

    g = jitc.jit(f, backend=backend)
    for _ in range(2):  # the first call traces, the second takes the fast path
        got, want = g(X), f(X)
        assert got[0] is got[1][0] and want[0] is want[1][0]
        _same(got, want)


def test_results_may_hold_static_values_and_scalars(backend):
    def f(x):
        return x.shape, x.sum(), x.dtype.name, [x.ndim, x.max(axis=0)]

    g = jitc.jit(f, backend=backend)
    got, want = g(X), f(X)
    assert got[0] == want[0] and got[2] == want[2] and got[3][0] == want[3][0]
    _same(got[1], want[1])
    _same(got[3][1], want[3][1])


def test_a_new_tree_structure_retraces(backend):
    traces = []

    def f(xs):
        if _tracing(xs[0]):
            traces.append(len(xs))
        return sum(xs[1:], xs[0])

    g = jitc.jit(f, backend=backend)
    _same(g([X, X]), X + X)
    _same(g([X, X, X]), X + X + X)
    _same(g((X, X)), X + X)
    assert traces == [2, 3, 2]


# ----------------------------------------------------------------------------- constants


def test_closure_captured_arrays_become_constants(backend):
    w1 = RNG.standard_normal((8, 16)).astype(np.float32)
    w2 = RNG.standard_normal((16, 3)).astype(np.float32)

    @jitc.jit(backend=backend)
    def mlp(x):
        return np.maximum(x @ w1, 0) @ w2

    text = mlp.lower(X).as_text()
    assert "constant" in text
    assert text.count("parameter") <= 1 or text.count("%0:") == 1
    _same(mlp(X), np.maximum(X @ w1, 0) @ w2)
    w1_before = w1.copy()
    mlp(X)
    assert np.array_equal(w1, w1_before)  # never written


def test_the_graph_has_one_parameter_per_array_leaf():
    lo = jitc.jit(lambda x, p: x @ p["w"] + p["b"], backend="reference").lower(X, {"w": W, "b": B})
    assert lo.as_text().splitlines()[0].count("f32[") == 3, lo.as_text()


# ----------------------------------------------------------------------------- the cache


def test_calls_with_seen_shapes_and_dtypes_do_not_retrace(backend):
    traces = []

    def f(x, w):
        if _tracing(x):
            traces.append((x.shape, x.dtype))
        return np.tanh(x @ w)

    g = jitc.jit(f, backend=backend)
    for _ in range(3):
        _same(g(X, W), f(X, W))
    assert len(traces) == 1
    g(X[:2], W)  # a new shape
    g(X.astype(np.float64), W)  # a new dtype
    g(X[:2].copy(), W)
    g(np.asfortranarray(X), W)  # same shape and dtype, another layout: same trace
    assert traces[1:] == [((2, 8), np.float32), ((4, 8), np.float64)]


def test_calls_switching_between_signatures_give_numpys_results(backend):
    """The fast call tries the last signature first; every other case must miss it and take
    the slow path: another shape, tree, dict key, scalar type or array layout."""

    def f(x, p, s):
        return x * p["w"] + p["b"][0] * s, [x.sum(), p["b"]]

    g = jitc.jit(f, backend=backend)
    y = RNG.standard_normal((2, 8)).astype(np.float32)
    p = {"w": np.float32(2.0) * np.ones(8, np.float32), "b": (np.ones(8, np.float32),)}
    q = {"w": p["w"], "c": p["b"]}
    readonly = X.copy()
    readonly.flags.writeable = False
    calls = [
        (X, p, 1.5),
        (y, p, 1.5),
        (X, p, 1.5),
        (X, p, 2),
        (X, p, 1.5),
        (np.asfortranarray(X), p, 1.5),
        (X[:, ::-1], p, 1.5),
        (readonly, p, 1.5),
        (X.astype(np.float64), p, 1.5),
        (X, {"w": p["w"], "b": (p["w"], p["w"])}, 1.5),
        (X, p, 1.5),
    ]
    for x, params, s in calls:
        _same(g(x, params, s), f(x, params, s))
    with pytest.raises(KeyError):  # a dict with other keys retraces (and fails like NumPy)
        g(X, q, 1.5)


def test_python_scalars_are_traced_by_type_not_value(backend):
    traces = []

    def f(x, s):
        if _tracing(x):
            traces.append(s.dtype)
        return x * s

    g = jitc.jit(f, backend=backend)
    for s in (2.0, 3.5, -1.0):
        _same(g(X, s), X * s)
    _same(g(X, 2), X * 2)  # an int is a new signature
    assert traces == [np.float64, np.int64]


def test_python_scalar_arguments_combine_as_python_values(backend):
    """Two traced Python scalars meet as Python's int and float do (NumPy finds no loop for
    `int < int`: jitc once refused it as an object dtype); a float32 array stays float32."""

    def f(x, a, b, s):
        return x * (a + b) + (a < b) + a / b + a // b + (s > a) * s

    got = jitc.jit(f, backend=backend)(X, 2, 3, 1.5)
    _same(got, f(X, 2, 3, 1.5))
    assert got.dtype == X.dtype


# ----------------------------------------------------------------------------- environment

_LOG_SCRIPT = textwrap.dedent("""
    import numpy as np, jitc
    @jitc.jit(backend="reference")
    def layer(x, w):
        return np.tanh(x @ w)
    w = np.ones((8, 3), np.float32)
    layer(np.ones((4, 8), np.float32), w)
    layer(np.ones((4, 8), np.float32), w)
    layer(np.ones((16, 8), np.float32), w)
    layer(np.ones((16, 8), np.float32), w.astype(np.float64))
    print("done")
""")


def _run(script, **env):
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_jitc_log_compiles_names_the_argument_that_changed():
    out = _run(_LOG_SCRIPT, JITC_LOG="compiles")
    assert out.stdout.strip() == "done"
    lines = [ln for ln in out.stderr.splitlines() if "layer" in ln]
    assert len(lines) == 3, out.stderr  # the repeated call is a cache hit
    assert "first call" in lines[0]
    assert "x" in lines[1] and "f32[4,8]" in lines[1] and "f32[16,8]" in lines[1], lines[1]
    assert "w" in lines[2] and "f64[8,3]" in lines[2] and "x:" not in lines[2], lines[2]


def test_without_jitc_log_nothing_is_logged():
    out = _run(_LOG_SCRIPT, JITC_LOG="")
    assert "compiling" not in out.stderr


def test_jitc_disable_jit_runs_plain_python():
    script = textwrap.dedent("""
        import numpy as np, jitc
        seen = []
        @jitc.jit(backend="reference")
        def f(x):
            seen.append(type(x).__name__)
            if x.sum() > 0:          # legal: x is a real array here
                return np.sort(x)    # legal: plain NumPy
            return x
        x = np.array([3.0, 1.0, 2.0])
        print(f(x).tolist(), f(x).tolist(), seen)
    """)
    out = _run(script, JITC_DISABLE_JIT="1")
    assert out.stdout.strip() == "[1.0, 2.0, 3.0] [1.0, 2.0, 3.0] ['ndarray', 'ndarray']"


# ----------------------------------------------------------------------------- specs, stages


def test_shape_dtype_equals_spec():
    assert jitc.ShapeDtype((1, 512), np.float32) == jitc.spec("f32[1,512]")
    assert jitc.ShapeDtype([1, 512], "float32") == jitc.spec(" f32[ 1, 512 ] ")
    assert hash(jitc.ShapeDtype((1, 512), np.float32)) == hash(jitc.spec("f32[1,512]"))
    assert jitc.spec("f64[]") == jitc.ShapeDtype((), np.float64)
    assert jitc.spec("s32[3]") == jitc.spec("i32[3]") == jitc.ShapeDtype((3,), np.int32)
    assert jitc.spec("pred[2,2]") == jitc.ShapeDtype((2, 2), bool)
    assert jitc.spec("s64[0]").shape == (0,)
    assert jitc.spec("f32[1,512]") != jitc.spec("f64[1,512]")
    assert str(jitc.spec("f32[1,512]")) == "f32[1,512]"


def test_lower_specs_then_compile_then_call_real_arrays(backend):
    def layer(x, w, b):
        y = np.maximum(x @ w + b, 0)
        e = np.exp(y - y.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    lo = jitc.jit(layer, backend=backend).lower(
        jitc.spec("f32[4,8]"), jitc.ShapeDtype((8, 3), np.float32), B
    )
    text = lo.as_text()
    assert "f32[4,8]" in text and "dot_general" in text and "exp" in text
    c = lo.compile()
    assert "fusion" in c.as_text()
    stats = c.stats()
    assert {"ops", "fusions", "kernels", "temp_bytes"} <= set(stats), stats
    assert isinstance(c.fusion_report(), str)
    _same(c(X, W, B), layer(X, W, B))
    _same(lo.compile(backend="reference")(X, W, B), layer(X, W, B))


def test_lower_accepts_scalars_and_mixed_args():
    lo = jitc.jit(lambda x, s, t: x * s + t, backend="reference").lower(
        jitc.spec("f32[3]"), 2.0, np.float64(1.0)
    )
    c = lo.compile()
    x = np.arange(3, dtype=np.float32)
    _same(c(x, 2.0, np.float64(1.0)), x * 2.0 + np.float64(1.0))


def test_backends_available_lists_reference():
    names = jitc.backends.available()
    assert "reference" in names and names[0] == "reference"
    assert set(names) <= set(jitc.backends.BACKENDS)


def test_import_jitc_is_enough_for_backends_and_aot():
    out = _run("import jitc; print(jitc.backends.available()); print(jitc.aot.__name__)")
    assert "reference" in out.stdout and "jitc.aot" in out.stdout


# ----------------------------------------------------------------------------- threads


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_threads_at_once_give_numpys_results(backend):
    def layer(x, w, b):
        return np.tanh(x @ w + b).sum(axis=-1)

    g = jitc.jit(layer, backend=backend)
    xs = [RNG.standard_normal((4 + i % 3, 8)).astype(np.float32) for i in range(8)]
    results, errors = [None] * 8, []
    barrier = threading.Barrier(8)

    def work(i):
        try:
            barrier.wait()  # first calls (and their compiles) race too
            for _ in range(10):
                results[i] = g(xs[i], W, B)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for x, r in zip(xs, results):
        _same(r, layer(x, W, B))


def test_dicts_keep_their_insertion_order_like_python():
    """Code that iterates a dict argument sees the caller's order, and a dict result comes
    back in the function's order; the same keys in another order are another signature
    (before, keys were sorted: np.concatenate(list(d.values())) came out reordered)."""
    f = jitc.jit(
        lambda d, **kw: (np.concatenate(list(d.values())), d, np.concatenate(list(kw.values())))
    )
    one, zeros = np.ones(1), np.zeros(2)
    for d, kw in (
        ({"b": zeros, "a": one}, {"y": one, "x": zeros}),
        ({"a": one, "b": zeros}, {"x": zeros, "y": one}),
        ({"b": zeros, "a": one}, {"y": one, "x": zeros}),  # the fast path again
        ({2: zeros, "a": one}, {"x": zeros, "y": one}),
    ):  # keys Python cannot sort
        got, back, kwgot = f(d, **kw)
        np.testing.assert_array_equal(got, np.concatenate(list(d.values())))
        np.testing.assert_array_equal(kwgot, np.concatenate(list(kw.values())))
        assert list(back) == list(d)


def test_jitc_runs_without_dask_installed():
    """Dask is an optional extra: with it unimportable, jitc imports and compiles."""
    code = (
        "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
        "import numpy as np, jitc\n"
        "assert jitc.jit(lambda x: x * 2)(np.ones(3)).tolist() == [2.0, 2.0, 2.0]\n"
        "assert 'dask.array' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
