"""`jitc report` pages opened in a real headless Chromium, JITC_TRACE files, and the report
command's bad input. The pages: the softmax MLP layer and layernorm (FILE.py:FUNC) and the
LSTM step artifact (`jitc aot`, then `jitc report build/step`)."""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import jitc
from jitc import cli
from jitc.aot.artifact import lowering
from jitc.report import graph as report_graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
LSTM_ARGS = ["--arg", "f32[1,60]"] * 7
BROWSER = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
)
needs_browser = pytest.mark.skipif(
    BROWSER is None,
    reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)",
)


def chromium(page, *flags, timeout=120):
    """Run headless Chromium on the file `page` with `flags`; its stdout."""
    done = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            *flags,
            f"file://{page}",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered(page, tmp_path):
    """The page's DOM after its script ran, with a screenshot beside it in tmp_path."""
    shot = tmp_path / (os.path.basename(page) + ".png")
    chromium(page, "--window-size=1300,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000
    dom = chromium(page, "--dump-dom")
    root = re.search(r"<html[^>]*>", dom).group(0)
    assert 'data-ready="1"' in root and 'data-js-errors="0"' in root, root
    return dom


def offline(text):
    """No fetch of anything: no src/href to another place, no CSS import or url()."""
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "@import" not in text and "url(" not in text


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: (page path, compiled function or None, size report or None)}."""
    out = tmp_path_factory.mktemp("reports")
    made = {}
    for name, target, args in [
        (
            "layer",
            "mlp.py:layer",
            ["--arg", "f32[64,512]", "--arg", "f32[512,256]", "--arg", "f32[256]"],
        ),
        (
            "layernorm",
            "layernorm.py:layernorm",
            ["--arg", "f32[64,256]", "--arg", "f32[256]", "--arg", "f32[256]"],
        ),
    ]:
        page = str(out / f"{name}.html")
        assert cli.main(["report", os.path.join(EXAMPLES, target), *args, "-o", page]) == 0
        fn = cli.load_function(os.path.join(EXAMPLES, target))
        compiled = jitc.jit(fn).lower(*cli.parse_specs(args[1::2])).compile()
        made[name] = (page, compiled, None)
    build = out / "build"
    assert (
        cli.main(
            [
                "aot",
                os.path.join(EXAMPLES, "lstm.py:step"),
                *LSTM_ARGS,
                "-o",
                str(build),
                "--max-bytes",
                "2000000",
            ]
        )
        == 0
    )
    page = str(out / "step.html")
    assert cli.main(["report", str(build / "step"), "-o", page]) == 0
    fn = cli.load_function(os.path.join(EXAMPLES, "lstm.py:step"))
    # the graph the artifact compiled (captured weights baked in), as the report compiles it
    compiled = lowering(fn, cli.parse_specs(LSTM_ARGS[1::2]))[0].compile("cpu")
    with open(build / "step.size.json") as f:
        made["step"] = (page, compiled, json.load(f))
    return made


@needs_browser
@pytest.mark.parametrize("name", ["layer", "layernorm", "step"])
def test_the_page_opens_offline_with_a_box_and_a_time_row_per_kernel(pages, name, tmp_path):
    page, compiled, size = pages[name]
    with open(page) as f:
        text = f.read()
    offline(text)
    assert len(text) < 1 << 20  # the LSTM step's page included
    dom = rendered(page, tmp_path)
    names = compiled.stats()["kernel_names"]
    boxes = set(re.findall(r'data-kernel="([^"]+)"', dom))
    assert len(boxes) == compiled.stats()["kernels"] and boxes == set(names)
    rows = set(re.findall(r"data-kernel-time=\"([^\"]+)\"", dom))
    assert set(names) <= rows
    assert "takes" in dom and "% of the kernels' time" in dom  # the sentence about the top kernel
    leaves = [int(b) for b in re.findall(r'data-bytes="(\d+)"', dom)]
    if size is None:
        assert not leaves
    else:  # the artifact's treemap splits its object bytes, and draws the budget
        assert sum(leaves) == size["object_bytes"] and len(leaves) >= 5
        assert "--max-bytes 2,000,000" in dom
        code = {" + ".join(v) for v in size["kernel_labels"].values()}
        assert code and all(set(label.split(" + ")) <= set(names) for label in code), code
    assert re.search(r'<svg[^>]*style="[^"]*width: 100%', dom)  # fits the page's width


@needs_browser
def test_the_error_count_sees_script_and_console_errors(pages, tmp_path):
    """The check above is not vacuous: a page whose script fails, or that logs a console
    error, counts them."""
    with open(pages["layer"][0]) as f:
        text = f.read()
    page = tmp_path / "broken.html"
    page.write_text(
        text.replace("</body>", "<script>console.error('x'); undefined_name();</script></body>")
    )
    dom = chromium(str(page), "--dump-dom")
    assert 'data-js-errors="2"' in re.search(r"<html[^>]*>", dom).group(0)


def test_without_graphviz_the_kernels_are_listed(monkeypatch, pages):
    _, compiled, _ = pages["layer"]
    monkeypatch.setattr(report_graph.shutil, "which", lambda _: None)
    from jitc.report.kernels import kernels

    text, drawn_by = report_graph.render(compiled.graph, kernels(compiled.graph))
    assert drawn_by == "list" and "not installed" in text
    assert sorted(re.findall(r'data-kernel="([^"]+)"', text)) == sorted(
        compiled.stats()["kernel_names"]
    )


def test_compiled_report_from_python_and_its_kernel_times(tmp_path):
    def gelu(x):
        return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    compiled = jitc.jit(gelu).lower(x).compile()
    path = compiled.report(str(tmp_path / "gelu.html"))
    with open(path) as f:
        text = f.read()
    name = compiled.stats()["kernel_names"][0]
    assert f"data-kernel-time='{name}'" in text and "GB/s" in text
    np.testing.assert_allclose(compiled(x), gelu(x), rtol=1e-5, atol=1e-6)  # 1 + tanh cancels


TRACED = """
import numpy as np, jitc

@jitc.jit
def layer(x, W, b):
    h = np.maximum(x @ W + b, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

rng = np.random.default_rng(0)
x, W, b = (rng.standard_normal(s).astype(np.float32) for s in [(32, 64), (64, 48), (48,)])
for _ in range(3):
    got = layer(x, W, b)
h = np.maximum(x @ W + b, 0)
e = np.exp(h - h.max(axis=1, keepdims=True))
np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
"""


def test_jitc_trace_writes_a_span_per_call_with_its_kernels_inside(tmp_path):
    trace = tmp_path / "trace.json"
    env = dict(os.environ, JITC_TRACE=str(trace))
    subprocess.run([sys.executable, "-c", TRACED], env=env, check=True, timeout=300)
    events = json.loads(trace.read_text())["traceEvents"]
    calls = [e for e in events if e["cat"] == "call"]
    kernels = [e for e in events if e["cat"] == "kernel"]
    assert len(calls) == 3 and all(c["name"] == "layer" for c in calls)
    # at this size one launch runs the dot and its epilogue: the span names both
    assert {k["name"] for k in kernels} == {"fusion_3.dot + fusion_3"}
    assert len(kernels) == 3 and all(k["args"]["bytes"] > 0 for k in kernels)
    for k in kernels:
        inside = [
            c
            for c in calls
            if c["ts"] <= k["ts"]
            and k["ts"] + k["dur"] <= c["ts"] + c["dur"]
            and c["tid"] == k["tid"]
        ]
        assert len(inside) == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["report", "/nonexistent/build/step", "-o", "{out}"], "is not an artifact"),
        (["report", "{empty}", "-o", "{out}"], "holds 0 artifacts"),
        (
            [
                "report",
                os.path.join(EXAMPLES, "mlp.py:nothing"),
                "--arg",
                "f32[1,512]",
                "-o",
                "{out}",
            ],
            "has no function 'nothing'",
        ),
        (
            ["report", os.path.join(EXAMPLES, "mlp.py:layer"), "--arg", "f32[1,,2]", "-o", "{out}"],
            "bad spec",
        ),
        (
            [
                "report",
                os.path.join(EXAMPLES, "mlp.py:layer"),
                "--arg",
                "f32[1,512]",
                "-o",
                "/nonexistent/dir/r.html",
            ],
            "cannot write the report",
        ),
        (["report", "{bare}", "--arg", "f32[1]", "-o", "{out}"], "--arg is for FILE.py:FUNCTION"),
        (
            [
                "report",
                os.path.join(EXAMPLES, "mlp.py:layer"),
                "--arg",
                "f32[1,512]",
                "--arg",
                "f32[512,256]",
                "--arg",
                "f32[256]",
                "-o",
                "/proc/r.html",
            ],
            "cannot write the report /proc/r.html",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_file(argv, message, tmp_path, capsys):
    from jitc import aot

    out, empty = tmp_path / "r.html", tmp_path / "empty"
    empty.mkdir()
    bare = tmp_path / "bare"
    if "{bare}" in argv:  # an artifact from the Python API: no command to re-trace
        aot.compile(lambda x: x + 1, jitc.ShapeDtype((4,), np.float32), name="inc").write(str(bare))
    argv = [a.format(out=out, empty=empty, bare=bare / "inc") for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert ".tmp" not in err
    assert not out.exists()


@needs_browser
def test_an_artifact_built_from_python_is_reported(tmp_path, capsys):
    """Before: "records no function to re-trace" for any artifact jitc.aot.compile made.
    A top-level function of a file is recorded and reported whole; a lambda gets its size
    treemap, and the page says what the graph and the time table need."""
    from jitc import aot

    module = tmp_path / "model.py"
    module.write_text("import numpy as np\n\ndef scale(x):\n    return np.tanh(x) * 2\n")
    scale = cli.load_function(f"{module}:scale")
    aot.compile(scale, "f32[64]", name="scale").write(str(tmp_path / "a"))
    aot.compile(lambda x: x + 1, "f32[4]", name="inc").write(str(tmp_path / "b"))
    for artifact, whole in (("a/scale", True), ("b/inc", False)):
        page = tmp_path / f"{os.path.basename(artifact)}.html"
        assert cli.main(["report", str(tmp_path / artifact), "-o", str(page)]) == 0
        said = capsys.readouterr().out
        assert ("records no function" in said) != whole
        dom = rendered(str(page), tmp_path)
        assert bool(re.search(r'data-kernel="', dom)) == whole
        assert bool(re.search(r"data-kernel-time=", dom)) == whole
        assert re.search(r'data-bytes="\d+"', dom)
        assert ("records no function to compile again" in dom) != whole


def test_the_treemap_adds_up_when_a_constant_was_folded_away(tmp_path):
    """An MLP whose first bias is np.zeros: the object has no symbol for constant 1 (nor
    for the small bias), but one for constant 2. Before: the leaves stopped at the first
    missing constant, 8,192 bytes short of the object."""
    from jitc import aot
    from jitc.report import artifact_size

    W1 = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)
    b1 = np.zeros(32, np.float32)
    W2 = np.linspace(1, -1, 32 * 64, dtype=np.float32).reshape(32, 64)
    b2 = np.linspace(0, 1, 64, dtype=np.float32)

    def mlp(x):
        return np.maximum(x @ W1 + b1, 0) @ W2 + b2

    aot.compile(mlp, "f32[1,64]", name="mlp").write(str(tmp_path))
    with open(tmp_path / "mlp.size.json") as f:
        report = json.load(f)
    size = artifact_size(str(tmp_path / "mlp"), report)

    def leaves(node):
        return (
            [node["bytes"]] if "bytes" in node else [b for c in node["children"] for b in leaves(c)]
        )

    assert sum(leaves(size["tree"])) == report["object_bytes"]
    weights = next(c for c in size["tree"]["children"] if c["name"].startswith("weights"))
    assert sum(c["bytes"] for c in weights["children"]) == report["constants_bytes"] > 0


def test_the_kernels_never_take_longer_than_the_call(pages):
    """The time table's figures come from the same profiled calls: the kernels' total is
    at most the call's, and the rows' shares add up to 100%. Before: "the kernels take
    2,426.7 µs" of a 2,410.5 µs call (medians of different calls)."""
    from jitc.report import kernel_times

    for name in ("layer", "step"):
        timing = kernel_times(pages[name][1])
        assert 0 < timing["kernel_ns"] <= timing["profiled_ns"]
        shares = [r["ns"] / timing["rows_ns"] for r in timing["rows"]]
        assert abs(sum(shares) - 1) < 1e-9


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    from jitc.report import page

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(page.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        page.write_atomically(str(tmp_path / "r.html"), "<html></html>")
    assert list(tmp_path.iterdir()) == []


NEWTON = """
import sys
import numpy as np, jitc


def newton_sqrt(a, tol):
    y = np.ones_like(a)
    while np.abs(y * y - a).max() > tol:  # on a negative a (random inputs), never false
        y = 0.5 * (y + a / y)
    return y


if __name__ == "__main__":
    a = np.linspace(1.0, 4.0, 64)
    compiled = jitc.jit(newton_sqrt).lower(a, 1e-12).compile()
    compiled.report(sys.argv[1])
    np.testing.assert_allclose(compiled(a, 1e-12), np.sqrt(a), rtol=1e-12)
"""


def test_a_while_loop_is_timed_on_the_arguments_given_to_lower(tmp_path):
    """Before: the report timed every function on seeded random inputs, and a loop that runs
    until its values converge (Newton's, CG's) never stopped on them: compiled.report()
    hung, in native code that Ctrl-C cannot stop."""
    script, page = tmp_path / "newton.py", tmp_path / "newton.html"
    script.write_text(NEWTON)
    subprocess.run([sys.executable, str(script), str(page)], check=True, timeout=300)
    text = page.read_text()
    assert "calls on the arguments given to lower()" in text and "data-kernel-time=" in text


COUNTED = """
import numpy as np


def smooth(u, steps):
    for _ in range(steps):
        u = 0.5 * (u + np.roll(u, 1))
    if u.sum() > 0:
        u = u * 2.0
    return u
"""


def test_a_counted_loop_and_a_branch_lowered_from_shapes_alone_are_timed(tmp_path):
    """A `for` over a range stops at its trip count and a branch after one step, whatever
    the values: from specs they are timed on seeded random inputs (a traced trip count
    among them)."""
    from jitc.report import kernel_times

    script = tmp_path / "smooth.py"
    script.write_text(COUNTED)
    specs = cli.parse_specs(["f64[64]", "s64[]"])
    compiled = jitc.jit(cli.load_function(f"{script}:smooth")).lower(*specs).compile()
    text = compiled.as_text()
    assert "stops=count" in text and "stops=once" in text and "stops=values" not in text
    times = kernel_times(compiled)
    assert times is not None and times["inputs"] == "seeded random inputs" and times["rows"]


def test_a_while_loop_lowered_from_shapes_alone_is_not_timed(tmp_path):
    """From specs (as `jitc report FILE.py:FUNC --arg ...` lowers) there are no values to
    time a data-driven loop on: the page says so and where the loop is, and returns."""
    from jitc.report import kernel_times

    script, page = tmp_path / "newton.py", tmp_path / "newton.html"
    script.write_text(NEWTON)
    assert (
        cli.main(
            [
                "report",
                f"{script}:newton_sqrt",
                "--arg",
                "f64[64]",
                "--arg",
                "f64[]",
                "-o",
                str(page),
            ]
        )
        == 0
    )
    text = page.read_text()
    assert f"Not timed: the loop at {script}:8 runs until its values say stop" in text
    assert "data-kernel-time=" not in text
    specs = cli.parse_specs(["f64[64]", "f64[]"])
    compiled = jitc.jit(cli.load_function(f"{script}:newton_sqrt")).lower(*specs).compile()
    assert kernel_times(compiled) is None
