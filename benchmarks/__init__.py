"""jitc benchmarks: `python -m benchmarks` (see benchmarks/README.md)."""

import os

# Benchmarks time compiled code: a first call waits for its kernels instead of running the
# reference tier (runtime/tiered.py); bench_tiered.py sets JITC_COMPILE for each of its rows.
os.environ.setdefault("JITC_COMPILE", "sync")
