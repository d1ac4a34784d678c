"""The examples on backend="cuda" under the simulator, checked against NumPy by their own main().

The attention example's functions run with its own code and weight initializer at width 64
instead of 256 (4 heads of 16): in the simulator one Python thread per CUDA thread streams
every weight, and the width-256 blocks take minutes; tests/test_cuda_backend.py compiles the
full-width kernels to PTX instead.
"""

import numpy as np
import pytest

import jitc
from tests.test_examples import load


@pytest.mark.parametrize("name", ["mlp", "layernorm", "lstm"])
def test_example_main_on_cuda(name, capsys):
    kwargs = {"n_steps": 3} if name == "lstm" else {}
    load(name).main(backend="cuda", **kwargs)
    out = capsys.readouterr().out
    assert out.count("cuda matches NumPy") == 2, out


def test_quickstart_layer_on_cuda():
    quickstart = load("quickstart")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 16), dtype=np.float32)
    W = rng.standard_normal((16, 8), dtype=np.float32)
    b = rng.standard_normal(8, dtype=np.float32)
    got = quickstart.layer.lower(x, W, b).compile(backend="cuda")(x, W, b)
    want = quickstart.layer.fun(x, W, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_attention_block_and_forward_on_cuda():
    attention = load("attention")
    width = 64
    blocks = [attention._init(1, width), attention._init(2, width)]
    final = (np.ones(width, np.float32), np.zeros(width, np.float32))

    def block(x):
        return attention._block(x, blocks[0])

    def forward(x):
        for p in blocks:
            x = attention._block(x, p)
        return attention.layernorm(x, *final)

    x = np.random.default_rng(0).standard_normal((8, width)).astype(np.float32)
    for fn in (block, forward):
        compiled = jitc.jit(fn, backend="cuda").lower(x).compile()
        got, want = compiled(x), fn(x)
        assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert compiled.stats()["fusions"] >= 5
