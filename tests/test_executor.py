"""The concurrent executor (issue 16): independent small kernels of one cpu call run as the
tasks of one parallel region (backends/cpu/schedule.py, launcher.py `group`).

GROUP_MIN_WORK is 0 here, so even these small kernels run concurrently on numba's threads
(at the default they would take turns on one thread). Every result is checked against NumPy,
also with each group's members run one by one in their order and in reverse order, which
turns a dependency the schedule missed into a wrong answer every time, not now and then.
"""

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import jitc
from jitc.backends.cpu import dot, launcher
from jitc.backends.cpu.driver import LAUNCH_ENTRY, LAUNCH_TABLE, LAUNCHES, PACKS
from jitc.core import config

pytestmark = pytest.mark.skipif(
    "cpu" not in jitc.backends.available(), reason="needs the cpu backend"
)

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
    """Per group launch, the lengths of its chains (the kernels one task runs in turn)."""
    return [
        [len(c) for c in chains]
        for chains in compiled.executable.launch_chains
        if sum(map(len, chains)) > 1
    ]


def _in_turn(compiled, reverse: bool):
    """Make each group of `compiled` run its chains one by one on the calling thread (its
    launch's work 0), in reverse order if `reverse` (a group's chains are independent: each
    kernel's entry holds its pack offset from the table's start)."""
    n = compiled.executable.state
    for e in range(n[LAUNCH_TABLE], n[LAUNCH_TABLE] + LAUNCH_ENTRY * n[LAUNCHES], LAUNCH_ENTRY):
        if n[e] == launcher.group_address():
            n[e + 3] = 0
            at, count = n[PACKS] + n[e + 1], n[e + 2]
            starts = n[at : at + count + 1].copy()
            chains = [n[at + a : at + b].copy() for a, b in zip(starts, starts[1:])]
            if reverse:
                chains.reverse()
                starts[1:] = starts[0] + np.cumsum([len(c) for c in chains])
                n[at : at + count + 1] = starts
                n[at + starts[0] : at + starts[-1]] = np.concatenate(chains)


def _check(compiled, fn, args, calls=1, rtol=1e-13):
    """compiled(*args) == fn(*args) concurrently, then with the groups run in turn and in
    reverse."""
    want = fn(*args)
    for reverse in (None, False, True):
        if reverse is not None:
            _in_turn(compiled, reverse)
        for _ in range(calls):
            got = compiled(*args)
            for g, w in zip(
                got if isinstance(want, tuple) else [got],
                want if isinstance(want, tuple) else [want],
            ):
                np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("concurrent,blas", [(True, False), (False, False), (True, True)])
def test_independent_heads_match_numpy_with_and_without_concurrency(concurrent, blas, monkeypatch):
    """blas: the dots go to BLAS and split over their columns, their epilogues run as their
    own launches, in place (a kernel writing an array through its input's name)."""
    if blas:
        monkeypatch.setattr(dot, "BLAS_MIN_FLOPS", 1)
    compiled = _compiled(heads, (X, W, B), concurrent, monkeypatch)
    _check(compiled, heads, (X, W, B), calls=20)
    # concurrent: the heads' first kernels run as a group (their temporaries got arena
    # bytes of their own), the second kernels of two heads in their first kernels' tasks,
    # then the other two (they write into a result the first two's join reads) as a group;
    # sequential: one launch per kernel. With BLAS: one task per head runs its dot, its
    # epilogue and its second dot (into a result or the dots' own local temporaries), then
    # the joins
    groups = _groups(compiled)
    assert (
        groups == ([[3, 3, 3, 3], [1, 1]] if blas else [[2, 2, 1, 1], [1, 1]])
        if concurrent
        else not groups
    )


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

ACTIVATIONS = ("tanh", "relu", "none", "norm")


def branchy(x, W, b, spec):
    """Branches of dot layers on x (or on an earlier branch's output), joined by a sum:
    spec = ((source branch or -1, ((weight, activation), ...)), ...)."""
    outs = []
    for source, layers in spec:
        h = x if source < 0 else outs[source]
        for k, act in layers:
            h = h @ W[k] + b[k]
            if act == "norm":
                h = h / (np.abs(h).sum(axis=1, keepdims=True) + 1.0)
            else:
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
    return tuple(
        (s if s == -1 or i == 0 else draw(st.integers(0, i - 1)), layers)
        for i, (s, layers) in enumerate(branches)
    )


def _conflict(a, b) -> bool:
    """Do kernels a and b touch the same bytes, one of them writing (a brute-force check of
    schedule.levels)?"""
    for i, p in enumerate(a.pointers):
        for j, q in enumerate(b.pointers):
            if (i in a.writes or j in b.writes) and p.source == q.source and p.nbytes and q.nbytes:
                lo_p = p.offset + (p.index if p.source == "temp" else 0)
                lo_q = q.offset + (q.index if q.source == "temp" else 0)
                same = p.source == "temp" or p.index == q.index
                if same and lo_p < lo_q + q.nbytes and lo_q < lo_p + p.nbytes:
                    return True
    return False


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(spec=specs())
def test_random_branchy_graphs_match_numpy(spec):
    want = branchy(X, W, B, spec)
    np.testing.assert_allclose(BRANCHY(X, W, B, spec=spec), want, rtol=1e-12, atol=1e-12)
    compiled = BRANCHY.lower(X, W, B, spec=spec).compile()
    _check(compiled, lambda x, w, b: branchy(x, w, b, spec), (X, W, B), rtol=1e-12)
    kernels = compiled.executable.program.kernels
    order = [m for launch in compiled.executable.launch_kernels for m in launch]
    assert sorted(order) == list(range(len(kernels)))
    for chains in compiled.executable.launch_chains:  # a group's chains are independent
        for i, chain in enumerate(chains):
            assert not any(
                _conflict(kernels[a], kernels[b])
                for other in chains[i + 1 :]
                for a in chain
                for b in other
            )
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
                if not all(
                    np.allclose(g, w, rtol=1e-13, atol=1e-14) for g, w in zip(got, wants[t])
                ):
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
