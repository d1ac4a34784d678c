"""`jitc report`: one offline HTML page per compiled function or AOT artifact, showing the
fused graph, the artifact's bytes as a treemap and the time each kernel takes.

    jit(f).lower(*args).compile().report("report.html")
    jitc report FILE.py:FUNC --arg f32[...] ... -o report.html
    jitc report build/NAME -o report.html
"""

from __future__ import annotations

import html
import json
import os

from jitc.fusion.report import _where, whole_array_writes
from jitc.report.graph import render
from jitc.report.kernels import assign_runs, kernels, per_kernel
from jitc.report.page import html_page, write_atomically
from jitc.report.timing import copy_bandwidth, time_kernels, timing_inputs

NO_FUNCTION = (
    "<p class='note'>This artifact records no function to compile again (built "
    "by <code>jitc.aot.compile</code> from a function that is not at the top of a "
    "file, such as a lambda or a closure). Its graph and the time each kernel takes "
    "need the function: build the artifact with <code>jitc aot FILE.py:FUNCTION "
    "--arg ...</code>, or from a function defined at the top of a file.</p>"
)


def write(compiled, path: str, size: dict | None = None, title: str | None = None) -> str:
    """Write the report of `compiled` (a Compiled) to `path`; `size`: an artifact's treemap
    (artifact_size). Without `compiled`, the page of an artifact that records no function
    to compile again (`title`: its name) shows the treemap alone. Returns the path."""
    if compiled is None:
        text = html_page(
            f"jitc report: {title}",
            "an AOT artifact's size",
            NO_FUNCTION,
            None,
            size,
            None,
            NO_FUNCTION,
        )
        write_atomically(path, text)
        return path
    graph = compiled.graph
    table = kernels(graph)
    picture, drawn_by = render(graph, table)
    timing = kernel_times(compiled, table)
    untimed = None
    if timing is None and compiled.executable.profiled_call is not None:
        untimed = f"<p class='note'>{html.escape(timing_inputs(compiled)[1])}</p>"
    stats = compiled.stats()
    subtitle = (
        f"{compiled.lowered.graph.count_ops()} traced ops fused into "
        f"{stats['kernels']} kernels ({stats['fusions']} fusions, "
        f"{stats['library_calls']} library calls) on the {compiled.backend} backend; "
        f"temp arena {stats['temp_bytes']:,} bytes"
    )
    writes = [
        (_where(n), n.operands[0].type_str(), nbytes, why)
        for n, nbytes, why in whole_array_writes(compiled.lowered.graph, graph)
    ]
    text = html_page(
        f"jitc report: {graph.name}",
        subtitle,
        picture,
        drawn_by,
        size,
        timing,
        untimed,
        writes=writes,
    )
    write_atomically(path, text)
    return path


def kernel_times(compiled, table=None) -> dict | None:
    """The time table: a row per kernel (name, ops, source, ns, bytes, GB/s, share of copy
    bandwidth, GFLOP/s), sorted by time, and the call's totals; None where the backend does
    not time its launches (only cpu does) or where there is nothing to time it on
    (timing_inputs says why)."""
    executable = compiled.executable
    if executable.profiled_call is None:
        return None
    arrays, inputs = timing_inputs(compiled)
    if arrays is None:
        return None
    table = kernels(compiled.graph) if table is None else table
    orphans = assign_runs(table, executable.program.kernels)
    measured = time_kernels(executable, arrays)
    kernel_ns, grouped = per_kernel(
        measured["launch_ns"], executable.launch_kernels, len(executable.program.kernels)
    )
    copy = copy_bandwidth()
    rows = []
    for k in table:
        ns = sum(kernel_ns[i] for i in k.runs)
        summary = k.summary + (
            " (runs concurrently with independent kernels; its share of their group's time)"
            if grouped & set(k.runs)
            else ""
        )
        rows.append(
            _row(
                k.name, summary, k.where, ns, k.bytes_read, k.bytes_written, k.flops, k.inside, copy
            )
        )
    if orphans:
        rows.append(
            _row(
                "copy into results",
                "copy",
                "",
                sum(kernel_ns[i] for i in orphans),
                0,
                0,
                None,
                None,
                copy,
            )
        )
    rows.sort(key=lambda r: -r["ns"])
    return {
        "rows": rows,
        "rows_ns": sum(r["ns"] for r in rows),
        "kernel_ns": measured["kernel_ns"],
        "profiled_ns": measured["profiled_ns"],
        "call_ns": measured["call_ns"],
        "calls": measured["calls"],
        "inputs": inputs,
        "copy_gbs": copy / 1e9,
    }


def _row(name, summary, where, ns, read, written, flops, inside, copy) -> dict:
    moved = read + written
    rate = moved / (ns * 1e-9) if ns and moved and not inside else None
    short = summary if len(summary) <= 60 else summary[:57] + "..."
    return {
        "name": name,
        "summary": summary,
        "summary_short": short,
        "where": where,
        "ns": 0.0 if inside else ns,
        "read": read,
        "written": written,
        "inside": inside,
        "gbs": rate / 1e9 if rate else None,
        "bw_share": 100 * rate / copy if rate else None,
        "gflops": flops / ns if flops and ns and not inside else None,
    }


def artifact_size(path: str, report: dict) -> dict:
    """The treemap of an artifact's object bytes (leaves add up to object_bytes) and what
    lies beside it: loader files, the temp arena, the JIT install it replaces."""
    from jitc.aot.link import constant_symbol, symbol_sizes

    with open(path + ".o", "rb") as f:
        obj = f.read()
    syms = symbol_sizes(obj)
    name = report["name"]
    labels = report.get("kernel_labels", {})  # the graph's names, as the time table's
    kernels_ = [
        {"name": " + ".join(labels.get(k, [k])), "bytes": v, "kind": "code"}
        for k, v in report["kernel_bytes"].items()
    ]
    code_rest = report["code_bytes"] - sum(report["kernel_bytes"].values()) - report["entry_bytes"]
    code = kernels_ + [{"name": "entry (driver)", "bytes": report["entry_bytes"], "kind": "code"}]
    if code_rest > 0:
        code.append({"name": "other code", "bytes": code_rest, "kind": "code"})
    prefix = constant_symbol(name, 0)[:-1]  # a constant folded away has no symbol
    constants = [
        {"name": f"constant {s[len(prefix) :]}", "bytes": v, "kind": "constants"}
        for s, v in sorted(syms.items(), key=lambda item: _constant_index(item[0]))
        if s.startswith(prefix) and s[len(prefix) :].isdigit()
    ]
    tree = {
        "name": f"{name}.o",
        "children": [
            {"name": "code", "children": code},
            {"name": "weights (constants)", "children": constants},
            {"name": "other read-only data", "bytes": report["other_rodata_bytes"], "kind": "data"},
            {
                "name": "ELF headers, symbols, relocations",
                "bytes": report["object_bytes"] - report["total_bytes"],
                "kind": "file",
            },
        ],
    }
    tree["children"] = [c for c in tree["children"] if c.get("children") or c.get("bytes")]
    beside = [
        (f"{os.path.basename(path)}{ext}", os.path.getsize(path + ext))
        for ext in (".h", ".py")
        if os.path.isfile(path + ext)
    ]
    lib = os.path.join(os.path.dirname(path), f"lib{os.path.basename(path)}.so")
    if os.path.isfile(lib):
        beside.append((os.path.basename(lib) + " (linked object)", os.path.getsize(lib)))
    beside += [
        ("temp arena per call (run time)", report["temp_bytes"]),
        ("arguments + results (run time)", report["arg_bytes"] + report["result_bytes"]),
    ]
    beside += [(f"JIT install: {k}", v) for k, v in report["jit_footprint_bytes"].items()]
    beside.append(("JIT install: total", report["jit_total_bytes"]))
    built = report.get("built_from", {})
    return {"report": report, "tree": tree, "beside": beside, "max_bytes": built.get("max_bytes")}


def _constant_index(symbol: str) -> int:
    digits = symbol[len(symbol.rstrip("0123456789")) :]
    return int(digits) if digits else -1


def read_artifact(path: str) -> tuple[str, dict]:
    """(DIR/NAME, its size report) for `jitc report DIR/NAME` (or DIR with one artifact)."""
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".size.json"))
        if len(found) != 1:
            raise FileNotFoundError(f"{path} holds {len(found)} artifacts; name one as DIR/NAME")
        path = os.path.join(path, found[0][: -len(".size.json")])
    if path.endswith(".size.json"):
        path = path[: -len(".size.json")]
    if not (os.path.isfile(path + ".size.json") and os.path.isfile(path + ".o")):
        raise FileNotFoundError(
            f"{path} is not an artifact of `jitc aot` (no {path}.size.json and {path}.o)"
        )
    with open(path + ".size.json") as f:
        return path, json.load(f)
