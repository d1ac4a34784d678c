"""Hypothesis: random sequences of views and in-place operations, against NumPy.

Each example is a few steps applied to the arguments x (2-d) and y (1-d): take a view of x
through views of views (slices with any start, stop and step, transposes, a row), then
write into it in place (op=, setitem from a scalar, from y, from a reversed copy of itself,
out=) or write part of y from it. The jitted function must leave both arguments, and return,
what NumPy does.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitc

EXAMPLES = {"reference": 60, "cpu": 12}  # cpu compiles kernels for every example


def _index(n):
    return st.one_of(st.none(), st.integers(-n - 1, n + 1))


@st.composite
def view_step(draw):
    kind = draw(st.sampled_from(["slice", "slice", "T", "row"]))
    if kind == "slice":
        return (
            "slice",
            tuple(
                slice(
                    draw(_index(6)), draw(_index(6)), draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
                )
                for _ in range(2)
            ),
        )
    return (kind, draw(st.integers(0, 5)))


STEP = st.tuples(
    st.lists(view_step(), max_size=3),
    st.sampled_from(["iadd", "imul", "set", "from_y", "reversed", "out", "to_y"]),
    st.sampled_from([0.5, 2.0, -1.0]),
)


def view_of(x, steps):
    v = x
    for kind, arg in steps:
        if kind == "slice":
            v = v[arg[: v.ndim]]
        elif kind == "T":
            v = v.T
        elif v.ndim == 2 and v.shape[0]:
            v = v[arg % v.shape[0]]
    return v


def write(v, y, op, c):
    if op == "iadd":
        v += c
    elif op == "imul":
        v *= c
    elif op == "set":
        v[...] = c
    elif op == "from_y":
        k = v.shape[-1] if v.ndim else 1
        v[...] = y[:k] if k <= y.size else c
    elif op == "reversed":  # overlapping source and destination: NumPy copies first
        v[...] = v[::-1]
    elif op == "out":
        np.multiply(v, c, out=v)
    else:  # to_y
        k = min(v.size, y.size)
        y[:k] += c * v.reshape(-1)[:k]


def program(steps):
    def f(x, y):
        for views, op, c in steps:
            write(view_of(x, views), y, op, c)
        return x.sum() * y

    return f


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_view_and_in_place_sequences_match_numpy(backend):
    @settings(
        max_examples=EXAMPLES[backend],
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        steps=st.lists(STEP, min_size=1, max_size=4), rows=st.integers(1, 5), cols=st.integers(1, 6)
    )
    def check(steps, rows, cols):
        rng = np.random.default_rng(rows * 10 + cols)
        x0, y0 = rng.standard_normal((rows, cols)), rng.standard_normal(cols + 1)
        x, y = x0.copy(), y0.copy()
        want = program(steps)(x, y)
        gx, gy = x0.copy(), y0.copy()
        got = jitc.jit(program(steps), backend=backend)(gx, gy)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gx, x, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gy, y, rtol=1e-12, atol=1e-12)

    check()
