"""Benchmark workloads W1-W7 (issue 4): plain NumPy functions and their inputs.

Every peer compiles the same `Case.fn`: jitc traces it, numba `@njit`s it, JAX jits it with
`np` rebound to `jax.numpy`. Where numba cannot compile the NumPy code as written (keepdims,
batched matmul), `Case.numba_fn` is the natural numba version, written with loops.
Inputs come from a fixed seed; weights are closure constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

import jitc

F32 = np.float32
SEED = 0


@dataclass
class Case:
    name: str
    fn: Callable  # the plain NumPy function every implementation compiles
    args: tuple  # inputs of `run`
    run: Callable | None = None  # run(compiled_fn, *args); default compiled_fn(*args)
    numba_fn: Callable | None = None  # loops version, used only if numba cannot compile `fn`
    bytes_moved: int = 0  # minimum memory traffic per call (for the bandwidth bound)
    rtol: float = 2e-4
    atol: float = 2e-5
    unit: str = "time"  # how to print the median ("time" or "us/call")
    skip: dict | None = None  # implementation -> why it cannot run this code
    jax_fn: Callable | None = None  # the same program written functionally, for JAX


def _rng():
    return np.random.default_rng(SEED)


def _normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


# ---------------------------------------------------------------- W1 elementwise chain


def chain(x, y):
    return np.tanh(x * 0.5 + y) * (1 / (1 + np.exp(-x))) + 0.1 * x * x


def w1(quick=False):
    cases = []
    for n, label in (
        [(4096, "4K"), (65536, "64K")] if quick else [(4 * 2**20, "4M"), (2**16, "64K")]
    ):
        rng = _rng()
        x, y = _normal(rng, n), _normal(rng, n)
        cases.append(Case(f"W1 chain {label} f32", chain, (x, y), bytes_moved=3 * x.nbytes))
    return cases


# ---------------------------------------------------------------- W2 dense + softmax


def dense_softmax(x, W, b):
    y = np.maximum(x @ W + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@numba.njit(fastmath=True, parallel=True, cache=False)
def dense_softmax_numba(x, W, b):
    y = x @ W  # BLAS, then the epilogue fused over each output row
    n, m = y.shape
    for i in prange(n):
        mx = np.float32(0.0)  # relu output is >= 0
        for j in range(m):
            v = max(y[i, j] + b[j], np.float32(0.0))
            y[i, j] = v
            mx = max(mx, v)
        s = np.float32(0.0)
        for j in range(m):
            e = np.exp(y[i, j] - mx)
            y[i, j] = e
            s += e
        inv = np.float32(1.0) / s
        for j in range(m):
            y[i, j] *= inv
    return y


def w2_inputs(batch, d_in=512, d_out=1024):
    rng = _rng()
    W = _normal(rng, (d_in, d_out), 1 / math.sqrt(d_in))
    b = _normal(rng, d_out, 0.1)
    return _normal(rng, (batch, d_in)), W, b


def gelu_mlp(x, W1, b1, W2, b2):
    """Issue 38's MLP layer pair: 512-2048-512 with the tanh-GELU between."""
    return gelu(x @ W1 + b1) @ W2 + b2


@numba.njit(fastmath=True, parallel=True, cache=False)
def gelu_numba(x):
    """numba promotes float32 * a Python float to float64: the constants as float32."""
    out = np.empty_like(x)
    c, k = np.float32(GELU_C), np.float32(0.044715)
    for i in prange(x.size):
        u = x[i]
        out[i] = np.float32(0.5) * u * (np.float32(1) + np.tanh(c * (u + k * u * u * u)))
    return out


@numba.njit(fastmath=True, parallel=True, cache=False)
def gelu_mlp_numba(x, W1, b1, W2, b2):
    h = x @ W1 + b1
    return gelu_numba(h.reshape(-1)).reshape(h.shape) @ W2 + b2


def w2(quick=False):
    d_in, d_out = (32, 64) if quick else (512, 1024)
    cases = [
        Case(
            f"W2 softmax(relu(x@W+b)) [{bt},{d_in}]x[{d_in},{d_out}]",
            dense_softmax,
            w2_inputs(bt, d_in, d_out),
            numba_fn=dense_softmax_numba,
            atol=1e-6,
        )
        for bt in ((8, 1) if quick else (256, 1))
    ]
    rng = _rng()
    d, h, batch = (32, 128, 8) if quick else (512, 2048, 256)
    weights = [
        _normal(rng, (d, h), 1 / math.sqrt(d)),
        _normal(rng, h, 0.1),
        _normal(rng, (h, d), 1 / math.sqrt(h)),
        _normal(rng, d, 0.1),
    ]
    cases.append(
        Case(
            f"W2 MLP {d}-{h}-{d} tanh-GELU, batch {batch}",
            gelu_mlp,
            (_normal(rng, (batch, d)), *weights),
            numba_fn=gelu_mlp_numba,
            rtol=1e-4,
            atol=1e-4,
        )
    )
    n = 1 << (16 if quick else 23)
    x = _normal(rng, n, 2.0)
    label = f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"
    cases.append(
        Case(f"W2 tanh-GELU {label} f32", gelu, (x,), numba_fn=gelu_numba, bytes_moved=2 * x.nbytes)
    )
    return cases


# ---------------------------------------------------------------- W3 layernorm


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@numba.njit(fastmath=True, parallel=True, cache=False)
def layernorm_numba(x, g, b):
    n, m = x.shape
    out = np.empty_like(x)
    inv_m = np.float32(1.0) / np.float32(m)
    for i in prange(n):
        s = np.float32(0.0)
        for j in range(m):
            s += x[i, j]
        mu = s * inv_m
        v = np.float32(0.0)
        for j in range(m):
            d = x[i, j] - mu
            v += d * d
        r = np.float32(1.0) / np.sqrt(v * inv_m + np.float32(1e-5))
        for j in range(m):
            out[i, j] = (x[i, j] - mu) * r * g[j] + b[j]
    return out


def w3(quick=False):
    n, m = (64, 128) if quick else (4096, 1024)
    rng = _rng()
    x, g, b = _normal(rng, (n, m)), _normal(rng, m), _normal(rng, m)
    return [
        Case(
            f"W3 layernorm [{n},{m}]",
            layernorm,
            (x, g, b),
            numba_fn=layernorm_numba,
            bytes_moved=2 * x.nbytes,
            atol=1e-4,
        )
    ]


# ---------------------------------------------------------------- W4 stacked LSTM


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_cell(x, h, c, Wx, Wh, b):
    z = x @ Wx + h @ Wh + b
    n = h.shape[-1]
    i, f = sigmoid(z[:, :n]), sigmoid(z[:, n : 2 * n])
    g, o = np.tanh(z[:, 2 * n : 3 * n]), sigmoid(z[:, 3 * n :])
    c = f * c + i * g
    return o * np.tanh(c), c


def make_lstm(hidden=60, seed=SEED):
    """A 3-layer stacked LSTM step and a 100-step Python loop over it; weights are closure
    constants."""
    rng = np.random.default_rng(seed)
    s = 1 / math.sqrt(hidden)
    Wx, Wh = _normal(rng, (3, hidden, 4 * hidden), s), _normal(rng, (3, hidden, 4 * hidden), s)
    b = _normal(rng, (3, 4 * hidden), 0.1)

    def lstm_step(x, state):
        (h0, c0), (h1, c1), (h2, c2) = state
        h0, c0 = lstm_cell(x, h0, c0, Wx[0], Wh[0], b[0])
        h1, c1 = lstm_cell(h0, h1, c1, Wx[1], Wh[1], b[1])
        h2, c2 = lstm_cell(h1, h2, c2, Wx[2], Wh[2], b[2])
        return h2, ((h0, c0), (h1, c1), (h2, c2))

    def lstm_unrolled(xs, state):  # a Python loop: one loop in the graph (trace/autograph.py)
        for t in range(xs.shape[0]):
            y, state = lstm_step(xs[t], state)
        return state

    return lstm_step, lstm_unrolled


def lstm_python_loop(step, xs, state):
    for x in xs:
        y, state = step(x, state)
    return state


def w4(quick=False):
    hidden, steps = (16, 2) if quick else (60, 100)
    step, unrolled = make_lstm(hidden)
    rng = _rng()
    xs = _normal(rng, (steps, 1, hidden))
    state = tuple(
        (_normal(rng, (1, hidden), 0.5), _normal(rng, (1, hidden), 0.5)) for _ in range(3)
    )
    return [
        Case(f"W4 LSTM 3x{hidden} batch 1, one step", step, (xs[0], state)),
        Case(
            f"W4 LSTM {steps} steps, Python loop over jitted step",
            step,
            (list(xs), state),
            run=lstm_python_loop,
        ),
        Case(f"W4 LSTM {steps} steps, jitted Python loop", unrolled, (xs, state)),
    ]


# ---------------------------------------------------------------- W5 dispatch


def add_one(x):
    return x + 1


def w5(quick=False):
    return [Case("W5 dispatch x + 1, 8 f32", add_one, (np.arange(8, dtype=F32),), unit="us/call")]


# ---------------------------------------------------------------- W7 GPT-2 block

GELU_C = math.sqrt(2 / math.pi)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def make_gpt2_block(n_ctx=64, n_embd=256, n_head=4, seed=SEED):
    """A pre-LN GPT-2 block, causal attention and a 4x GELU MLP; weights are closure constants."""
    rng = np.random.default_rng(seed)
    d, hd = n_embd, n_embd // n_head
    s = 0.02
    g1, b1, g2, b2 = (
        1 + _normal(rng, d, 0.1),
        _normal(rng, d, 0.1),
        1 + _normal(rng, d, 0.1),
        _normal(rng, d, 0.1),
    )
    W_qkv, b_qkv = _normal(rng, (d, 3 * d), s), _normal(rng, 3 * d, s)
    W_o, b_o = _normal(rng, (d, d), s), _normal(rng, d, s)
    W_fc, b_fc = _normal(rng, (d, 4 * d), s), _normal(rng, 4 * d, s)
    W_pr, b_pr = _normal(rng, (4 * d, d), s), _normal(rng, d, s)
    mask = np.triu(np.ones((n_ctx, n_ctx), dtype=bool), 1)
    scale = 1 / math.sqrt(hd)

    def gpt2_block(x):  # x [n_ctx, n_embd]
        T = x.shape[0]
        qkv = layernorm(x, g1, b1) @ W_qkv + b_qkv
        q, k, v = (
            qkv[:, i * d : (i + 1) * d].reshape(T, n_head, hd).transpose(1, 0, 2) for i in range(3)
        )
        att = np.where(mask[:T, :T], -np.inf, (q @ k.transpose(0, 2, 1)) * scale)
        y = (softmax(att) @ v).transpose(1, 0, 2).reshape(T, d)
        x = x + y @ W_o + b_o
        return x + gelu(layernorm(x, g2, b2) @ W_fc + b_fc) @ W_pr + b_pr

    @numba.njit(fastmath=True, cache=False)
    def gpt2_block_numba(x):
        T = x.shape[0]
        qkv = layernorm_numba(x, g1, b1) @ W_qkv + b_qkv
        y = np.empty((T, d), dtype=x.dtype)
        for h in range(n_head):
            q = np.ascontiguousarray(qkv[:, h * hd : (h + 1) * hd])
            kT = np.ascontiguousarray(qkv[:, d + h * hd : d + (h + 1) * hd].T)
            v = np.ascontiguousarray(qkv[:, 2 * d + h * hd : 2 * d + (h + 1) * hd])
            att = (q @ kT) * np.float32(scale)
            for i in range(T):  # causal softmax, row by row
                mx = att[i, 0]
                for j in range(1, i + 1):
                    mx = max(mx, att[i, j])
                s = np.float32(0.0)
                for j in range(T):
                    e = np.exp(att[i, j] - mx) if j <= i else np.float32(0.0)
                    att[i, j] = e
                    s += e
                for j in range(T):
                    att[i, j] /= s
            y[:, h * hd : (h + 1) * hd] = att @ v
        x = x + y @ W_o + b_o
        u = layernorm_numba(x, g2, b2) @ W_fc + b_fc
        u = (
            np.float32(0.5)
            * u
            * (np.float32(1) + np.tanh(np.float32(GELU_C) * (u + np.float32(0.044715) * u * u * u)))
        )
        return x + u @ W_pr + b_pr

    return gpt2_block, gpt2_block_numba


def w7(quick=False):
    n_ctx, n_embd, n_head = (8, 32, 2) if quick else (64, 256, 4)
    block, block_numba = make_gpt2_block(n_ctx, n_embd, n_head)
    x = _normal(_rng(), (n_ctx, n_embd))
    return [
        Case(
            f"W7 GPT-2 block n_ctx {n_ctx}, n_embd {n_embd}, {n_head} heads",
            block,
            (x,),
            numba_fn=block_numba,
            rtol=1e-3,
            atol=1e-4,
        )
    ]


# W6 (compile times) runs W2 in fresh processes: see run.py.

# ---------------------------------------------------------------- W8 in-place updates


def gray_scott_steps(U, V, steps=20, Du=0.16, Dv=0.08, F=0.035, k=0.065):
    """Gray-Scott reaction-diffusion, updating the interiors of U and V in place."""
    u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
    for _ in range(steps):
        Lu = U[:-2, 1:-1] + U[1:-1, :-2] - 4 * u + U[1:-1, 2:] + U[2:, 1:-1]
        Lv = V[:-2, 1:-1] + V[1:-1, :-2] - 4 * v + V[1:-1, 2:] + V[2:, 1:-1]
        uvv = u * v * v
        u += Du * Lu - uvv + F * (1 - u)
        v += Dv * Lv + uvv - (F + k) * v
    return U, V


def _with_border(X, inner):
    return np.concatenate(
        (X[:1], np.concatenate((X[1:-1, :1], inner, X[1:-1, -1:]), axis=1), X[-1:]), axis=0
    )


def gray_scott_functional(U, V, steps=20, Du=0.16, Dv=0.08, F=0.035, k=0.065):
    """The same steps written without mutation: new arrays every step."""
    for _ in range(steps):
        u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]
        Lu = U[:-2, 1:-1] + U[1:-1, :-2] - 4 * u + U[1:-1, 2:] + U[2:, 1:-1]
        Lv = V[:-2, 1:-1] + V[1:-1, :-2] - 4 * v + V[1:-1, 2:] + V[2:, 1:-1]
        uvv = u * v * v
        U = _with_border(U, u + (Du * Lu - uvv + F * (1 - u)))
        V = _with_border(V, v + (Dv * Lv + uvv - (F + k) * v))
    return U, V


def sgd_step(W1, b1, W2, b2, x, y, lr=0.1):
    """One SGD step of a tanh MLP on the squared error, updating the weights in place."""
    h = np.tanh(x @ W1 + b1)
    err = h @ W2 + b2 - y
    dh = (err @ W2.T) * (1 - h * h)
    n = x.shape[0]
    W2 -= lr * (h.T @ err) / n
    b2 -= lr * err.sum(axis=0) / n
    W1 -= lr * (x.T @ dh) / n
    b1 -= lr * dh.sum(axis=0) / n
    return W1, b1, W2, b2


def sgd_functional(W1, b1, W2, b2, x, y, lr=0.1):
    """The same step returning new weight arrays."""
    h = np.tanh(x @ W1 + b1)
    err = h @ W2 + b2 - y
    dh = (err @ W2.T) * (1 - h * h)
    n = x.shape[0]
    return (
        W1 - lr * (x.T @ dh) / n,
        b1 - lr * dh.sum(axis=0) / n,
        W2 - lr * (h.T @ err) / n,
        b2 - lr * err.sum(axis=0) / n,
    )


def _from_start(n_state):
    """run(fn, *start, *state, *rest): reset the state arrays to `start`, then call fn on
    them, so every call (and every implementation) computes the same step. The two copies
    are timed too, for every implementation alike."""

    def run(fn, *args):
        start, state, rest = args[:n_state], args[n_state : 2 * n_state], args[2 * n_state :]
        for s, a in zip(start, state):
            if isinstance(a, np.ndarray):
                np.copyto(a, s)
        # JAX's device arrays are never written: it computes from the start arrays (its
        # state copies were taken after another implementation had run a step on them)
        state = [a if isinstance(a, np.ndarray) else s for s, a in zip(start, state)]
        return fn(*state, *rest)

    return run


_IMMUTABLE = {
    "JAX": "JAX arrays are immutable: `u += ...` rebinds, the caller's arrays "
    "never change (the functional row is JAX's spelling)"
}


def w8(quick=False):
    n = 128 if quick else 512
    rng = _rng()
    U = np.ones((n, n), F32) + 0.05 * rng.random((n, n), dtype=F32)
    V = 0.05 * rng.random((n, n), dtype=F32)
    V[n // 2 - 8 : n // 2 + 8, n // 2 - 8 : n // 2 + 8] = 0.25
    stencil = (U, V, U.copy(), V.copy())
    d_in, d_h, d_out, batch = (64, 128, 10, 32) if quick else (256, 512, 10, 64)
    weights = (
        _normal(rng, (d_in, d_h), 0.05),
        np.zeros(d_h, F32),
        _normal(rng, (d_h, d_out), 0.05),
        np.zeros(d_out, F32),
    )
    data = (_normal(rng, (batch, d_in)), _normal(rng, (batch, d_out)))
    sgd = weights + tuple(w.copy() for w in weights) + data
    return [
        Case(
            f"W8 Gray-Scott in place, {n}x{n}, 20 steps",
            gray_scott_steps,
            stencil,
            run=_from_start(2),
            rtol=1e-3,
            atol=1e-5,
            skip=_IMMUTABLE,
        ),
        Case(
            f"W8 Gray-Scott functional, {n}x{n}, 20 steps",
            gray_scott_functional,
            stencil,
            run=_from_start(2),
            rtol=1e-3,
            atol=1e-5,
            skip={
                "numba": "numba types f32 * a Python float as f64 (no NEP 50), so the loop "
                "rebinding U cannot unify f32 and f64 arrays; the in-place row is "
                "numba's spelling"
            },
        ),
        Case(
            f"W8 SGD step in place, MLP {d_in}-{d_h}-{d_out}",
            sgd_step,
            sgd,
            run=_from_start(4),
            skip=_IMMUTABLE,
        ),
        Case(
            f"W8 SGD step functional, MLP {d_in}-{d_h}-{d_out}",
            sgd_functional,
            sgd,
            run=_from_start(4),
        ),
    ]


# ---------------------------------------------------------------- W9 NumPy surface: np.roll


def roll_laplacian(u):
    """A periodic 5-point Laplacian as finite-volume codes write it: shifted copies."""
    return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u


@numba.njit(parallel=True, cache=False)
def roll_laplacian_numba(u):
    n, m = u.shape
    out = np.empty_like(u)
    for i in numba.prange(n):
        up, down = (i - 1) % n, (i + 1) % n
        for j in range(m):
            left = j - 1 if j > 0 else m - 1
            right = j + 1 if j < m - 1 else 0
            out[i, j] = u[up, j] + u[down, j] + u[i, left] + u[i, right] - np.float32(4) * u[i, j]
    return out


def w9(quick=False):
    n = 256 if quick else 1024
    u = _rng().random((n, n), dtype=F32)
    return [
        Case(
            f"W9 periodic Laplacian by np.roll, {n}x{n} f32",
            roll_laplacian,
            (u,),
            numba_fn=roll_laplacian_numba,
            bytes_moved=2 * u.nbytes,
        )
    ]


# ---------------------------------------------------------------- W10 uint8 images


def threshold(img):
    return np.where(img > 128, np.uint8(255), np.uint8(0))


def blur_threshold(img):
    """Convert, a 5-point blur by slicing, threshold back to uint8: one kernel in jitc."""
    g = img.astype(F32)
    blur = (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + 4 * g[1:-1, 1:-1]) / 8
    return np.where(blur > 128, np.uint8(255), np.uint8(0))


def w10(quick=False):
    n = 512 if quick else 4096
    img = _rng().integers(0, 256, (n, n), dtype=np.uint8)
    return [
        Case(f"W10 uint8 threshold, {n}x{n}", threshold, (img,), bytes_moved=2 * img.nbytes),
        Case(
            f"W10 uint8 blur + threshold, {n}x{n}",
            blur_threshold,
            (img,),
            bytes_moved=2 * img.nbytes,
        ),
    ]


# ---------------------------------------------------------------- W11 float16

_NO_HALF = {"numba": "numba compiles no float16 on the CPU (NotImplementedError: float16)"}


def w11(quick=False):
    """W1's chain and W3's layernorm on float16 arrays: NumPy runs each ufunc as a float16
    loop (convert, compute in float32, round) and stores every intermediate; jitc fuses the
    chain, rounding in registers where NumPy stores."""
    n, (rows, m) = (4096, (64, 128)) if quick else (4 * 2**20, (4096, 1024))
    rng = _rng()
    x, y = _normal(rng, n).astype(np.float16), _normal(rng, n).astype(np.float16)
    xl = _normal(rng, (rows, m)).astype(np.float16)
    g, b = _normal(rng, m).astype(np.float16), _normal(rng, m).astype(np.float16)
    label = "4K" if quick else "4M"
    return [
        Case(
            f"W11 chain {label} f16",
            chain,
            (x, y),
            bytes_moved=3 * x.nbytes,
            rtol=2e-3,
            atol=2e-3,
            skip=_NO_HALF,
        ),
        Case(
            f"W11 layernorm [{rows},{m}] f16",
            layernorm,
            (xl, g, b),
            bytes_moved=2 * xl.nbytes,
            rtol=1e-2,
            atol=1e-2,
            skip=_NO_HALF,
        ),
    ]


# ---------------------------------------------------------------- W12 region writes


def slabs(A, x):
    """Issue 35's reduced ocean-model write: four slabs of a 5-d argument."""
    for ip in range(2):
        for kr in range(2):
            A[1:-2, 2:-2, :, ip, kr] = x * (ip + 2 * kr + 1)
    return A


def slabs_functional(A, x):
    """The same writes as JAX spells them (its arrays are immutable)."""
    for ip in range(2):
        for kr in range(2):
            A = A.at[1:-2, 2:-2, :, ip, kr].set(x * (ip + 2 * kr + 1))
    return A


def ocean_step(T, flux, w, dt=0.1):
    """Slab updates of the ocean-model kind: per (ip, kr) slab of the 5-d tracer T, an
    upwind flux with a tanh limiter over the vertical axis, written a slab at a time into
    the 5-d flux, then its vertical divergence added to T's interior."""
    for ip in range(2):
        for kr in range(2):
            t = T[:, :, :, ip, kr]
            grad = t[:, :, 1:] - t[:, :, :-1]
            up = np.where(w[:, :, 1:] > 0, t[:, :, :-1], t[:, :, 1:])
            flux[1:-1, 1:-1, 1:, ip, kr] = (
                w[1:-1, 1:-1, 1:] * up[1:-1, 1:-1] * np.tanh(4.0 * grad[1:-1, 1:-1])
            )
            T[1:-1, 1:-1, 1:-1, ip, kr] += dt * (
                flux[1:-1, 1:-1, 2:, ip, kr] - flux[1:-1, 1:-1, 1:-1, ip, kr]
            )
    return T, flux


def ocean_step_functional(T, flux, w, dt=0.1):
    """ocean_step as JAX spells it."""
    for ip in range(2):
        for kr in range(2):
            t = T[:, :, :, ip, kr]
            grad = t[:, :, 1:] - t[:, :, :-1]
            up = np.where(w[:, :, 1:] > 0, t[:, :, :-1], t[:, :, 1:])
            flux = flux.at[1:-1, 1:-1, 1:, ip, kr].set(
                w[1:-1, 1:-1, 1:] * up[1:-1, 1:-1] * np.tanh(4.0 * grad[1:-1, 1:-1])
            )
            T = T.at[1:-1, 1:-1, 1:-1, ip, kr].add(
                dt * (flux[1:-1, 1:-1, 2:, ip, kr] - flux[1:-1, 1:-1, 1:-1, ip, kr])
            )
    return T, flux


def w12(quick=False):
    rng = _rng()
    cases = []
    for n, nz in [(12, 3)] if quick else [(81, 11), (204, 26)]:
        A = rng.random((n, n, nz, 2, 2), dtype=F32)
        x = rng.random((n - 3, n - 4, nz), dtype=F32)
        cases.append(
            Case(
                f"W12 slab writes in place, A[{n},{n},{nz},2,2]",
                slabs,
                (A, A.copy(), x),
                run=_from_start(1),
                jax_fn=slabs_functional,
            )
        )
    n, nz = (8, 8) if quick else (64, 64)
    T = rng.random((n, n, nz, 2, 2), dtype=F32)
    flux = np.zeros_like(T)
    w = rng.standard_normal((n, n, nz), dtype=F32)
    cases.append(
        Case(
            f"W12 ocean slab update, T[{n},{n},{nz},2,2] ({T.size / 1e6:.1f}M values)",
            ocean_step,
            (T, flux, T.copy(), flux.copy(), w),
            run=_from_start(2),
            rtol=1e-4,
            atol=1e-5,
            jax_fn=ocean_step_functional,
        )
    )
    return cases


# ---------------------------------------------------------------- W13 loops traced once


def jacobi_steps(u, steps):
    """Issue 36's 1-d Jacobi time loop, written in place: one loop in the graph."""

    def step(i, u):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
        return u

    return jitc.fori_loop(0, steps, step, u)


@numba.njit(cache=True)
def jacobi_steps_numba(u, steps):
    v = u.copy()
    for _ in range(steps):
        for i in range(1, u.shape[0] - 1):
            v[i] = 0.5 * (u[i - 1] + u[i + 1])
        u[1:-1] = v[1:-1]
    return u


def jacobi_python(u, steps):
    """The Jacobi time loop as a plain Python loop: one loop in the graph all the same."""
    for _ in range(steps):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
    return u


def jacobi_steps_jax(u, steps):
    import jax

    def step(i, u):
        return u.at[1:-1].set(0.5 * (u[:-2] + u[2:]))

    return jax.lax.fori_loop(0, steps, step, u)


def conjugate_gradient(A, b, tol):
    """Issue 36's CG solve: a `while norm(r) > tol` loop carrying four values."""

    def unsettled(state):
        return np.sqrt(state[2] @ state[2]) > tol

    def step(state):
        x, p, r, count = state
        Ap = A @ p
        alpha = (r @ r) / (p @ Ap)
        x = x + alpha * p
        r_new = r - alpha * Ap
        p = r_new + ((r_new @ r_new) / (r @ r)) * p
        return x, p, r_new, count + 1

    x0 = np.zeros_like(b)
    return jitc.while_loop(unsettled, step, (x0, b.copy(), b.copy(), 0))[:2]


def conjugate_gradient_python(A, b, tol):
    """The CG solve as NumPy code writes it: a plain `while`, compiled as one loop."""
    x, p, r, count = np.zeros_like(b), b.copy(), b.copy(), 0
    while np.sqrt(r @ r) > tol:
        Ap = A @ p
        alpha = (r @ r) / (p @ Ap)
        x = x + alpha * p
        r_new = r - alpha * Ap
        p = r_new + ((r_new @ r_new) / (r @ r)) * p
        r, count = r_new, count + 1
    return x, p


conjugate_gradient_numba = numba.njit(cache=True)(conjugate_gradient_python)


def conjugate_gradient_jax(A, b, tol):
    import jax

    def unsettled(state):
        return np.sqrt(state[2] @ state[2]) > tol

    def step(state):
        x, p, r, count = state
        Ap = A @ p
        alpha = (r @ r) / (p @ Ap)
        r_new = r - alpha * Ap
        return x + alpha * p, r_new + ((r_new @ r_new) / (r @ r)) * p, r_new, count + 1

    return jax.lax.while_loop(unsettled, step, (np.zeros_like(b), b, b, 0))[:2]


def cholesky_loops(A):
    """Issue 36's Cholesky with Python loops: the inner bounds follow the outer index, the
    inner `k` loop is scalar work."""
    L = np.zeros_like(A)
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(j):
                s += L[i, k] * L[j, k]
            if i == j:
                L[i, j] = np.sqrt(A[i, i] - s)
            else:
                L[i, j] = (A[i, j] - s) / L[j, j]
    return L


def cholesky_in_place(A):
    """Issue 36's form: the argument overwritten by its factor, a dot of two windows."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1):
            A[i, j] -= A[i, :j] @ A[j, :j]
            if i == j:
                A[i, i] = np.sqrt(A[i, i])
            else:
                A[i, j] /= A[j, j]
    return A


def durbin(r):
    """Issue 36's Levinson-Durbin (Golub and Van Loan's Durbin): the Yule-Walker system of
    autocorrelations r (r[0] = 1); a window updated from itself reversed."""
    n = r.shape[0] - 1
    y = np.zeros(n)
    y[0] = -r[1]
    beta = 1.0
    alpha = -r[1]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        alpha = -(r[k + 1] + np.dot(r[k:0:-1], y[:k])) / beta
        y[:k] += alpha * y[:k][::-1]
        y[k] = alpha
    return y


def gauss_seidel(u, f, sweeps):
    """Issue 36's Gauss-Seidel sweeps: a 2-d scalar inner loop over the updated values."""
    n = u.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - f[i, j])
    return u


def csr_matvec(data, indices, indptr, x):
    """Issue 36's CSR mat-vec: a loop over rows, each a window data[ptr[i]:ptr[i + 1]]."""
    out = np.zeros(indptr.shape[0] - 1)
    for i in range(indptr.shape[0] - 1):
        lo = indptr[i]
        hi = indptr[i + 1]
        out[i] = np.sum(data[lo:hi] * x[indices[lo:hi]])
    return out


def _csr_matrix(rng, rows, cols, per_row):
    """A random CSR matrix with 1 to 2 * per_row entries a row, and a vector."""
    counts = rng.integers(1, 2 * per_row, rows)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = rng.integers(0, cols, indptr[-1])
    return rng.random(indptr[-1]), indices, indptr, rng.random(cols)


def lstm_loop_case(steps, hidden):
    """W4's stacked LSTM over `steps` steps, the loop inside the jitted function."""
    step, _ = make_lstm(hidden)

    def lstm_loop(xs, state):
        return jitc.fori_loop(0, xs.shape[0], lambda t, s: step(xs[t], s)[1], state)

    def lstm_loop_jax(xs, state):
        import jax

        return jax.lax.fori_loop(0, xs.shape[0], lambda t, s: step(xs[t], s)[1], state)

    rng = _rng()
    xs = _normal(rng, (steps, 1, hidden))
    state = tuple(
        (_normal(rng, (1, hidden), 0.5), _normal(rng, (1, hidden), 0.5)) for _ in range(3)
    )
    return Case(
        f"W13 LSTM 3x{hidden}, {steps} steps in one jitted loop",
        lstm_loop,
        (xs, state),
        jax_fn=lstm_loop_jax,
        skip={"numba": "numba cannot compile jitc.fori_loop; W4 times numba on the step"},
    )


def w13(quick=False):
    rng = _rng()
    n = 64 if quick else 20_000
    u = rng.random(n, dtype=F32)
    cases = [
        Case(
            f"W13 1-d Jacobi, {n} f32, {steps} steps in one loop",
            jacobi_steps,
            (u, u.copy(), steps),
            run=_from_start(1),
            numba_fn=jacobi_steps_numba,
            jax_fn=jacobi_steps_jax,
            rtol=1e-5,
            atol=1e-6,
        )
        for steps in ((3, 7) if quick else (100, 1000))
    ]
    m = 16 if quick else 2000
    R = rng.standard_normal((m, m)) / math.sqrt(m)
    A = (R @ R.T + 0.5 * np.eye(m)).astype(F32)
    b = rng.standard_normal(m).astype(F32)
    cases.append(
        Case(
            f"W13 conjugate gradient while norm(r) > tol, {m}x{m} f32",
            conjugate_gradient,
            (A, b, 1e-3 * float(np.sqrt(b @ b))),
            numba_fn=conjugate_gradient_numba,
            jax_fn=conjugate_gradient_jax,
            rtol=1e-2,
            atol=1e-3,
        )
    )
    python_steps = 7 if quick else 1000
    cases.append(
        Case(
            f"W13 conjugate gradient, a Python while, {m}x{m} f32",
            conjugate_gradient_python,
            (A, b, 1e-3 * float(np.sqrt(b @ b))),
            jax_fn=conjugate_gradient_jax,
            rtol=1e-2,
            atol=1e-3,
        )
    )
    cases.append(
        Case(
            f"W13 1-d Jacobi, {n} f32, {python_steps} steps, a Python for loop",
            jacobi_python,
            (u, u.copy(), python_steps),
            run=_from_start(1),
            jax_fn=jacobi_steps_jax,
            rtol=1e-5,
            atol=1e-6,
        )
    )
    k = 10 if quick else 64
    S = rng.standard_normal((k, k))
    cases.append(
        Case(
            f"W13 Cholesky, three Python loops, {k}x{k} f64",
            cholesky_loops,
            (S @ S.T + k * np.eye(k),),
            rtol=1e-10,
            atol=1e-12,
            skip={"JAX": "its inner bounds follow the index: JAX needs masks and a rewrite"},
        )
    )
    k = 12 if quick else 200
    S = rng.standard_normal((k, k))
    spd = S @ S.T + k * np.eye(k)
    cases.append(
        Case(
            f"W13 Cholesky in place, A[i, j] -= A[i, :j] @ A[j, :j], {k}x{k} f64",
            cholesky_in_place,
            (spd, spd.copy()),
            run=_from_start(1),
            rtol=1e-10,
            atol=1e-12,
            skip={"JAX": "its slices follow the index: JAX needs masks and a rewrite"},
        )
    )
    k = 16 if quick else 4000
    r = np.exp(-0.5 * np.arange(k + 1)) * np.cos(0.1 * np.arange(k + 1))
    cases.append(
        Case(
            f"W13 Levinson-Durbin, y[:k] += alpha * y[:k][::-1], {k} f64",
            durbin,
            (r,),
            rtol=1e-8,
            atol=1e-12,
            skip={"JAX": "its slices follow the index: JAX needs masks and a rewrite"},
        )
    )
    k = 12 if quick else 400
    u, f = rng.random((k, k)), rng.random((k, k)) * 0.01
    cases.append(
        Case(
            f"W13 Gauss-Seidel, {k}x{k} f64, 10 sweeps",
            gauss_seidel,
            (u, u.copy(), f, 10),
            run=_from_start(1),
            rtol=1e-12,
            atol=1e-12,
            skip={"JAX": "its sweep reads values the same sweep wrote: no vector form"},
        )
    )
    rows = 50 if quick else 100_000
    cases.append(
        Case(
            f"W13 CSR mat-vec, {rows} rows, a loop over rows",
            csr_matvec,
            _csr_matrix(rng, rows, rows, 10),
            rtol=1e-12,
            atol=1e-12,
            skip={"JAX": "its slices follow the index: JAX needs masks and a rewrite"},
        )
    )
    cases.append(lstm_loop_case(*((2, 16) if quick else (100, 60))))
    return cases


# ---------------------------------------------------------------- W15 LAPACK factorizations


def symmetric_eigh(a):
    return np.linalg.eigh(a)


def singular_values_and_vectors(a):
    return np.linalg.svd(a)


def tridiagonal_solves(ab, b):
    """A stack of tridiagonal systems: SciPy runs ?gtsv per system in a Python loop, jitc
    runs them all in one kernel."""
    import scipy.linalg

    return scipy.linalg.solve_banded((1, 1), ab, b)


_NO_SCIPY = {
    "numba": "numba compiles no scipy.linalg call",
    "JAX": "jax.numpy has no scipy.linalg.solve_banded",
}


def w15(quick=False):
    n = 64 if quick else 512
    rng = _rng()
    a = rng.standard_normal((n, n))
    a = a + a.T
    batch, size = (10, 16) if quick else (1000, 100)
    ab = rng.standard_normal((batch, 3, size))
    ab[:, 1] += 4  # diagonally dominant: well conditioned
    b = rng.standard_normal((batch, size, 1))
    # eigenvectors and singular vectors are LAPACK's (jitc calls NumPy's routines, so
    # their signs match NumPy's; other peers' need not)
    vectors = {"JAX": "its eigen/singular vector signs are its own"}
    return [
        Case(
            f"W15 np.linalg.eigh, {n}x{n} f64",
            symmetric_eigh,
            (a,),
            rtol=1e-8,
            atol=1e-8,
            skip=vectors,
        ),
        Case(
            f"W15 np.linalg.svd, {n}x{n} f64",
            singular_values_and_vectors,
            (a,),
            rtol=1e-8,
            atol=1e-8,
            skip=vectors,
        ),
        Case(
            f"W15 scipy.linalg.solve_banded (1, 1), {batch} systems of {size} f64",
            tridiagonal_solves,
            (ab, b),
            rtol=1e-10,
            atol=1e-12,
            skip=_NO_SCIPY,
        ),
    ]


# ---------------------------------------------------------------- W14 FFT


def spectrum(x):
    return np.fft.fft(x)


def spectrum2(x):
    return np.fft.rfft2(x)


def fft_filter(x, H):
    """A frequency-domain filter: rfft, multiply, irfft (the multiply fuses into nothing
    else: both neighbours are library calls)."""
    return np.fft.irfft(np.fft.rfft(x) * H, n=len(x))


def w14(quick=False):
    """NumPy's FFT (pocketfft, one thread) against jitc's (rocket-fft's DUCC0 on numba's
    threads) and numba's with rocket-fft, which registers np.fft for numba."""
    n, m = (2**12, 128) if quick else (2**20, 1024)
    rng = _rng()
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    img = _normal(rng, (m, m))
    x = rng.standard_normal(n)
    H = 1 / (1 + (np.arange(n // 2 + 1) / 1000.0) ** 2)
    label = "1M" if not quick else "4K"
    return [
        Case(
            f"W14 fft {label} c64",
            spectrum,
            (z,),
            bytes_moved=2 * z.nbytes,
            rtol=1e-3,
            atol=1e-2,
        ),
        Case(
            f"W14 rfft2 {m}x{m} f32",
            spectrum2,
            (img,),
            bytes_moved=img.nbytes * 2,
            rtol=1e-3,
            atol=1e-2,
        ),
        Case(
            f"W14 irfft(rfft(x) * H) {label} f64",
            fft_filter,
            (x, H),
            bytes_moved=2 * x.nbytes + H.nbytes,
            rtol=1e-9,
            atol=1e-9,
            skip={"JAX": "JAX computes float64 in float32 (jax_enable_x64 is off)"},
        ),
    ]


# ---------------------------------------------------------------- W16 run-time sizes


def label_counts(labels):
    return np.unique(labels, return_counts=True)


def selected_scaled(x):
    return x[x > 0.5] * 2


def coo_triplets(A):
    rows, cols = np.nonzero(A)
    return rows, cols, A[rows, cols]


_SIZED = {"JAX": "jax.numpy needs a static size= for results whose size depends on the values"}


def w16(quick=False):
    """Results whose size depends on the values (numpy_api/data_sized.py): jitc compacts
    with a running count and a scatter into the static bound; NumPy and numba allocate
    the exact size."""
    n, m = (4096, 64) if quick else (2**20, 2000)
    rng = _rng()
    labels = rng.integers(0, 1000, n).astype(np.int32)
    x = _normal(rng, (4 * n,))
    A = np.where(rng.random((m, m)) < 0.05, rng.standard_normal((m, m)), 0.0)
    label = "1M" if not quick else "4K"
    return [
        Case(
            f"W16 np.unique(return_counts) {label} i32",
            label_counts,
            (labels,),
            bytes_moved=labels.nbytes,
            skip={**_SIZED, "numba": "numba's np.unique takes no return_counts"},
        ),
        Case(
            f"W16 x[x > 0.5] * 2, {4 * n // 1024}K f32",
            selected_scaled,
            (x,),
            bytes_moved=x.nbytes,
            skip=_SIZED,
        ),
        Case(
            f"W16 np.nonzero(A), A[rows, cols], {m}x{m} f64, 5% nonzero",
            coo_triplets,
            (A,),
            bytes_moved=A.nbytes,
            skip=_SIZED,
        ),
    ]


WORKLOADS = {
    "W1": w1,
    "W2": w2,
    "W3": w3,
    "W4": w4,
    "W5": w5,
    "W7": w7,
    "W8": w8,
    "W9": w9,
    "W10": w10,
    "W11": w11,
    "W12": w12,
    "W13": w13,
    "W14": w14,
    "W15": w15,
    "W16": w16,
}
