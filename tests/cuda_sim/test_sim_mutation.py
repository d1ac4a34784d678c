"""NumPy's mutation semantics on backend="cuda" under the simulator: the programs of
tests/test_mutation.py whose writes compile for CUDA, with NumPy as the oracle (returned
values and every argument after the call)."""

import numpy as np
import pytest

import jitc
from jitc.errors import UnsupportedError
from tests import test_mutation as m

SCATTERS = {"setitem_traced_index", "add_at", "copyto_and_put"}  # scatter kernels
PROGRAMS = [p for p in m.PROGRAMS if p[0].__name__ not in SCATTERS]


@pytest.mark.parametrize("fn,make", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_mutation_on_cuda_matches_numpy(fn, make):
    m.assert_same_effects(fn, make, jitc.jit(fn, backend="cuda"), calls=1)


def test_a_traced_index_write_names_the_line_and_the_cpu_backend():
    with pytest.raises(UnsupportedError, match=r"traced index array.*test_mutation.py.*'cpu'"):
        jitc.jit(m.setitem_traced_index, backend="cuda")(m.V.copy(), m.I.copy())
    np.testing.assert_array_equal(m.V, m.V)
