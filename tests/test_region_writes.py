"""Region writes (issue 35): `x[key] = v` into an array in memory (an argument, a captured
array, an earlier write's result) runs as a kernel over the region alone, in that array's
memory, and its kernels take sizes at run time. NumPy is the oracle: the values returned and
the caller's arrays after the call, on the reference and cpu backends (the cuda simulator
runs the same programs: tests/cuda_sim/test_sim_mutation.py)."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitc
from jitc import backends
from jitc.fusion.region import is_region_write, region_of
from jitc.stages import optimized
from tests.fresh import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BACKENDS = ("reference", "cpu")


def slabs(A, x):
    """The reduced ocean-model write of issue 35: four slabs of a 5-d argument."""
    for ip in range(2):
        for kr in range(2):
            A[1:-2, 2:-2, :, ip, kr] = x * (ip + 2 * kr + 1)
    return A


def slab_args(n, nz, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, n, nz, 2, 2)), rng.random((n - 3, n - 4, nz))


def interior_then_read(u, v):
    """A write into a quarter of an argument, then a read of the whole new version."""
    u[2:-2:2, 1:5] -= v
    return u.sum(axis=0), u[::-1, -1]


def shifted(x):
    """Overlapping source and target: NumPy reads x[:-3] before writing x[3:]."""
    x[3:] = x[:-3] * 2.0
    return x


def through_views(x, v):
    """Writes through chained views, a negative step, an integer index and np.newaxis."""
    y = x[1:, ::-1]
    y[::2, 1:3] = v
    z = y[2]
    z[np.newaxis, ...][0, :2] += 1.0
    return x


def faces(h):
    """The four faces of a halo, each a small write."""
    h[0, 1:-1] = h[1, 1:-1]
    h[-1, 1:-1] = h[-2, 1:-1]
    h[1:-1, 0] = h[1:-1, 1]
    h[1:-1, -1] = h[1:-1, -2]
    return h


def rows_and_columns(h, a, b):
    """Disjoint writes of one shape: one kernel stores the three rows (the column, of
    another shape, is a kernel of its own)."""
    h[0, 1:-1] = a
    h[-1, 1:-1] = b * 2.0
    h[2, 1:-1] += a
    h[1:5, 0] = b
    return h


def reads_an_earlier_region(x, u):
    """The second value reads what the first write wrote: two kernels, in order."""
    x[0:3] = u
    x[3:6] = x[0:3] * 2.0
    return x


def overlapping_writes(x, u):
    """The second region overlaps the first: it must win where they meet."""
    x[0:4] = u
    x[2:6] = u[::-1] + 1.0
    return x


def reads_between_writes(x, u):
    """Reads between three writes of one array: `a` reads what none of the writes before it
    touched (the argument's bytes), `b` what none after it touches (the last version's), `c`
    a box that writes before and after it overlap (only its own version holds it)."""
    x[0:2] = u
    a = x[4:6] * 2.0
    x[2:4] = u + 1.0
    b = x[0:2] + 0.5
    c = x[1:5] * 3.0
    x[4:6] = u * 3.0
    return x, a, b, c


def forwarded_reads(x, u):
    """reads_between_writes without `c`: `a` reads the argument, `b` the last version, and
    the three writes are one kernel."""
    x[0:2] = u
    a = x[4:6] * 2.0
    x[2:4] = u + 1.0
    b = x[0:2] + 0.5
    x[4:6] = u * 3.0
    return x, a, b


def snapshot_between_writes(x, u):
    """A copy of the version between two writes is a result of its own."""
    x[0:2] = u
    y = x.copy()
    x[2:4] = u * 2.0
    return x, y


def strided_rows(A, B):
    """Square roots of strided rows (B's slabs along a middle axis) stored into strided
    rows (a region at the end of A's last axis, an index written against its extent): the
    loop runs on contiguous copies of both (LoopKernel's staged rows)."""
    A[1:-1, 1:, -1] = np.sqrt(B[1:-1, 1:, :, 1]) + B[1:-1, :-1, :, 0]
    return A


def components(v, u):
    """Every component of a vector field's strided interior, one write each: the writes
    fill the last axis, so one row holds them side by side (update_slice.packed_view);
    the third reads its own region of v."""
    v[1:-1:2, 1:, 0] = u
    v[1:-1:2, 1:, 1] = u * 2.0
    v[1:-1:2, 1:, 2] += u
    return v


def rooted_components(v, u):
    """components with square roots: the values are computed on contiguous scratch rows,
    then stored side by side."""
    v[1:, 1:, 0] = np.sqrt(u)
    v[1:, 1:, 1] = np.sqrt(u * 2.0)
    return v


def three_of_four_slabs(A, x):
    """slabs without its last write: the writes leave a hole in each 2 x 2 block."""
    A[1:-2, 2:-2, :, 0, 0] = x
    A[1:-2, 2:-2, :, 0, 1] = x * 2.0
    A[1:-2, 2:-2, :, 1, 0] = x * 3.0
    return A


def reversed_reads(x, r):
    """A new array written in part is a concatenation, whose loop runs in chunks; each
    reads a reversed slice. Before: the chunk's index times the stride was `s_ + i0 * -1`,
    so each chunk after the first read past its slice (garbage, or another element)."""
    y = np.zeros_like(r)
    y[0] = x[0]
    z = np.zeros_like(r)
    z[3:] = x[3:] * 2.0
    return y + r[::-1], z - r[::-2].repeat(2), x + r[::-1]


RNG = np.random.default_rng(1)
PROGRAMS = [
    (slabs, lambda: slab_args(9, 3)),
    (interior_then_read, lambda: (RNG.random((12, 7)), RNG.random((4, 4)))),
    (shifted, lambda: (RNG.random(11),)),
    (through_views, lambda: (RNG.random((8, 9)), RNG.random((4, 2)))),
    (faces, lambda: (RNG.random((7, 6)),)),
    (rows_and_columns, lambda: (RNG.random((7, 6)), RNG.random(4), RNG.random(4))),
    (reads_an_earlier_region, lambda: (RNG.random(8), RNG.random(3))),
    (overlapping_writes, lambda: (RNG.random(8), RNG.random(4))),
    (reads_between_writes, lambda: (RNG.random(8), RNG.random(2))),
    (forwarded_reads, lambda: (RNG.random(8), RNG.random(2))),
    (snapshot_between_writes, lambda: (RNG.random(8), RNG.random(2))),
    (strided_rows, lambda: (RNG.random((6, 5, 3, 4)), RNG.random((6, 5, 4, 2)))),
    (components, lambda: (RNG.random((9, 5, 3)), RNG.random((4, 4)))),
    (rooted_components, lambda: (RNG.random((6, 5, 2)), RNG.random((5, 4)))),
    (three_of_four_slabs, lambda: slab_args(9, 3)),
    (reversed_reads, lambda: (RNG.random(8), RNG.random(8))),
]


def assert_same_effects(fn, args, backend):
    mine = [a.copy() for a in args]
    numpy_args = [a.copy() for a in args]
    want = fn(*numpy_args)
    got = jitc.jit(fn, backend=backend)(*mine)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):  # a sum's order differs by backend: values within rounding
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    for w, g in zip(numpy_args, mine):  # writes are exact
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_region_writes_match_numpy(fn, make, backend):
    assert_same_effects(fn, make(), backend)


def _update_slices(fn, *args):
    graph = jitc.jit(fn).lower(*args).compile().graph
    return [n for n in graph.nodes if is_region_write(n)]


def test_the_slab_writes_stay_region_writes_and_return_the_argument():
    """Four region writes, in one kernel computing their values into the regions, over x's
    own shape (the unit axes the integer indices add are not loops of one element)."""
    A, x = slab_args(12, 3)
    (write,) = _update_slices(slabs, A, x)
    assert write.op == "fusion" and len(region_of(write).writes) == 4
    assert all(o.shape == x.shape for o in region_of(write).value.outputs)
    want = slabs(A.copy(), x)
    assert jitc.jit(slabs)(A, x) is A
    np.testing.assert_array_equal(A, want)


def _region_kernels(fn, *args):
    program = jitc.jit(fn).lower(*args).compile().executable.program
    return [
        k
        for k in program.kernels
        if k.node is not None
        and is_region_write(k.node)
        and "ctypes.data == out.ctypes.data" not in k.bodies[0].source
    ]


def test_writes_of_disjoint_regions_share_one_kernel():
    """The four slabs are one pass over A (their elements share cache lines), and their
    values are computed in it; so are three rows of one shape."""
    A, x = slab_args(9, 3)
    (write,) = _update_slices(slabs, A, x)
    assert len(region_of(write).writes) == 4
    (kernel,) = _region_kernels(slabs, A, x)
    assert kernel.work == x.size
    h, a = np.zeros((7, 6)), np.ones(4)
    rows, column = _update_slices(rows_and_columns, h, a, a)
    assert [len(region_of(n).writes) for n in (rows, column)] == [3, 1]
    assert len(_update_slices(reads_an_earlier_region, np.zeros(8), np.ones(3))) == 2
    assert len(_update_slices(overlapping_writes, np.zeros(8), np.ones(4))) == 2


def test_writes_filling_a_block_store_through_one_packed_row():
    """Where the writes fill the trailing axes below their regions (slabs, components), one
    row of the base holds every write's elements, at literal offsets; a hole in the block
    (three_of_four_slabs) keeps the per-write views."""
    packed = [
        "run_from(" in kernel.bodies[0].source
        for fn, args in [
            (slabs, slab_args(9, 3)),
            (components, (np.zeros((9, 5, 3)), np.ones((4, 4)))),
            (three_of_four_slabs, slab_args(9, 3)),
        ]
        for kernel in _region_kernels(fn, *args)
    ]
    assert packed == [True, True, False]


def test_a_write_over_most_of_its_array_fuses_as_before():
    """Over 2/3 of the array a kernel writing every element of the new version once is
    cheaper than the value written, read back and written into place."""
    assert _update_slices(most_of_it, np.zeros(10), np.ones(9)) == []


def slab_update(T, flux, w, dt=0.1):
    """Slab updates of an ocean model (benchmarks W12): per slab of the 5-d tracer T an upwind
    flux with a tanh limiter along the third axis, written into the 5-d flux a slab at a
    time, then its divergence added to the slab's interior."""
    for ip in range(2):
        for kr in range(2):
            t = T[:, :, :, ip, kr]
            up = np.where(w[:, :, 1:] > 0, t[:, :, :-1], t[:, :, 1:])
            grad = t[:, :, 1:] - t[:, :, :-1]
            flux[1:-1, 1:-1, 1:, ip, kr] = (
                w[1:-1, 1:-1, 1:] * up[1:-1, 1:-1] * np.tanh(4.0 * grad[1:-1, 1:-1])
            )
            T[1:-1, 1:-1, 1:-1, ip, kr] += dt * (
                flux[1:-1, 1:-1, 2:, ip, kr] - flux[1:-1, 1:-1, 1:-1, ip, kr]
            )
    return T, flux


@pytest.mark.parametrize("backend", BACKENDS)
def test_slab_updates_of_an_ocean_model_match_numpy(backend):
    """Region writes whose values read stencils of another array's slabs (rows along a
    middle axis); tanh rounds differently by a few ulp, the rest is exact."""
    rng = np.random.default_rng(3)
    T, w = rng.random((7, 6, 5, 2, 2)), rng.standard_normal((7, 6, 5))
    flux = np.zeros_like(T)
    want = slab_update(T.copy(), flux.copy(), w)
    mine = (T.copy(), flux.copy())
    got = jitc.jit(slab_update, backend=backend)(*mine, w)
    for g, m, x in zip(got, mine, want):
        assert g is m
        np.testing.assert_allclose(g, x, rtol=1e-14, atol=1e-15)


def test_the_writes_of_two_arrays_that_read_each_other_become_two_kernels():
    """flux's slabs read T's, T's read flux's back: each read between two writes reads the
    version holding the same bytes (fusion/forward.py), so each array's four writes are one
    kernel."""
    T, w = np.zeros((7, 6, 5, 2, 2)), np.zeros((7, 6, 5))
    writes = _update_slices(slab_update, T, np.zeros_like(T), w)
    assert [len(region_of(n).writes) for n in writes] == [4, 4]
    x, u = np.zeros(8), np.zeros(2)
    assert [len(region_of(n).writes) for n in _update_slices(forwarded_reads, x, u)] == [3]
    assert len(_update_slices(reads_between_writes, x, u)) == 3


def test_slab_updates_in_a_fresh_process_with_the_default_settings(tmp_path):
    """What a user runs: tiered compiles on a cold cache, calls before and after the kernels
    are ready, then a second grid size; the caller's arrays equal NumPy's after each."""
    out = run(
        tmp_path,
        """
        import sys
        import numpy as np, jitc
        from jitc.runtime import tiered
        sys.path.insert(0, sys.argv[1])
        from tests.test_region_writes import slab_update

        step = jitc.jit(slab_update)
        for n, nz in [(9, 6), (12, 5)]:
            rng = np.random.default_rng(n)
            T, w = rng.random((n, n, nz, 2, 2)), rng.standard_normal((n, n, nz))
            mine, theirs = (T.copy(), np.zeros_like(T)), (T.copy(), np.zeros_like(T))
            for call in range(3):
                got = step(*mine, w)
                slab_update(*theirs, w)
                assert got[0] is mine[0] and got[1] is mine[1]
                for g, x in zip(mine, theirs):
                    np.testing.assert_allclose(g, x, rtol=1e-14, atol=1e-15)
                tiered.wait()
        print("ok")
        """,
        ROOT,
    )
    assert out.split() == ["ok"]


def test_a_second_shape_compiles_no_kernel():
    f = jitc.jit(slabs)
    f(*slab_args(10, 3))
    second = f.lower(*slab_args(13, 4))
    assert backends.get("cpu").cached(optimized(second))


def test_the_write_kernel_runs_over_the_region_alone():
    """The program's kernel for the writes loops over the region's elements; the one copy of
    the array's old contents is skipped when the caller's array is the result (it is
    donated); what lies outside the regions keeps its exact bits (-0.0, a NaN's payload)."""
    A, x = slab_args(10, 3)
    compiled = jitc.jit(slabs).lower(A, x).compile()
    program = compiled.executable.program
    writes = [k for k in program.kernels if k.node is not None and is_region_write(k.node)]
    copies = [k for k in writes if "ctypes.data == out.ctypes.data" in k.bodies[0].source]
    regions = [k.work for k in writes if k not in copies]
    assert len(copies) == 1 and regions == [x.size], [k.work for k in writes]
    sentinel = np.full(A.shape, -0.0)
    sentinel.view(np.int64)[..., 0, 0] = np.int64(0x7FF0_0000_0000_0BAD)  # a NaN's payload
    want = slabs(sentinel.copy(), x)
    compiled(sentinel, x)
    np.testing.assert_array_equal(sentinel.view(np.int64), want.view(np.int64))


def test_a_captured_array_is_written_over_its_region():
    state = np.arange(24.0).reshape(4, 6)

    @jitc.jit
    def step(v):
        state[1:3, 2:4] += v
        return state.sum()

    want = np.arange(24.0).reshape(4, 6)
    want[1:3, 2:4] += 0.5
    assert step(np.full((2, 2), 0.5)) == want.sum()
    np.testing.assert_array_equal(state, want)


# -- random sequences of writes


@st.composite
def keys(draw, shape):
    """A basic-indexing key: per axis an integer or a slice with any step."""
    key = []
    for n in shape:
        if draw(st.booleans()) and n > 1 and draw(st.integers(0, 3)) == 0:
            key.append(draw(st.integers(-n, n - 1)))
            continue
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        start = draw(st.one_of(st.none(), st.integers(-n, n - 1)))
        stop = draw(st.one_of(st.none(), st.integers(-n, n)))
        key.append(slice(start, stop, step))
    return tuple(key)


@st.composite
def write_programs(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=5)))
    writes = [
        (draw(keys(shape)), draw(st.sampled_from(["set", "add", "flip", "scalar"])))
        for _ in range(draw(st.integers(1, 3)))
    ]
    return shape, writes


def make_program(writes):
    def f(x, v):
        for key, kind in writes:
            region = x[key]
            if region.size == 0:
                continue
            if kind == "set":
                x[key] = v.ravel()[: region.size].reshape(region.shape)
            elif kind == "add":
                x[key] += v.ravel()[: region.size].reshape(region.shape)
            elif kind == "flip" and region.ndim:  # source and target overlap
                x[key] = x[key][::-1]
            else:
                x[key] = 7.0
        return x * 1.0, x

    return f


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=write_programs())
def test_random_region_writes_match_numpy(program, backend):
    shape, writes = program
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    v = rng.standard_normal(int(np.prod(shape)))
    assert_same_effects(make_program(writes), (x, v), backend)


def read_after_write(x, v):
    """The first write's old contents are read after it: the array is copied first."""
    t = x[1:3] * 1.0
    x[:4] = v
    x[5:7] = t
    return x


def most_of_it(x, v):
    x[1:] = v
    return x


def test_the_reports_name_each_write_over_a_whole_array(tmp_path):
    x = np.zeros(10)
    copied = jitc.jit(read_after_write).lower(x, np.ones(4)).compile()
    text = copied.fusion_report()
    assert "write into f64[10] (" in text and "80 bytes: its old contents are read" in text
    page = open(copied.report(str(tmp_path / "r.html"))).read()
    assert "Writes over a whole array" in page and "its old contents are read" in page
    over = jitc.jit(most_of_it).lower(x, np.ones(9)).compile().fusion_report()
    assert "the region is over 2/3 of the array" in over
    slab = jitc.jit(slabs).lower(*slab_args(9, 3)).compile()
    assert "a pass over the whole array" not in slab.fusion_report()
    assert "Writes over a whole array" not in open(slab.report(str(tmp_path / "s.html"))).read()
    np.testing.assert_array_equal(copied(x.copy(), np.ones(4)), read_after_write(x.copy(), 1.0))


def smooth_interior(u):
    """A write over most of a vector: the new vector is a concatenate of its ends and the
    new interior; np.roll reads one too."""
    u[1:-1] = 0.5 * (u[:-2] + u[2:]) + 0.25 * np.roll(u, 3)[1:-1]
    return u


@pytest.mark.parametrize("n", [7, 300_001])
def test_a_vector_written_over_most_of_it_is_computed_cell_by_cell(n):
    """A 1-d loop over a concatenate runs each of its cells as a loop of its own (no branch
    per element), also where threads split the vector at points inside the cells."""
    u = np.random.default_rng(4).random(n)
    assert_same_effects(smooth_interior, (u,), "cpu")
    (kernel,) = [
        k
        for k in jitc.jit(smooth_interior).lower(u).compile().executable.program.kernels
        if "s_ = max(lo" in k.bodies[0].source
    ]
    assert kernel.work == n
