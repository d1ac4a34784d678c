"""Tests of the cuda backend: under numba's CUDA simulator, or on a real GPU where there is one.

The simulator is chosen when numba.cuda is first imported, once per process, so these modules
run in a child pytest started by tests/test_cuda_backend.py with NUMBA_ENABLE_CUDASIM=1. On a
machine with a CUDA GPU they also run directly (`pytest tests/cuda_sim`), on the hardware. In
any other process (no simulator, no GPU) they are not collected.

The simulator runs a CUDA block as Python threads that hand the GIL to each other at every
barrier, while its block manager spins: at the default 5 ms switch interval each handoff can
wait a full interval. A 0.1 ms interval makes the same tests several times faster.
"""

import sys

from jitc.backends.cuda import toolchain

if toolchain.simulator_enabled():
    sys.setswitchinterval(1e-4)


def pytest_ignore_collect(collection_path, config):
    if not (toolchain.simulator_enabled() or toolchain.gpu_present()):
        return True
    return None
