"""Loops of scalar work compiled into one kernel with the loops inside (issue 36, lowering:
backends/cpu/scalar_loop.py), written as NumPy users write them. NumPy running the same
function is the oracle; the program is checked to hold one loop kernel and no per-step
branches where the loop is scalar work, and the driver's per-step kernels where it is not."""

import inspect

import numpy as np
import pytest

import jitc
from benchmarks.workloads import cholesky_in_place, cholesky_loops, durbin
from jitc.backends.cpu.executable import CpuExecutable
from jitc.backends.cpu.loops import Sizes
from jitc.backends.cpu.scalar_loop import scalar_loop
from jitc.core.ir_text import parse_graph
from tests.test_loops import aot_matches_numpy, matches_numpy
from tests.test_windows import _csr, cholesky_rows, csr_matvec, levinson, levinson_durbin

RNG = np.random.default_rng(36)


def prefix_sums(a):
    """Each step reads what the step before wrote into the same array."""
    out = np.empty_like(a)
    out[0] = a[0]
    for k in range(1, a.shape[0]):
        out[k] = out[k - 1] + a[k]
    return out


def collatz_steps(n):
    """Integer scalars only: a while on a traced test, an if inside it."""
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def bisect_sqrt(c, tol):
    """Float scalars carried by a while, max() of a traced value."""
    lo, hi = 0.0, max(c, 1.0)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid * mid > c:
            hi = mid
        else:
            lo = mid
    return lo


def counts_of(bins, idx):
    """`counts[b] += 1`: a read and a write of the same element per step, int64."""
    counts = np.zeros(bins, dtype=np.int64)
    for k in range(idx.shape[0]):
        counts[idx[k]] += 1
    return counts


def float32_decay(x, steps):
    """float32 arrays: the carried element keeps NumPy's float32 rounding."""
    for t in range(steps):
        x[t % x.shape[0]] = x[t % x.shape[0]] * np.float32(0.5) + np.float32(1.0)
    return x


def walk_back(a, steps):
    """An int carried from 0 that is no loop index (it counts down): its negative values
    index from the end, as NumPy's do."""
    k = 0
    s = 0.0
    for _ in range(steps):
        s += a[k] * (k - 0.5)
        k -= 1
    return s, k


def stencil(a, n):
    """`a[i - 1]` for a loop index from 1: never negative (its wrap is folded away)."""
    s = 0.0
    for i in range(1, n):
        s += a[i - 1] * (i + 1) - a[i - 2 + 1]
    return s


def stencil_from_0(a, n):
    """From 0 the first read is a[-1], as NumPy's is."""
    s = 0.0
    for i in range(n):
        s += a[i - 1] * (i + 1)
    return s


def gauss_seidel(u, f, sweeps):
    """Issue 36's 2-d sweep: every index's range is known, so no read or write is checked."""
    n = u.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - f[i, j])
    return u


def _spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


CASES = [
    (cholesky_loops, lambda: (_spd(24),), ()),
    (prefix_sums, lambda: (RNG.standard_normal(50),), ()),
    (collatz_steps, lambda: (27,), ()),
    (bisect_sqrt, lambda: (2.0, 1e-12), ()),
    (counts_of, lambda: (7, RNG.integers(-7, 7, 40)), ("bins",)),
    (float32_decay, lambda: (RNG.random(5, dtype=np.float32), 23), ()),
    (walk_back, lambda: (RNG.random(9), 9), ()),
    (stencil, lambda: (RNG.random(9), 9), ()),
    (stencil_from_0, lambda: (RNG.random(9), 9), ()),
    (cholesky_rows, lambda: (_spd(24),), ()),  # sums over windows: loops over their extent
    (cholesky_in_place, lambda: (_spd(24),), ()),
    (csr_matvec, lambda: _csr(20, 30), ()),
    (gauss_seidel, lambda: (RNG.random((12, 12)), RNG.random((12, 12)), 3), ()),
]


def _loop_kernels(fn, args, static=()):
    """(kernels computing a whole loop, loop branches the driver runs) of fn's program."""
    lowered = jitc.jit(fn, static_argnames=static).lower(*args)
    kernels = lowered.compile("cpu").executable.program.kernels
    whole = [k for k in kernels if any("while " in b.source for b in k.bodies)]
    return len(whole), sum(k.branch is not None for k in kernels)


@pytest.mark.parametrize("fn, make, static", CASES, ids=[c[0].__name__ for c in CASES])
def test_scalar_loops_run_as_one_kernel_and_match_numpy(fn, make, static):
    matches_numpy(fn, make(), static, "cpu", 1e-13, 0)
    assert _loop_kernels(fn, make(), static) == (1, 0)


def test_indices_below_known_stops_are_read_and_written_unchecked():
    """As numba's own loop: i - 1, i + 1 and (i - 1) * n + j stay inside the array for
    indices below their loops' static stops, so the kernel holds no bound check."""
    u, f = RNG.random((12, 12)), RNG.random((12, 12))  # 9 x 9: short loops unroll
    kernels = jitc.jit(gauss_seidel).lower(u, f, 3).compile("cpu").executable.program.kernels
    (body,) = [b.source for k in kernels for b in k.bodies if "while " in b.source]
    assert body.count("while ") == 3 and "IndexError" not in body


def test_levinson_with_its_window_writes_is_one_kernel():
    """Windows written from their own reversal (`f[:k + 1] = f[:k + 1] - ef * f[k::-1]`:
    through a scratch row, NumPy's right side first) and dots of windows aligned by
    their static bounds, fused with the writes that read them."""
    n = 30
    lags = np.arange(n + 1)  # a damped cosine's autocorrelations: well conditioned
    r = np.exp(-0.5 * lags) * np.cos(0.1 * lags)
    cases = [
        (levinson_durbin, (r, n), ("order",)),
        (levinson, (r[:n], r[1:]), ()),
        (durbin, (r / r[0],), ()),
    ]
    for fn, args, static in cases:
        matches_numpy(fn, args, static, "cpu", 1e-10, 1e-12)
        assert _loop_kernels(fn, args, static) == (1, 0)


def _window_cases():
    """Programs reading windows in reverse (`y[:k][::-1]`, `r[k:0:-1]`, `f[k::-1]`)."""
    n = 30
    lags = np.arange(n + 1)
    r = np.exp(-0.5 * lags) * np.cos(0.1 * lags)
    return [
        (durbin, (r / r[0],), ()),
        (levinson_durbin, (r, n), ("order",)),
        (levinson, (r[:n], r[1:]), ()),
    ]


def test_windows_read_in_reverse_loop_over_unclipped_positions():
    """`y[:k][::-1]` reads y at clip(k - 1 - t, 0, n - 1): a clip LLVM cannot see through
    (a gather per element). The body holds the loop a second time without the clips,
    behind a test of the window's bounds made before it."""
    (fn, args, static) = _window_cases()[0]
    kernels = jitc.jit(fn).lower(*args).compile("cpu").executable.program.kernels
    (body,) = [b.source for k in kernels for b in k.bodies if "while " in b.source]
    loops = body.split("for ")[1:]
    unclipped = [loop for loop in loops if "min(max(" not in loop and " if (" not in loop]
    assert len(unclipped) >= 2 and body.count("        else:") >= 2


def test_the_clipped_loop_taken_where_the_bounds_test_fails_matches_numpy(monkeypatch):
    """The loop with its clips still runs where the test before the loop fails: forced
    here, as every window of these programs passes it."""
    from jitc.backends.cpu import scalar_loop as module

    monkeypatch.setattr(module._Emitter, "_extremes", lambda self, form: ("-1", "-1"))
    for fn, args, static in _window_cases():
        matches_numpy(fn, args, static, "cpu", 1e-10, 1e-12)
        lowered = jitc.jit(fn, static_argnames=static).lower(*args)
        kernels = lowered.compile("cpu").executable.program.kernels
        assert any("if -1 >= " in b.source for k in kernels for b in k.bodies)


def jacobi_sweeps(u, sweeps):
    for _ in range(sweeps):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
    return u


def test_a_loop_of_vector_work_runs_per_step_kernels():
    args = (RNG.random(30), 12)
    matches_numpy(jacobi_sweeps, args, (), "cpu", 1e-13, 0)
    whole, branches = _loop_kernels(jacobi_sweeps, args)
    assert whole == 0 and branches > 0


def read_past(a, n):
    s = 0.0
    for k in range(n):
        s += a[k]
    return s


def write_past(out, n):
    for k in range(n):
        out[k] = k * 2.0
    return out


def copy_past(a, out, n):
    for k in range(n):
        out[k] = a[k] + 1.0
    return out


def read_one_past(a):
    """Static bounds whose reach passes the end: the check stays, NumPy's IndexError."""
    s = 0.0
    for i in range(1, a.shape[0]):
        s += a[i + 1]
    return s


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize(
    "fn, args, what, text",
    [
        (read_past, lambda: (np.ones(5), 6), r"indexing \(gather\)", "s += a[k]"),
        (write_past, lambda: (np.ones(5), 6), r"assignment \(scatter\)", "out[k] ="),
        (copy_past, lambda: (np.ones(5), np.ones(9), 6), "indexing or assignment", "out[k] ="),
        (read_one_past, lambda: (np.ones(40),), r"indexing \(gather\)", "s += a[i + 1]"),
    ],
    ids=["read", "write", "read_and_write", "static_stop_past_the_end"],
)
def test_an_index_out_of_bounds_in_a_scalar_loop_names_the_line(fn, args, what, text):
    with pytest.raises(IndexError):  # NumPy's verdict
        fn(*args())
    with pytest.raises(IndexError, match=rf"{what} in .*test_scalar_loop.py:{_line(fn, text)}"):
        jitc.jit(fn)(*args())


def guarded_read(a, i):
    r = 0.0
    if i < a.shape[0]:
        r = a[i] * 2.0
    return r


def zero_trip_read(a, i, n):
    s = 0.0
    for _ in range(n):
        s += a[i]
    return s


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_a_read_in_a_branch_not_taken_or_a_loop_not_run_does_not_fail(backend):
    """The read stays inside the body that may not run (it used to be hoisted out of it,
    and raised IndexError where NumPy never reads)."""
    a = np.arange(5.0)
    matches_numpy(guarded_read, (a, 10), (), backend, 0, 0)
    matches_numpy(guarded_read, (a, 3), (), backend, 0, 0)
    matches_numpy(zero_trip_read, (a, 10, 0), (), backend, 0, 0)


# One step: x[i] = 1, then x[0] = the x[i] from before that write. A kernel writing x in
# place would read the new x[i]: the emitter must refuse the loop, the driver run it.
OLD_VERSION_READ = """
graph reads_old(%0: f64[4], %1: s64[]) {
  %2 = pred[] constant(), value={true}
  %3 = (f64[4]) while(%2, %0, %1), carried=1, stops=values {
    graph reads_old_step(%0: f64[4], %1: s64[]) {
      %2 = f64[] constant(), value={1.0}
      %3 = f64[4] scatter(%0, %1, %2), axis=0, mode=set
      %4 = f64[] gather(%0, %1), axis=0
      %5 = s64[] constant(), value={0}
      %6 = f64[4] scatter(%3, %5, %4), axis=0, mode=set
      %7 = pred[] constant(), value={false}
      return (%6, %7)
    }
  }
  %4 = f64[4] get(%3), index=0
  return (%4)
}
"""


def test_a_step_reading_an_element_it_overwrote_is_not_one_kernel():
    g = parse_graph(OLD_VERSION_READ)
    (loop,) = [n for n in g.nodes if n.op == "while"]
    assert scalar_loop(loop, [((4,), np.dtype(np.float64))], Sizes(), rows=True) is None
    x = np.array([5.0, 6.0, 7.0, 8.0])
    want = x.copy()
    old = want[2]
    want[2] = 1.0
    want[0] = old
    (got,) = CpuExecutable(g)(x, np.int64(2))
    np.testing.assert_array_equal(got, want)


def test_a_scalar_loop_compiles_ahead_of_time_into_the_object(tmp_path):
    aot_matches_numpy(cholesky_loops, ("f64[16,16]",), lambda: (_spd(16),), tmp_path)


def test_a_window_written_from_itself_runs_per_step_ahead_of_time(tmp_path):
    """Its scratch row needs an allocation an AOT object cannot make: the driver steps the
    loop instead (before: numba's "NRT required but not enabled")."""
    r = np.exp(-0.3 * np.arange(12))
    y = np.linspace(1.0, 2.0, 12)
    aot_matches_numpy(levinson, ("f64[12]", "f64[12]"), lambda: (r.copy(), y.copy()), tmp_path)


def window_tests(y, n):
    """np.any over a window: a reduction the loop kernel does not take (a sum is all)."""
    c = 0
    for k in range(n):
        c += np.any(y[:k] > 0.5)
    return c


def window_moments(y, n):
    """Two sums over one window, fused into one reduction: not one sum the loop takes."""
    m = 0.0
    for k in range(1, n):
        m += y[:k].sum() / k + (y[:k] * y[:k]).sum()
    return m


def normalized_steps(y, n):
    """A sum fused with the array it sums (`t`, an output too): vector work, per step."""
    c = 0.0
    for _ in range(n):
        t = y * 0.5
        s = t.sum()
        y = t / s
        c += s
    return c, y


@pytest.mark.parametrize(
    "fn, make",
    [
        (window_tests, lambda: (RNG.random(12), 12)),
        (normalized_steps, lambda: (RNG.random(8), 8)),
        (window_moments, lambda: (RNG.random(12), 12)),
        (cholesky_rows, lambda: (_spd(12).astype(np.float32),)),  # NumPy sums float32 pairwise
    ],
    ids=["any", "array_and_sum", "two_sums", "float32_sum"],
)
def test_reductions_the_loop_kernel_does_not_take_run_per_step(fn, make):
    matches_numpy(fn, make(), (), "cpu", 1e-5, 1e-6)
    assert _loop_kernels(fn, make())[1] > 0  # the driver steps the loop
