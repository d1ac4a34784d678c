"""NumPy's mutation semantics on backend="cuda" under the simulator: every program of
tests/test_mutation.py, traced-index writes (scatter kernels) included, with NumPy as the
oracle (returned values and every argument after the call)."""

import pytest

import jitc
from tests import test_mutation as m


@pytest.mark.parametrize("fn,make", m.PROGRAMS, ids=[p[0].__name__ for p in m.PROGRAMS])
def test_mutation_on_cuda_matches_numpy(fn, make):
    m.assert_same_effects(fn, make, jitc.jit(fn, backend="cuda"), calls=1)


def test_a_traced_index_out_of_bounds_is_an_index_error():
    idx = m.I.copy()
    idx[1] = 99
    with pytest.raises(IndexError, match="scatter"):
        jitc.jit(m.setitem_traced_index, backend="cuda")(m.V.copy(), idx)
