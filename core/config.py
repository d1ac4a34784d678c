"""Environment knobs, read once at import (see the table in README.md)."""

import os

DISABLE_JIT = os.environ.get("JITC_DISABLE_JIT", "") not in ("", "0")
LOG = set(filter(None, os.environ.get("JITC_LOG", "").split(",")))
DUMP_DIR = os.environ.get("JITC_DUMP") or None
# independent small kernels of one cpu call run concurrently (backends/cpu/schedule.py);
# read when a function is compiled, so a benchmark can switch it between compiles
# opt-in: on 2 cores its groups ran in 0.64x the time on a quiet machine but 1.08-1.11x
# slower beside one busy process (benchmarks/bench_executor.py)
CONCURRENT = os.environ.get("JITC_CONCURRENT", "0") not in ("", "0")
DEFAULT_BACKEND = "cpu"
TRACE = os.environ.get("JITC_TRACE") or None  # a Chrome trace file of compiled calls
# Jitted.submit checks that the caller leaves a pending call's argument arrays alone
CHECK_ASYNC = os.environ.get("JITC_CHECK_ASYNC", "") not in ("", "0")
# debug: raise LockOrderError where jitc's lock hierarchy is broken (backends/native/cache.py)
CHECK_LOCKS = os.environ.get("JITC_CHECK_LOCKS", "") not in ("", "0")
# "tiered": a first call whose kernels are not cached runs the reference tier (NumPy) while
# they compile on a background thread (runtime/tiered.py); "sync": the first call compiles
COMPILE = os.environ.get("JITC_COMPILE", "tiered").strip().lower()
