"""Graph optimization: simplification passes, then XLA-style fusion.

PASSES is the pipeline, a plain list of named passes (fusion/pipeline.py runs it):

    steps -> expand -> cse -> fold -> algebra -> cse -> dce -> forward_reads -> fuse
    -> multi -> merge_writes

`steps` optimizes each loop's step graph as a function of its own (fusion/steps.py).
`expand` lowers the tracer's functional writes (update_slice, constant-index scatter) into
concatenates, gathers and selects, so writes fuse like any other op, except a region write
into an array in memory, which a backend runs over the region alone (fusion/expand.py),
computing its value in the same kernel (fusion/region.py); `forward_reads` points the reads
between the writes of one array at the version holding the same bytes, and `merge_writes`
joins writes of disjoint regions of one array into one kernel.

`optimize(graph)` runs it on a copy; with verify=True (or JITC_VERIFY=1) the verifier and
the fusion contract (fusion/contract.py) run after every pass; JITC_DUMP=DIR writes the IR
after every pass, named by pass. `plan_buffers` (fusion/buffers.py) places the intermediates
of an optimized graph in one arena; `fusion_report` explains every boundary left.
"""

from __future__ import annotations

from jitc.core.ir import Graph
from jitc.fusion import algebra, cse, dce, expand, fold, forward, fuse, merge_writes, multi, steps
from jitc.fusion.buffers import BufferPlan, plan_buffers
from jitc.fusion.pipeline import Pass, run_passes
from jitc.fusion.report import fusion_report

SIMPLIFY = [
    Pass("steps", lambda graph: steps.optimize_steps(graph, optimize)),
    Pass("expand", expand.expand),
    Pass("cse", cse.cse),
    Pass("fold", fold.fold),
    Pass("algebra", algebra.algebra),
    Pass("cse", cse.cse),
    Pass("dce", dce.dce),
]
FUSE = [
    Pass("forward_reads", forward.forward_reads),
    Pass("fuse", fuse.fuse),
    Pass("multi", multi.multi_output),
    Pass("merge_writes", merge_writes.merge_writes),
]
PASSES = SIMPLIFY + FUSE


def optimize(
    graph: Graph, *, verify: bool = False, passes=None, timings=None, aliases=None
) -> Graph:
    """The optimized copy of `graph` that every backend compiles; `aliases` (output index ->
    parameter index: the arguments the function writes) go on it, and guide `expand`."""
    if aliases is not None:
        graph = graph.copy()
        graph.aliases = dict(aliases)
    optimized = run_passes(
        graph, PASSES if passes is None else passes, verify=verify, timings=timings
    )
    optimized.aliases = dict(graph.aliases)
    return optimized


__all__ = ["optimize", "fusion_report", "plan_buffers", "BufferPlan", "PASSES", "Pass"]
