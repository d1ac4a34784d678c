"""Shared test configuration: the backends every differential test runs on.

BACKENDS picks up each backend as soon as it can run here (the cpu backend needs numba;
cuda needs a GPU or NUMBA_ENABLE_CUDASIM=1), so tests parametrized with the `backend`
fixture cover it without edits.
"""

import os

os.environ.setdefault("JITC_VERIFY", "1")  # the verifier runs after every optimization pass
# Tests compare the compiled tier with NumPy: a first call waits for its kernels instead of
# running the reference tier (tests/test_tiered.py tests tiered execution itself).
os.environ.setdefault("JITC_COMPILE", "sync")

import pytest  # noqa: E402

import jitc  # noqa: E402

BACKENDS = [b for b in ("reference", "cpu") if b in jitc.backends.available()]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each available backend's name, one test per backend."""
    return request.param


# The cpu backend compiles kernels for every case (~2 s each), so CI runs it on a slice of
# the surface table: the first CPU_SURFACE_HEAD cases and every CPU_SURFACE_STRIDE-th one
# after (about 95 of 460, spread over every section of the table);
# JITC_FULL_SURFACE=1 runs every case on every backend.
FULL_SURFACE = os.environ.get("JITC_FULL_SURFACE", "") not in ("", "0")
CPU_SURFACE_HEAD = 40
CPU_SURFACE_STRIDE = 8


def in_cpu_slice(index: int) -> bool:
    return FULL_SURFACE or index < CPU_SURFACE_HEAD or index % CPU_SURFACE_STRIDE == 0


def backend_dtypes(dtypes, on_cpu) -> list:
    """(backend, dtype) cases: every dtype on the reference backend, and on cpu the slice
    `on_cpu` (each cpu case compiles kernels of its own, 5-30 s with a cold cache: CI runs
    one dtype per code path, e.g. bool, a narrow and a wide integer, float16, a float);
    JITC_FULL_SURFACE=1 runs every dtype on every backend."""
    return [
        pytest.param(b, d, id=f"{b}-{d.__name__}")
        for b in BACKENDS
        for d in dtypes
        if b != "cpu" or FULL_SURFACE or d in on_cpu
    ]
