"""Every example runs and matches NumPy; module-level jitted functions are importable."""

import importlib.util
import os

import numpy as np
import pytest

import jitc
from tests.conftest import BACKENDS

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
NAMES = ["quickstart", "mlp", "layernorm", "attention", "lstm", "inplace"]


def load(name):
    """Import examples/NAME.py by path, as the AOT CLI does (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        f"jitc_example_{name}", os.path.join(EXAMPLES, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_example_main_runs_and_matches_numpy(name, capsys):
    load(name).main()
    out = capsys.readouterr().out
    assert "matches NumPy" in out, out


@pytest.mark.parametrize("name", NAMES[1:])
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "reference"])
def test_example_on_compiled_backends(name, backend, capsys):
    kwargs = {"n_steps": 3} if name == "lstm" else {}  # a shorter unroll compiles faster
    load(name).main(backend=backend, **kwargs)
    assert f"{backend} matches NumPy" in capsys.readouterr().out


def test_module_level_functions_are_jitted_and_importable():
    lstm = load("lstm")
    assert isinstance(lstm.step, jitc.Jitted) and lstm.step.__name__ == "step"
    specs = [jitc.spec("f32[1,60]")] * 7
    lowered = lstm.step.lower(*specs)
    text = lowered.as_text()
    assert text.count("f32[1,60]") >= 7 and "constant" in text  # weights are constants
    for module, name, args in [
        ("mlp", "mlp", [jitc.spec("f32[1,512]")]),
        (
            "mlp",
            "layer",
            [jitc.spec("f32[1,512]"), jitc.spec("f32[512,256]"), jitc.spec("f32[256]")],
        ),
        ("attention", "block", [jitc.spec("f32[64,256]")]),
        ("attention", "forward", [jitc.spec("f32[64,256]")]),
        (
            "layernorm",
            "layernorm",
            [jitc.spec("f32[64,256]"), jitc.spec("f32[256]"), jitc.spec("f32[256]")],
        ),
    ]:
        fn = getattr(load(module), name)
        assert isinstance(fn, jitc.Jitted)
        assert fn.lower(*args).as_text()


def test_attention_block_keeps_float32_and_masks_the_future():
    attention = load("attention")
    x = np.random.default_rng(3).standard_normal((8, 256)).astype(np.float32)
    y = jitc.jit(attention.block.fun, backend="reference")(x)
    assert y.dtype == np.float32 and y.shape == x.shape
    # Causality: changing the last position never changes the earlier ones.
    x2 = x.copy()
    x2[-1] += 1
    y2 = jitc.jit(attention.block.fun, backend="reference")(x2)
    np.testing.assert_array_equal(y[:-1], y2[:-1])
    assert not np.allclose(y[-1], y2[-1])


def test_lstm_unroll_equals_repeated_steps():
    lstm = load("lstm")
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((4, 1, 60)).astype(np.float32)
    states = tuple(rng.standard_normal((1, 60)).astype(np.float32) for _ in range(6))
    outs, final = lstm.unroll.lower(xs, *states).compile(backend="reference")(xs, *states)
    step = lstm.step.lower(xs[0], *states).compile(backend="reference")
    s = states
    for t in range(4):
        s = step(xs[t], *s)
        np.testing.assert_allclose(outs[t], s[4], rtol=1e-5, atol=1e-6)
    for a, b in zip(final, s):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dask_example_runs_on_a_local_cluster(capsys):
    pytest.importorskip("distributed")
    load("dask_layernorm").main(rows=2**12)
    assert "layernorm on 2 workers matches NumPy" in capsys.readouterr().out
