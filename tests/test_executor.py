"""The concurrent executor (issue 16): independent small kernels of one cpu call run as the
tasks of one parallel region (backends/cpu/schedule.py, launcher.py `group`).

GROUP_MIN_WORK is 0 here, so even these small kernels run concurrently on numba's threads
(at the default they would take turns on one thread). Every result is checked against NumPy.
"""

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import jitc
from jitc import config
from jitc.backends.cpu import launcher

pytestmark = pytest.mark.skipif("cpu" not in jitc.backends.available(),
                                reason="needs the cpu backend")

RNG = np.random.default_rng(16)
X = RNG.standard_normal((2, 8))
W = RNG.standard_normal((6, 8, 8)) / 3
B = RNG.standard_normal((6, 8))


@pytest.fixture(autouse=True)
def groups_always_concurrent(monkeypatch):
    monkeypatch.setattr(launcher, "GROUP_MIN_WORK", 0)


def heads(x, W, b):
    """Four independent MLP heads on one input, then a join."""
    outs = [np.maximum(x @ W[i] + b[i], 0) @ W[i + 1] for i in range(4)]
    return outs[0] - outs[3], np.tanh(outs[1]) * outs[2]


def _compiled(fn, args, concurrent, monkeypatch):
    monkeypatch.setattr(config, "CONCURRENT", concurrent)
    return jitc.jit(fn, backend="cpu").lower(*args).compile()


def _groups(compiled):
    return [m for m in compiled.executable.launch_kernels if len(m) > 1]


@pytest.mark.parametrize("concurrent", [True, False])
def test_independent_heads_match_numpy_with_and_without_concurrency(concurrent, monkeypatch):
    compiled = _compiled(heads, (X, W, B), concurrent, monkeypatch)
    # concurrent: the heads' first kernels run as a group (their temporaries got arena
    # bytes of their own), then their second kernels, two by two (two write into a result
    # the other two's join reads); sequential: one launch per kernel
    assert [len(g) for g in _groups(compiled)] == ([4, 2, 2] if concurrent else [])
    for _ in range(20):
        for got, want in zip(compiled(X, W, B), heads(X, W, B)):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


def minus_a_product(x, W):
    a = x @ W[0]
    return a - np.tanh(x) @ W[1]


def test_a_dot_does_not_overwrite_the_result_its_epilogue_reads():
    """`a` lives in the result the subtraction runs in place of; the planner computed the
    second dot straight into that result, over `a`, before the subtraction read it."""
    got = jitc.jit(minus_a_product, backend="cpu")(X, W)
    np.testing.assert_allclose(got, minus_a_product(X, W), rtol=1e-13, atol=1e-14)


def update(W, x):
    """A kernel that reads W and one that writes W's new contents share no value: the
    writer (its result computed in W's own buffer on the fast path) waits for the reader."""
    y = np.tanh(W @ x)
    W *= 2.0
    return y


def test_the_writer_of_a_donated_array_waits_for_its_readers(monkeypatch):
    monkeypatch.setattr(config, "CONCURRENT", True)
    f = jitc.jit(update, backend="cpu")
    x = RNG.standard_normal(8)
    for _ in range(50):  # the first call compiles, the later ones take the fast path
        mine = RNG.standard_normal((8, 8))
        numpys = mine.copy()
        np.testing.assert_allclose(f(mine, x), update(numpys, x), rtol=1e-13)
        np.testing.assert_array_equal(mine, numpys)


def lookup(table, idx, x, W):
    return table[idx] * 2.0, np.tanh(x @ W[0]), np.tanh(x @ W[1])


def test_a_kernel_that_fails_beside_a_group_names_its_line(monkeypatch):
    monkeypatch.setattr(config, "CONCURRENT", True)
    f = jitc.jit(lookup, backend="cpu")
    table, good = np.arange(5.0), np.array([0, 4, 2])
    got = f(table, good, X, W)
    for g, want in zip(got, lookup(table, good, X, W)):
        np.testing.assert_allclose(g, want, rtol=1e-13)
    assert _groups(f.lower(table, good, X, W).compile())  # the two dots run concurrently
    with pytest.raises(IndexError, match=r"test_executor\.py:\d+"):
        f(table, np.array([0, 5, 2]), X, W)


# ---------------------------------------------------------------- random branchy graphs

ACTIVATIONS = ("tanh", "relu", "none")


def branchy(x, W, b, spec):
    """Branches of dot layers on x (or on an earlier branch's output), joined by a sum:
    spec = ((source branch or -1, ((weight, activation), ...)), ...)."""
    outs = []
    for source, layers in spec:
        h = x if source < 0 else outs[source]
        for k, act in layers:
            h = h @ W[k] + b[k]
            h = np.tanh(h) if act == "tanh" else np.maximum(h, 0) if act == "relu" else h
        outs.append(h)
    return sum(outs[1:], outs[0])


BRANCHY = jitc.jit(branchy, backend="cpu", static_argnames=("spec",))

layer = st.tuples(st.integers(0, 5), st.sampled_from(ACTIVATIONS))
branch = st.tuples(st.integers(-3, -1), st.lists(layer, min_size=1, max_size=2).map(tuple))


@st.composite
def specs(draw):
    branches = draw(st.lists(branch, min_size=2, max_size=4))
    # a negative source reads x; else, sometimes, an earlier branch
    return tuple((s if s == -1 or i == 0 else draw(st.integers(0, i - 1)), layers)
                 for i, (s, layers) in enumerate(branches))


def _conflict(a, b) -> bool:
    """Do kernels a and b touch the same bytes, one of them writing (a brute-force check of
    schedule.levels)?"""
    for i, p in enumerate(a.pointers):
        for j, q in enumerate(b.pointers):
            if (i in a.writes or j in b.writes) and p.source == q.source and p.nbytes \
                    and q.nbytes:
                lo_p = p.offset + (p.index if p.source == "temp" else 0)
                lo_q = q.offset + (q.index if q.source == "temp" else 0)
                same = p.source == "temp" or p.index == q.index
                if same and lo_p < lo_q + q.nbytes and lo_q < lo_p + p.nbytes:
                    return True
    return False


@settings(max_examples=12, deadline=None, derandomize=True, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=specs())
def test_random_branchy_graphs_match_numpy(spec):
    want = branchy(X, W, B, spec)
    np.testing.assert_allclose(BRANCHY(X, W, B, spec=spec), want, rtol=1e-12, atol=1e-12)
    compiled = BRANCHY.lower(X, W, B, spec=spec).compile()
    np.testing.assert_allclose(compiled(X, W, B), want, rtol=1e-12, atol=1e-12)
    kernels = compiled.executable.program.kernels
    order = [m for launch in compiled.executable.launch_kernels for m in launch]
    assert sorted(order) == list(range(len(kernels)))
    for launch in compiled.executable.launch_kernels:  # a group's members are independent
        for i, a in enumerate(launch):
            assert not any(_conflict(kernels[a], kernels[b]) for b in launch[i + 1:])
    position = {k: i for i, k in enumerate(order)}  # and dependent kernels keep their order
    for a in range(len(kernels)):
        for b in range(a + 1, len(kernels)):
            if _conflict(kernels[a], kernels[b]):
                assert position[a] < position[b], (a, b)


def test_sixteen_threads_calling_a_branchy_function(monkeypatch):
    """16 Python threads x 1000 calls, each on its own input, every result checked: the
    calls share numba's one pool (groups from many threads at once) and none starves."""
    monkeypatch.setattr(config, "CONCURRENT", True)
    f = jitc.jit(heads, backend="cpu")
    inputs = [np.random.default_rng(t).standard_normal((2, 8)) for t in range(16)]
    wants = [heads(x, W, B) for x in inputs]
    f(inputs[0], W, B)
    done, errors = [0] * 16, []

    def caller(t):
        try:
            for _ in range(1000):
                got = f(inputs[t], W, B)
                if not all(np.allclose(g, w, rtol=1e-13, atol=1e-14)
                           for g, w in zip(got, wants[t])):
                    errors.append((t, "mismatch"))
                    return
                done[t] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=caller, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors, errors[:3]
    assert done == [1000] * 16
