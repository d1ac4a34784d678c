"""Quickstart: decorate plain NumPy code, see the traced graph, check the result with NumPy."""

import numpy as np

import jitc


@jitc.jit
def layer(x, W, b):
    y = np.maximum(x @ W + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 16), dtype=np.float32)
    W = rng.standard_normal((16, 8), dtype=np.float32)
    b = rng.standard_normal(8, dtype=np.float32)

    lowered = layer.lower(x, W, b)
    print("traced graph:")
    print(lowered.as_text())
    compiled = lowered.compile()
    print("\noptimized graph:")
    print(compiled.as_text())
    print("\nstats:", compiled.stats())

    got = layer(x, W, b)
    want = layer.fun(x, W, b)  # the same function run by NumPy
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    print(f"\nmatches NumPy: {got.shape} {got.dtype}, max abs diff {np.abs(got - want).max():.2e}")


if __name__ == "__main__":
    main()
