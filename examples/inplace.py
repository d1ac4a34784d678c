"""NumPy code that mutates arrays, compiled unmodified: jitc writes the same arrays NumPy would.

    python examples/inplace.py     # runs each program under jitc and under NumPy, compares
                                   # the results and every array the program writes

- a Gray-Scott reaction-diffusion stencil updating `u[1:-1, 1:-1]` through views,
- an MLP class whose `fit` step updates `self.W1` ... in place (SGD),
- AdaGrad over a list of parameter arrays and a list of memories (a char-RNN's update),
- a transformer decode step writing one position of a preallocated KV cache,
- `x[mask] = ...` physics: a softened n-body acceleration with a cutoff.
"""

import copy

import numpy as np

import jitc

# ---------------------------------------------------------------- reaction-diffusion


def gray_scott(U, V, steps, Du=0.16, Dv=0.08, F=0.035, k=0.065):
    """`steps` explicit Euler steps of the Gray-Scott model on U, V (updated in place)."""
    u, v = U[1:-1, 1:-1], V[1:-1, 1:-1]  # views of the interior
    for _ in range(steps):
        Lu = U[:-2, 1:-1] + U[1:-1, :-2] - 4 * u + U[1:-1, 2:] + U[2:, 1:-1]
        Lv = V[:-2, 1:-1] + V[1:-1, :-2] - 4 * v + V[1:-1, 2:] + V[2:, 1:-1]
        uvv = u * v * v
        u += Du * Lu - uvv + F * (1 - u)
        v += Dv * Lv + uvv - (F + k) * v


def gray_scott_state(n=128, seed=0):
    rng = np.random.default_rng(seed)
    U = np.ones((n, n), np.float32)
    V = np.zeros((n, n), np.float32)
    r = slice(n // 2 - 8, n // 2 + 8)
    U[r, r], V[r, r] = 0.50, 0.25
    U += 0.05 * rng.random((n, n), dtype=np.float32)
    V += 0.05 * rng.random((n, n), dtype=np.float32)
    return U, V


# ---------------------------------------------------------------- MLP trained by SGD


class MLP:
    def __init__(self, n_in, n_hidden, n_out, seed=0):
        rng = np.random.default_rng(seed)
        self.W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
        self.b1 = np.zeros(n_hidden)
        self.W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
        self.b2 = np.zeros(n_out)
        self.lr = 0.1

    def predict(self, x):
        h = np.tanh(x @ self.W1 + self.b1)
        return h @ self.W2 + self.b2

    def fit_step(self, x, y):
        """One step of gradient descent on the squared error; returns the loss."""
        h = np.tanh(x @ self.W1 + self.b1)
        err = h @ self.W2 + self.b2 - y
        dh = (err @ self.W2.T) * (1 - h * h)
        n = len(x)
        self.W2 -= self.lr * h.T @ err / n
        self.b2 -= self.lr * err.sum(axis=0) / n
        self.W1 -= self.lr * x.T @ dh / n
        self.b1 -= self.lr * dh.sum(axis=0) / n
        return 0.5 * np.mean(err * err)


# ---------------------------------------------------------------- AdaGrad over lists


def adagrad(params, grads, mems, lr=0.1):
    for p, g, m in zip(params, grads, mems):
        np.clip(g, -5, 5, out=g)  # exploding gradients
        m += g * g
        p -= lr * g / np.sqrt(m + 1e-8)


# ---------------------------------------------------------------- KV-cache decode step


class Attention:
    def __init__(self, n_ctx=32, d=16, seed=0):
        rng = np.random.default_rng(seed)
        self.Wq, self.Wk, self.Wv = (
            rng.standard_normal((d, d)).astype(np.float32) * 0.2 for _ in range(3)
        )
        self.cache_k = np.zeros((n_ctx, d), np.float32)
        self.cache_v = np.zeros((n_ctx, d), np.float32)

    def decode(self, x, pos):
        """Attend from token x (shape (d,)) at position `pos` (static) to positions <= pos."""
        q = x @ self.Wq
        self.cache_k[pos] = x @ self.Wk
        self.cache_v[pos] = x @ self.Wv
        k, v = self.cache_k[: pos + 1], self.cache_v[: pos + 1]
        s = k @ q / np.sqrt(len(q))
        w = np.exp(s - s.max())
        return (w / w.sum()) @ v


# ---------------------------------------------------------------- x[mask] physics


def accelerations(pos, mass, acc, cutoff=2.0, eps=1e-2):
    """Softened gravity from every body, zero beyond `cutoff`; written into acc."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(axis=-1) + eps
    inv = r2.copy()
    inv[r2 > cutoff * cutoff] = np.inf
    inv[inv < np.inf] = inv[inv < np.inf] ** -1.5
    inv[inv == np.inf] = 0
    acc[...] = (d * (inv * mass[None, :])[:, :, None]).sum(axis=1)


# ---------------------------------------------------------------- the check


def _same(got, want, what, rtol=1e-4, atol=1e-6):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def main(backend="reference"):
    jit = lambda f, **kw: jitc.jit(f, backend=backend, **kw)  # noqa: E731
    rng = np.random.default_rng(1)

    U, V = gray_scott_state(64)
    U2, V2 = U.copy(), V.copy()
    jit(gray_scott, static_argnames="steps")(U, V, steps=10)
    gray_scott(U2, V2, steps=10)
    _same(U, U2, "gray_scott U"), _same(V, V2, "gray_scott V")
    print(f"gray_scott: {backend} matches NumPy (U, V updated in place)")

    model = MLP(8, 16, 2)
    twin = copy.deepcopy(model)
    x, y = rng.standard_normal((32, 8)), rng.standard_normal((32, 2))
    fit = jit(MLP.fit_step)
    for _ in range(3):
        _same(fit(model, x, y), twin.fit_step(x, y), "MLP loss")
    for name in ("W1", "b1", "W2", "b2"):
        _same(getattr(model, name), getattr(twin, name), f"MLP.{name}")
    print(f"MLP.fit_step: {backend} matches NumPy (self.W1 ... updated in place)")

    shapes = [(6, 4), (4,), (4, 3)]
    params = [rng.standard_normal(s) for s in shapes]
    mems = [np.zeros(s) for s in shapes]
    grads = [10 * rng.standard_normal(s) for s in shapes]
    want = [copy.deepcopy(v) for v in (params, grads, mems)]
    step = jit(adagrad)
    for _ in range(2):
        step(params, grads, mems)
        adagrad(*want)
    for got, ref, what in zip((params, grads, mems), want, ("params", "grads", "mems")):
        for a, b in zip(got, ref):
            _same(a, b, f"adagrad {what}")
    print(f"adagrad: {backend} matches NumPy (params, grads and mems updated in place)")

    att, ref = Attention(), Attention()
    decode = jit(Attention.decode, static_argnames="pos")
    for pos in range(3):
        tok = rng.standard_normal(16).astype(np.float32)
        _same(decode(att, tok, pos=pos), ref.decode(tok, pos), "decode")
    _same(att.cache_k, ref.cache_k, "cache_k"), _same(att.cache_v, ref.cache_v, "cache_v")
    print(f"Attention.decode: {backend} matches NumPy (KV cache written at each position)")

    pos, mass = rng.standard_normal((24, 3)), rng.random(24)
    acc, acc2 = np.empty((24, 3)), np.empty((24, 3))
    jit(accelerations)(pos, mass, acc)
    accelerations(pos, mass, acc2)
    _same(acc, acc2, "accelerations")
    print(f"accelerations: {backend} matches NumPy (x[mask] = ..., written into acc)")


if __name__ == "__main__":
    main()
