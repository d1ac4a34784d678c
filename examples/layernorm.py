"""Layer normalization over the last axis, as in transformers.

python examples/layernorm.py
jitc show examples/layernorm.py:layernorm --arg f32[64,256] --arg f32[256] --arg f32[256]
"""

import numpy as np

import jitc


@jitc.jit
def layernorm(x, g, b, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * g + b over the last axis; eps is a Python float (weak)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


@jitc.jit
def layernorm_var(x, g, b):
    """The same with np.var, one of the reductions jitc fuses with its consumers."""
    return (x - np.mean(x, axis=-1, keepdims=True)) / np.sqrt(
        np.var(x, axis=-1, keepdims=True) + 1e-5
    ) * g + b


def main(backend="reference"):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 256)) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(256).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    for fn in (layernorm, layernorm_var):
        got = fn.lower(x, g, b).compile(backend=backend)(x, g, b)
        want = fn.fun(x, g, b)  # the same function run by NumPy
        assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        print(
            f"{fn.__name__}: {backend} matches NumPy, {got.shape} {got.dtype}, "
            f"max abs diff {np.abs(got - want).max():.1e}"
        )


if __name__ == "__main__":
    main()
