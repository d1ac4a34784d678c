"""jitc.aot end to end: real objects linked by the system C compiler and run, the Python
loader run in a process where numba, llvmlite and jitc cannot be imported, the aarch64 object
linked with the cross compiler and run under qemu-aarch64. NumPy is the oracle throughout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba")

import jitc.aot as aot  # noqa: E402
from jitc.aot.link import symbol_sizes, undefined_symbols  # noqa: E402
from jitc.cli import main as cli_main  # noqa: E402
from tests.test_region_writes import slabs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
LSTM_ARGS = ["f32[1,60]"] * 7
ALLOWED_IMPORTS = {"memcpy", "memset", "memmove"}


def _example(name):
    spec = importlib.util.spec_from_file_location(
        f"aot_example_{name}", os.path.join(EXAMPLES, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(directory, name):
    spec = importlib.util.spec_from_file_location(
        f"aot_loader_{name}", os.path.join(directory, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def run_c_test(paths, directory) -> str | None:
    """Compile the artifact's emitted C test against its object and run it: its output
    (which must end well), or None without a system C compiler."""
    cc = shutil.which("cc")
    if not cc:
        return None
    exe = os.path.join(str(directory), "t")
    subprocess.run([cc, paths["test"], paths["object"], "-o", exe], check=True)
    run = subprocess.run([exe], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def _mixed(x, i):
    """A softmax (reduction + scratch row), a reshape-sum, int and bool results, a dot of a
    transposed parameter, and outputs that need copies: a parameter returned as is and one
    value returned twice."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    z = (x.reshape(8, 4) * 2).sum(axis=0)
    mask = np.concatenate([x[:, :2], -x[:, 6:]], axis=1) > 0
    return y, z, x, y.reshape(-1), i * 3 + 1, mask, x @ x.T  # x.T: a transposed operand


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (artifact, directory) for the host artifacts, compiled once."""
    lstm, mlp = _example("lstm"), _example("mlp")
    out = {}
    for name, fn, specs in [
        ("lstm_step", lstm.step, LSTM_ARGS),
        ("mlp", mlp.mlp, ["f32[1,512]"]),
        ("mixed", _mixed, ["f32[4,8]", "i32[3]"]),
    ]:
        art = aot.compile(fn, *specs, name=name)
        directory = str(tmp_path_factory.mktemp(name))
        art.write(directory, emit_test=True)
        out[name] = (art, directory)
    return out


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """The LSTM for aarch64-linux through the CLI, with its C test."""
    directory = str(tmp_path_factory.mktemp("arm"))
    status = cli_main(
        [
            "aot",
            os.path.join(EXAMPLES, "lstm.py") + ":step",
            *[a for spec in LSTM_ARGS for a in ("--arg", spec)],
            "-o",
            directory,
            "--name",
            "lstm",
            "--target",
            "aarch64-linux",
            "--emit-test",
        ]
    )
    assert status == 0
    return directory


# --------------------------------------------------------------------------- the object


def test_lstm_sizes_meet_the_tfcompile_target(built):
    art, directory = built["lstm_step"]
    r = art.size_report()
    print("\n" + art.format_size_report())
    assert r["constants_bytes"] == 3 * (120 * 240 + 240) * 4  # the weights, frozen
    assert r["object_bytes"] == os.path.getsize(os.path.join(directory, "lstm_step.o"))
    assert r["object_bytes"] <= 450 * 1024
    assert r["code_bytes"] <= 64 * 1024
    assert sum(r["kernel_bytes"].values()) + r["entry_bytes"] <= r["code_bytes"]
    assert r["jit_total_bytes"] > 10 * r["object_bytes"]
    with open(os.path.join(directory, "lstm_step.size.json")) as f:
        assert json.load(f)["object_bytes"] == r["object_bytes"]


@pytest.mark.parametrize("name", ["lstm_step", "mlp", "mixed"])
def test_object_imports_nothing_from_python_or_numba(built, name):
    art, directory = built[name]
    imports = set(undefined_symbols(art.object))
    assert imports <= ALLOWED_IMPORTS, imports
    nm = shutil.which("nm")
    if nm:  # the system's view agrees with ours
        listed = subprocess.run(
            [nm, "-u", os.path.join(directory, f"{name}.o")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        names = {w for w in listed if w != "U"}
        assert not any(w.startswith(("Py", "NRT_", "numba_", "_Py")) for w in names), names
        assert names <= ALLOWED_IMPORTS, names


def test_header_declares_the_entry_and_shapes(built):
    art, directory = built["lstm_step"]
    with open(os.path.join(directory, "lstm_step.h")) as f:
        h = f.read()
    assert "int lstm_step(const float* arg0" in h and "void* temp);" in h
    assert "size_t lstm_step_temp_bytes(void);" in h
    assert "#define LSTM_STEP_ARG0_DIM1 60" in h
    assert f"#define LSTM_STEP_TEMP_BYTES {art.plan.temp_bytes}" in h
    assert "arg0 x: f32[1,60], 240 bytes" in h


# --------------------------------------------------------------------------- running it


@pytest.mark.parametrize("name", ["lstm_step", "mlp", "mixed"])
def test_emitted_c_test_passes(built, name):
    cc = shutil.which("cc") or pytest.skip("no system C compiler")
    _, directory = built[name]
    exe = os.path.join(directory, f"{name}_test")
    subprocess.run(
        [cc, "-O1", f"{name}_test.c", f"{name}.o", "-o", exe],
        cwd=directory,
        check=True,
        capture_output=True,
    )
    run = subprocess.run([exe], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert run.stdout.startswith(f"PASS {name}")


BLOCKER = """\
import sys

class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "llvmlite", "jitc"):
            raise ImportError(f"{name} is blocked: the AOT loader must not need it")
        return None

sys.meta_path.insert(0, _Block())
"""

RUNNER = """\
import importlib.util, sys
import numpy as np
for blocked in ("numba", "llvmlite", "jitc"):
    try:
        __import__(blocked)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{blocked} was importable")
name, directory, golden = sys.argv[1:]
spec = importlib.util.spec_from_file_location(name, f"{directory}/{name}.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
data = np.load(golden)
n_in = sum(k.startswith("in") for k in data.files)
got = getattr(module, name)(*[data[f"in{k}"] for k in range(n_in)])
got = got if isinstance(got, tuple) else (got,)
wants = [data[f"out{k}"] for k in range(len(got))]
for g, w in zip(got, wants):
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite", "jitc"))
assert not bad, bad
print("ok", len(got))
"""


@pytest.mark.parametrize("name", ["lstm_step", "mlp", "mixed"])
def test_loader_runs_without_numba_llvmlite_jitc(built, name, tmp_path):
    art, directory = built[name]
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    (tmp_path / "run.py").write_text(RUNNER)
    inputs = art.golden(seed=7)[0]
    wants = art.function(*[a.copy() for a in inputs])  # NumPy runs the Python function
    wants = wants if isinstance(wants, tuple) else (wants,)
    np.savez(
        tmp_path / "golden.npz",
        **{f"in{k}": a for k, a in enumerate(inputs)},
        **{f"out{k}": np.asarray(w) for k, w in enumerate(wants)},
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "blocker"), PYTHONNOUSERSITE="1")
    run = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), name, directory, str(tmp_path / "golden.npz")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr + run.stdout
    assert run.stdout.strip() == f"ok {len(wants)}"


def test_loader_rejects_bad_inputs_with_value_error(built):
    _, directory = built["lstm_step"]
    step = _load(directory, "lstm_step")
    rng = np.random.default_rng(0)
    good = [rng.standard_normal((1, 60)).astype(np.float32) for _ in range(7)]
    cases = [  # (the argument named, the arguments, what the message says)
        ("h0", [good[0], good[1].astype(np.float64), *good[2:]], "has dtype float64"),
        ("c0", [*good[:2], good[2].reshape(60), *good[3:]], "has rank 1-d"),
        ("h2", [*good[:5], np.zeros((1, 61), np.float32), good[6]], "has shape 2-d [1, 61]"),
        ("x", [good[0].tolist(), *good[1:]], "has dtype float64"),  # np.asarray's
        ("c2", [*good[:6], None], "has dtype object"),
    ]
    for arg, args, says in cases:
        with pytest.raises(ValueError, match=f"'{arg}'") as info:
            step(*args)
        assert says in str(info.value)
    with pytest.raises(ValueError, match="expected 7 arguments"):
        step(*good[:6])


def test_loader_copies_non_contiguous_inputs_and_leaves_inputs_alone(built):
    art, directory = built["mixed"]
    mixed = _load(directory, "mixed")
    rng = np.random.default_rng(3)
    big = rng.standard_normal((8, 16)).astype(np.float32)
    x = big[::2, ::2]  # a strided view
    i = np.arange(6, dtype=np.int32)[::2]
    before = (x.copy(), i.copy())
    got = mixed(x, i)
    want = _mixed(x.copy(), i.copy())
    assert len(got) == len(want) == 7
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(i, before[1])
    assert got[2] is not x  # a returned parameter is a copy, as NumPy's x would not be
    x_ro = np.ascontiguousarray(x)
    x_ro.flags.writeable = False  # read-only inputs work too (through a copy)
    np.testing.assert_allclose(mixed(x_ro, i)[0], want[0], rtol=1e-5, atol=1e-6)


def test_out_of_bounds_gather_is_an_exception_not_a_crash(tmp_path):
    def take(t, i):
        return t[i] * 2

    aot.compile(take, "f32[5,3]", "i64[4]", name="take").write(str(tmp_path))
    take_aot = _load(str(tmp_path), "take")
    t = np.arange(15, dtype=np.float32).reshape(5, 3)
    i = np.array([0, 4, -1, 2])
    np.testing.assert_array_equal(take_aot(t, i), take(t, i))
    with pytest.raises(IndexError, match=r"index out of bounds .* at .*test_aot.py:\d+"):
        take_aot(t, np.array([0, 5, 1, 2]))


def test_a_failing_call_raises_numpys_error_or_names_every_way_it_could_fail(tmp_path):
    """Before: every failure was "status 1 (an index out of bounds?)", also NumPy's
    ValueError for an integer power with a negative exponent."""

    def power(x, k):
        return x**k

    def both(t, i, k):
        return t[i] * 2, t**k

    aot.compile(power, "i32[3]", "i32[3]", name="power").write(str(tmp_path))
    aot.compile(both, "i32[5]", "i64[2]", "i32[5]", name="both").write(str(tmp_path))
    power_aot, both_aot = _load(str(tmp_path), "power"), _load(str(tmp_path), "both")
    x = np.arange(3, dtype=np.int32)
    with pytest.raises(
        ValueError,
        match="Integers to negative integer powers are not "
        r"allowed. in np.power at .*test_aot.py:\d+",
    ):
        power_aot(x, np.array([1, -1, 2], np.int32))
    with pytest.raises(RuntimeError, match="status 1: IndexError: .* or ValueError: "):
        both_aot(np.ones(5, np.int32), np.array([9, 0]), np.ones(5, np.int32))
    t = np.arange(5, dtype=np.int32)
    for got, want in zip(both_aot(t, np.array([4, 0]), t), both(t, np.array([4, 0]), t)):
        np.testing.assert_array_equal(got, want)


def test_a_python_scalar_argument_is_taken_at_the_compiled_dtype(tmp_path):
    """Before: the loader refused a Python float for a f32[] argument (even np.float32)."""

    def scale(x, s):
        return x * s

    aot.compile(scale, "f32[3]", "f32[]", name="scale").write(str(tmp_path))
    scale_aot = _load(str(tmp_path), "scale")
    x = np.arange(3, dtype=np.float32)
    for s in (2.5, 2, True, np.float32(2.5)):
        got = scale_aot(x, s)
        assert got.dtype == np.float32 and np.array_equal(got, x * np.float32(s))
    for bad, message in ((2.5j, "complex128"), (np.float64(2.5), "float64"), ("s", "<U1")):
        with pytest.raises(ValueError, match=f"argument 's' has dtype {message}, expected"):
            scale_aot(x, bad)
    with pytest.raises(ValueError, match="must be an array of float32"):
        scale_aot(x, [[1.0], [1.0, 2.0]])  # ragged: np.asarray refuses it
    aot.compile(scale, "i8[3]", "i8[]", name="scale8").write(str(tmp_path))
    scale8 = _load(str(tmp_path), "scale8")
    assert np.array_equal(scale8(np.ones(3, np.int8), -3), np.full(3, -3, np.int8))
    with pytest.raises(ValueError, match="Python int 300 is out of bounds for int8"):
        scale8(np.ones(3, np.int8), 300)
    with pytest.raises(ValueError, match="has dtype float64, expected int8"):
        scale8(np.ones(3, np.int8), 2.5)  # NumPy would not cast a float into int8 either


def test_bincount_compiles_ahead_of_time(tmp_path):
    """np.bincount with a static minlength (its np.add.at scatter); a value past minlength
    is the loader's ValueError, as the cpu backend's."""

    def counts(x, w):
        return np.bincount(x, minlength=6), np.bincount(x, w, minlength=6)

    aot.compile(counts, "i32[7]", "f32[7]", name="counts").write(str(tmp_path))
    counts_aot = _load(str(tmp_path), "counts")
    x, w = np.array([0, 1, 1, 5, 3, 1, 0], np.int32), np.arange(7, dtype=np.float32)
    for got, want in zip(counts_aot(x, w), counts(x, w)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="np.bincount: x holds a negative value"):
        counts_aot(np.array([0, 1, 6, 0, 0, 0, 0], np.int32), w)


def test_running_sums_compile_ahead_of_time(tmp_path):
    def balance(deposits, rates):
        return np.cumsum(deposits, axis=1) * np.cumprod(1.0 + rates)

    aot.compile(balance, "f64[3,12]", "f64[12]", name="balance").write(str(tmp_path))
    balance_aot = _load(str(tmp_path), "balance")
    rng = np.random.default_rng(0)
    d, r = rng.uniform(0, 100, (3, 12)), rng.uniform(0, 0.01, 12)
    np.testing.assert_array_equal(balance_aot(d, r), balance(d, r))


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_sorts_compile_ahead_of_time(tmp_path, dtype):
    """Sort kernels take their two scratch rows from the temp arena (no allocator); float16
    sorts float32 keys converted from its bits."""

    def order(x):
        return np.sort(np.abs(x), axis=0), np.argsort(x, axis=1, kind="stable")

    art = aot.compile(order, f"{dtype}[5,33]", name="order")
    assert set(undefined_symbols(art.object)) <= ALLOWED_IMPORTS
    art.write(str(tmp_path))
    order_aot = _load(str(tmp_path), "order")
    x = np.random.default_rng(0).integers(-4, 4, (5, 33))
    x = x.astype({"f32": np.float32, "f16": np.float16}[dtype])
    x[1, 3], x[2, 5] = np.nan, -0.0
    for got, want in zip(order_aot(x), order(x)):
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- aarch64


def test_aarch64_object_runs_under_qemu(arm):
    gcc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if not gcc or not qemu:
        pytest.skip(
            "aarch64-linux-gnu-gcc / qemu-aarch64 not installed "
            "(Debian: gcc-aarch64-linux-gnu qemu-user)"
        )
    with open(os.path.join(arm, "lstm.o"), "rb") as f:
        obj = f.read()
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == 183  # EM_AARCH64
    assert set(undefined_symbols(obj)) <= ALLOWED_IMPORTS
    assert symbol_sizes(obj)["lstm_signature_digest"] == 33  # lstm_test.c checks it first
    assert not os.path.exists(os.path.join(arm, "liblstm.so"))  # no host library for a cross
    exe = os.path.join(arm, "lstm_test")
    subprocess.run(
        [gcc, "-O1", "-static", "lstm_test.c", "lstm.o", "-o", exe],
        cwd=arm,
        check=True,
        capture_output=True,
    )
    run = subprocess.run([qemu, exe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout
    assert run.stdout.startswith("PASS lstm")


# --------------------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def small_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "small.py"
    path.write_text(
        textwrap.dedent("""\
        import numpy as np

        W = np.linspace(-1, 1, 32 * 4).astype(np.float32).reshape(32, 4)

        def f(x):
            return np.tanh(x @ W)
        """)
    )
    return str(path)


def test_cli_size_and_budget(small_module, tmp_path, capsys):
    out = str(tmp_path / "out")
    assert cli_main(["aot", small_module + ":f", "--arg", "f32[2,32]", "-o", out]) == 0
    captured = capsys.readouterr()
    assert "jitc aot [" in captured.err and "compiling" in captured.err  # progress lines
    assert cli_main(["size", os.path.join(out, "f")]) == 0
    report = capsys.readouterr().out
    assert "constants (weights)" in report and "numba" in report
    f = _load(out, "f")
    x = np.random.default_rng(1).standard_normal((2, 32)).astype(np.float32)
    np.testing.assert_allclose(
        f(x),
        np.tanh(x @ np.linspace(-1, 1, 128).astype(np.float32).reshape(32, 4)),
        rtol=1e-5,
        atol=1e-6,
    )
    status = cli_main(
        ["aot", small_module + ":f", "--arg", "f32[2,32]", "-o", out, "--max-bytes", "100"]
    )
    assert status == 1
    assert "over the budget" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["{m}:missing", "--arg", "f32[2,32]"], "has no function 'missing'"),
        (["{m}:f", "--arg", "f32[2,3x]"], "bad spec 'f32[2,3x]'"),
        (["{m}", "--arg", "f32[2,32]"], "expected FILE.py:FUNCTION"),
        (["/no/such/file.py:f", "--arg", "f32[2,32]"], "no such file"),
        (["{m}:f", "--arg", "f32[1,,2]"], "an empty dimension"),
        (["{m}:f", "--arg", "f32[2,32]", "--name", "class"], "'class' must be an identifier"),
        (["{m}:f", "--arg", "f32[2,32]", "--name", "my-model"], "'my-model' must be an identifier"),
        (["{t}/broken.py:f", "--arg", "f32[2,32]"], "broken.py:2: syntax error"),
        (["{m}:f", "--arg", "f32[2,32]", "-o", "{t}/a_file/out"], "a_file"),
        (["{m}:f", "--arg", "f32[99999999999,99999999999]"], "larger than any NumPy array"),
        (["{m}:f", "--arg", "f32[2305843009213693952]"], "larger than any NumPy"),  # 2**63 bytes
        (["{m}:W", "--arg", "f32[2,32]"], "small.py:W is a ndarray, not a function"),
        (["{m}:f", "--arg", "f64"], "a shape is missing; write 'f64[]' for a scalar"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(small_module, tmp_path, capsys, argv, message):
    (tmp_path / "broken.py").write_text("def f(x):\n    return x +\n")
    (tmp_path / "a_file").write_text("not a directory")
    argv = [a.format(m=small_module, t=tmp_path) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path)]
    assert cli_main(["aot", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_cli_emit_test_of_an_argument_too_big_to_allocate_exits_2(tmp_path, capsys):
    """4 EiB of golden values: MemoryError on any machine, one line and exit 2."""
    (tmp_path / "neg.py").write_text("def f(x):\n    return -x\n")
    assert (
        cli_main(
            [
                "aot",
                f"{tmp_path}/neg.py:f",
                "--arg",
                "f32[576460752303423488]",
                "-o",
                str(tmp_path / "out"),
                "--emit-test",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("jitc aot: MemoryError: Unable to allocate")


def test_cli_size_of_missing_artifact_exits_2(tmp_path, capsys):
    assert cli_main(["size", str(tmp_path / "nothing")]) == 2
    assert "no size report" in capsys.readouterr().err


def test_cli_show_dot_has_fusion_clusters(capsys):
    assert (
        cli_main(
            [
                "show",
                os.path.join(EXAMPLES, "mlp.py") + ":mlp",
                "--arg",
                "f32[1,512]",
                "--stage",
                "optimized",
                "--format",
                "dot",
            ]
        )
        == 0
    )
    dot = capsys.readouterr().out
    assert dot.startswith('digraph "mlp"') and "subgraph cluster_" in dot
    assert "dot_general" in dot and dot.rstrip().endswith("}")


# --------------------------------------------------------------------------- in-out arguments


def _sgd(W, b, x, y):
    """A linear model's SGD step written in place (W and b in-out), returning the loss."""
    err = x @ W + b - y
    W -= 0.1 * (x.T @ err) / x.shape[0]
    b -= 0.1 * err.mean(axis=0)
    return (err**2).mean()


def _smooth(u):
    """A stencil writing its argument while reading neighbours: computed aside, then copied
    in; the function returns the argument itself."""
    u[1:-1] = (u[:-2] + u[2:]) / 2
    return u


def _fill(acc, x):
    """The new contents of an argument also returned: a fresh array, as in NumPy."""
    y = x * 2
    acc[...] = y
    return y, acc


def _rank(x):
    """x.sort() in place (the sort kernel writes the in-out argument), and each row's order."""
    order = np.argsort(x, axis=1)
    x.sort(axis=1)
    return order


@pytest.mark.parametrize(
    "fn,specs,inout",
    [
        (_rank, ["f64[4,9]"], (0,)),
        (_sgd, ["f64[8,3]", "f64[3]", "f64[16,8]", "f64[16,3]"], (0, 1)),
        (_smooth, ["f32[10]"], (0,)),
        (_fill, ["i64[4]", "i64[4]"], (0,)),
        (slabs, ["f64[9,9,3,2,2]", "f64[6,5,3]"], (0,)),  # region writes over the argument
    ],
)
def test_in_out_arguments_are_written_like_numpy(fn, specs, inout, tmp_path):
    art = aot.compile(fn, *specs)
    assert art.plan.inout == inout
    paths = art.write(str(tmp_path), emit_test=True)
    proto = next(line for line in art.header().splitlines() if line.startswith("int "))
    for k, (_, dtype) in enumerate(art.plan.params):
        ctype = {"f": "double" if dtype.itemsize == 8 else "float", "i": "int64_t"}[dtype.kind]
        assert (f"const {ctype}* arg{k}" in proto) == (k not in inout), proto
    out = run_c_test(paths, tmp_path)
    assert out is None or f"{len(inout)} in-out arguments match" in out
    call = _load(str(tmp_path), fn.__name__)
    inputs = art.golden(seed=3)[0]
    mine, numpys = [a.copy() for a in inputs], [a.copy() for a in inputs]
    got, want = call(*mine), fn(*numpys)
    for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
        np.testing.assert_allclose(g, w, rtol=1e-12)
        assert (g is mine[0]) == (w is numpys[0])  # an argument returned is that array
    for a, b in zip(mine, numpys):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    shape = inputs[0].shape
    strided = np.zeros((2 * shape[0],) + shape[1:], inputs[0].dtype)[::2]
    strided[...] = inputs[0]
    call(strided, *[a.copy() for a in inputs[1:]])  # written back through the copy it takes
    np.testing.assert_allclose(strided, numpys[0], rtol=1e-12)
    frozen = inputs[0].copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="in-out.*read-only"):
        call(frozen, *inputs[1:])


def test_in_out_argument_sharing_memory_with_another_is_refused(tmp_path):
    art = aot.compile(_fill, "i64[4]", "i64[4]")
    art.write(str(tmp_path))
    acc = np.zeros(4, np.int64)
    with pytest.raises(ValueError, match="shares memory"):
        _load(str(tmp_path), "_fill")(acc, acc)


def test_captured_arrays_written_are_refused_with_the_reason():
    state = np.zeros(3)

    def bump(x):
        state[...] += x

    with pytest.raises(aot.AotLinkError, match="state.*read-only data.*argument"):
        aot.compile(bump, "f64[3]")
