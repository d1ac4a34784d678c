"""Environment knobs, read once at import (see the table in README.md)."""

import os

DISABLE_JIT = os.environ.get("JITC_DISABLE_JIT", "") not in ("", "0")
LOG = set(filter(None, os.environ.get("JITC_LOG", "").split(",")))
DUMP_DIR = os.environ.get("JITC_DUMP") or None
# independent small kernels of one cpu call run concurrently (backends/cpu/schedule.py);
# read when a function is compiled, so a benchmark can switch it between compiles
CONCURRENT = os.environ.get("JITC_CONCURRENT", "1") != "0"
DEFAULT_BACKEND = "cpu"
