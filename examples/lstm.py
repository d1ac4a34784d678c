"""A 3-layer stacked LSTM (input 60, hidden 60, batch 1), weights as closure constants.

    python examples/lstm.py
    jitc aot examples/lstm.py:step --arg f32[1,60] --arg f32[1,60] --arg f32[1,60] \\
        --arg f32[1,60] --arg f32[1,60] --arg f32[1,60] --arg f32[1,60] -o build/
"""

import numpy as np

import jitc

N_INPUT, N_HIDDEN, N_LAYERS, BATCH = 60, 60, 3, 1

_rng = np.random.default_rng(0)
_scale = 1 / np.sqrt(N_HIDDEN)
# Per layer: W maps [input, h] -> the four gates (i, f, g, o); b is their bias.
WEIGHTS = [
    (
        (_rng.uniform(-_scale, _scale, (n_in + N_HIDDEN, 4 * N_HIDDEN))).astype(np.float32),
        (_rng.uniform(-_scale, _scale, 4 * N_HIDDEN)).astype(np.float32),
    )
    for n_in in [N_INPUT] + [N_HIDDEN] * (N_LAYERS - 1)
]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def cell(x, h, c, W, b):
    z = np.concatenate([x, h], axis=-1) @ W + b
    i, f, g, o = np.split(z, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, c


@jitc.jit
def step(x, h0, c0, h1, c1, h2, c2):
    """One time step: x and each state (1, 60) float32 -> the six new states."""
    h0, c0 = cell(x, h0, c0, *WEIGHTS[0])
    h1, c1 = cell(h0, h1, c1, *WEIGHTS[1])
    h2, c2 = cell(h1, h2, c2, *WEIGHTS[2])
    return h0, c0, h1, c1, h2, c2


@jitc.jit
def unroll(xs, h0, c0, h1, c1, h2, c2):
    """N steps over xs (N, 1, 60), unrolled at trace time; returns (outputs, states)."""
    states = (h0, c0, h1, c1, h2, c2)
    outputs = []
    for t in range(xs.shape[0]):  # a static trip count: the shape is known when tracing
        states = step.fun(xs[t], *states)  # the plain function, inlined
        outputs.append(states[4])
    return np.stack(outputs), states


def main(backend="reference", n_steps=8):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, N_INPUT)).astype(np.float32)
    states = tuple(np.zeros((BATCH, N_HIDDEN), np.float32) for _ in range(2 * N_LAYERS))
    xs = rng.standard_normal((n_steps, BATCH, N_INPUT)).astype(np.float32)
    for fn, args in [(step, (x, *states)), (unroll, (xs, *states))]:
        got = fn.lower(*args).compile(backend=backend)(*args)
        want = fn.fun(*args)  # the same function run by NumPy
        flat_got = [got] if isinstance(got, np.ndarray) else list(_leaves(got))
        flat_want = [want] if isinstance(want, np.ndarray) else list(_leaves(want))
        assert len(flat_got) == len(flat_want)
        for g, w in zip(flat_got, flat_want):
            assert g.dtype == w.dtype == np.float32 and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        diff = max(np.abs(g - w).max() for g, w in zip(flat_got, flat_want))
        print(
            f"{fn.__name__}: {backend} matches NumPy, {len(flat_got)} arrays, "
            f"max abs diff {diff:.1e}"
        )


def _leaves(tree):
    for t in tree:
        if isinstance(t, (tuple, list)):
            yield from _leaves(t)
        else:
            yield t


if __name__ == "__main__":
    main()
