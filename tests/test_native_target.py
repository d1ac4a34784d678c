"""The CPU target numba compiles jitc's kernels for (backends/native/target.py), each in a
fresh process with jitc's default settings: numba reads its target once per process."""

from __future__ import annotations

import textwrap

import llvmlite.binding as llvm
import pytest

from tests import fresh

HOST = llvm.get_host_cpu_features()
AVX512 = HOST.get("avx512f", False)

TANH_LOOP = textwrap.dedent("""
    import numba
    import numpy as np
    from jitc.backends.cpu.vmath import tanh_f32

    @numba.njit
    def tanh_loop(x, out):
        for i in range(x.size):
            out[i] = tanh_f32(x[i])

    x = np.linspace(-5, 5, 10001, dtype=np.float32)
    out = np.empty_like(x)
    tanh_loop(x, out)
    np.testing.assert_allclose(out, np.tanh(x), rtol=2e-7, atol=0)
    asm = tanh_loop.inspect_asm(tanh_loop.signatures[0])
    print("zmm" in asm)
""")


@pytest.mark.skipif(not AVX512, reason="needs an AVX-512 host")
def test_kernels_vectorize_512_bits_wide_on_avx512(tmp_path):
    out = fresh.run(
        tmp_path,
        textwrap.dedent("""
        import numpy as np
        import jitc

        f = jitc.jit(lambda x: np.tanh(x) * 2)
        x = np.linspace(-5, 5, 4099, dtype=np.float32)
        np.testing.assert_allclose(f(x), np.tanh(x) * 2, rtol=3e-7, atol=0)
        from jitc.backends.native import target
        print(target.child_environment()["NUMBA_CPU_FEATURES"].endswith(",-prefer-256-bit"))
        """)
        + TANH_LOOP,
    )
    assert out.split() == ["True", "True"]


def test_numba_compiled_first_keeps_its_target(tmp_path):
    """numba code compiled before jitc's backend fixed the target: jitc leaves it, and tells
    the processes it starts the features this one really compiles for."""
    out = fresh.run(
        tmp_path,
        """
        import numba
        import numpy as np

        @numba.njit
        def plus_one(x):
            return x + 1

        assert plus_one(1.0) == 2.0
        import jitc
        from numba.core import config
        from numba.core.registry import cpu_target
        from jitc.backends.native import target

        f = jitc.jit(lambda x: x * 2)
        np.testing.assert_array_equal(f(np.arange(5.0)), np.arange(5.0) * 2)
        compiled_for = cpu_target.target_context.codegen()._tm_features
        child = target.child_environment()["NUMBA_CPU_FEATURES"]
        print(config.CPU_FEATURES is None, child == compiled_for)
        """,
    )
    assert out.split() == ["True", "True"]


@pytest.mark.skipif(not AVX512, reason="needs an AVX-512 host")
def test_numba_cpu_features_set_by_the_user_stand(tmp_path):
    """The host's own features, without jitc's change: LLVM's 256-bit preference holds."""
    out = fresh.run(tmp_path, TANH_LOOP, env={"NUMBA_CPU_FEATURES": HOST.flatten()})
    assert out.split() == ["False"]
