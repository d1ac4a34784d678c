"""Programs for the fusion acceptance tests (tests/test_fusion.py). No tests here.

Keep line numbers stable: the source lines appear in the golden IR (tests/golden/fusion_*).
Add new programs at the end of the file.
"""

import numpy as np

import jitc


def softmax_layer(x, W, b):
    y = np.maximum(x @ W + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def elementwise_chain(x, a, b):
    """Ten elementwise ops over [512,512], with row and column broadcasts."""
    y = x * a + b
    y = np.maximum(y, 0.0) - 0.5 * a
    y = np.abs(y) * np.float32(2.0) + b
    y = np.where(y > 1.0, np.tanh(y), -y)
    return y


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


# -- a GPT-2 style transformer: T tokens of width C, H heads
T, C, H = 16, 64, 4
D = C // H


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def attention(x, w_qkv, b_qkv, w_o, b_o):
    qkv = x @ w_qkv + b_qkv
    q, k, v = np.split(qkv, 3, axis=-1)
    q = q.reshape(T, H, D).transpose(1, 0, 2)
    k = k.reshape(T, H, D).transpose(1, 0, 2)
    v = v.reshape(T, H, D).transpose(1, 0, 2)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(np.float32(D))
    s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, np.float32(-1e9))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    o = (p @ v).transpose(1, 0, 2).reshape(T, C)
    return o @ w_o + b_o


def block(x, p):
    x = x + attention(layernorm(x, p["g1"], p["b1"]), p["w_qkv"], p["b_qkv"], p["w_o"], p["b_o"])
    h = gelu(layernorm(x, p["g2"], p["b2"]) @ p["w_fc"] + p["b_fc"])
    return x + h @ p["w_pr"] + p["b_pr"]


def gpt2(x, p1, p2):
    """Two transformer blocks (parameters are arguments, so the graph has no big constants)."""
    return block(block(x, p1), p2)


def gpt2_params(rng):
    def f(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    return {
        "g1": 1 + f(C),
        "b1": f(C),
        "w_qkv": f(C, 3 * C),
        "b_qkv": f(3 * C),
        "w_o": f(C, C),
        "b_o": f(C),
        "g2": 1 + f(C),
        "b2": f(C),
        "w_fc": f(C, 4 * C),
        "b_fc": f(4 * C),
        "w_pr": f(4 * C, C),
        "b_pr": f(C),
    }


def gpt2_specs():
    p = gpt2_params(np.random.default_rng(0))
    spec = {k: jitc.ShapeDtype(v.shape, v.dtype) for k, v in p.items()}
    return [jitc.spec(f"f32[{T},{C}]"), spec, dict(spec)]


# -- small programs for the report and rule tests


def exp_two_readers(x):
    e = np.exp(x)
    return e.sum(axis=0) + (e + e.T).max(axis=1)


def dot_transposed(x, W):
    return (x @ W).T + 1.0


def mean_and_square_mean(x):
    return x.mean(axis=-1), (x * x).mean(axis=-1)
