"""JITC_CHECK_ASYNC=1: catch a caller changing an array it passed to a call still pending.

A submitted call reads its argument arrays when it runs (and writes back the ones the
function mutates), so the caller must leave them alone until the future is done. Checking
costs a checksum of every argument array at submit, before the call and after it, so it
is a debug mode: the call's future fails with an error naming the argument and the
`submit` line when an array changed before the call started, or, for an array the
function does not write itself, while it ran.
"""

from __future__ import annotations

import zlib

import numpy as np

from jitc.core.errors import JitcError
from jitc.core.pytree import flatten, leaf_paths


def _digest(a: np.ndarray):
    return a.shape, a.dtype, zlib.crc32(np.ascontiguousarray(a).view(np.uint8))


def _arrays(jitted, args, kwargs):
    """(name, array) for every NumPy array among the arguments."""
    named = [(jitted.function.arg_name(i), a) for i, a in enumerate(args)]
    named += list(kwargs.items())
    out = []
    for name, value in named:
        leaves, tree = flatten(value)
        out += [
            (path, leaf)
            for path, leaf in zip(leaf_paths(tree, name), leaves)
            if isinstance(leaf, np.ndarray)
        ]
    return out


def _written(jitted, args, kwargs) -> set:
    """ids of the arrays the compiled function writes back (none known: not compiled)."""
    from jitc.trace.mutation.capture import split_arguments

    split = split_arguments(jitted.function, tuple(args), kwargs)
    leaves = flatten((split.dynamic, split.dynamic_kwargs))[0]
    compiled = jitted.compiled_for(args, kwargs)
    if compiled is None:
        return {id(a) for a in leaves}
    return {id(leaves[w.target]) for w in compiled.lowered.writebacks if w.kind == "arg"}


class Guard:
    """Checksums of a submitted call's argument arrays, taken at `submit`."""

    def __init__(self, jitted, args, kwargs, site):
        self.jitted, self.site = jitted, site
        self.sums = {id(a): _digest(a) for _, a in _arrays(jitted, args, kwargs)}

    def _check(self, args, kwargs, when, skip=frozenset()):
        for name, a in _arrays(self.jitted, args, kwargs):
            if id(a) in self.sums and id(a) not in skip and _digest(a) != self.sums[id(a)]:
                raise JitcError(
                    f"{self.jitted.function.name}.submit at {self.site}: argument {name!r} "
                    f"was "
                    f"changed by the caller {when} (JITC_CHECK_ASYNC); wait for the future "
                    f"(result()) before writing to an array passed to submit"
                )

    def before(self, args, kwargs):
        self._check(args, kwargs, "before the call started")

    def after(self, args, kwargs):
        self._check(args, kwargs, "while the call ran", _written(self.jitted, args, kwargs))
