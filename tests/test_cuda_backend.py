"""The cuda backend without a GPU, both ways CI can prove it:

- semantics: tests/cuda_sim/ runs in child pytest processes under numba's CUDA simulator
  (chosen per process when numba.cuda is imported), against NumPy;
- the real target: every kernel generated for the examples, and kernels reaching every
  primitive per dtype, compile to PTX with numba-cuda's NVVM and assemble with ptxas for
  sm_80 and sm_90; the registers and shared memory of each kernel are printed (pytest -rA).
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import jitc
from jitc.backends import cuda as cuda_backend
from jitc.backends.cuda import toolchain
from jitc.backends.cuda.ptx import kernel_reports, table
from tests.cuda_sim import programs
from tests.test_examples import load
from tests.test_region_writes import slabs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHES = ("sm_80", "sm_90")
ok, why = toolchain.status()
needs_toolchain = pytest.mark.skipif(not ok, reason=f"CUDA toolchain not installed: {why}")
S = jitc.spec


def _example_functions():
    mlp, ln, att, lstm, qs = (
        load(n) for n in ("mlp", "layernorm", "attention", "lstm", "quickstart")
    )
    vec = [S("f32[1,60]")] * 6
    return [
        ("mlp.mlp", mlp.mlp, [S("f32[4,512]")]),
        ("mlp.layer", mlp.layer, [S("f32[4,512]"), S("f32[512,256]"), S("f32[256]")]),
        ("layernorm", ln.layernorm, [S("f32[64,256]"), S("f32[256]"), S("f32[256]")]),
        ("layernorm_var", ln.layernorm_var, [S("f32[64,256]"), S("f32[256]"), S("f32[256]")]),
        ("attention.block", att.block, [S("f32[64,256]")]),
        ("attention.forward", att.forward, [S("f32[64,256]")]),
        ("lstm.step", lstm.step, [S("f32[1,60]")] + vec),
        ("lstm.unroll", lstm.unroll, [S("f32[8,1,60]")] + vec),
        ("quickstart.layer", qs.layer, [S("f32[4,16]"), S("f32[16,8]"), S("f32[8]")]),
        ("region_writes.slabs", jitc.jit(slabs), [S("f32[9,9,3,2,2]"), S("f32[6,5,3]")]),
    ]


def _optimized(fn, specs):
    return fn.lower(*specs).compile(backend="reference").graph


# ----------------------------------------------------------------------------- the simulator

SIM_MODULES = (
    ["tests/cuda_sim/test_sim_surface.py"],
    [
        "tests/cuda_sim/test_sim_backend.py",
        "tests/cuda_sim/test_sim_examples.py",
        "tests/cuda_sim/test_sim_mutation.py",
        "tests/cuda_sim/test_sim_dtypes.py",
    ],
)


def test_the_simulator_suite_passes():
    """Two child pytest processes (one per core) with NUMBA_ENABLE_CUDASIM=1."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    start = time.time()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *mods],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for mods in SIM_MODULES
    ]
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            p.kill()
            out = p.communicate()[0] + "\n(timed out after 900 s)"
        outs.append(out)
    print(f"\nsimulator suite: {time.time() - start:.0f} s wall")
    for mods, p, out in zip(SIM_MODULES, procs, outs):
        summary = out.strip().splitlines()[-1] if out.strip() else "(no output)"
        print(f"  {' '.join(mods)}: {summary}")
        assert p.returncode == 0, f"{' '.join(mods)} failed under the simulator:\n{out[-6000:]}"
        assert " passed" in summary and "skipped" not in summary, out[-3000:]


def test_the_simulator_tests_are_not_collected_without_the_simulator_or_a_gpu():
    if toolchain.gpu_present():
        pytest.skip("a CUDA GPU is here: tests/cuda_sim run on it")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--collect-only",
            "-p",
            "no:cacheprovider",
            "tests/cuda_sim",
        ],
        cwd=ROOT,
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"),
        capture_output=True,
        text=True,
    )
    assert "no tests collected" in out.stdout + out.stderr, out.stdout[-2000:]


# ----------------------------------------------------------------------------- availability


def test_gpu_benchmark_runs_or_says_in_one_line_why_not():
    out = subprocess.run(
        [sys.executable, "benchmarks/bench_gpu.py", "--quick", "--repeats", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    if not toolchain.gpu_present():
        assert out.stdout.startswith("cuda: skipped: no CUDA GPU"), out.stdout
        assert len(out.stdout.strip().splitlines()) == 1, out.stdout
    else:
        assert "W1" in out.stdout and "W3" in out.stdout, out.stdout


def test_cuda_needs_a_gpu_or_the_simulator_and_says_so():
    if toolchain.simulator_enabled() or toolchain.gpu_present():
        pytest.skip("this process can run cuda kernels")
    assert "cuda" not in jitc.backends.available()
    with pytest.raises(jitc.JitcError) as info:
        jitc.jit(np.exp, backend="cuda")(np.ones(3))
    message = str(info.value)
    assert "GPU" in message and "NUMBA_ENABLE_CUDASIM=1" in message


# ----------------------------------------------------------------------------- sizes at run time


def test_kernels_take_sizes_at_run_time():
    """A new extent reuses the kernel: only ranks, dtypes, the broadcast pattern and the
    graph's own constants (a mean divides by its row length) shape the source."""
    mlp = load("mlp")
    pairs = [
        (
            jitc.jit(lambda x, b: (np.tanh(x + b).max(-1), x.T * 2)),
            [S("f32[64,256]"), S("f32[256]")],
            [S("f32[7,100]"), S("f32[100]")],
        ),
        (
            mlp.layer,
            [S("f32[40,512]"), S("f32[512,256]"), S("f32[256]")],
            [S("f32[96,64]"), S("f32[64,10]"), S("f32[10]")],
        ),
    ]
    for fn, a, b in pairs:
        first = [k.name for k in cuda_backend.kernels(_optimized(fn, a))]
        second = [k.name for k in cuda_backend.kernels(_optimized(fn, b))]
        assert first == second


# ----------------------------------------------------------------------------- PTX and ptxas


@needs_toolchain
def test_example_kernels_compile_to_ptx_and_assemble_for_sm80_and_sm90():
    kernels, owners = {}, {}
    for label, fn, specs in _example_functions():
        for k in cuda_backend.kernels(_optimized(fn, specs)):
            kernels.setdefault(k.name, k)
            owners.setdefault(k.name, []).append(label)
    assert {k.kind for k in kernels.values()} == {"loop", "reduction", "dot_tile", "dot_skinny"}
    start = time.time()
    reports = kernel_reports(list(kernels.values()), ARCHES)  # one NVVM batch, this process
    print(
        f"\n{len(kernels)} distinct kernels x {len(ARCHES)} archs: NVVM + ptxas in "
        f"{time.time() - start:.0f} s ({toolchain.ptxas_version()})"
    )
    print(table(reports))
    print(
        "used by: "
        + "; ".join(f"{name}: {', '.join(sorted(set(o)))}" for name, o in owners.items())
    )
    assert len(reports) == len(kernels) * len(ARCHES)
    for r in reports:
        assert 0 < r.registers <= 255, r
        assert r.spill_bytes == 0, r
        assert r.smem_bytes <= 48 * 1024, r  # static shared memory without opting in


@needs_toolchain
def test_every_primitive_compiles_to_ptx_for_every_dtype():
    """The simulator runs kernels as Python and never type-checks them for numba-cuda; NVVM
    does. One kernel of every elementwise op per dtype, and one function per dtype reaching
    every shape op, reduction kind, argmax/argmin, gather and both dot kernels."""
    kernels = {}
    rng = np.random.default_rng(0)
    for dtype in programs.DTYPES:
        graph, _ = programs.elementwise_graph(dtype)
        lowered = jitc.jit(programs.structure).lower(*programs.structure_inputs(dtype, rng))
        for g in (programs.one_loop_fusion(graph), lowered.compile(backend="reference").graph):
            for k in cuda_backend.kernels(g):
                kernels.setdefault(k.name, k)
    start = time.time()
    reports = kernel_reports(list(kernels.values()), ("sm_90",))
    print(f"\n{len(kernels)} kernels for sm_90 in {time.time() - start:.0f} s")
    assert {k.kind for k in kernels.values()} == {"loop", "reduction", "dot_tile", "dot_skinny"}
    assert all(r.registers > 0 and r.spill_bytes == 0 for r in reports)


def _half_ops(x, d):
    return x * x + x, (d * 3).astype(np.float16), np.cumsum(x, axis=0), np.sort(x, axis=1)


def _unsigned_ops(u):
    return u // (u >> np.uint64(3)), np.fmod(u, np.uint64(7)), u**3, np.sign(u), -u, ~u


@needs_toolchain
def test_float16_and_uint64_kernels_convert_as_numpy_on_the_gpu():
    """float16 elements load by cvt.f32.f16 and every float16 result rounds by cvt.rn.f16.f32;
    float64 -> float16 rounds once (cvt.rn.f16.f64, as NumPy's npy_double_to_half); uint64
    arithmetic, comparisons and literals stay in integers (numba would take a uint64 against
    an int64 literal through float64)."""
    half = _optimized(jitc.jit(_half_ops), [S("f16[4,5]"), S("f64[4,5]")])
    texts = list(cuda_backend.kernels_ptx(half, "sm_80").values())
    for text in texts:
        toolchain.assemble(text, "sm_80")
    assert all("cvt.f32.f16" in t for t in texts)
    assert sum("cvt.rn.f16.f32" in t for t in texts) >= 2  # the arithmetic, the running sum
    assert any("cvt.rn.f16.f64" in t and "cvt.rn.f32.f64" not in t for t in texts)
    unsigned = _optimized(jitc.jit(_unsigned_ops), [S("u64[6]")])
    for text in cuda_backend.kernels_ptx(unsigned, "sm_90").values():
        toolchain.assemble(text, "sm_90")
        assert ".f64" not in text and ".f32" not in text


@needs_toolchain
def test_scatter_kernels_of_traced_index_writes_assemble():
    """x[idx] = v and np.add.at with run-time indices: one thread per column, updates in
    order (the simulator checks the values; NVVM and ptxas check the code)."""
    from tests import test_mutation as m

    kernels = {}
    for fn, make in m.PROGRAMS:
        if fn.__name__ in ("setitem_traced_index", "add_at", "copyto_and_put"):
            lowered = jitc.jit(fn).lower(*make())
            for k in cuda_backend.kernels(lowered.compile(backend="reference").graph):
                kernels.setdefault(k.name, k)
    scatters = [k for k in kernels.values() if "out0[at]" in k.source]
    assert len(scatters) >= 2
    for r in kernel_reports(scatters, ("sm_90",)):
        assert r.registers > 0 and r.spill_bytes == 0, r


@needs_toolchain
def test_the_kernels_of_loop_steps_assemble():
    """Issue 36's loops on the cuda backend: each step's kernels (window reads and writes
    with traced bounds: Levinson-Durbin, a CSR mat-vec) go through NVVM and ptxas."""
    from benchmarks.workloads import csr_matvec, durbin

    lags = np.arange(41)  # long enough not to unroll
    indptr = np.arange(0, 121, 3)
    cases = [
        (durbin, (np.exp(-0.5 * lags),)),
        (csr_matvec, (np.ones(120), np.arange(120) % 40, indptr, np.ones(40))),
    ]
    kernels = {}
    for fn, args in cases:
        graph = jitc.jit(fn).lower(*args).compile(backend="reference").graph
        assert any(n.op == "while" for n in graph.nodes)
        for k in cuda_backend.kernels(graph):
            kernels.setdefault(k.name, k)
    for r in kernel_reports(list(kernels.values()), ("sm_90",)):
        assert r.registers > 0 and r.spill_bytes == 0, r


@needs_toolchain
def test_scan_kernels_assemble_for_every_kind_and_dtype():
    """np.cumsum and friends: one thread per column, its steps in order."""

    def scans(x):
        return (
            np.cumsum(x, axis=0),
            np.cumprod(x, axis=1),
            np.maximum.accumulate(x, axis=1),
            np.minimum.accumulate(x, axis=0),
        )

    kernels = {}
    for dtype in programs.DTYPES:
        lowered = jitc.jit(scans).lower(jitc.ShapeDtype((4, 5), dtype))
        for k in cuda_backend.kernels(lowered.compile(backend="reference").graph):
            kernels.setdefault((k.name, tuple(k.input_dtypes)), k)
    scans = [k for k in kernels.values() if "for k in range(1, " in k.source]
    # running max/min keep every dtype (cumsum/cumprod of small integers run in 64 bits)
    assert {np.dtype(k.input_dtypes[0]) for k in scans} == set(map(np.dtype, programs.DTYPES))
    for r in kernel_reports(list(kernels.values()), ("sm_90",)):
        assert r.registers > 0 and r.spill_bytes == 0, r


@needs_toolchain
def test_sort_kernels_assemble_for_every_dtype():
    """np.sort / np.argsort: one thread per row, a merge sort through a scratch array."""

    def sorts(x):
        return np.sort(x, axis=0), np.argsort(x, axis=1)

    kernels = {}
    for dtype in programs.DTYPES:
        lowered = jitc.jit(sorts).lower(jitc.ShapeDtype((4, 5), dtype))
        for k in cuda_backend.kernels(lowered.compile(backend="reference").graph):
            kernels.setdefault((k.name, tuple(k.input_dtypes)), k)
    assert len(kernels) == 2 * len(programs.DTYPES)
    for r in kernel_reports(list(kernels.values()), ("sm_90",)):
        assert r.registers > 0 and r.spill_bytes == 0, r


@needs_toolchain
def test_ptx_of_a_function_without_a_gpu():
    mlp = load("mlp")
    ptx = cuda_backend.kernels_ptx(_optimized(mlp.mlp, [S("f32[4,512]")]), "sm_80")
    assert len(ptx) >= 2
    for name, text in ptx.items():
        assert ".target sm_80" in text and ".entry" in text and name in text
