"""Run-time failures named by where they happened: a kernel reports only a kind (an index
out of bounds, a singular matrix), and the backend turns it into the exception NumPy raises,
naming the NumPy call and the user's file:line of the nodes that can fail that way.

Only the failure path runs this (the kernels and drivers do no extra work per call): the
graph's candidate nodes are found then, and where several could have failed all are named.
"""

from __future__ import annotations

from jitc.ir import Graph, Node

# Which primitives can fail with which kind (the kind: the message the backend reports).
GATHER, SCATTER, NEGATIVE_POWER, LINALG = "gather", "scatter", "power", "linalg"

# NumPy calls whose failure NumPy reports differently from the primitive's failure: the
# exception and message to raise instead.
_OVERRIDES = {
    ("np.bincount", SCATTER): (ValueError, "np.bincount: x holds a negative value (NumPy "
                               "raises ValueError) or a value >= minlength, which makes NumPy's "
                               "result longer than the static minlength: raise minlength"),
}


def _can_fail(node: Node, kind: str) -> bool:
    if node.op != kind:
        return False
    if kind == NEGATIVE_POWER:
        return node.dtype.kind == "i"
    if kind == LINALG:
        return node.attrs.get("kind") != "slogdet"
    return True


def _sites(graph: Graph, kind: str) -> list[Node]:
    found = []
    for n in graph.nodes:
        if n.subgraph is not None:
            found += _sites(n.subgraph, kind)
        elif _can_fail(n, kind) and n.loc is not None:
            found.append(n)
    return found


def at_node(node: Node, error: Exception) -> Exception:
    """The reference backend's `error` from running `node`, with where it was traced."""
    if node.loc is None or node.op not in (GATHER, SCATTER, NEGATIVE_POWER, LINALG):
        return error
    api = node.loc.api
    if (api, node.op) in _OVERRIDES:
        exc_type, message = _OVERRIDES[api, node.op]
        return exc_type(f"{message} at {node.loc}")
    return type(error)(f"{error} in {api or 'jitc'} at {node.loc}")


def located(graph: Graph, kind: str, exc_type: type, message: str) -> Exception:
    """The exception to raise for a kernel of `graph` failing with `kind`: `message` with
    the NumPy call and file:line of each node that could have failed."""
    sites = []
    for n in _sites(graph, kind):
        site = (n.loc.api, f"{n.loc.file}:{n.loc.line}")
        if site not in sites:
            sites.append(site)
    if len(sites) == 1 and (sites[0][0], kind) in _OVERRIDES:
        exc_type, message = _OVERRIDES[sites[0][0], kind]
        return exc_type(f"{message} at {sites[0][1]}")
    if not sites:
        return exc_type(message)
    where = " or ".join(f"{api or 'jitc'} at {at}" for api, at in sites)
    return exc_type(f"{message} in {where}")
