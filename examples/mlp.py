"""A 2-layer MLP (relu, softmax output) with its weights as closure constants.

python examples/mlp.py                  # runs on the reference backend, checks NumPy
jitc show examples/mlp.py:mlp --arg f32[1,512]
"""

import numpy as np

import jitc

N_IN, N_HIDDEN, N_OUT = 512, 256, 10

_rng = np.random.default_rng(0)
W1 = (_rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN)).astype(np.float32)
b1 = (_rng.standard_normal(N_HIDDEN) * 0.1).astype(np.float32)
W2 = (_rng.standard_normal((N_HIDDEN, N_OUT)) / np.sqrt(N_HIDDEN)).astype(np.float32)
b2 = (_rng.standard_normal(N_OUT) * 0.1).astype(np.float32)


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@jitc.jit
def layer(x, W, b):
    """One dense layer with a softmax output, weights passed as arguments."""
    return softmax(np.maximum(x @ W + b, 0))


@jitc.jit
def mlp(x):
    """x: (batch, 512) float32 -> class probabilities (batch, 10); W1, b1, W2, b2 are constants."""
    h = np.maximum(x @ W1 + b1, 0)
    return softmax(h @ W2 + b2)


def main(backend="reference"):
    x = _rng.standard_normal((4, N_IN)).astype(np.float32)
    for fn, args in [(mlp, (x,)), (layer, (x, W1, b1))]:
        got = fn.lower(*args).compile(backend=backend)(*args)
        want = fn.fun(*args)  # the same function run by NumPy
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        print(
            f"{fn.__name__}: {backend} matches NumPy, {got.shape} {got.dtype}, "
            f"max abs diff {np.abs(got - want).max():.1e}"
        )


if __name__ == "__main__":
    main()
