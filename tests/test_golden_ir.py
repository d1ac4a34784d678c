"""Golden IR text: the traced and the optimized graphs of three programs, pinned.

On a mismatch the new text is printed ready to paste; JITC_UPDATE_GOLDEN=1 rewrites the files.
"""

import os
import pathlib

import numpy as np
import pytest

import jitc
from jitc.core.ir_text import parse_graph, print_graph
from tests import golden_programs as P

GOLDEN = pathlib.Path(__file__).parent / "golden"
CASES = {
    "softmax_layer": (P.softmax_layer, ["f32[64,128]", "f32[128,256]", "f32[256]"]),
    "layernorm": (P.layernorm, ["f32[256,512]", "f32[512]", "f32[512]"]),
    "attention": (P.attention, ["f32[16,32]", "f32[32,96]", "f32[32,32]"]),
}


def _check(name, text):
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("JITC_UPDATE_GOLDEN"):
        path.write_text(text + "\n")
    expected = path.read_text().rstrip("\n") if path.exists() else None
    if text != expected:
        pytest.fail(f"IR of {name} changed; if intended, paste into {path}:\n{text}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_ir(name):
    fn, specs = CASES[name]
    lowered = jitc.jit(fn).lower(*map(jitc.spec, specs))
    text = lowered.as_text()
    _check(f"{name}.traced", text)
    assert print_graph(parse_graph(text, constants=_constants(lowered.graph))) == text


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimized_ir(name):
    fn, specs = CASES[name]
    compiled = jitc.jit(fn, backend="reference").lower(*map(jitc.spec, specs)).compile()
    _check(f"{name}.optimized", compiled.as_text())


def _constants(graph):
    return [
        n.attrs["value"]
        for n in graph.nodes
        if n.op == "constant" and isinstance(n.attrs["value"], np.ndarray)
    ]
