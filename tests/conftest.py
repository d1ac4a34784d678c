"""Shared test configuration: the backends every differential test runs on.

BACKENDS picks up each backend as soon as it can run here (the cpu backend needs numba;
cuda needs a GPU or NUMBA_ENABLE_CUDASIM=1), so tests parametrized with the `backend`
fixture cover it without edits.
"""

import os

os.environ.setdefault("JITC_VERIFY", "1")  # the verifier runs after every optimization pass

import pytest  # noqa: E402

import jitc  # noqa: E402

BACKENDS = [b for b in ("reference", "cpu") if b in jitc.backends.available()]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each available backend's name, one test per backend."""
    return request.param


# The cpu backend compiles a numba module per case, so CI runs the cpu backend on a
# representative slice of the surface table (the cases verified before this stop landed);
# JITC_FULL_SURFACE=1 runs every case on every backend.
FULL_SURFACE = os.environ.get("JITC_FULL_SURFACE", "") not in ("", "0")
CPU_SURFACE_SLICE = 78
