"""The fusion contract: what a backend may rely on when it emits one kernel per fusion node.

`check_fusion(node)` enforces every rule below; the pipeline runs it after every pass under
verification, and the fuser only builds groups that pass it.

Top level of an optimized graph
-------------------------------
Nodes are `parameter`, `constant` (array constants live here, never inside bodies), `get`
(reads element k of a multi-output fusion; free), `reshape` (free: a bitcast of a
C-contiguous buffer), `dot_general` (a library call), `fusion`, or any other single
primitive, which a backend runs as a one-op fusion of kind "reduction" (reduce, argmax,
argmin) or "loop" (anything else); such a one-op body obeys the rules below except
"no zero-size values". A top-level `update_slice` (a region write fusion/expand.py kept) is
a kernel over its region: it writes the region of its result, whose other elements are its
operand's (the same buffer when the operand dies there, fusion/buffers.py). Every value a
kernel writes is a C-contiguous array of its shape;
parameters of the function may be any strided view.

Every fusion body
-----------------
B1. Body nodes are parameters (one per fusion operand, same order and type), shape-()
    constants, and the ops ELEMENTWISE, broadcast_in_dim, reshape, transpose, slice,
    concatenate, iota, gather, reduce, argmax, argmin -- plus exactly one dot_general in
    kind "dot". No nested fusions, no `get`, no array constants.
B2. No body value has zero elements; every non-parameter node is used or is an output;
    outputs are computed values (never a parameter).
B3. Iteration space: one shape S. Every body value is read at an index derived from the
    iteration index (see fusion/access.py): as a *full* value through a chain of index maps
    (broadcast, transpose, slice, reshape, concatenate, gather), or as a *row* value.
B4. An expensive op (ops.EXPENSIVE) is read under exactly one signature, and never through an
    expanding broadcast or a gather: no iteration point recomputes a value another point
    already computed. Row values in a reduction space are the exception: they are computed
    once per row (below). Cheap ops may be recomputed by design.
B5. Canonical order: parameters first, then (kind "dot") the dot, then the other ops in
    topological order; scalar constants anywhere before their first use.

kind "loop"
-----------
L1. No reduce, no dot. S is the shape of every output (all outputs have exactly shape S;
    several outputs are allowed).
L2. One pass: for each index i of S, evaluate the outputs at i.

kind "reduction"
----------------
R1. One or more reduce/argmax/argmin ops, all reading operands of the same shape S and all
    reducing the same axes R (at least one of extent > 1). K = the other axes ("kept").
    A *row* is one index over K.
R2. A reduce result is read only at its own row: through elementwise ops, reshapes that add
    or drop size-1 dims, and broadcast_in_dim back to S along R (the `("row", K)`
    signature). Row values -- values read under `("row", K')` with K' within K: reduce
    results, the elementwise ops on them, and row-shaped inputs -- are computed once per
    row (after the pass that finishes the reduces they depend on); a backend hoists them
    out of the R loop. Values that depend on no reduce are read as in a loop fusion.
R3. Passes: reduces are staged: stage(r) = 1 + the highest stage of a reduce r depends on
    (0 if none). For each row: pass s runs over R and accumulates every reduce of stage s;
    a last pass writes full outputs. A full-shaped expensive value read in several passes
    is kept in a per-row scratch of prod(S[R]) elements, never recomputed.
R4. Outputs: full (exactly shape S, written in the last pass) or row-shaped (exactly
    S[K], or S with the R axes set to 1), written once per row.

kind "dot"
----------
D1. Exactly one dot_general, the first op of the body (after the parameters); both its
    operands are body parameters (materialized inputs, which a library call such as BLAS
    needs). Its result D is the iteration space: S = D.
D2. The dot result is read only at the iteration index (signature IDENT): every other op is
    an elementwise epilogue on D's shape (bias, activation, scale, residual, select with a
    mask), reading other parameters through any index map, or -- if there are reduces --
    a row reduction over the LAST axis of D (R = (ndim-1,), e.g. softmax rows), with R1-R4
    for the epilogue. The dot's own result is never an output.
D3. So a backend computes the dot into its output tile or row, then applies the epilogue
    in cache (a loop epilogue per element, a reduction epilogue per full row of D), without
    materializing the pre-activation.

kind "multi"
------------
M1. Made by merging sibling fusions that read a common input; two or more outputs; no dot.
    It obeys L1-L2 when it has no reduce, and R1-R4 otherwise (one S, one R for all
    siblings). A backend emits it exactly as that kind with several outputs, reading each
    shared input once.
M2. Fusions of kind loop, reduction and dot may have several outputs too (a producer merged
    into its consumer, fusion/multi.py); every output obeys the output rule of its kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitc.core import ops
from jitc.core.errors import JitcError
from jitc.core.ir import Graph, Node
from jitc.fusion.access import IDENT, describe, expanding, extend, is_row, numel, squeeze

KINDS = ("loop", "reduction", "dot", "multi")
BODY_OPS = (
    ops.ELEMENTWISE
    | ops.REDUCTIONS
    | {"broadcast_in_dim", "reshape", "transpose", "slice", "concatenate", "iota", "gather"}
)


class ContractError(JitcError):
    """A fusion body breaks the contract; `node` is the value to blame (or None)."""

    def __init__(self, message: str, node: Node | None = None):
        super().__init__(message)
        self.node = node


def reduce_axes(r: Node) -> tuple:
    return tuple(r.attrs["axes"]) if r.op == "reduce" else (r.attrs["axis"],)


@dataclass
class Space:
    """An iteration space: shape S, reduced axes R (None: no reduction), kept row axes K
    (squeezed coordinates), and the row shapes an output may have."""

    shape: tuple
    reduced: tuple | None = None

    @property
    def kept(self) -> tuple:
        """Squeezed axes of S not reduced."""
        if self.reduced is None:
            return tuple(range(len(squeeze(self.shape))))
        out, k = [], 0
        for d, s in enumerate(self.shape):
            if s != 1:
                if d not in self.reduced:
                    out.append(k)
                k += 1
        return tuple(out)

    def reduces_something(self) -> bool:
        return any(self.shape[d] != 1 for d in self.reduced)

    def row_shapes(self) -> tuple:
        if self.reduced is None:
            return ()
        kept = tuple(s for d, s in enumerate(self.shape) if d not in self.reduced)
        keep = tuple(1 if d in self.reduced else s for d, s in enumerate(self.shape))
        return kept, keep

    def output_sig(self, o: Node):
        if o.shape == self.shape:
            return IDENT
        if o.shape in self.row_shapes():
            return ("row", self.kept)
        return None


def duplicated(n: Node, sigs, computed, space: Space) -> str | None:
    """Why `n`, read at overlapping indices (a stencil's neighbours), would multiply work: it
    is computed once per read, and so are the operands computed in the kernel
    (`computed(o)`), step after step of an unrolled stencil. None when every element is
    read once (disjoint slices: q, k, v of one projection) or it only re-reads its inputs."""
    full = [s for s in sigs if not is_row(s)]
    if len(full) < 2 or n.op in _REINDEX or not any(map(computed, n.operands)):
        return None
    if len(full) * int(np.prod(space.shape, dtype=np.int64)) <= numel(n):
        return None
    return (
        f"{n.op} is read at {len(full)} overlapping indices (a stencil): computing it "
        f"once is cheaper than {len(full)} times"
    )


_REINDEX = frozenset({"slice", "reshape", "transpose", "broadcast_in_dim"})


def node_rule(n: Node, sigs, space: Space, *, tentative: bool = False) -> str | None:
    """Why `n`, read under `sigs` in `space`, breaks B4/R2/D2; None if it is fine.

    With tentative=True (the fuser growing a group whose reduce may join later) a row read of
    an expensive op is accepted before the reduced axes are known."""
    if n.op in ops.REDUCTIONS:
        if (
            space.reduced is None
            or n.operands[0].shape != space.shape
            or reduce_axes(n) != space.reduced
        ):
            return "a reduction over another iteration space"
        for s in sigs:
            if not is_row(s) or s[1] != space.kept:
                return f"the reduce result is read off its row (through {describe(s)})"
        return None
    if n.op == "dot_general":
        if set(sigs) != {IDENT} or n.shape != space.shape:
            bad = next(s for s in sigs if s != IDENT) if set(sigs) != {IDENT} else IDENT
            return f"the dot result is read through {describe(bad)}, not at its own index"
        if space.reduced is not None and space.reduced != (n.ndim - 1,):
            return "the dot epilogue would reduce other axes than the dot's last"
        return None
    if n.op in ops.EXPENSIVE:
        if len(sigs) > 1:
            how = sorted({describe(s) for s in sigs})
            return f"would compute {n.op} {len(sigs)} times (read through {' and '.join(how)})"
        (s,) = sigs
        if is_row(s):
            if space.reduced is None:
                return (
                    None
                    if tentative
                    else (f"would recompute {n.op} for every element of a broadcast")
                )
            if not set(s[1]) <= set(space.kept):
                return f"would recompute {n.op} for every element of a broadcast"
            return None
        if expanding(s):
            return f"would recompute {n.op} for every element read through {describe(s)}"
    return None


def _users_within(nodes, members):
    users: dict[Node, list] = {n: [] for n in nodes}
    for n in nodes:
        if n in members:
            for k, o in enumerate(n.operands):
                if o in members:
                    users[o].append((n, k))
    return users


def signatures(nodes, members, outputs, space: Space) -> dict:
    """Every member's access signatures (reverse topological propagation from the outputs).

    Raises ContractError for an output that fits no signature or an op no kernel can read."""
    sigs: dict[Node, set] = {n: set() for n in nodes if n in members}
    for o in outputs:
        s = space.output_sig(o)
        if s is None:
            shapes = " or ".join(str(x) for x in (space.shape,) + space.row_shapes())
            raise ContractError(f"output {o.type_str()} is not of shape {shapes}", o)
        sigs[o].add(s)
    users = _users_within(nodes, members)
    for n in reversed(nodes):
        if n not in members:
            continue
        for u, k in users[n]:
            for s in sigs[u]:
                e = extend(s, u, k)
                if e is None:
                    raise ContractError(
                        f"{u.op} cannot read {n.op} at an index the kernel has ({describe(s)})", n
                    )
                sigs[n].add(e)
    return sigs


def infer_space(members_in_order, outputs, kind) -> Space:
    """The iteration space of a body (R1/D1/L1), or ContractError."""
    reduces = [n for n in members_in_order if n.op in ops.REDUCTIONS]
    dots = [n for n in members_in_order if n.op == "dot_general"]
    if kind not in KINDS:
        raise ContractError(f"unknown fusion kind {kind!r}; expected one of {KINDS}")
    if (kind == "dot") != bool(dots) or len(dots) > 1:
        raise ContractError(
            f"kind {kind!r} fusion with {len(dots)} dot_general ops",
            dots[1] if len(dots) > 1 else None,
        )
    if kind == "loop" and reduces:
        raise ContractError("kind 'loop' fusion contains a reduction", reduces[0])
    if kind == "reduction" and not reduces:
        raise ContractError("kind 'reduction' fusion contains no reduction")
    if kind == "multi" and len(outputs) < 2:
        raise ContractError("kind 'multi' fusion with fewer than two outputs")
    if reduces:
        shapes = {r.operands[0].shape for r in reduces}
        axes = {reduce_axes(r) for r in reduces}
        if len(shapes) > 1 or len(axes) > 1:
            r = next(
                r
                for r in reduces
                if (r.operands[0].shape, reduce_axes(r))
                != (reduces[0].operands[0].shape, reduce_axes(reduces[0]))
            )
            raise ContractError(
                f"reductions over different spaces: {sorted(shapes)} axes {sorted(axes)}", r
            )
        space = Space(shapes.pop(), axes.pop())
        if not space.reduces_something():
            raise ContractError("a reduction over size-1 axes only", reduces[0])
        if dots and (space.shape != dots[0].shape or space.reduced != (dots[0].ndim - 1,)):
            raise ContractError("a dot epilogue may only reduce the dot's last axis", reduces[0])
        return space
    if dots:
        return Space(dots[0].shape)
    shapes = {o.shape for o in outputs}
    if len(shapes) != 1:
        raise ContractError(
            f"loop fusion outputs of different shapes {sorted(shapes)}", outputs[-1]
        )
    return Space(shapes.pop())


def check_region(nodes, members, outputs, kind, *, body: bool = True) -> Space:
    """Check the contract for `members` (a subset of `nodes`, in topological order) computing
    `outputs`; non-members are the fusion's inputs. Returns the iteration space.

    body=False checks a group of a larger graph before it becomes a body (the fuser), where
    the canonical order of B5/D1 is not made yet."""
    if body:
        first_op = next((i for i, n in enumerate(nodes) if n.op != "parameter"), len(nodes))
        if any(n.op == "parameter" for n in nodes[first_op:]):
            raise ContractError("fusion body parameters must come before its ops")
    for n in nodes:
        if n not in members:
            continue
        if n.op == "constant":
            if n.shape != ():
                raise ContractError("an array constant inside a fusion body", n)
            continue
        if n.op == "parameter":
            continue
        if n.op not in BODY_OPS and n.op != "dot_general":
            raise ContractError(f"{n.op} cannot be inside a fusion body", n)
        if numel(n) == 0 or any(numel(o) == 0 for o in n.operands):
            raise ContractError(f"{n.op} of a zero-size value inside a fusion body", n)
    for o in outputs:
        if o not in members or o.op in ("parameter", "constant"):
            raise ContractError(f"fusion output {o} is not a computed body value", o)
    ordered = [n for n in nodes if n in members and n.op != "constant"]
    space = infer_space(ordered, outputs, kind)
    for n in ordered:
        if n.op == "dot_general":
            if any(o in members for o in n.operands):
                raise ContractError(
                    "a dot reads a value computed inside the fusion; its "
                    "operands must be materialized inputs",
                    n,
                )
            if body and n is not ordered[0]:
                raise ContractError("the dot is not the first op of its fusion body", n)
            if n in outputs:
                raise ContractError("the dot's own result is a fusion output", n)
    sigs = signatures(nodes, members, outputs, space)
    for n in ordered:
        if not sigs[n]:
            raise ContractError(f"dead value {n} inside a fusion body", n)
        why = node_rule(n, sigs[n], space) or duplicated(
            n, sigs[n], lambda o: o in members and o.op != "constant", space
        )
        if why:
            raise ContractError(why, n)
    return space


def write_chain(body: Graph) -> tuple[list, Node]:
    """(the update_slices a region fusion's body ends in, in program order, the node they
    write: its base parameter). See fusion/region.py."""
    chain, w = [], body.outputs[0]
    while w.op == "update_slice":
        chain.append(w)
        w = w.operands[0]
    return chain[::-1], w


def check_fusion(node: Node) -> Space:
    """Check one fusion node against the contract (raises ContractError)."""
    body = node.subgraph
    members = {n for n in body.nodes if n.op != "parameter"}
    nodes, outputs, kind = body.nodes, body.outputs, node.attrs.get("kind")
    try:
        if kind == "region":  # a loop computing the updates, then the writes
            writes, base = write_chain(body)
            if not writes or base.op != "parameter":
                raise ContractError("a region fusion ends in update_slices of a parameter")
            members.difference_update(writes)
            nodes = [n for n in nodes if n not in writes]
            # an update that is a parameter is copied into its region: nothing to check
            outputs, kind = [w.operands[1] for w in writes if w.operands[1] in members], "loop"
            if not outputs:
                return Space(writes[0].operands[1].shape)
        return check_region(nodes, members, outputs, kind)
    except ContractError as e:
        raise ContractError(
            f"fusion {node} ({node.attrs.get('kind')}): {e}\n{body}", e.node
        ) from None


def check_graph(graph: Graph) -> None:
    """Every fusion node of `graph` obeys the contract."""
    for n in graph.nodes:
        if n.op == "fusion":
            check_fusion(n)
        elif n.op == "constant" and not isinstance(n.attrs.get("value"), np.ndarray):
            raise ContractError(f"constant {n} without an array value", n)


def single_op_body(node: Node) -> tuple[Graph, list[Node]]:
    """The one-op fusion body a backend runs for a top-level single op, and the top-level
    node behind each body parameter. Scalar constants move into the body (literals)."""
    body = Graph(node.op)
    values, sources = [], []
    for o in node.operands:
        if o.op == "constant" and o.shape == ():
            values.append(body.add("constant", (), dict(o.attrs), (), o.dtype, o.loc))
        else:
            values.append(body.add_parameter(o.shape, o.dtype, o.loc))
            sources.append(o)
    body.outputs = [body.add(node.op, values, dict(node.attrs), node.shape, node.dtype, node.loc)]
    return body, sources
