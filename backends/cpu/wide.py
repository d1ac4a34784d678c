"""The call path of functions with many array arguments: one driver for all of them.

A driver compiled for a function's own signature (driver.py) takes every array as a numba
argument, and numba's compile time grows with each one (~25-40 ms an array: unboxing,
reference counts, shape checks); 300 arguments took 12 s. Past MAX_NARROW_ARRAYS arrays
the call goes another way, whose compiled parts do not depend on the function at all:

- collectors, numba functions of GROUP arrays of one dtype and rank each, write every
  array's data pointer and shape into a table (a record of 1 + ndim int64 per array);
  compiled once per dtype and rank, cached on disk like everything else;
- one wide driver, compiled once, reads the table: it checks the shapes against the
  state's size slots (SignatureMiss otherwise), takes the pointers as the bases of the
  pointer table and runs the launches exactly as a function's own driver does.

The Python function that calls them is generated per function (a few lines per GROUP
arrays). A dtype or layout the collectors were not compiled for is refused by numba's
dispatch with a TypeError, as a function's own driver refuses it.
"""

from __future__ import annotations

import functools

import numpy as np

from jitc.backends.cpu.lowering import storage
from jitc.backends.native.cache import load_module

# Up to this many arrays (arguments and results) a function gets its own driver: one numba
# dispatch per call, the cheapest call there is.
MAX_NARROW_ARRAYS = 16
GROUP = 8  # arrays per collector call

COLLECTOR_HEADER = """\
# jitc's collector of array pointers and shapes (backends/cpu/wide.py)
import numpy as np
from numba import from_dtype, njit
from numba.types import Array, int64
from jitc.backends.native.cache import persistent
"""


def _collector_source(dtype: np.dtype, ndim: int) -> str:
    array = f'Array(from_dtype(np.dtype("{dtype.name}")), {ndim}, "C")'
    names = [f"a{j}" for j in range(GROUP)]
    lines = []
    for j, a in enumerate(names):
        at = j * (1 + ndim)
        lines.append(f"    t[at + {at}] = {a}.ctypes.data")
        lines += [f"    t[at + {at + 1 + k}] = {a}.shape[{k}]" for k in range(ndim)]
    return (
        COLLECTOR_HEADER + f'\n\n@njit((Array(int64, 1, "C"), int64, '
        f"{', '.join([array] * GROUP)}), nogil=True, cache=persistent())\n"
        f"def collect(t, at, {', '.join(names)}):\n" + "\n".join(lines) + "\n"
    )


@functools.cache
def collector(dtype: np.dtype, ndim: int):
    """The compiled collector for C-contiguous arrays of `dtype` and rank `ndim`: a fixed
    runtime piece (the runtime store keeps it for every function)."""
    return load_module(_collector_source(np.dtype(dtype), ndim), runtime=True)


class Layout:
    """Where each array's record lies in the table: arrays are grouped by dtype and rank in
    their order, GROUP to a collector call; a short last group repeats its last array."""

    def __init__(self, types: list):
        self.calls: list = []  # (dtype, ndim, table offset, array indices)
        self.positions = [0] * len(types)  # each array's record: its pointer, then shape
        kinds: dict = {}
        for i, (shape, dtype) in enumerate(types):
            kinds.setdefault((storage(dtype), len(shape)), []).append(i)
        size = 0
        for (dtype, ndim), members in kinds.items():
            record = 1 + ndim
            for start in range(0, len(members), GROUP):
                chunk = members[start : start + GROUP]
                for j, i in enumerate(chunk):
                    self.positions[i] = size + j * record
                self.calls.append((dtype, ndim, size, chunk + [chunk[-1]] * (GROUP - len(chunk))))
                size += GROUP * record
        self.size = size


def wide_run(driver, state: np.ndarray, types: list):
    """run(*arrays): collect the arrays (arguments then results, of `types`) into a table
    and run the wide `driver` with the function's `state` over it."""
    return _generated(types, ["    driver(state, t)"], {"driver": driver, "state": state})


def posting_run(post, state: np.ndarray, types: list):
    """run(*arrays) as wide_run's, but handing `post(state, table, arrays)` the table for
    jitc's native worker (worker.py), which checks the shapes as it posts; numba's dispatch
    of the collectors checks every array's type (TypeError)."""
    arrays = "".join(f"a{i}, " for i in range(len(types)))
    return _generated(types, [f"    post(state, t, ({arrays}))"], {"post": post, "state": state})


def _generated(types: list, last: list, names: dict):
    layout = Layout(types)
    names = dict(names, empty=np.empty, int64=np.int64)
    params = [f"a{i}" for i in range(len(types))]
    lines = [f"def run({', '.join(params)}):", f"    t = empty({layout.size}, int64)"]
    for k, (dtype, ndim, at, members) in enumerate(layout.calls):
        names[f"collect{k}"] = collector(dtype, ndim).collect
        lines.append(f"    collect{k}(t, {at}, {', '.join(params[i] for i in members)})")
    code = "\n".join(lines + last) + "\n"
    exec(compile(code, f"<jitc wide call of {len(types)} arrays>", "exec"), names)
    return names["run"]


def table_run(driver, state: np.ndarray, types: list):
    """run(*arrays) as wide_run's, its table filled in Python: nothing in it is compiled for
    these dtypes and ranks, at a few microseconds a call more than a function's own driver.
    The first calls of a function run it while that driver compiles (executable.py). It
    refuses what numba's dispatch of that driver would, with a TypeError: arrays that are not
    C-contiguous, writeable and aligned arrays of `types`' dtypes and ranks."""
    layout = Layout(types)
    kinds = [(np.dtype(storage(dtype)), len(shape)) for shape, dtype in types]

    def run(*arrays):
        if len(arrays) != len(kinds):
            raise TypeError(f"jitc driver: {len(arrays)} arrays given, {len(kinds)} expected")
        t = np.empty(layout.size, np.int64)
        for i, (a, at, (dtype, ndim)) in enumerate(zip(arrays, layout.positions, kinds)):
            if a.dtype != dtype or a.ndim != ndim or not plain(a):
                raise TypeError(
                    f"jitc driver: array {i} is not a C-contiguous writeable "
                    f"{dtype} array of {ndim} dimensions"
                )
            t[at] = a.ctypes.data
            t[at + 1 : at + 1 + ndim] = a.shape
        driver(state, t)

    return run


def plain(a) -> bool:
    """Is `a` an array as every driver takes it: C-contiguous, writeable and aligned?"""
    flags = a.flags
    return flags.c_contiguous and flags.writeable and flags.aligned


def collector_sources(types: list) -> list[str]:
    """The sources of the collectors a call over arrays of `types` uses."""
    return [_collector_source(np.dtype(dtype), ndim) for dtype, ndim, _, _ in Layout(types).calls]


def collector_modules(types: list) -> list:
    """The collector modules a call over arrays of `types` uses (to seal them)."""
    return [collector(dtype, ndim) for dtype, ndim, _, _ in Layout(types).calls]
