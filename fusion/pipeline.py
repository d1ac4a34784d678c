"""The pass pipeline: a plain list of named passes, run in order on a copy of the graph.

After every pass the verifier runs (jitc.core.verify plus the fusion contract of
fusion/contract.py) when asked (`verify=True`, as the tests do) or under JITC_VERIFY=1.
With JITC_DUMP=DIR the IR after every pass is written to DIR/NAME.NN-PASS.txt, and
NAME.00-traced.txt holds the input. `timings` receives the seconds each pass took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from jitc.core import config
from jitc.core.ir import Graph


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[Graph], Graph]


def verify_enabled() -> bool:
    return config.verify()


def check(graph: Graph, after: str) -> None:
    """The verifier and the fusion contract; errors name the pass that broke the graph."""
    from jitc.core.errors import VerifyError
    from jitc.core.verify import verify
    from jitc.fusion.contract import ContractError, check_graph

    try:
        verify(graph)
        check_graph(graph)
    except (VerifyError, ContractError) as e:
        raise type(e)(f"after pass {after!r}: {e}") from None


def _dump(graph: Graph, index: int, name: str, dump_dir: str) -> None:
    os.makedirs(dump_dir, exist_ok=True)
    with open(os.path.join(dump_dir, f"{graph.name}.{index:02d}-{name}.txt"), "w") as f:
        f.write(str(graph) + "\n")


def run_passes(
    graph: Graph,
    passes,
    *,
    verify: bool = False,
    dump_dir: str | None = None,
    timings: dict | None = None,
) -> Graph:
    verify = verify or verify_enabled()
    dump_dir = dump_dir if dump_dir is not None else config.DUMP_DIR
    g = graph.copy()
    if dump_dir:
        _dump(g, 0, "traced", dump_dir)
    for i, p in enumerate(passes, start=1):
        start = time.perf_counter()
        g = p.run(g)
        if timings is not None:
            timings[p.name] = timings.get(p.name, 0.0) + time.perf_counter() - start
        if verify:
            check(g, p.name)
        if dump_dir:
            _dump(g, i, p.name, dump_dir)
    return g
