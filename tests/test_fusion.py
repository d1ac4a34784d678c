"""Fusion acceptance: kernel counts, temp bytes, golden IR, the why-not report, the pipeline.

Every compiled result is compared with NumPy running the same function and with the
reference backend evaluating the *unfused* traced graph. Golden IR mismatches print the new
text ready to paste; JITC_UPDATE_GOLDEN=1 rewrites the files.
"""

import os
import pathlib

import numpy as np
import pytest

import jitc
from jitc.backends.reference.interpreter import evaluate
from jitc.core.pytree import flatten
from jitc.fusion import PASSES, Pass, fusion_report, optimize
from jitc.fusion.contract import check_graph
from jitc.fusion.pipeline import run_passes
from jitc.fusion.stats import graph_stats
from tests import test_fusion_programs as P

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _inputs(lowered, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in lowered.graph.params:
        x = rng.standard_normal(p.shape)
        out.append(x.astype(p.dtype) if p.dtype.kind == "f" else (x > 0).astype(p.dtype))
    return out


def assert_close(got, want, rtol=1e-5):
    """allclose, with an absolute slack relative to the array's scale: fusion may reassociate
    a dot (another operand layout), which moves cancelling sums by a few ulp of the scale."""
    want = np.asarray(want)
    finite = np.abs(want[np.isfinite(want)]) if want.dtype.kind == "f" else np.zeros(1)
    scale = float(finite.max()) if finite.size else 0.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * (1.0 + scale))


def compile_and_check(fn, *args):
    """Compile fn for `args` (specs) on the reference backend; check fused == unfused == NumPy
    on random inputs; return (lowered, compiled)."""
    lowered = jitc.jit(fn, backend="reference").lower(*args)
    compiled = lowered.compile()
    flat = _inputs(lowered)
    unfused = evaluate(lowered.graph, flat)
    fused = compiled.executable(*flat)
    for a, b in zip(unfused, fused):
        assert_close(b, a)
    call_args = jitc.core.pytree.unflatten(lowered.in_tree, flat)[0]
    want = fn(*call_args)
    got = compiled(*call_args)
    for w, g in zip(flatten(want)[0], flatten(got)[0]):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert_close(g, w, rtol=2e-5)
    return lowered, compiled


def check_golden(name, text):
    path = GOLDEN / f"fusion_{name}.txt"
    if os.environ.get("JITC_UPDATE_GOLDEN"):
        path.write_text(text + "\n")
    expected = path.read_text().rstrip("\n") if path.exists() else None
    if text != expected:
        pytest.fail(f"optimized IR of {name} changed; if intended, paste into {path}:\n{text}")


def _kinds(graph):
    return [n.attrs["kind"] for n in graph.nodes if n.op == "fusion"]


# ----------------------------------------------------------------------------- acceptance


def test_softmax_relu_dense_is_dot_plus_one_fusion():
    lo, c = compile_and_check(
        P.softmax_layer, jitc.spec("f32[64,128]"), jitc.spec("f32[128,256]"), jitc.spec("f32[256]")
    )
    s = c.stats()
    dot_bytes = 64 * 256 * 4
    assert s["kernels"] <= 2 and s["temp_bytes"] <= dot_bytes, s
    assert _kinds(c.graph) == ["dot"]  # the dot with bias, relu and the softmax rows
    body = c.graph.nodes[-1].subgraph
    assert [n.op for n in body.nodes].count("reduce") == 2 and body.nodes[3].op == "dot_general"
    check_golden("softmax_layer", c.as_text())


def test_elementwise_chain_is_one_kernel_without_temporaries():
    lo, c = compile_and_check(
        P.elementwise_chain,
        jitc.spec("f32[512,512]"),
        jitc.spec("f32[512]"),
        jitc.spec("f32[512,1]"),
    )
    assert lo.graph.count_ops() >= 10
    s = c.stats()
    assert s["kernels"] == 1 and s["temp_bytes"] == 0, s
    assert _kinds(c.graph) == ["loop"]
    check_golden("elementwise_chain", c.as_text())


def test_layernorm_is_one_reduction_fusion():
    lo, c = compile_and_check(
        P.layernorm, jitc.spec("f32[256,512]"), jitc.spec("f32[512]"), jitc.spec("f32[512]")
    )
    s = c.stats()
    assert s["kernels"] == 1 and s["temp_bytes"] == 0, s
    assert _kinds(c.graph) == ["reduction"]
    check_golden("layernorm", c.as_text())


def test_gpt2_two_blocks():
    lo, c = compile_and_check(P.gpt2, *P.gpt2_specs())
    traced = lo.graph.count_ops()
    s = c.stats()
    assert s["kernels"] <= traced / 3, (s, traced)
    assert set(_kinds(c.graph)) == {"loop", "reduction", "dot", "multi"}
    report = c.fusion_report()
    lines = report.splitlines()
    n_boundaries = int(lines[0].split(";")[1].split()[0])
    assert n_boundaries == len(lines) - 1 > 0
    for line in lines[1:]:  # producer file:line -> consumer file:line: reason; bytes
        assert line.count("test_fusion_programs.py:") == 2, line
        assert "bytes materialized" in line and ": " in line
    assert "a dot reads its operands from memory" in report
    assert "through a transpose" in report  # the attention output's relayout
    check_golden("gpt2", c.as_text())


def test_cpu_backend_runs_the_fused_acceptance_graphs():
    """The fusion contract is what the cpu code generator emits; run one case end to end."""
    if "cpu" not in jitc.backends.available():
        pytest.skip("cpu backend not available")
    fn = jitc.jit(P.layernorm, backend="cpu")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 32), dtype=np.float32)
    g, b = rng.standard_normal(32, dtype=np.float32), rng.standard_normal(32, dtype=np.float32)
    np.testing.assert_allclose(fn(x, g, b), P.layernorm(x, g, b), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- rules of fusion


def test_expensive_op_is_never_computed_twice():
    lo, c = compile_and_check(P.exp_two_readers, jitc.spec("f32[64,64]"))
    exps = [
        n for f in c.graph.nodes for n in (f.subgraph.nodes if f.subgraph else [f]) if n.op == "exp"
    ]
    assert len(exps) == 1
    assert "fusing exp (expensive) into each would compute it 2 times" in c.fusion_report()


def test_cheap_producer_is_copied_into_each_reader():
    def f(x, b):
        y = x + b  # cheap, read by two kernels of different spaces
        return y.sum(axis=0), np.exp(y).sum(axis=1)

    lo, c = compile_and_check(f, jitc.spec("f32[32,16]"), jitc.spec("f32[16]"))
    adds = [
        n for f_ in c.graph.nodes if f_.op == "fusion" for n in f_.subgraph.nodes if n.op == "add"
    ]
    assert len(adds) == 2 and c.stats()["temp_bytes"] == 0


def test_expensive_op_is_not_recomputed_through_a_broadcast():
    def f(x, b):
        return x * np.exp(b)  # exp(b)[512] would be recomputed for each of 64 rows

    lo, c = compile_and_check(f, jitc.spec("f32[64,512]"), jitc.spec("f32[512]"))
    assert c.stats()["kernels"] == 2
    assert "every element" in c.fusion_report()


def test_dot_output_read_through_a_transpose_is_reported():
    lo, c = compile_and_check(P.dot_transposed, jitc.spec("f32[64,64]"), jitc.spec("f32[64,32]"))
    report = c.fusion_report()
    assert "the dot result is read through a transpose" in report
    assert "8192 bytes materialized" in report
    line = P.dot_transposed.__code__.co_firstlineno + 1
    assert report.count(f"test_fusion_programs.py:{line}") == 2


def test_dot_feeding_a_dot_is_reported():
    def f(x, a, b):
        return (x @ a) @ b

    lo, c = compile_and_check(
        f, jitc.spec("f32[8,16]"), jitc.spec("f32[16,16]"), jitc.spec("f32[16,4]")
    )
    assert "dot output feeds a second dot" in c.fusion_report()


def test_siblings_reading_one_input_become_a_multi_output_fusion():
    lo, c = compile_and_check(P.mean_and_square_mean, jitc.spec("f32[64,128]"))
    assert _kinds(c.graph) == ["multi"] and c.stats()["kernels"] == 1
    body = c.graph.nodes[1].subgraph
    assert len(body.outputs) == 2 and len(body.params) == 1


def test_qkv_split_is_one_multi_output_kernel():
    def f(x, w):
        q, k, v = np.split(x @ w, 3, axis=-1)
        return q * 2.0, k + 1.0, v - 1.0

    lo, c = compile_and_check(f, jitc.spec("f32[16,32]"), jitc.spec("f32[32,96]"))
    assert _kinds(c.graph) == ["multi"]
    assert c.stats()["kernels"] == 2  # the dot, and one pass writing q, k and v


def _arrays_of(fusion):
    return len(fusion.operands) + len(fusion.subgraph.outputs)


def test_no_fusion_reads_and_writes_more_than_max_arrays():
    """A kernel's compile time grows faster than its arrays: a long sum of arguments is
    split into kernels of at most MAX_ARRAYS arrays (fuse.py), and sibling merges stop
    there too (multi.py)."""
    from jitc.fusion.fuse import MAX_ARRAYS

    def total(*xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = acc + x
        return acc

    def siblings(x, *ys):  # every y reads x: one multi-output kernel would hold them all
        return tuple(np.exp(x) * y for y in ys)

    for fn, n in ((total, 3 * MAX_ARRAYS), (siblings, MAX_ARRAYS)):
        lo, c = compile_and_check(fn, *[jitc.spec("f32[64]")] * n)
        fusions = [f for f in c.graph.nodes if f.op == "fusion"]
        assert all(_arrays_of(f) <= MAX_ARRAYS for f in fusions)
        assert max(map(_arrays_of, fusions)) >= MAX_ARRAYS - 1  # and still fuse widely


def test_a_uint8_image_pipeline_is_one_kernel():
    """Convert, blur by slicing, threshold back to uint8 (benchmarks W10)."""
    from benchmarks.workloads import blur_threshold

    lo, c = compile_and_check(blur_threshold, jitc.spec("u8[64,48]"))
    assert c.stats()["kernels"] == 1 and c.stats()["temp_bytes"] == 0


def test_outputs_that_are_inputs_or_repeated():
    def f(x):
        y = x * 2.0
        return x, y, y

    lo, c = compile_and_check(f, jitc.spec("f32[4,4]"))
    assert c.stats()["temp_bytes"] == 0


def test_zero_size_and_scalar_graphs():
    def f(x, s):
        return (x * 2.0).sum(axis=0), np.exp(s) + 1.0

    compile_and_check(f, jitc.spec("f32[0,3]"), jitc.spec("f32[]"))


# ----------------------------------------------------------------------------- pipeline


def test_pipeline_is_a_list_of_named_passes():
    names = [p.name for p in PASSES]
    assert names[:5] == ["steps", "expand", "cse", "fold", "algebra"]
    assert names[-4:] == ["forward_reads", "fuse", "multi", "merge_writes"]
    assert all(isinstance(p, Pass) and callable(p.run) for p in PASSES)


def test_dump_writes_the_ir_after_every_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(jitc.core.config, "DUMP_DIR", str(tmp_path))
    lo = jitc.jit(P.softmax_layer, backend="reference").lower(
        jitc.spec("f32[4,8]"), jitc.spec("f32[8,4]"), jitc.spec("f32[4]")
    )
    g = optimize(lo.graph)
    files = sorted(os.listdir(tmp_path))
    assert files[0] == "softmax_layer.00-traced.txt"
    assert [f.split("-", 1)[1] for f in files[1:]] == [f"{p.name}.txt" for p in PASSES]
    assert (tmp_path / files[-1]).read_text().strip() == str(g)


def test_verifier_runs_after_each_pass_and_names_the_broken_one(monkeypatch):
    def broken(graph):
        graph.nodes[-1].shape = (1, 2, 3)  # a pass that breaks a type
        return graph

    lo = jitc.jit(P.layernorm, backend="reference").lower(
        jitc.spec("f32[4,8]"), jitc.spec("f32[8]"), jitc.spec("f32[8]")
    )
    with pytest.raises(jitc.core.errors.VerifyError, match="after pass 'broken'"):
        run_passes(lo.graph, [Pass("broken", broken)], verify=True)
    monkeypatch.setenv("JITC_VERIFY", "0")
    run_passes(lo.graph, [Pass("broken", broken)], verify=False)  # no verifier, no error
    monkeypatch.setenv("JITC_VERIFY", "1")
    with pytest.raises(jitc.core.errors.VerifyError, match="after pass 'broken'"):
        run_passes(lo.graph, [Pass("broken", broken)])


def test_optimize_leaves_the_traced_graph_alone():
    lo = jitc.jit(P.layernorm, backend="reference").lower(
        jitc.spec("f32[4,8]"), jitc.spec("f32[8]"), jitc.spec("f32[8]")
    )
    before = str(lo.graph)
    optimize(lo.graph, verify=True)
    assert str(lo.graph) == before


def test_report_of_a_fully_fused_function_has_no_boundaries():
    lo, c = compile_and_check(
        P.layernorm, jitc.spec("f32[8,32]"), jitc.spec("f32[32]"), jitc.spec("f32[32]")
    )
    report = c.fusion_report()
    assert "0 boundaries not fused" in report and len(report.splitlines()) == 1


def test_stats_count_launches_and_library_calls():
    lo, c = compile_and_check(P.dot_transposed, jitc.spec("f32[64,64]"), jitc.spec("f32[64,32]"))
    assert graph_stats(c.graph) == c.stats()
    assert c.stats()["library_calls"] == 1 and c.stats()["kernels"] == 2
    check_graph(c.graph)


def test_fusion_report_api_matches_function():
    lo, c = compile_and_check(P.exp_two_readers, jitc.spec("f32[16,16]"))
    assert c.fusion_report() == fusion_report(lo.graph, c.graph)
