"""NumPy's mutation semantics on backend="cuda" under the simulator: every program of
tests/test_mutation.py, traced-index writes (scatter kernels) included, with NumPy as the
oracle (returned values and every argument after the call)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import jitc
from tests import test_mutation as m
from tests import test_region_writes as r


@pytest.mark.parametrize("fn,make", m.PROGRAMS, ids=[p[0].__name__ for p in m.PROGRAMS])
def test_mutation_on_cuda_matches_numpy(fn, make):
    m.assert_same_effects(fn, make, jitc.jit(fn, backend="cuda"), calls=1)


def test_a_traced_index_out_of_bounds_is_an_index_error():
    idx = m.I.copy()
    idx[1] = 99
    with pytest.raises(IndexError, match="scatter"):
        jitc.jit(m.setitem_traced_index, backend="cuda")(m.V.copy(), idx)


def test_submit_chains_and_writes_back_on_cuda():
    from tests import test_async as a

    f = jitc.jit(a.affine, backend="cuda")
    first = f.submit(a.X, 1.0)
    chained = f.submit(first, first)
    expect = a.X * 0.5 + 1.0
    np.testing.assert_array_equal(chained.result(), expect * 0.5 + expect)
    x, y = np.arange(6.0), np.full(6, 2.0)
    assert jitc.jit(a.bump, backend="cuda").submit(x, y).result() == (np.arange(6.0) + 2).sum()
    np.testing.assert_array_equal(x, np.arange(6.0) + 2.0)


@pytest.mark.parametrize("fn,make", r.PROGRAMS, ids=[p[0].__name__ for p in r.PROGRAMS])
def test_region_writes_on_cuda_match_numpy(fn, make):
    r.assert_same_effects(fn, make(), "cuda")


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(program=r.write_programs())
def test_random_region_writes_on_cuda_match_numpy(program):
    shape, writes = program
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(shape), rng.standard_normal(int(np.prod(shape)))
    r.assert_same_effects(r.make_program(writes), (x, v), "cuda")


def test_a_chain_of_region_writes_copies_the_argument_once_on_cuda():
    """The first kernel copies the argument into the result; then one kernel computes the
    four slabs' values into their regions, in place."""
    from jitc.backends.cuda.program import Launch

    compiled = jitc.jit(r.slabs, backend="cuda").lower(*r.slab_args(9, 3)).compile()
    steps = [s for s in compiled.executable.program.steps if isinstance(s, Launch)]
    copies = [s for s in steps if "out0[i] = a0[i]" in s.kernel.source]
    assert len(copies) == 1 and len(steps) == 2, [s.kernel.name for s in steps]


def test_slab_updates_of_an_ocean_model_on_cuda_match_numpy():
    r.test_slab_updates_of_an_ocean_model_match_numpy("cuda")
