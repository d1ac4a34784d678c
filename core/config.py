"""Every JITC_* environment knob jitc reads (README's "Debug knobs" table): the constants
are read once, at import; the functions at each use, for the settings a process decides
on first use (the cache directories) or that tests switch (the verifier)."""

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


def _user_cache(name: str) -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), name)


def cache_dir_setting() -> tuple[str, str]:
    """(path, how the user chose it) of the compile cache's root (backends/native)."""
    if os.environ.get("JITC_CACHE_DIR"):
        return os.environ["JITC_CACHE_DIR"], "JITC_CACHE_DIR"
    return _user_cache("jitc"), "the default cache directory (set JITC_CACHE_DIR)"


def runtime_dir_setting() -> str:
    """The runtime store's root: jitc's fixed compiled pieces, per installation."""
    return os.environ.get("JITC_RUNTIME_DIR") or _user_cache("jitc-runtime")


def cache_max_bytes_setting() -> str:
    """JITC_CACHE_MAX_BYTES as given ("" when unset): the cache's size bound."""
    return os.environ.get("JITC_CACHE_MAX_BYTES", "")


def verify() -> bool:
    """JITC_VERIFY=1: the IR verifier runs after every optimization pass."""
    return os.environ.get("JITC_VERIFY", "") not in ("", "0")


def ptxas() -> str | None:
    """JITC_PTXAS: the ptxas to assemble PTX with, instead of the nvidia-cuda-nvcc wheel's."""
    return os.environ.get("JITC_PTXAS") or None
