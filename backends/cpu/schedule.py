"""Which kernels of one call may run at the same time, and in what order the driver launches
them (issue 16, the concurrent executor).

Two kernels depend on each other when one writes bytes the other reads or writes: the same
parameter, result or constant bytes, or overlapping temp-arena bytes (the buffer plan reuses
arena space between values whose lifetimes do not overlap, so two kernels that share no value
may still share memory: they are ordered like any writer and reader). A result the caller may
pass as a parameter's buffer (graph.aliases: donation) is that parameter's bytes.

Kernels get ASAP levels over those dependencies; the kernels of one level are independent.
Those the launcher would not split over threads (launcher.splits: too little work, or one
row, e.g. a dot at batch 1) form one group per level, launched as the tasks of one parallel
region (launcher.py `group`); a kernel that splits keeps its own row split, and one that can
fail runs alone, so a failure names its kernel. Everything runs on numba's one pool.
Levels rather than TFRT's dependency counts decremented atomically by tasks that then start
their successors: numba's prange gives no way to spawn a task from a task, and a task that
waits for another inside the region can wait for one TBB has queued behind it on the same
thread; spinning on a descheduled peer is also what made OpenMP slow here (threads.py).
With levels nothing waits inside a region: the driver's next launch is the barrier.
A group whose members each depend on one task of the group just before it (no two on the
same task) joins it instead (`chained`): each member runs in that task, after the kernels it
depends on, so the two levels take one region and one barrier (the two layers of separate
MLP heads: four tasks of two kernels each).

`interleaved` reorders a fused graph's nodes by level first, so the buffer plan gives the
values of independent branches their own arena bytes (in the traced order, branch after
branch, it gives them the same bytes, and the branches would depend on each other).
`schedule` takes that order only where it makes a group worth running concurrently.
"""

from __future__ import annotations

import bisect
import math

from jitc.backends.cpu.launcher import group_work, splits
from jitc.backends.cpu.plan import plan_program
from jitc.core.ir import Graph
from jitc.fusion import plan_buffers
from jitc.fusion.views import is_view

# The interleaved order may hold more values live at once; it is taken only while its arena
# grows by at most this much (small branches at batch 1: bytes; large ones keep their order).
MAX_EXTRA_ARENA = 1 << 20


def interleaved(graph: Graph) -> tuple:
    """(`graph` with its nodes in level order, a topological order that starts independent
    branches side by side, or `graph` itself when that order is the same, when it costs
    more than MAX_EXTRA_ARENA bytes, or when the function writes a caller's array (its
    buffer plan then depends on the order of the last read and the write); its buffer plan
    where this computed it, else None)."""
    if graph.aliases:
        return graph, None
    level: dict = {}
    for n in graph.nodes:
        up = max((level[o] for o in n.operands), default=0)
        free = n.op in ("parameter", "constant", "get") or is_view(n)
        level[n] = up if free else up + 1
    order = sorted(range(len(graph.nodes)), key=lambda i: (level[graph.nodes[i]], i))
    if order == list(range(len(graph.nodes))):
        return graph, None
    reordered = Graph(graph.name)
    reordered.params, reordered.outputs = graph.params, graph.outputs
    reordered.aliases, reordered._next_id = graph.aliases, graph._next_id
    reordered.nodes = [graph.nodes[i] for i in order]
    plan = plan_buffers(reordered)
    if plan.size > MAX_EXTRA_ARENA:  # (else it cannot be more than that past the other)
        before = plan_buffers(graph)
        if plan.size > before.size + MAX_EXTRA_ARENA:
            return graph, before
    return reordered, plan


def _accesses(kernel, aliases: dict):
    """(space, first byte, end byte, writes) per array of `kernel`."""
    for k, buf in enumerate(kernel.pointers):
        if buf.source == "temp":
            space, start = ("temp",), buf.index + buf.offset
        elif buf.source == "result" and buf.index in aliases:
            space, start = ("param", aliases[buf.index]), buf.offset
        else:
            space, start = (buf.source, buf.index), buf.offset
        nbytes = math.prod(buf.shape) * buf.dtype.itemsize  # Buf.nbytes, without NumPy
        if nbytes:
            yield space, start, start + nbytes, k in kernel.writes


class _Ranges:
    """The byte ranges of one space seen so far, each with the highest level of a kernel that
    wrote it and of one that read it; sorted by start, to find the overlapping ones fast."""

    def __init__(self):
        self.keys: list = []  # (start, end), sorted
        self.levels: dict = {}  # (start, end) -> [writer level, reader level]
        self.longest = 0

    def after(self, start: int, end: int, writes: bool, data_only: bool = False) -> int:
        """The lowest level a kernel accessing [start, end) may run at; data_only: after
        the kernels that wrote what it reads only."""
        level = 0
        at = bisect.bisect_left(self.keys, (start - self.longest,))
        for key in self.keys[at:]:
            if key[0] >= end:
                break
            if key[1] > start:
                w, r = self.levels[key]
                if data_only:
                    level = max(level, 0 if writes else w + 1)
                else:
                    level = max(level, w + 1, r + 1 if writes else 0)
        return level

    def note(self, start: int, end: int, writes: bool, level: int):
        key = (start, end)
        if key not in self.levels:
            bisect.insort(self.keys, key)
            self.levels[key] = [-1, -1]
            self.longest = max(self.longest, end - start)
        entry = self.levels[key]
        entry[0 if writes else 1] = max(entry[0 if writes else 1], level)


def levels(kernels: list, aliases: dict, temps_data_only: bool = False) -> list:
    """Each kernel's level: 0, or one more than the highest level of an earlier kernel it
    depends on. temps_data_only: in the arena, only on kernels that wrote what it reads
    (the levels the program would have if no two values shared arena bytes, or about: a
    kernel writing a value in place of its operand is taken as writing only)."""
    seen: dict = {}  # space -> _Ranges
    out = []
    for kernel in kernels:
        accesses = list(_accesses(kernel, aliases))
        level = max(
            (
                seen[a[0]].after(*a[1:], temps_data_only and a[0] == ("temp",))
                for a in accesses
                if a[0] in seen
            ),
            default=0,
        )
        for space, start, end, writes in accesses:
            seen.setdefault(space, _Ranges()).note(start, end, writes, level)
        out.append(level)
    return out


def launches(kernels: list, aliases: dict, temps_data_only: bool = False) -> list:
    """Kernel indices per launch, in launch order: level by level, the level's small
    kernels as one group (when there are several), then its other kernels one by one."""
    by_level: dict = {}
    for i, level in enumerate(levels(kernels, aliases, temps_data_only)):
        by_level.setdefault(level, []).append(i)
    out = []
    for level in sorted(by_level):
        small = [
            i
            for i in by_level[level]
            if kernels[i].error is None and not splits(kernels[i].rows, kernels[i].work)
        ]
        if len(small) > 1:
            out.append(small)
        out += [[i] for i in by_level[level] if len(small) < 2 or i not in small]
    return out


def chained(order: list, kernels: list, aliases: dict) -> list:
    """`order` (launches of kernel indices) as launches of chains, the tuples of kernels one
    task runs in turn: a group right after a group joins it when each of its members
    conflicts with (touches bytes that one of the two writes) the kernels of at most one
    chain, and no two members with the same chain; a member that conflicts with none
    starts a chain of its own."""
    touched: dict = {}

    def conflict(a: int, b: int) -> bool:
        for i in (a, b):
            if i not in touched:
                touched[i] = list(_accesses(kernels[i], aliases))
        return any(
            sa == sb and s0 < e1 and s1 < e0 and (wa or wb)
            for sa, s0, e0, wa in touched[a]
            for sb, s1, e1, wb in touched[b]
        )

    out: list = []
    for members in order:
        joined = (
            _join(out[-1], members, conflict)
            if out and len(out[-1]) > 1 and len(members) > 1
            else None
        )
        if joined is None:
            out.append([(i,) for i in members])
        else:
            out[-1] = joined
    return out


def _join(chains: list, members: list, conflict) -> list | None:
    """`chains` with each of `members` appended to the one chain it conflicts with, or as
    a chain of its own; None where a member conflicts with two chains, or two with one."""
    joined, taken = list(chains), set()
    for i in members:
        hits = [c for c, chain in enumerate(chains) if any(conflict(i, k) for k in chain)]
        if len(hits) > 1 or (hits and hits[0] in taken):
            return None
        if hits:
            taken.add(hits[0])
            joined[hits[0]] += (i,)
        else:
            joined.append((i,))
    return joined


def _concurrent(launches: list, kernels: list) -> bool:
    """Does a group of these launches (of chains) run its chains concurrently
    (launcher.group_work)?"""
    return any(len(chains) > 1 and group_work(chain_works(chains, kernels)) for chains in launches)


def chain_works(chains: list, kernels: list) -> list:
    return [sum(kernels[i].work for i in chain) for chain in chains]


def schedule(graph: Graph, name: str) -> tuple:
    """(graph, Program, launches of chains) for the cpu driver: the program in the traced
    order and one kernel per launch (as with JITC_CONCURRENT=0) unless some group would run
    its chains concurrently; then the interleaved order and its groups. Only graphs whose
    kernels, at their data dependencies alone, make such a group are planned twice: running
    a group's members in turn gains nothing, and the interleaved order may hold more values
    live at once (the LSTM step of benchmarks W4 ran 13% slower so)."""
    traced = plan_program(graph, name)
    if not _concurrent(
        chained(launches(traced.kernels, graph.aliases, True), traced.kernels, graph.aliases),
        traced.kernels,
    ):
        return graph, traced, None
    reordered, buffers = interleaved(graph)
    program = traced if reordered is graph else plan_program(reordered, name, buffers=buffers)
    order = chained(launches(program.kernels, graph.aliases), program.kernels, graph.aliases)
    if not _concurrent(order, program.kernels):
        return graph, traced, None
    return reordered, program, order
