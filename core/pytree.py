"""Pytrees: tuples, lists, dicts, namedtuples and None around leaves (arrays and scalars)."""

from __future__ import annotations

LEAF = ("leaf",)
NONE = ("none",)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree, leaves=None):
    """Return (leaves, treedef); treedef is hashable and feeds the compile cache key."""
    if leaves is None:
        leaves = []
    if tree is None:
        return leaves, NONE
    if isinstance(tree, (tuple, list)):
        if _is_namedtuple(tree):
            kind = type(tree)
        else:
            kind = "list" if isinstance(tree, list) else "tuple"
        defs = tuple(flatten(child, leaves)[1] for child in tree)
        return leaves, (kind, defs)
    if isinstance(tree, dict):
        keys = tuple(tree)  # insertion order: code that iterates the dict sees NumPy's order
        defs = tuple(flatten(tree[k], leaves)[1] for k in keys)
        return leaves, ("dict", keys, defs)
    leaves.append(tree)
    return leaves, LEAF


def unflatten(treedef, leaves):
    return _build(treedef, iter(leaves))


def _build(treedef, it):
    kind = treedef[0]
    if kind == "leaf":
        return next(it)
    if kind == "none":
        return None
    if kind == "dict":
        return {k: _build(d, it) for k, d in zip(treedef[1], treedef[2])}
    children = [_build(d, it) for d in treedef[1]]
    if kind == "list":
        return children
    if kind == "tuple":
        return tuple(children)
    return kind(*children)  # a namedtuple type


def positional_arguments(in_tree) -> tuple | None:
    """The treedefs of a call's positional arguments, from the treedef of its flattened
    `(args, kwargs)`; None when the call passed keyword arguments."""
    args_def, kwargs_def = in_tree[1]
    if args_def[0] != "tuple" or kwargs_def[1]:
        return None
    return args_def[1]


def leaf_paths(treedef, prefix="") -> list[str]:
    """Readable names of every leaf, e.g. ["x", "params['w']", "xs[1]"]."""
    kind = treedef[0]
    if kind == "leaf":
        return [prefix]
    if kind == "none":
        return []
    if kind == "dict":
        return [
            p for k, d in zip(treedef[1], treedef[2]) for p in leaf_paths(d, f"{prefix}[{k!r}]")
        ]
    return [p for i, d in enumerate(treedef[1]) for p in leaf_paths(d, f"{prefix}[{i}]")]
