"""Programs whose IR is pinned by golden text (tests/golden/*.txt). Keep line numbers stable:
the source lines appear in the IR."""

import numpy as np


def softmax_layer(x, W, b):
    y = np.maximum(x @ W + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def attention(x, w_qkv, w_out):
    """Causal single-head attention over x[T, C]."""
    T, C = x.shape
    q, k, v = np.split(x @ w_qkv, 3, axis=-1)
    scores = q @ k.T / np.sqrt(np.float32(C))
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, np.float32(-1e9))
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return x + (p @ v) @ w_out
