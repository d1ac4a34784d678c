"""A GPT-2 style transformer block in plain NumPy: causal multi-head self-attention and a
GELU MLP, each with a pre-layernorm and a residual. Weights are closure constants.

    python examples/attention.py
    jitc show examples/attention.py:block --arg f32[64,256]

Scalars are Python floats (math.sqrt), not np.sqrt(...): under NumPy 2 (NEP 50) a NumPy
float64 scalar is strongly typed and would turn every float32 activation into float64.
"""

import math

import numpy as np

import jitc

N_CTX, N_EMBD, N_HEAD = 64, 256, 4


def _init(seed, n_embd=N_EMBD):
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    return {
        "ln_1": (1 + w(n_embd), w(n_embd)),
        "ln_2": (1 + w(n_embd), w(n_embd)),
        "c_attn": (w(n_embd, 3 * n_embd), w(3 * n_embd)),
        "c_proj": (w(n_embd, n_embd), w(n_embd)),
        "mlp_fc": (w(n_embd, 4 * n_embd), w(4 * n_embd)),
        "mlp_proj": (w(4 * n_embd, n_embd), w(n_embd)),
    }


BLOCKS = [_init(1), _init(2)]
LN_F = (np.ones(N_EMBD, np.float32), np.zeros(N_EMBD, np.float32))


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layernorm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(var + eps) + b


def linear(x, wb):
    w, b = wb
    return x @ w + b


def attention(x, p, n_head=N_HEAD):
    """Causal multi-head self-attention over x: (T, C)."""
    T, C = x.shape
    hd = C // n_head
    qkv = linear(x, p["c_attn"])  # (T, 3C)
    q, k, v = np.split(qkv, 3, axis=-1)
    # split heads: (T, C) -> (n_head, T, hd)
    q, k, v = (t.reshape(T, n_head, hd).transpose(1, 0, 2) for t in (q, k, v))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)  # (n_head, T, T)
    causal = np.tril(np.ones((T, T), dtype=bool))
    scores = np.where(causal, scores, -1e10)
    out = softmax(scores) @ v  # (n_head, T, hd)
    out = out.transpose(1, 0, 2).reshape(T, C)  # merge heads
    return linear(out, p["c_proj"])


def _block(x, p):
    x = x + attention(layernorm(x, *p["ln_1"]), p)
    return x + linear(gelu(linear(layernorm(x, *p["ln_2"]), p["mlp_fc"])), p["mlp_proj"])


@jitc.jit
def block(x):
    """One transformer block: x (n_ctx, n_embd) float32 -> same shape."""
    return _block(x, BLOCKS[0])


@jitc.jit
def forward(x):
    """Two blocks and the final layernorm."""
    for p in BLOCKS:
        x = _block(x, p)
    return layernorm(x, *LN_F)


def main(backend="reference"):
    x = np.random.default_rng(0).standard_normal((N_CTX, N_EMBD)).astype(np.float32)
    for fn in (block, forward):
        got = fn.lower(x).compile(backend=backend)(x)
        want = fn.fun(x)  # the same function run by NumPy
        assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        print(
            f"{fn.__name__}: {backend} matches NumPy, {got.shape} {got.dtype}, "
            f"max abs diff {np.abs(got - want).max():.1e}"
        )


if __name__ == "__main__":
    main()
