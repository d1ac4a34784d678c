"""Buffer planning: liveness, reuse of dead buffers, in-place writes, temp_bytes.

`run_with_plan` executes a graph the way an AOT entry function would: every intermediate is
written into one arena at its planned offset (or into the result buffer the plan names), and
every read comes from there. A plan that let two live values share bytes corrupts a result,
so comparing with the reference interpreter checks the plan, not just its numbers.
"""

import numpy as np

import jitc
from jitc.backends.reference.interpreter import evaluate
from jitc.core.ir import Graph
from jitc.core.primitives import PRIMITIVES
from jitc.fusion import optimize, plan_buffers
from jitc.fusion.buffers import ALIGN


def run_with_plan(graph, plan, args):
    arena = np.zeros(plan.size, np.uint8)
    out_bufs = {}
    for k, o in enumerate(graph.outputs):
        out_bufs.setdefault(k, np.zeros(o.shape, o.dtype))
    first_output = {}
    for k, o in enumerate(graph.outputs):
        first_output.setdefault(o, k)

    def storage(v):
        nbytes = int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize
        if v in plan.offsets:
            off = plan.offsets[v]
            assert off % ALIGN == 0 and off + nbytes <= plan.size
            return arena[off : off + nbytes].view(v.dtype).reshape(v.shape)
        k = plan.in_outputs.get(v, first_output.get(v))
        if k is None:
            return None
        raw = out_bufs[k].reshape(-1).view(np.uint8)
        assert raw.size >= nbytes
        return raw[:nbytes].view(v.dtype).reshape(v.shape)

    def store(v, value):
        buf = storage(v)
        if buf is None:
            env[v] = np.asarray(value)
        else:
            buf[...] = value
            env[v] = buf

    env = {}
    users = graph.users()
    with np.errstate(all="ignore"):
        for n in graph.nodes:
            if n.op == "parameter":
                env[n] = args[n.attrs["index"]]
            elif n.op == "constant":
                env[n] = n.attrs["value"]
            elif n.op == "get":
                pass  # stored when its fusion ran
            elif n.op == "reshape":
                env[n] = env[n.operands[0]].reshape(n.shape)  # a view: same storage
                if storage(n) is not None and not np.shares_memory(env[n], storage(n)):
                    store(n, env[n])
            elif n.op == "fusion":
                values = evaluate(n.subgraph, [env[o] for o in n.operands])
                if n.tuple_types is None:
                    store(n, values[0])
                else:
                    for u in users[n]:
                        store(u, values[u.attrs["index"]])
            else:
                value = PRIMITIVES[n.op].impl(*(env[o] for o in n.operands), **n.attrs)
                store(n, np.asarray(value).astype(n.dtype, copy=False))
    return [np.array(env[o]) for o in graph.outputs]


def check_plan(graph, args):
    plan = plan_buffers(graph)
    want = evaluate(graph, args)
    got = run_with_plan(graph, plan, args)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    return plan


def _chain_of_dots(x, a, b, c, d):
    return (((x @ a) @ b) @ c) @ d


def test_dead_buffers_are_reused():
    lo = jitc.jit(_chain_of_dots, backend="reference").lower(*[jitc.spec("f32[32,32]")] * 5)
    g = optimize(lo.graph, verify=True)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((32, 32), dtype=np.float32) for _ in range(5)]
    plan = check_plan(g, args)
    one = 32 * 32 * 4
    assert len(plan.offsets) == 3  # three intermediates ...
    assert plan.size == 2 * one  # ... but never more than two alive at once
    assert (
        jitc.jit(_chain_of_dots, backend="reference").lower(*args).compile().stats()["temp_bytes"]
        == 2 * one
    )


def _bare(g, op, operands, shape, dtype=np.float32, **attrs):
    return g.add(op, operands, attrs, shape, dtype)


def test_in_place_when_the_operand_dies():
    g = Graph("inplace")
    x = g.add_parameter((8, 8), np.float32)
    a = _bare(g, "exp", [x], (8, 8))
    b = _bare(g, "negative", [a], (8, 8))  # a dies here: b may overwrite it
    c = _bare(g, "transpose", [b], (8, 8), permutation=(1, 0))  # not at its own index
    d = _bare(g, "add", [c, x], (8, 8))
    g.outputs = [d]
    plan = check_plan(g, [np.arange(64, dtype=np.float32).reshape(8, 8) / 64])
    assert plan.in_place == {b: a, d: c}  # c is not in place: a transpose reads b elsewhere
    assert plan.size == 256  # a and b share one buffer; c lives in the result buffer
    assert plan.in_outputs == {c: 0}


def test_results_and_inputs_are_never_planned_or_overwritten():
    g = Graph("io")
    x = g.add_parameter((4,), np.float32)
    a = _bare(g, "exp", [x], (4,))
    r = _bare(g, "reshape", [a], (2, 2), new_sizes=(2, 2))
    b = _bare(g, "negative", [x], (4,))  # x dies here but is an input: not overwritten
    g.outputs = [r, b, x]
    plan = check_plan(g, [np.ones(4, np.float32)])
    assert plan.size == 0 and not plan.in_place
    assert plan.in_outputs == {a: 0}  # a is the result's storage (reshape is a bitcast)


def test_multi_output_elements_have_their_own_lifetimes():
    def f(x, w):
        q, k, v = np.split(x @ w, 3, axis=-1)
        return (q @ k.T) @ v

    lo = jitc.jit(f, backend="reference").lower(jitc.spec("f32[16,32]"), jitc.spec("f32[32,96]"))
    g = optimize(lo.graph, verify=True)
    assert any(n.op == "fusion" and n.attrs["kind"] == "multi" for n in g.nodes)
    rng = np.random.default_rng(0)
    plan = check_plan(
        g,
        [
            rng.standard_normal((16, 32), dtype=np.float32),
            rng.standard_normal((32, 96), dtype=np.float32),
        ],
    )
    # peak: x @ w (6 KB) while the multi fusion writes q, k, v (2 KB each); then q @ k.T
    # (1 KB) takes the dead x @ w's bytes
    assert plan.size == 16 * 96 * 4 + 3 * 16 * 32 * 4
    (s,) = [n for n in g.nodes if n.op in ("dot_general", "fusion") and n.shape == (16, 16)]
    assert plan.offsets[s] == 0


def test_fused_acceptance_cases_run_inside_their_plan():
    from tests import test_fusion_programs as P

    rng = np.random.default_rng(0)
    for fn, specs in (
        (P.softmax_layer, ["f32[8,16]", "f32[16,8]", "f32[8]"]),
        (P.exp_two_readers, ["f32[16,16]"]),
        (P.gpt2, P.gpt2_specs()),
    ):
        lo = jitc.jit(fn, backend="reference").lower(
            *[jitc.spec(s) if isinstance(s, str) else s for s in specs]
        )
        g = optimize(lo.graph, verify=True)
        args = [rng.standard_normal(p.shape).astype(p.dtype) for p in g.params]
        check_plan(g, args)
