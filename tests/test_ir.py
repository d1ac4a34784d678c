"""IR printer, parser and verifier."""

import numpy as np
import pytest

import jitc
from jitc.core.errors import VerifyError
from jitc.core.ir import Graph
from jitc.core.ir_text import parse_graph, print_graph
from jitc.core.verify import verify


def _softmax_layer(x, W, b):
    y = np.maximum(x @ W + b, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def _mixed(x, i):
    y = x[::-1, 1:3].T.astype(np.float64)
    z = np.concatenate([y, y * 2.0], axis=0)
    return np.take(z, i, axis=1).sum(axis=0), np.argmax(x, axis=1), np.tril(x) > 0.5


CASES = [
    (_softmax_layer, [jitc.spec("f32[8,16]"), jitc.spec("f32[16,4]"), jitc.spec("f32[4]")]),
    (_layernorm, [jitc.spec("f32[8,32]"), jitc.spec("f32[32]"), jitc.spec("f32[32]")]),
    (_mixed, [jitc.spec("f32[6,6]"), np.array([0, 3, 1], np.int32)]),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[c[0].__name__ for c in CASES])
def test_print_parse_print_round_trips(fn, args):
    graph = jitc.jit(fn, backend="reference").lower(*args).graph
    verify(graph)
    text = print_graph(graph)
    reparsed = parse_graph(text)
    verify(reparsed)
    assert print_graph(reparsed) == text


def test_parsed_graph_computes_the_same():
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    W = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    b = np.linspace(-1, 1, 4, dtype=np.float32)
    graph = jitc.jit(_softmax_layer, backend="reference").lower(x, W, b).graph
    from jitc.backends.reference.interpreter import evaluate

    (got,) = evaluate(parse_graph(print_graph(graph)), [x, W, b])
    np.testing.assert_allclose(got, _softmax_layer(x, W, b), rtol=1e-6)


def test_large_constants_need_the_constants_argument():
    w = np.arange(100, dtype=np.float32)
    # A default argument is baked in as a constant (a closure array would be re-read).
    graph = jitc.jit(lambda x, w=w: x * w, backend="reference").lower(jitc.spec("f32[100]")).graph
    text = print_graph(graph)
    assert "sha1=" in text
    with pytest.raises(VerifyError, match="not given"):
        parse_graph(text)
    assert print_graph(parse_graph(text, constants=[w])) == text


def test_verifier_rejects_a_wrong_result_type_and_shows_the_node():
    g = Graph("bad")
    p = g.add_parameter((2, 3), np.float32)
    g.add("exp", [p], {}, (3, 2), np.float32)
    g.outputs = [g.nodes[-1]]
    with pytest.raises(VerifyError, match=r"(?s)exp result is f32\[3,2\].*--> .*exp"):
        verify(g)


def test_verifier_rejects_use_before_definition():
    g = Graph("bad")
    p = g.add_parameter((2,), np.float32)
    other = Graph("other").add_parameter((2,), np.float32)
    g.add("add", [p, other], {}, (2,), np.float32)
    with pytest.raises(VerifyError, match="used before it is defined"):
        verify(g)


def test_verifier_rejects_a_loop_that_does_not_say_how_it_stops():
    """A while's `stops` is one of WHILE_STOPS: the report trusts a "count" loop to stop."""
    lowered = jitc.jit(_counted, backend="reference").lower(jitc.spec("f64[4]"), jitc.spec("s64[]"))
    text = print_graph(lowered.graph)
    assert "stops=count" in text
    with pytest.raises(VerifyError, match="while stops='sometimes'"):
        verify(parse_graph(text.replace("stops=count", "stops=sometimes")))


def _counted(u, n):
    for _ in range(n):
        u = u + 1.0
    return u


def test_verifier_rejects_missing_attributes():
    g = Graph("bad")
    p = g.add_parameter((2, 3), np.float32)
    g.add("transpose", [p], {}, (3, 2), np.float32)
    with pytest.raises(VerifyError, match="attributes"):
        verify(g)
