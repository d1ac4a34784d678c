"""np.cov's weights must be known when tracing: NumPy checks their values first."""

import numpy as np
import pytest

import jitc
from jitc.core.errors import UnsupportedError


def test_traced_weights_are_refused_by_name_at_the_users_line():
    x = np.arange(12.0).reshape(3, 4)

    def f(x, w):
        return np.cov(x, fweights=w)

    with pytest.raises(
        UnsupportedError, match=r"np.cov: argument fweights must be known.*test_statistics.py:14"
    ):
        jitc.jit(f, backend="reference")(x, np.ones(4, np.int64))
