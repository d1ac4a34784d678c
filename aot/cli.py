"""`jitc aot`: compile, write the artifact, print its size, enforce a byte budget."""

from __future__ import annotations

import sys
import time

from jitc.aot.artifact import compile


def cli_compile(
    fn,
    specs,
    *,
    name,
    out_dir,
    target="host",
    cpu="generic",
    max_bytes=None,
    emit_test=False,
    out=None,
    err=None,
    built_from=None,
) -> int:
    """Exit status: 0, or 1 when the object exceeds max_bytes (the files are still written,
    so the size report can be read)."""
    out, err = out or sys.stdout, err or sys.stderr
    start = time.perf_counter()

    def progress(stage):
        print(f"jitc aot [{time.perf_counter() - start:5.1f}s] {stage}", file=err, flush=True)

    art = compile(fn, *specs, name=name, target=target, cpu=cpu, progress=progress)
    if built_from:  # what `jitc report DIR/NAME` re-traces for the graph and the time table
        art.size_report()["built_from"] = built_from
    progress(f"writing {out_dir}/{name}.*")
    paths = art.write(out_dir, emit_test=emit_test)
    report = art.size_report()
    progress("done")
    print(art.format_size_report(), file=out)
    print("wrote " + ", ".join(paths[k] for k in sorted(paths)), file=out)
    if max_bytes is not None and report["object_bytes"] > max_bytes:
        print(
            f"jitc aot: {name}.o is {report['object_bytes']:,} bytes, over the budget of "
            f"--max-bytes {max_bytes:,}",
            file=err,
        )
        return 1
    return 0
