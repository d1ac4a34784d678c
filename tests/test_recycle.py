"""Large results reused once the caller dropped them (backends/native/recycle.py): the
buffer comes back only when nothing references it, and every result is NumPy's."""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pytest

import jitc
from jitc.backends.native import recycle

N = recycle.MIN_BYTES // 4  # float32 results of exactly the smallest recycled size


def affine(x):
    return x * np.float32(2) + np.float32(1)


@pytest.fixture(scope="module")
def f():
    return jitc.jit(affine, backend="cpu")


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(N, dtype=np.float32) for _ in range(3)]


def test_a_dropped_result_gives_its_pages_to_the_next_call(f, inputs):
    x, y, _ = inputs
    r = f(x)
    np.testing.assert_array_equal(r, affine(x))
    dropped = weakref.ref(r)  # no reference of its own
    del r
    r = f(y)
    assert r is dropped()
    np.testing.assert_array_equal(r, affine(y))


def test_a_result_the_caller_keeps_is_never_written_again(f, inputs):
    x, y, z = inputs
    first, second = f(x), f(y)
    third = f(z)
    assert len({first.ctypes.data, second.ctypes.data, third.ctypes.data}) == 3
    for r, a in ((first, x), (second, y), (third, z)):
        np.testing.assert_array_equal(r, affine(a))


def test_a_live_view_keeps_its_base(f, inputs):
    x, y, _ = inputs
    r = f(x)
    every_other = r[::2]
    del r
    again = f(y)
    np.testing.assert_array_equal(every_other, affine(x)[::2])
    np.testing.assert_array_equal(again, affine(y))


def test_threads_never_share_a_result(f, inputs):
    start, failures = threading.Barrier(2), []

    def calls(a):
        start.wait()
        want = affine(a)
        for _ in range(6):
            r = f(a)
            if not np.array_equal(r, want):
                failures.append(a[0])
            del r

    threads = [threading.Thread(target=calls, args=(a,)) for a in inputs[:2]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_only_large_results_are_kept_and_at_most_keep_of_them():
    f32 = np.dtype(np.float32)
    assert recycle.allocator((N - 1,), f32) is np.empty
    assert recycle.allocator((N,), f32) is recycle.empty
    assert recycle.allocator((recycle.MAX_BYTES // 4 + 1,), f32) is np.empty
    shapes = [(N + k,) for k in range(recycle.KEEP + 2)]
    held = [recycle.empty(s, f32) for s in shapes]  # all referenced: none reused
    assert len({a.ctypes.data for a in held}) == len(shapes)
    assert len(recycle._kept) <= recycle.KEEP
