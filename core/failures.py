"""Run-time failures named by where they happened: a kernel reports only a kind (an index
out of bounds, a singular matrix), and the backend turns it into the exception NumPy raises,
naming the NumPy call and the user's file:line of the nodes that can fail that way.

Only the failure path runs this (the kernels do no extra work per call; the cpu driver
notes which launch failed): the candidate nodes of that launch (cpu) or of the whole graph
(cuda, whose kernels share one error flag) are found then, and where several could have
failed, all are named.
"""

from __future__ import annotations

import numpy as np

from jitc.core.ir import Graph, Node

# The exceptions kernels raise (then located here): a cheap except clause on every path
# that runs compiled code.
KERNEL_FAILURES = (IndexError, ValueError, np.linalg.LinAlgError)

# Which primitives can fail with which kind (the kind: the message the backend reports).
GATHER, SCATTER, NEGATIVE_POWER, LINALG = "gather", "scatter", "power", "linalg"
# an index out of bounds in a gather or a scatter: a kernel doing both (a scalar loop)
INDEX = "index"

# NumPy calls whose failure NumPy reports differently from the primitive's failure: the
# exception and message to raise instead.
_OVERRIDES = {
    ("np.geomspace", GATHER): (ValueError, "np.geomspace: Geometric sequence cannot include zero"),
    ("np.histogram", GATHER): (
        ValueError,
        "np.histogram: the autodetected range of the data is not finite (it holds NaN or "
        "inf; NumPy raises ValueError): pass range=",
    ),
    **{
        (f"np.{name}", GATHER): (
            ValueError,
            f"np.{name}: zero-size array to reduction operation {op} which has no identity",
        )
        for name, op in (("max", "maximum"), ("min", "minimum"))
    },
    **{
        (f"np.{name}", GATHER): (
            ValueError,
            f"np.{name}: attempt to get {name} of an empty sequence",
        )
        for name in ("argmax", "argmin")
    },
    ("x[i] of run-time size", GATHER): (
        IndexError,
        "x[i]: index out of bounds for a value whose size is known only at run time "
        "(x[mask], np.nonzero's, np.unique's)",
    ),
    ("np.bincount", SCATTER): (
        ValueError,
        "np.bincount: x holds a negative value (NumPy "
        "raises ValueError) or a value >= minlength, which makes NumPy's "
        "result longer than the static minlength: raise minlength",
    ),
}


KINDS = (GATHER, SCATTER, NEGATIVE_POWER, LINALG)


def _can_fail(node: Node, kind: str | None = None) -> bool:
    """Can `node` fail with `kind` (None: with any kind)?"""
    if kind == INDEX:
        return node.op in (GATHER, SCATTER)
    if node.op not in KINDS or (kind is not None and node.op != kind):
        return False
    if node.op == NEGATIVE_POWER:
        return node.dtype.kind == "i"
    if node.op == LINALG:
        return node.attrs.get("kind") != "slogdet"
    return True


def sites(graph: Graph, kind: str | None = None) -> list[Node]:
    """The nodes of `graph` (nested graphs included) that can fail with `kind` (None: any)."""
    found = []
    for n in graph.nodes:
        if n.subgraph is not None:
            found += sites(n.subgraph, kind)
        elif _can_fail(n, kind) and n.loc is not None:
            found.append(n)
    return found


def at_node(node: Node, error: Exception) -> Exception:
    """The reference backend's `error` from running `node`, with where it was traced."""
    if node.loc is None or node.op not in KINDS:
        return error
    api = node.loc.api
    if (api, node.op) in _OVERRIDES:
        exc_type, message = _OVERRIDES[api, node.op]
        return exc_type(f"{message} at {node.loc}")
    return type(error)(f"{error} in {api or 'jitc'} at {node.loc}")


def located(nodes: list[Node], kind: str, exc_type: type, message: str) -> Exception:
    """The exception to raise for a kernel failing with `kind`: `message` with the NumPy
    call and file:line of each of `nodes` (a graph's or a kernel's sites) that could have."""
    found = []
    for n in nodes:
        if not _can_fail(n, kind) or n.loc is None:
            continue
        site = (n.loc.api, f"{n.loc.file}:{n.loc.line}")
        if site not in found:
            found.append(site)
    if len(found) == 1 and (found[0][0], kind) in _OVERRIDES:
        exc_type, message = _OVERRIDES[found[0][0], kind]
        return exc_type(f"{message} at {found[0][1]}")
    if not found:
        return exc_type(message)
    where = " or ".join(f"{api or 'jitc'} at {at}" for api, at in found)
    return exc_type(f"{message} in {where}")
