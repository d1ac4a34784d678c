"""Timestamps of every kernel launch, for JITC_TRACE and `jitc report`'s time table.

The driver calls kernels through the launcher whose address its state vector holds
(driver.py), so a profiled call is the same driver with another state: one whose launcher
reads the monotonic clock around the real launcher and appends (kernel, pack, start, end)
to a record buffer. Compiled code and the unprofiled path are untouched: profiling costs
nothing when it is off. The profiling launcher bakes this process's addresses into its
source, so it is compiled once per process (about 0.2 s) and never cached on disk.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from jitc.backends.cpu.launcher import launcher_address

FIELDS = 4  # kernel address, pack address, start ns, end ns
CAPACITY = 1 << 14  # launches recorded per profiled call

# records[0] counts the records that follow; one profiled call at a time (LOCK).
_records = np.zeros(1 + FIELDS * CAPACITY, np.int64)
LOCK = threading.Lock()

_SOURCE = """\
import numpy as np
from numba import carray, cfunc
from jitc.backends.cpu.abi import LAUNCHER_SIGNATURE, call_launcher, monotonic_ns, typed_pointer


@cfunc(LAUNCHER_SIGNATURE, nogil=True)
def launch(kernel, pack, rows, work):
    r = carray(typed_pointer({records}, np.int64), ({size},))
    start = monotonic_ns()
    failed = call_launcher({launcher}, kernel, pack, rows, work)
    end = monotonic_ns()
    i = r[0]
    if i < {capacity}:
        r[1 + {fields} * i] = kernel
        r[2 + {fields} * i] = pack
        r[3 + {fields} * i] = start
        r[4 + {fields} * i] = end
        r[0] = i + 1
    return failed
"""


@functools.cache
def profiling_launcher_address() -> int:
    source = _SOURCE.format(
        records=_records.ctypes.data,
        size=_records.size,
        launcher=launcher_address(),
        capacity=CAPACITY,
        fields=FIELDS,
    )
    namespace: dict = {}
    exec(compile(source, "<jitc profiling launcher>", "exec"), namespace)  # noqa: S102
    return namespace["launch"].address


def start() -> None:
    """Forget earlier records (the caller holds LOCK)."""
    _records[0] = 0


def records() -> np.ndarray:
    """This profiled call's records, one row (kernel, pack, start ns, end ns) per launch,
    in launch order."""
    n = int(_records[0])
    return _records[1 : 1 + FIELDS * n].reshape(n, FIELDS).copy()
