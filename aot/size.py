"""Size reports: what an artifact costs, read from its object's symbol table, beside what
running the same function through the JIT costs (numba + llvmlite + numpy + jitc installed).

This is the tfcompile comparison: XLA's 3-deep LSTM went from 2.6 MB (runtime + graph) to
600 KB ahead of time; `jitc size` prints both sides for any artifact.
"""

from __future__ import annotations

import json
import os
from importlib import metadata

from jitc.aot.link import (
    EntryPlan,
    constant_symbol,
    kernel_symbol,
    section_sizes,
    symbol_sizes,
)

JIT_STACK = ("numba", "llvmlite", "numpy", "jitc")


def _tree_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def installed_bytes(dist: str) -> int:
    """Bytes on disk of an installed distribution (its RECORD; for an editable install, the
    directories its packages import from)."""
    try:
        d = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return 0
    total = 0
    for f in d.files or []:
        p = d.locate_file(f)
        if os.path.isfile(p):
            total += os.path.getsize(p)
    if dist == "jitc":  # editable: RECORD lists a .pth, not the sources
        from jitc.core.source import package_folders

        total = sum(
            _tree_bytes(f)
            for f in package_folders()
            if not any(f.startswith(o + os.sep) for o in package_folders())
        )
    return total


def jit_footprint() -> dict:
    return {name: installed_bytes(name) for name in JIT_STACK}


def size_report(
    obj: bytes,
    plan: EntryPlan,
    kernel_names,
    triple: str,
    cpu: str,
    digest: str,
    labels: dict | None = None,
) -> dict:
    """The artifact's bytes by part; `labels`: each kernel's names in the graph (aot.plan)."""
    syms = symbol_sizes(obj)
    sections = section_sizes(obj)
    kernels = {}
    for k in kernel_names:
        sym = kernel_symbol(plan.name, k)
        if sym in syms:  # a kernel sharing another's code has no symbol of its own
            kernels[k] = syms[sym]
    constants = sum(syms.get(constant_symbol(plan.name, k), 0) for k in range(len(plan.constants)))
    code = sum(v for s, v in sections.items() if s.startswith(".text"))
    footprint = jit_footprint()
    loaded = sum(sections.values())
    return {
        "name": plan.name,
        "target": triple,
        "cpu": cpu,
        "signature_digest": digest,
        "object_bytes": len(obj),
        "code_bytes": code,
        "kernel_bytes": kernels,
        "kernel_labels": {k: (labels or {}).get(k, [k]) for k in kernels},
        "entry_bytes": syms.get(plan.name, 0) + syms.get(f"{plan.name}_temp_bytes", 0),
        "constants_bytes": constants,
        "other_rodata_bytes": sum(v for s, v in sections.items() if not s.startswith(".text"))
        - constants,
        "temp_bytes": plan.temp_bytes,
        "arg_bytes": sum(_nbytes(s, d) for s, d in plan.params),
        "result_bytes": sum(_nbytes(s, d) for s, d in plan.results),
        "total_bytes": loaded,
        "jit_footprint_bytes": footprint,
        "jit_total_bytes": sum(footprint.values()),
    }


def _nbytes(shape, dtype) -> int:
    import numpy as np

    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):,.1f} MB"


def format_report(r: dict) -> str:
    rows = [f"{r['name']}: {r['target']} (cpu {r['cpu']})"]
    if "signature_digest" in r:  # absent from reports written before digests
        rows.append(f"  signature digest {r['signature_digest']}")
    rows.append("")
    rows.append(f"  {'code':<22}{r['code_bytes']:>12,}  {_kb(r['code_bytes'])}")
    labels = r.get("kernel_labels", {})  # absent from reports written before labels
    for k, v in r["kernel_bytes"].items():
        rows.append(f"    {k:<20}{v:>12,}  {' + '.join(labels.get(k, ()))}".rstrip())
    rows.append(f"    {'entry':<20}{r['entry_bytes']:>12,}")
    rows.append(
        f"  {'constants (weights)':<22}{r['constants_bytes']:>12,}  {_kb(r['constants_bytes'])}"
    )
    rows.append(f"  {'other read-only data':<22}{r['other_rodata_bytes']:>12,}")
    rows.append(f"  {'total (loaded)':<22}{r['total_bytes']:>12,}  {_kb(r['total_bytes'])}")
    rows.append(f"  {'object file':<22}{r['object_bytes']:>12,}  {_kb(r['object_bytes'])}")
    rows.append(f"  {'temp arena per call':<22}{r['temp_bytes']:>12,}")
    rows.append(f"  {'arguments / results':<22}{r['arg_bytes']:>12,} / {r['result_bytes']:,}")
    rows.append("")
    rows.append("  the same function under the JIT needs installed:")
    for k, v in r["jit_footprint_bytes"].items():
        rows.append(f"    {k:<20}{v:>12,}  {_kb(v)}")
    jt = r["jit_total_bytes"]
    ratio = jt / r["object_bytes"] if r["object_bytes"] else 0
    rows.append(f"    {'total':<20}{jt:>12,}  {_kb(jt)}  ({ratio:,.0f}x the object)")
    return "\n".join(rows)


def read_size_report(path: str) -> str:
    """`jitc size DIR/NAME`: the formatted report of DIR/NAME.size.json."""
    if path.endswith(".size.json"):
        file = path
    else:
        file = path + ".size.json"
        if os.path.isdir(path):  # DIR with one artifact in it
            found = sorted(f for f in os.listdir(path) if f.endswith(".size.json"))
            if len(found) == 1:
                file = os.path.join(path, found[0])
    if not os.path.isfile(file):
        raise FileNotFoundError(f"no size report {file} (write one with `jitc aot ... -o DIR`)")
    with open(file) as f:
        return format_report(json.load(f))
