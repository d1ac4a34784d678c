"""JITC_TRACE=path.json: compiled calls write Chrome trace events (the JSON chrome://tracing
and Perfetto open): a span per call named after the function, and inside it a span per
kernel with its name (as stats() names it), thread and bytes moved. Kernel spans come from
the cpu backend's profiled launches (backends/cpu/profile.py); other backends give the call
span only. The file is written at exit (and by flush()). Off unless JITC_TRACE is set: the
call path then checks one flag and nothing else."""

from __future__ import annotations

import atexit
import functools
import json
import os
import threading
import time

from jitc.core import config

_events: list = []
_lock = threading.Lock()


def traced_call(compiled, leaves):
    """The call of `compiled` (a stages.Compiled) on these leaves, recorded as a call span
    with its kernels' spans; the call span names the backend that ran it ("reference": the
    first calls of tiered execution, whose kernels were still compiling, or the reference
    backend)."""
    executable = compiled.executable
    profiled = executable.profiled_call
    arrays, captured = compiled.inputs(leaves)
    start = time.perf_counter_ns()
    spans = []
    if profiled is None:
        result = compiled.run(executable, arrays, captured, leaves)
    else:

        def run(*arrays):
            outs, launched = profiled(*arrays)
            spans.extend(launched)
            return outs

        result = compiled.run(run, arrays, captured, leaves)
    end = time.perf_counter_ns()
    _record(
        compiled.name, compiled.backend, start, end, spans, _launch_names(compiled) if spans else {}
    )
    return result


@functools.cache
def _launch_names(compiled) -> dict:
    """launch index -> (kernel name, bytes read + written); a concurrent group's launch
    (backends/cpu/schedule.py) names its members joined by " | "."""
    from jitc.report.kernels import assign_runs, kernels

    executable = compiled.executable
    table = kernels(compiled.graph)
    orphans = assign_runs(table, executable.program.kernels)
    names = {i: ("copy into results", 0) for i in orphans}
    by_name = {k.name: k for k in table}
    for k in table:
        for i in k.runs:
            names[i] = (k.name, k.bytes_read + k.bytes_written)
    for k in table:  # a dot epilogue run by its dot's program kernel: the span names both
        if k.inside:
            for i in by_name[k.inside].runs:
                name, nbytes = names[i]
                names[i] = (f"{name} + {k.name}", nbytes + k.bytes_read + k.bytes_written)
    return {
        i: (" | ".join(names[k][0] for k in members), sum(names[k][1] for k in members))
        for i, members in enumerate(executable.launch_kernels)
    }


def _record(name, backend, start, end, spans, names):
    pid, tid = os.getpid(), threading.get_native_id()
    events = [
        {
            "name": name,
            "cat": "call",
            "ph": "X",
            "ts": start / 1e3,
            "dur": (end - start) / 1e3,
            "pid": pid,
            "tid": tid,
            "args": {"backend": backend},
        }
    ]
    for i, begin, finish in spans:
        kernel, nbytes = names.get(i, (f"launch {i}", 0))
        events.append(
            {
                "name": kernel,
                "cat": "kernel",
                "ph": "X",
                "ts": begin / 1e3,
                "dur": (finish - begin) / 1e3,
                "pid": pid,
                "tid": tid,
                "args": {"bytes": nbytes, "function": name},
            }
        )
    with _lock:
        if not _events:
            atexit.register(flush)
        _events.extend(events)


def flush(path: str | None = None) -> None:
    """Write every event recorded so far to `path` (JITC_TRACE), whole."""
    path = path or config.TRACE
    with _lock:
        text = json.dumps({"traceEvents": _events, "displayTimeUnit": "ns"})
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
