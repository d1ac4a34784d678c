"""jitc.aot.link: numba kernels + an EntryPlan -> one self-contained object.

Real components only: numba lowers the kernels, llvmlite emits the objects, the system `cc`
links them into an executable and a shared library (loaded with ctypes), and for aarch64
`aarch64-linux-gnu-gcc -static` links a C harness that runs under qemu-aarch64 and compares
with NumPy-computed golden values baked into the C source.
"""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess

import numpy as np
import pytest

from jitc.aot.link import (
    AotLinkError,
    ArrayArg,
    Branch,
    EntryPlan,
    IntArg,
    KernelCall,
    build_object,
    c_prototypes,
    constant_symbol,
    kernel_ir,
    kernel_symbol,
    section_sizes,
    symbol_sizes,
    undefined_symbols,
)

numba = pytest.importorskip("numba")
from numba import njit, types  # noqa: E402

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


# --------------------------------------------------------------------------- kernels


def add_bcast(a, b, out, n, m):
    """out[i, j] = a[i, j] + b[j]"""
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i, j] + b[j]


def matmul(a, b, out, n, k, m):
    for i in range(n):
        for j in range(m):
            acc = np.float32(0)
            for p in range(k):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc


def rowsoft(x, out, n, m):
    """A softmax-shaped row loop (max, transform, sum, normalize) in plain arithmetic:
    e = 1 / (1 + (x - max)^2) instead of exp, so no libm."""
    for i in range(n):
        mx = x[i, 0]
        for j in range(1, m):
            if x[i, j] > mx:
                mx = x[i, j]
        s = np.float32(0)
        for j in range(m):
            d = x[i, j] - mx
            e = np.float32(1) / (np.float32(1) + d * d)
            out[i, j] = e
            s += e
        for j in range(m):
            out[i, j] = out[i, j] / s


@njit(error_model="numpy")  # a dispatcher works too; its options are kept
def gather(table, idx, out, n):
    for i in range(n):
        k = idx[i]
        if k < 0 or k >= table.shape[0]:
            raise IndexError("gather index out of range")
        out[i] = table[k]


def uses_exp(x, out, n):
    for i in range(n):
        out[i] = math.exp(x[i])


def allocates(x, out, n):
    tmp = np.empty(n, np.float32)
    for i in range(n):
        tmp[i] = x[i] * 2
    for i in range(n):
        out[i] = tmp[i]


KERNELS = {"add_bcast": add_bcast, "matmul": matmul, "rowsoft": rowsoft, "gather": gather}

# --------------------------------------------------------------------------- the plan

N, K, M, G = 4, 6, 3, 5
RNG = np.random.default_rng(0)
X = RNG.standard_normal((N, K)).astype(F32)
BIAS = RNG.standard_normal(K).astype(F32)
W = (RNG.standard_normal((K, M)) / 2).astype(F32)
TEN = np.full(G, 10, F32)
IDX_GOOD = np.array([0, 11, 5, 7, 3], I64)
IDX_BAD = np.array([0, 1, 12, 2, 3], I64)  # 12 is out of range for the 12-element table
SENTINEL = -7.0
T0, T1, T2 = 0, N * K * 4, N * K * 4 + N * M * 4  # byte offsets into the temp arena
TEMP_BYTES = T2 + G * 4 + 12  # a little slack, rounded to 16


def make_plan(name="layer"):
    A = ArrayArg
    return EntryPlan(
        name=name,
        params=(((N, K), F32), ((K,), F32), ((G,), I64)),
        results=(((N, M), F32), ((G,), F32)),
        constants=(W, TEN),
        temp_bytes=TEMP_BYTES,
        calls=(
            KernelCall(
                "add_bcast",
                (
                    A("param", 0, (N, K), F32),
                    A("param", 1, (K,), F32),
                    A("temp", T0, (N, K), F32),
                    IntArg(N),
                    IntArg(K),
                ),
            ),
            KernelCall(
                "matmul",
                (
                    A("temp", T0, (N, K), F32),
                    A("const", 0, (K, M), F32),
                    A("temp", T1, (N, M), F32),
                    IntArg(N),
                    IntArg(K),
                    IntArg(M),
                ),
            ),
            KernelCall(
                "rowsoft",
                (A("temp", T1, (N, M), F32), A("result", 0, (N, M), F32), IntArg(N), IntArg(M)),
            ),
            # result 0 read back flat as the gather table
            KernelCall(
                "gather",
                (
                    A("result", 0, (N * M,), F32),
                    A("param", 2, (G,), I64),
                    A("temp", T2, (G,), F32),
                    IntArg(G),
                ),
            ),
            # the same kernel again with other sizes: one local function, two calls
            KernelCall(
                "add_bcast",
                (
                    A("temp", T2, (1, G), F32),
                    A("const", 1, (G,), F32),
                    A("result", 1, (1, G), F32),
                    IntArg(1),
                    IntArg(G),
                ),
            ),
        ),
    )


def reference(x, bias, idx):
    t1 = (x + bias) @ W
    d = t1 - t1.max(axis=1, keepdims=True)
    e = np.float32(1) / (np.float32(1) + d * d)
    y = (e / e.sum(axis=1, keepdims=True)).astype(F32)
    return y, (y.ravel()[idx] + TEN).astype(F32)


Y_REF, G_REF = reference(X, BIAS, IDX_GOOD)


@pytest.fixture(scope="module")
def host_obj():
    return build_object(KERNELS, make_plan(), "host")


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _nm(obj_path, *flags, tool="nm"):
    return _run([tool, *flags, str(obj_path)]).split()


def _defined_globals(obj_path, tool="nm"):
    out = _run([tool, "-g", "--defined-only", str(obj_path)])
    return sorted(line.split()[-1] for line in out.splitlines() if line.strip())


# --------------------------------------------------------------------------- C harness


def _c_array(name, a):
    a = np.ascontiguousarray(a)
    ctype = {"float32": "float", "int64": "int64_t"}[a.dtype.name]
    if a.dtype == F32:
        items = ", ".join(f"{float(v)!r}f" for v in a.ravel())
    else:
        items = ", ".join(f"{int(v)}LL" for v in a.ravel())
    return f"static {ctype} {name}[{max(a.size, 1)}] = {{{items}}};\n"


def harness_source(plan: EntryPlan) -> str:
    """A C program that runs the entry on baked-in inputs and compares with NumPy."""
    src = [
        "#include <stdint.h>\n#include <stdbool.h>\n#include <stddef.h>\n"
        "#include <stdio.h>\n#include <stdlib.h>\n#include <math.h>\n",
        c_prototypes(plan),
        _c_array("x", X),
        _c_array("bias", BIAS),
        _c_array("idx_good", IDX_GOOD),
        _c_array("idx_bad", IDX_BAD),
        _c_array("y_ref", Y_REF),
        _c_array("g_ref", G_REF),
        f"""
static int close(const float* got, const float* want, int n, const char* what) {{
    int bad = 0;
    for (int i = 0; i < n; i++) {{
        float tol = 1e-5f + 1e-5f * fabsf(want[i]);
        if (!(fabsf(got[i] - want[i]) <= tol)) {{
            printf("%s[%d] = %.9g, want %.9g\\n", what, i, got[i], want[i]);
            bad = 1;
        }}
    }}
    return bad;
}}

int main(void) {{
    float y[{N * M}], g[{G}];
    size_t nt = {plan.name}_temp_bytes();
    if (nt != {TEMP_BYTES}) {{ printf("temp_bytes %zu\\n", nt); return 2; }}
    void* temp = malloc(nt);
    int st = {plan.name}(x, bias, idx_good, y, g, temp);
    if (st != 0) {{ printf("status %d on good input\\n", st); return 3; }}
    if (close(y, y_ref, {N * M}, "y") | close(g, g_ref, {G}, "g")) return 4;
    for (int i = 0; i < {G}; i++) g[i] = {SENTINEL}f;
    st = {plan.name}(x, bias, idx_bad, y, g, temp);
    if (st == 0) {{ printf("bad index not reported\\n"); return 5; }}
    for (int i = 0; i < {G}; i++)
        if (g[i] != {SENTINEL}f) {{ printf("a kernel ran after the failing one\\n"); return 6; }}
    free(temp);
    printf("OK status=%d\\n", st);
    return 0;
}}
""",
    ]
    return "".join(src)


# --------------------------------------------------------------------------- tests


def test_kernel_ir_abi():
    """numba's no_cpython_wrapper ABI, as build_object relies on it."""
    arr2 = types.Array(types.float32, 2, "C")
    arr1 = types.Array(types.float32, 1, "C")
    text, symbol = kernel_ir(add_bcast, (arr2, arr1, arr2, types.int64, types.int64))
    import llvmlite.binding as llvm

    fn = llvm.parse_assembly(text).get_function(symbol)
    got = [str(a.type) for a in fn.arguments]
    one_array = lambda ndim: ["ptr", "ptr", "i64", "i64", "ptr"] + ["i64"] * 2 * ndim  # noqa
    assert got == ["ptr", "ptr"] + one_array(2) + one_array(1) + one_array(2) + ["i64", "i64"]
    assert str(fn.global_value_type).startswith("i32 (")  # the status
    declared = [f.name for f in llvm.parse_assembly(text).functions if f.is_declaration]
    assert not [d for d in declared if not d.startswith("llvm.")], declared


def test_object_exports_two_symbols_and_imports_nothing(host_obj, tmp_path):
    path = tmp_path / "layer.o"
    path.write_bytes(host_obj)
    imports = _nm(path, "-u")
    assert set(imports) <= {"memcpy", "memset"}, imports
    assert not [s for s in imports if s.startswith(("Py", "NRT", "_ZN5numba", "numba"))]
    assert undefined_symbols(host_obj) == sorted(imports)
    assert _defined_globals(path) == ["layer", "layer_temp_bytes"]
    # the pickled Python exception info (with the source path) is not carried along
    assert b"IndexError" not in host_obj and b"test_aot_link" not in host_obj

    sizes = symbol_sizes(host_obj)
    for k in KERNELS:  # one local function per kernel (noinline), even add_bcast called twice
        assert sizes[kernel_symbol("layer", k)] > 0, sizes
    for k, c in enumerate((W, TEN)):  # read-only data, unless LLVM folded it into the code
        assert sizes.get(constant_symbol("layer", k), c.nbytes) == c.nbytes
    assert sum(v for k, v in section_sizes(host_obj).items() if k.startswith(".text")) < 16384
    print("host object", len(host_obj), "bytes;", sizes, section_sizes(host_obj))


def test_host_executable(host_obj, tmp_path):
    (tmp_path / "layer.o").write_bytes(host_obj)
    (tmp_path / "main.c").write_text(harness_source(make_plan()))
    _run(
        [
            "cc",
            "-O1",
            "-o",
            str(tmp_path / "main"),
            str(tmp_path / "main.c"),
            str(tmp_path / "layer.o"),
            "-lm",
        ]
    )
    assert _run([str(tmp_path / "main")]).startswith("OK status=1")


def _call(lib, name, x, bias, idx, y, g):
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    tb = getattr(lib, f"{name}_temp_bytes")
    tb.restype = ctypes.c_size_t
    temp = np.empty(tb(), np.uint8)
    ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in (x, bias, idx, y, g, temp)]
    return fn(*ptrs)


def test_shared_library_ctypes(host_obj, tmp_path):
    """Two objects (different entry names, same kernels) link into one .so: all kernel
    symbols are local, so nothing clashes."""
    other = build_object(KERNELS, make_plan("layer_b"), "host", inline=True)
    (tmp_path / "a.o").write_bytes(host_obj)
    (tmp_path / "b.o").write_bytes(other)
    so = tmp_path / "liblayer.so"
    _run(["cc", "-shared", "-o", str(so), str(tmp_path / "a.o"), str(tmp_path / "b.o")])
    lib = ctypes.CDLL(str(so))
    for name in ("layer", "layer_b"):
        x = RNG.standard_normal((N, K)).astype(F32)
        bias = RNG.standard_normal(K).astype(F32)
        y, g = np.empty((N, M), F32), np.empty(G, F32)
        assert _call(lib, name, x, bias, IDX_GOOD, y, g) == 0
        y_ref, g_ref = reference(x, bias, IDX_GOOD)
        np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-6)
        g[:] = SENTINEL
        assert _call(lib, name, x, bias, IDX_BAD, y, g) == 1  # numba's user-exception status
        assert (g == SENTINEL).all()


def test_aarch64_under_qemu(tmp_path):
    cc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if not (cc and qemu):
        pytest.skip(
            "aarch64-linux-gnu-gcc / qemu-aarch64 not installed "
            "(apt-get install gcc-aarch64-linux-gnu qemu-user)"
        )
    obj = build_object(KERNELS, make_plan(), "aarch64-linux")
    assert obj[18:20] == (183).to_bytes(2, "little")  # e_machine EM_AARCH64
    path = tmp_path / "layer.o"
    path.write_bytes(obj)
    assert set(undefined_symbols(obj)) <= {"memcpy", "memset"}
    nm = shutil.which("aarch64-linux-gnu-nm")
    if nm:
        assert set(_nm(path, "-u", tool=nm)) <= {"memcpy", "memset"}
        assert _defined_globals(path, tool=nm) == ["layer", "layer_temp_bytes"]
    (tmp_path / "main.c").write_text(harness_source(make_plan()))
    exe = tmp_path / "main"
    _run([cc, "-static", "-O1", "-o", str(exe), str(tmp_path / "main.c"), str(path), "-lm"])
    assert _run([qemu, str(exe)]).startswith("OK status=1")
    print("aarch64 object", len(obj), "bytes;", symbol_sizes(obj), section_sizes(obj))


def _one_call_plan(kernel, n=8):
    return EntryPlan(
        "one",
        params=(((n,), F32),),
        results=(((n,), F32),),
        constants=(),
        temp_bytes=0,
        calls=(
            KernelCall(
                kernel,
                (ArrayArg("param", 0, (n,), F32), ArrayArg("result", 0, (n,), F32), IntArg(n)),
            ),
        ),
    )


def test_libm_import_is_refused_unless_allowed():
    with pytest.raises(AotLinkError, match="expf"):
        build_object({"k": uses_exp}, _one_call_plan("k"), "host")
    obj = build_object(
        {"k": uses_exp}, _one_call_plan("k"), "host", allowed_imports={"expf", "memcpy", "memset"}
    )
    assert "expf" in undefined_symbols(obj)


def raises_with_value(x, out, n):
    for i in range(n):
        if x[i] < 0:
            raise ValueError("negative at", i)  # run-time exception arguments need NRT
        out[i] = x[i]


@pytest.mark.parametrize("kernel", [allocates, raises_with_value])
def test_runtime_needs_are_refused(kernel):
    with pytest.raises(AotLinkError, match="numba's runtime"):
        build_object({"k": kernel}, _one_call_plan("k"), "host")


def test_plan_mismatches_are_reported():
    plan = _one_call_plan("k")
    bad_dtype = EntryPlan("one", plan.params, (((8,), np.float64),), (), 0, plan.calls)
    with pytest.raises(AotLinkError, match="float64"):
        build_object({"k": add_bcast}, bad_dtype, "host")
    too_big = EntryPlan(
        "one",
        plan.params,
        plan.results,
        (),
        0,
        (
            KernelCall(
                "k", (ArrayArg("param", 0, (16,), F32), ArrayArg("result", 0, (8,), F32), IntArg(8))
            ),
        ),
    )
    with pytest.raises(AotLinkError, match=r"bytes \[0, 64\) of a param of 32"):
        build_object({"k": uses_exp}, too_big, "host")
    past_end = EntryPlan(
        "one",
        plan.params,
        plan.results,
        (),
        0,
        (
            KernelCall(
                "k",
                (
                    ArrayArg("param", 0, (8,), F32, offset=4),
                    ArrayArg("result", 0, (8,), F32),
                    IntArg(8),
                ),
            ),
        ),
    )
    with pytest.raises(AotLinkError, match=r"bytes \[4, 36\) of a param of 32"):
        build_object({"k": uses_exp}, past_end, "host")
    with pytest.raises(AotLinkError, match="outside the arena"):
        build_object(
            {"k": uses_exp},
            EntryPlan(
                "one",
                plan.params,
                (),
                (),
                16,
                (
                    KernelCall(
                        "k",
                        (
                            ArrayArg("param", 0, (8,), F32),
                            ArrayArg("temp", 0, (8,), F32),
                            IntArg(8),
                        ),
                    ),
                ),
            ),
            "host",
        )


def test_branches_are_checked():
    """A loop's branch goes on at a call of the plan and tests a bool in memory."""
    plan = _one_call_plan("k")
    flag = ArrayArg("temp", 0, (), np.bool_)
    for branch, words in [
        (Branch(flag, True, 5), "branch 1: no call 5"),
        (Branch(ArrayArg("temp", 0, (), F32), True, 0), "its flag is float32"),
    ]:
        bad = EntryPlan("one", plan.params, plan.results, (), 16, plan.calls + (branch,))
        with pytest.raises(AotLinkError, match=words):
            build_object({"k": add_bcast}, bad, "host")
