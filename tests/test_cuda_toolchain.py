"""The CUDA toolchain without a GPU: numba-cuda (NVVM) -> PTX for sm_80/sm_90 -> ptxas, and the
same kernels' semantics under numba's CUDA simulator (in a child process, since the simulator is
chosen when numba.cuda is first imported).

Kernels are source text so that both this process and the simulator child run the same code.
"""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest

from jitc.backends.cuda import toolchain

ARCHES = ("sm_80", "sm_90")

KERNELS = textwrap.dedent('''
    import math
    from numba import cuda, float32

    WARP = 32
    TPB = 16  # matmul tile edge


    def ew_exp_tanh(x, out):
        """Grid-stride elementwise loop over float32: out = exp(x) * tanh(x) + 1."""
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, x.shape[0], stride):
            v = x[i]
            out[i] = math.exp(v) * math.tanh(v) + float32(1.0)


    def row_sum(x, out):
        """One block per row: strided partial sums, warp shuffles, then shared memory."""
        partial = cuda.shared.array(32, dtype=float32)
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        lane = tid % WARP
        warp = tid // WARP
        acc = float32(0.0)
        for j in range(tid, x.shape[1], cuda.blockDim.x):
            acc += x[row, j]
        offset = WARP // 2
        while offset > 0:
            acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
            offset //= 2
        if lane == 0:
            partial[warp] = acc
        cuda.syncthreads()
        if warp == 0:
            nwarps = (cuda.blockDim.x + WARP - 1) // WARP
            acc = partial[lane] if lane < nwarps else float32(0.0)
            offset = WARP // 2
            while offset > 0:
                acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
                offset //= 2
            if lane == 0:
                out[row] = acc


    def row_sum_smem(x, out):
        """One block (128 threads) per row: a shared-memory tree, no shuffles (the simulator
        has no warp shuffles, so this is the form that runs there too)."""
        buf = cuda.shared.array(128, dtype=float32)
        row = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        acc = float32(0.0)
        for j in range(tid, x.shape[1], 128):
            acc += x[row, j]
        buf[tid] = acc
        cuda.syncthreads()
        width = 64
        while width > 0:
            if tid < width:
                buf[tid] += buf[tid + width]
            cuda.syncthreads()
            width //= 2
        if tid == 0:
            out[row] = buf[0]


    def matmul_tiled(a, b, c):
        """c = a @ b with TPB x TPB shared-memory tiles (any shapes; edges padded with 0)."""
        sa = cuda.shared.array((TPB, TPB), dtype=float32)
        sb = cuda.shared.array((TPB, TPB), dtype=float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * TPB + ty
        col = cuda.blockIdx.x * TPB + tx
        n, k = a.shape
        m = b.shape[1]
        acc = float32(0.0)
        for t in range((k + TPB - 1) // TPB):
            ka = t * TPB + tx
            kb = t * TPB + ty
            sa[ty, tx] = a[row, ka] if row < n and ka < k else float32(0.0)
            sb[ty, tx] = b[kb, col] if kb < k and col < m else float32(0.0)
            cuda.syncthreads()
            for q in range(TPB):
                acc += sa[ty, q] * sb[q, tx]
            cuda.syncthreads()
        if row < n and col < m:
            c[row, col] = acc
''')

SIGNATURES = {
    "ew_exp_tanh": ("float32[::1]", "float32[::1]"),
    "row_sum": ("float32[:, ::1]", "float32[::1]"),
    "row_sum_smem": ("float32[:, ::1]", "float32[::1]"),
    "matmul_tiled": ("float32[:, ::1]", "float32[:, ::1]", "float32[:, ::1]"),
}

ok, why = toolchain.status()
needs_toolchain = pytest.mark.skipif(not ok, reason=f"CUDA toolchain not installed: {why}")


@pytest.fixture(scope="module")
def reports():
    """{(kernel, arch): (ptx, PtxasReport)} for every sample kernel and arch, made once."""
    keys = [(name, arch) for name in SIGNATURES for arch in ARCHES]
    ptxs = toolchain.compile_ptx_many([(KERNELS, SIGNATURES[n], a, n) for n, a in keys])
    out = {(n, a): (ptx, toolchain.assemble(ptx, a)) for (n, a), ptx in zip(keys, ptxs)}
    rows = [
        f"{'kernel':<14} {'arch':<6} {'regs':>4} {'smem':>5} {'stack':>5} {'spills':>6}"
        f" {'barriers':>8}"
    ]
    for (name, arch), (_, rep) in out.items():
        k = rep.kernel(name)
        rows.append(
            f"{name:<14} {arch:<6} {k.registers:>4} {k.smem_bytes:>5} "
            f"{k.stack_frame_bytes:>5} {k.spill_bytes:>6} {k.barriers:>8}"
        )
    print("\nptxas resources (" + next(iter(out.values()))[1].ptxas_version + ")")
    print("\n".join(rows))
    return out


@needs_toolchain
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", list(SIGNATURES))
def test_kernel_compiles_and_assembles(reports, name, arch):
    ptx, rep = reports[name, arch]
    assert f".target {arch}" in ptx and ".entry" in ptx
    assert rep.arch == arch and len(rep.kernels) == 1
    k = rep.kernel(name)
    assert k.short_name == name
    assert 0 < k.registers <= 255
    assert k.spill_bytes == 0 and k.stack_frame_bytes == 0
    assert rep.cubin[:4] == b"\x7fELF"
    print(f"{name} {arch}: {k.registers} registers, {k.smem_bytes} B smem, {k.barriers} barriers")


@needs_toolchain
def test_kernel_specifics(reports):
    for arch in ARCHES:
        ew_ptx, ew = reports["ew_exp_tanh", arch]
        assert ew.kernel("ew_exp_tanh").smem_bytes == 0
        assert "ex2.approx" in ew_ptx  # libdevice's expf lowered by NVVM, not a call
        rs_ptx, rs = reports["row_sum", arch]
        assert rs.kernel("row_sum").smem_bytes == 32 * 4
        assert "shfl.sync.down" in rs_ptx and "bar.sync" in rs_ptx
        assert rs.kernel("row_sum").barriers >= 1
        assert reports["row_sum_smem", arch][1].kernel("row_sum_smem").smem_bytes == 128 * 4
        _, mm = reports["matmul_tiled", arch]
        assert mm.kernel("matmul_tiled").smem_bytes == 2 * 16 * 16 * 4


@needs_toolchain
def test_function_object_and_numba_types():
    from numba import float32

    ns = {}
    exec(KERNELS, ns)
    if toolchain.simulator_enabled():
        with pytest.raises(toolchain.ToolchainError, match="simulator"):
            toolchain.compile_ptx(ns["ew_exp_tanh"], (float32[::1], float32[::1]), "sm_80")
        return
    ptx = toolchain.compile_ptx(
        ns["ew_exp_tanh"], (float32[::1], float32[::1]), (8, 0), fastmath=True, launch_bounds=256
    )
    rep = toolchain.assemble(ptx, 80)
    assert rep.arch == "sm_80" and rep.kernel("ew_exp_tanh").registers > 0


@needs_toolchain
def test_ptxas_rejection_is_reported():
    bad = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }\n"
    with pytest.raises(toolchain.ToolchainError, match=r"ptxas rejected the PTX for sm_90"):
        toolchain.assemble(bad, "sm_90")


@needs_toolchain
def test_compile_error_is_reported():
    src = "def k(x):\n    x[0] = undefined_name\n"
    with pytest.raises(toolchain.ToolchainError, match="could not compile 'k'"):
        toolchain.compile_ptx(src, ("float32[::1]",), "sm_90")


def test_find_ptxas_names_the_package(monkeypatch):
    monkeypatch.setattr(toolchain, "_nvidia_dirs", lambda: [])
    monkeypatch.delenv("JITC_PTXAS", raising=False)
    toolchain._find_ptxas_cached.cache_clear()
    try:
        with pytest.raises(toolchain.ToolchainError, match="nvidia-cuda-nvcc"):
            toolchain.find_ptxas()
    finally:
        toolchain._find_ptxas_cached.cache_clear()


def test_parse_ptxas_log_formats():
    log = textwrap.dedent("""\
        ptxas info    : 8 bytes gmem
        ptxas info    : Compiling entry function '_ZN6module1fB2v1E5ArrayIfLi1E' for 'sm_90'
        ptxas info    : Function properties for _ZN6module1fB2v1E5ArrayIfLi1E
            16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
        ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]
        ptxas info    : Function properties for helper
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Compiling entry function 'plain' for 'sm_90'
        ptxas info    : Function properties for plain
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 8 registers, 352 bytes cmem[0]
        """)
    rep = toolchain.parse_ptxas_log(log)
    assert rep.arch == "sm_90" and rep.gmem_bytes == 8
    f, plain = rep.kernels
    assert (f.short_name, f.registers, f.smem_bytes, f.stack_frame_bytes) == ("f", 40, 2048, 16)
    assert (f.spill_store_bytes, f.spill_load_bytes, f.barriers, f.cmem_bytes) == (8, 4, 1, 380)
    assert (plain.short_name, plain.registers, plain.smem_bytes, plain.cmem_bytes) == (
        "plain",
        8,
        0,
        352,
    )
    assert rep.kernel("f") is f
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.registers = 1


def test_parse_arch():
    for a in ("sm_90", "sm90", "90", 90, (9, 0), "compute_90"):
        assert toolchain.parse_arch(a) == (9, 0)
    assert toolchain.parse_arch("sm_100") == (10, 0)
    with pytest.raises(toolchain.ToolchainError):
        toolchain.parse_arch("hopper")


def _run_child(code, **env):
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_simulator_enabled_is_decided_at_import():
    code = textwrap.dedent("""
        import json, os
        from jitc.backends.cuda import toolchain as t
        before = t.simulator_enabled()
        from numba import cuda
        after = t.simulator_enabled()
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0" if after else "1"  # too late to matter
        print(json.dumps([before, after, t.simulator_enabled()]))
        """)
    assert json.loads(_run_child(code, NUMBA_ENABLE_CUDASIM="1")) == [True, True, True]
    assert json.loads(_run_child(code, NUMBA_ENABLE_CUDASIM="0")) == [False, False, False]


def test_simulator_follows_numba_config_not_late_environment():
    code = textwrap.dedent("""
        import json, os
        import numba  # reads NUMBA_ENABLE_CUDASIM now
        from jitc.backends.cuda import toolchain as t
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # numba.cuda would not see this...
        late = t.simulator_enabled()
        chosen = t.use_simulator(True)  # ...unless numba re-reads its config
        from numba import cuda
        try:
            t.use_simulator(False)
            switched = True
        except t.ToolchainError:
            switched = False
        print(json.dumps([late, chosen, t.simulator_enabled(), switched]))
        """)
    assert json.loads(_run_child(code, NUMBA_ENABLE_CUDASIM="0")) == [False, True, True, False]


def test_gpu_present_is_safe_without_a_driver():
    present = toolchain.gpu_present()
    assert isinstance(present, bool)
    print(f"gpu_present={present}: {toolchain._gpu_probe()[1]}")
    code = textwrap.dedent("""
        import sys
        from jitc.backends.cuda import toolchain as t
        t.gpu_present(), t.simulator_enabled(), t.status()
        print("numba.cuda" in sys.modules)
        """)
    assert _run_child(code).strip() == "False"  # the probes import no CUDA module here


SIM_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from jitc.backends.cuda import toolchain
    assert toolchain.simulator_enabled()
    ns = {}
    exec(sys.stdin.read(), ns)
    from numba import cuda
    assert toolchain.simulator_enabled()
    rng = np.random.default_rng(0)
    err = {}

    x = rng.standard_normal(1000).astype(np.float32)
    y = np.empty_like(x)
    ns["ew_exp_tanh"] = cuda.jit(ns["ew_exp_tanh"])
    ns["ew_exp_tanh"][4, 64](x, y)  # 256 threads stride over 1000 elements
    ref = np.exp(x) * np.tanh(x) + 1
    err["ew_exp_tanh"] = float(np.max(np.abs(y - ref) / (1 + np.abs(ref))))

    a = rng.standard_normal((3, 300)).astype(np.float32)
    s = np.zeros(3, np.float32)
    cuda.jit(ns["row_sum_smem"])[3, 128](a, s)
    err["row_sum_smem"] = float(np.max(np.abs(s - a.sum(axis=1, dtype=np.float64))))
    # The simulator has no warp shuffles (cuda.shfl_*_sync): row_sum cannot run here.
    try:
        cuda.jit(ns["row_sum"])[1, 32](a, s)
        err["row_sum_shfl"] = "ran"
    except AttributeError as e:
        err["row_sum_shfl"] = str(e)

    A = rng.standard_normal((20, 24)).astype(np.float32)
    B = rng.standard_normal((24, 18)).astype(np.float32)
    C = np.zeros((20, 18), np.float32)
    cuda.jit(ns["matmul_tiled"])[(2, 2), (16, 16)](A, B, C)
    err["matmul_tiled"] = float(np.max(np.abs(C - A.astype(np.float64) @ B)))
    print(json.dumps(err))
""")


def test_kernels_under_simulator_match_numpy():
    proc = subprocess.run(
        [sys.executable, "-c", SIM_CHILD],
        input=KERNELS,
        capture_output=True,
        text=True,
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    err = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"simulator max errors: {err}")
    assert err["ew_exp_tanh"] < 1e-5
    assert err["row_sum_smem"] < 1e-3
    assert err["matmul_tiled"] < 1e-3


@needs_toolchain
def test_compile_ptx_from_a_simulator_process():
    code = textwrap.dedent("""
        import sys
        from numba import cuda  # the simulator, fixed for this process
        from jitc.backends.cuda import toolchain
        assert toolchain.simulator_enabled()
        ptx = toolchain.compile_ptx(sys.stdin.read(), ("float32[::1]", "float32[::1]"),
                                    "sm_80", name="ew_exp_tanh")
        print(toolchain.assemble(ptx, "sm_80").kernel("ew_exp_tanh").registers)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=KERNELS,
        capture_output=True,
        text=True,
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.strip().splitlines()[-1]) > 0
