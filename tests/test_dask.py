"""Jitted functions on dask arrays (chunked): lazy dask arrays out, equal to NumPy on
the computed result, on the threaded scheduler and on a real distributed.LocalCluster with
worker processes."""

import os
import time

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((203, 48)).astype(np.float32)  # rows chunked 64: an uneven edge
G = RNG.standard_normal(48).astype(np.float32)
B = RNG.standard_normal(48).astype(np.float32)
W = RNG.standard_normal((48, 16)).astype(np.float32)


def np_layernorm(x, g, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + np.float32(1e-5)) * g + b


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_chain(x, y):
    return np.tanh(x * 2.0 + y) - np.sqrt(np.abs(x))


def np_stats(x):
    return x.sum(axis=0, keepdims=True), x.mean(axis=0), x.var(axis=0)


def np_mlp(x, w):
    return np_softmax(np.maximum(x @ w, 0))


def np_stencil(u):
    return u + 0.1 * (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) - 2 * u)


def np_two(x, y):
    return {"sum": x + y, "scaled": (x * 3, 7)}


def np_shape_baked(x):
    return x.sum(axis=1) / x.shape[0]


layernorm, softmax, chain, stats, mlp, stencil, two, shape_baked = map(
    jitc.jit,
    (np_layernorm, np_softmax, np_chain, np_stats, np_mlp, np_stencil, np_two, np_shape_baked),
)


def threads(value):
    with dask.config.set(scheduler="threads"):
        return dask.compute(value)[0]


def close(got, want, rtol=2e-5):
    for g, w in zip(jitc.core.pytree.flatten(got)[0], jitc.core.pytree.flatten(want)[0]):
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=rtol)


def test_call_is_lazy_and_chunk_local_work_runs_block_by_block():
    calls = []

    def record(block):
        calls.append(block.shape)
        return block

    x = da.from_array(X, chunks=(64, 48)).map_blocks(record, meta=X[:0, :0])
    y = layernorm(x, G, B)
    assert calls == [] and isinstance(y, da.Array)
    assert y.chunks == ((64, 64, 64, 11), (48,))
    plan = layernorm.lower(x, G, B).as_text()
    assert "x axis 0: 4 chunks, block by block" in plan and "rechunked" not in plan
    close(threads(y), np_layernorm(X, G, B))
    assert sorted(calls) == sorted([(64, 48)] * 3 + [(11, 48)])
    calls.clear()
    close(threads(y.sum(axis=0)), np_layernorm(X, G, B).sum(axis=0), rtol=1e-4)
    assert sorted(calls) == sorted([(64, 48)] * 3 + [(11, 48)])


def test_the_processes_scheduler():
    x = da.from_array(X, chunks=(64, 16))
    with dask.config.set(scheduler="processes", num_workers=2):
        got = dask.compute(layernorm(x, G, B), softmax(x))
    close(got, (np_layernorm(X, G, B), np_softmax(X)))


@pytest.mark.parametrize("chunks", [(64, 48), (64, 16), (203, 16)])
def test_layernorm_and_softmax_rows_or_reduced_axis_chunked(chunks):
    x = da.from_array(X, chunks=chunks)
    close(threads(layernorm(x, G, B)), np_layernorm(X, G, B))
    close(threads(softmax(x)), np_softmax(X))
    plan = softmax.lower(x)
    assert plan.rechunked() == []
    if chunks[1] < 48:  # the reduced axis too runs block by block: partials, combined
        text = plan.as_text()
        assert "partial max per block, combined across 3 blocks" in text
        assert "partial sum per block, combined across 3 blocks" in text


@pytest.mark.parametrize("chunks", [(64, 48), (203, 16), (50, 20)])
def test_reductions_over_chunked_axes_with_keepdims(chunks):
    x = da.from_array(X.astype(np.float64), chunks=chunks)
    got = threads(stats(x))
    close(got, np_stats(X.astype(np.float64)), rtol=1e-12)
    assert got[0].shape == (1, 48)
    assert stats.lower(x).rechunked() == []


@pytest.mark.parametrize("chunks", [(64, 48), (64, 16)])
def test_matmul_rows_chunked_and_contraction_chunked(chunks):
    x = da.from_array(X, chunks=chunks)
    y = mlp(x, W)
    assert y.chunks[0] == ((64, 64, 64, 11))
    close(threads(y), np_mlp(X, W), rtol=1e-4)


def test_stencil_with_roll_along_a_chunked_axis():
    u = da.from_array(X, chunks=(64, 16))
    plan = stencil.lower(u)
    assert plan.rechunked() == []
    assert "u axis 0: 4 chunks, block by block, with a halo of 1 for np.roll" in plan.as_text()
    close(threads(stencil(u)), np_stencil(X))


def np_rolls(u, v):
    lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 2, 1) + np.roll(u, -3, 1) - 4 * u
    return lap * v, (lap**2).sum(axis=0), np.roll(u * 2, 1, axis=0)


rolls = jitc.jit(np_rolls)


@pytest.mark.parametrize("chunks", [(20, 30), (20, 10), (7, 7), (50, 4)])
def test_rolls_along_both_axes_with_halos_and_uneven_edges(chunks):
    """Halos wrap around (np.roll is periodic); a roll of a computed value, or one wider
    than the smallest chunk, runs that axis whole."""
    u0 = RNG.standard_normal((50, 30))
    v0 = RNG.standard_normal((50, 30))
    u, v = da.from_array(u0, chunks=chunks), da.from_array(v0, chunks=chunks)
    close(threads(rolls(u, v)), np_rolls(u0, v0), rtol=1e-12)
    text = rolls.lower(u, v).as_text()
    assert ("u axis 0: rechunked" in text) == (chunks[0] < 50)  # np.roll(u * 2)
    if chunks == (20, 10):
        assert "u axis 1: 3 chunks, block by block, with a halo of 3 for np.roll" in text
    if chunks == (50, 4):
        assert "u axis 1: rechunked from 8 chunks to one: a roll by 3 needs more than" in text


def test_mixed_numpy_and_dask_arguments_and_pytree_outputs():
    x = da.from_array(X, chunks=(64, 48))
    y = RNG.standard_normal(X.shape).astype(np.float32)  # NumPy, chunked to match x
    got = two(x, y)
    assert isinstance(got["sum"], da.Array) and got["scaled"][1] == 7
    assert got["sum"].chunks == x.chunks
    close(threads(got), np_two(X, y))
    close(threads(chain(x, y)), np_chain(X, y))
    close(threads(chain(y, x)), np_chain(y, X))
    close(threads(chain(x, 0.5)), np_chain(X, 0.5))


def test_a_value_computed_from_the_shape_keeps_its_whole_meaning():
    """x.shape[0] is 203, not a block's 64: blocks run the whole trace's program."""
    x = da.from_array(X, chunks=(64, 16))
    assert shape_baked.lower(x).rechunked() == []
    close(threads(shape_baked(x)), np_shape_baked(X))


def test_writing_into_a_dask_argument_is_refused():
    @jitc.jit
    def bump(x):
        x += 1
        return x

    with pytest.raises(UnsupportedError, match="bump: called with dask arrays.*immutable"):
        bump(da.from_array(X, chunks=(64, 48)))


def test_unknown_chunk_sizes_are_refused():
    x = da.from_array(X, chunks=(64, 48))
    unknown = x[x[:, 0] > 0]
    with pytest.raises(
        UnsupportedError,
        match="np_chain: argument 'x' is a dask array of unknown chunk sizes.*compute_chunk_sizes",
    ):
        chain(unknown, 1.0)


def test_returning_a_dask_argument_gives_it_back():
    x = da.from_array(X, chunks=(64, 48))
    ident = jitc.jit(lambda a, b: (a, a + b))
    got = ident(x, 1.0)
    assert got[0] is x
    close(threads(got[1]), X + 1.0)


def test_each_block_shape_compiles_once():
    x = da.from_array(X, chunks=(64, 48))
    f = jitc.jit(np_chain)
    threads(f(x, 1.5))
    threads(f(x, 2.5))
    (plan,) = f._chunk_plans.values()
    assert sorted(_compiled()[plan.sref.token]) == [(0, (11,)), (0, (64,))]


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_local_cluster_with_worker_processes(cluster_client):
    x = da.from_array(X, chunks=(64, 16))
    out = (layernorm(x, G, B).sum(axis=0), two(x, X)["scaled"][0], stats(x.astype(np.float64)))
    got = cluster_client.compute(out, sync=True)
    close(got[0], np_layernorm(X, G, B).sum(axis=0), rtol=1e-4)
    close(got[1], X * 3)
    close(got[2], np_stats(X.astype(np.float64)), rtol=1e-12)
    # every worker process compiled each stage once per block shape: the row chunks' 16
    # columns, and layernorm's three stages
    for per_plan in cluster_client.run(_compiled).values():
        for programs in per_plan.values():
            assert len(programs) == len(set(programs)) <= 6


def _compiled() -> dict:
    """StageRef token -> the (stage, block extents) this process compiled programs for."""
    from jitc.chunked.blocks import _PROGRAMS

    out: dict = {}
    for key in _PROGRAMS:
        if isinstance(key, tuple):
            out.setdefault(key[0], []).append(key[1:])
    return out


def _slow(block):
    time.sleep(0.3)
    return block


def test_a_worker_killed_mid_compute_still_gives_the_answer(cluster_client):
    x = da.from_array(X, chunks=(32, 48)).map_blocks(_slow, meta=X[:0, :0])
    future = cluster_client.compute(layernorm(x, G, B))
    time.sleep(0.5)
    victim = list(cluster_client.scheduler_info()["workers"])[0]
    cluster_client.run(os._exit, 1, workers=[victim], on_error="ignore")
    close(future.result(timeout=120), np_layernorm(X, G, B))


def test_static_arguments_and_keywords_pass_through():
    scale = jitc.jit(lambda x, k, *, shift: x * k + shift, static_argnums=1)
    x = da.from_array(X, chunks=(64, 48))
    close(threads(scale(x, 3, shift=x)), X * 3 + X)


def _kernel_threads():
    import numba

    from jitc.chunked.blocks import _share_of_the_machine

    _share_of_the_machine()
    return numba.get_num_threads()


def test_workers_run_kernels_on_their_share_of_the_cores(cluster_client):
    """Two single-threaded workers on one machine: jitc's kernels in each use one thread."""
    workers = list(cluster_client.scheduler_info()["workers"])
    futures = [cluster_client.submit(_kernel_threads, pure=False, workers=[w]) for w in workers]
    assert cluster_client.gather(futures) == [1, 1]


def np_every_kind(x, m):
    return (
        x.sum(),
        x.prod(axis=0),
        x.max(axis=(0, 1)),
        x.min(axis=0, keepdims=True),
        (x > 0).all(axis=0),
        (x > 2).any(),
        x.mean(),
        (x * m).sum(axis=1),
    )


every_kind = jitc.jit(np_every_kind)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint8, np.float32])
def test_every_reduction_kind_across_blocks(dtype):
    data = (
        (RNG.standard_normal((37, 23)) * 3).astype(dtype)
        if dtype != np.uint8
        else RNG.integers(0, 255, (37, 23)).astype(np.uint8)
    )
    m = RNG.integers(0, 3, (37, 23)).astype(dtype)
    x = da.from_array(data, chunks=(10, 7))
    got = threads(every_kind(x, m))
    want = np_every_kind(data, m)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-12 if dtype == np.float64 else 2e-5)
    assert every_kind.lower(x, m).rechunked() == []


def test_argmax_and_float16_sums_run_whole_along_a_chunked_axis():
    """argmax's partials do not combine, and NumPy's float16 sum rounds every add: both
    keep NumPy's answer by computing that axis whole."""
    f = jitc.jit(lambda x, h: (x.argmax(axis=0), h.sum(axis=0)))
    h = X.astype(np.float16)
    x, hx = da.from_array(X, chunks=(64, 48)), da.from_array(h, chunks=(64, 48))
    lines = f.lower(x, hx).rechunked()
    assert any("argmax" in ln for ln in lines) and any("float16" in ln for ln in lines)
    got = threads(f(x, hx))
    np.testing.assert_array_equal(got[0], X.argmax(axis=0))
    np.testing.assert_array_equal(got[1], h.sum(axis=0))


def test_matmul_contraction_chunked_sums_partial_products():
    x = da.from_array(X.astype(np.float64), chunks=(64, 20))
    w = W.astype(np.float64)
    f = jitc.jit(lambda x, w: x @ w)
    assert "partial sum per block, combined across 3 blocks" in f.lower(x, w).as_text()
    close(threads(f(x, w)), X.astype(np.float64) @ w, rtol=1e-12)


def test_repeated_calls_reuse_the_plan_and_programs():
    f = jitc.jit(np_layernorm)
    x = da.from_array(X, chunks=(64, 16))
    close(threads(f(x, G, B)), np_layernorm(X, G, B))
    close(threads(f(x, G * 2, B)), np_layernorm(X, G * 2, B))
    assert len(f._chunk_plans) == 1


def test_jitc_log_says_which_axes_are_rechunked(caplog):
    x = da.from_array(X, chunks=(64, 48))
    f = jitc.jit(np_rolls)
    with caplog.at_level("INFO", logger="jitc"):
        f(x, x)
    got = [r.getMessage() for r in caplog.records if "on dask arrays" in r.getMessage()]
    assert got == [
        f"np_rolls on dask arrays: {a} axis 0: rechunked from 4 chunks to one: "
        f"slice at {__file__}:{np_rolls.__code__.co_firstlineno + 2} takes part of it"
        for a in "uv"
    ]


def test_many_partials_combine_in_a_tree_and_tasks_stay_small():
    """40 row blocks: no combine task reads more than SPLIT_EVERY partials, and a jitc
    kernel folds them; the graph holds the program reference once, and it pickles small
    (no compiled code)."""
    import cloudpickle

    from jitc.chunked.blocks import SPLIT_EVERY, StageRef
    from jitc.chunked.stages import _combiner

    x = da.from_array(X.astype(np.float64), chunks=(5, 48))
    y = stats(x)
    close(threads(y), np_stats(X.astype(np.float64)), rtol=1e-12)
    graph = dict(y[0].__dask_graph__())
    combines = [
        t
        for t in graph.values()
        if isinstance(t, tuple) and t and getattr(t[0], "__name__", "") == "combine"
    ]
    assert combines and max(len(t) - 2 for t in combines) <= SPLIT_EVERY
    assert _combiner("sum")._cache  # compiled: the partials went through a jitc kernel
    refs = [v for v in graph.values() if isinstance(v, StageRef)]
    assert len(refs) == 1 and len(cloudpickle.dumps(refs[0])) < 8000
