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
