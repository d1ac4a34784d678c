"""Functionalization: NumPy's writes, recorded on a functional graph.

Every traced array lives in a Buffer: the node holding its current contents and a version
count. A view (basic indexing, reshape, transpose, ...) shares its source's buffer and
remembers the chain of view steps from the buffer to itself. A write through any of them
(`x += y`, `x[idx] = v`, `out=`, `ufunc.at`) computes the new contents of the written view,
pushes them back through the chain as update ops (`update_slice`, `scatter`, or a whole new
value) into a new version of the buffer, and bumps the version: every view re-reads the
buffer the next time its node is asked for. The graph stays functional, as HLO is; at the end
of the trace trace/lowering.py turns each written buffer that came from outside (an argument
or a captured array) into an output written back into the caller's object.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitc.core.errors import JitcError
from jitc.core.source import where
from jitc.trace import lax
from jitc.trace.rebind import current_ctx


class Buffer:
    """The storage of one array during a trace. `origin` says where it came from: ("arg",
    leaf index), ("captured", array), or None for an array made inside the function."""

    __slots__ = ("node", "version", "origin", "readonly")

    def __init__(self, node, origin=None, readonly=False):
        self.node = node
        self.version = 0
        self.origin = origin
        self.readonly = readonly

    @property
    def written(self) -> bool:
        return self.version > 0


# ----------------------------------------------------------------------------- view steps


@dataclass(frozen=True)
class Slice:
    start: tuple
    limit: tuple
    stride: tuple

    def read(self, t):
        return lax.slice_(t, self.start, self.limit, self.stride)

    def write(self, src, value):
        if all(
            s == 0 and st == 1 and l == n
            for s, l, st, n in zip(self.start, self.limit, self.stride, src.shape)
        ):
            return value  # the whole array
        return lax.emit(
            src.ctx,
            "update_slice",
            [src, value],
            start=self.start,
            limit=self.limit,
            stride=self.stride,
        )

    def numpy(self, a):
        return a[
            tuple(
                slice(s, None if l < 0 else l, st)
                for s, l, st in zip(self.start, self.limit, self.stride)
            )
        ]

    def op(self):
        return "slice", {"start": self.start, "limit": self.limit, "stride": self.stride}


@dataclass(frozen=True)
class Reshape:
    shape: tuple

    def read(self, t):
        return lax.reshape(t, self.shape)

    def write(self, src, value):
        return lax.reshape(value, src.shape)

    def numpy(self, a):
        return a.reshape(self.shape)

    def op(self):
        return "reshape", {"new_sizes": self.shape}


@dataclass(frozen=True)
class Transpose:
    perm: tuple

    def read(self, t):
        return lax.transpose(t, self.perm)

    def write(self, src, value):
        return lax.transpose(value, tuple(int(i) for i in np.argsort(self.perm)))

    def numpy(self, a):
        return a.transpose(self.perm)

    def op(self):
        return "transpose", {"permutation": self.perm}


def _step(node):
    if node.op == "slice":
        return Slice(node.attrs["start"], node.attrs["limit"], node.attrs["stride"])
    if node.op == "reshape":
        return Reshape(node.attrs["new_sizes"])
    if node.op == "transpose":
        return Transpose(node.attrs["permutation"])
    return None


def _is_view(base_shape, steps) -> bool:
    """Would NumPy give a view for this chain? It copies for a reshape of a non-contiguous
    view; a zero-byte stand-in with the strides NumPy's view would have (int8: strides in
    elements) lets NumPy itself say so (np.reshape(copy=False) raises where it would copy)."""
    strides = [0] * len(base_shape)
    acc = 1
    for d in reversed(range(len(base_shape))):
        strides[d] = acc
        acc *= max(base_shape[d], 1)
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), base_shape, strides, writeable=False)
    try:
        for s in steps:
            a = s.numpy(a) if not isinstance(s, Reshape) else np.reshape(a, s.shape, copy=False)
    except ValueError:
        return False
    return True


def derive_view(src, result):
    """`result` (computed from `src` by slices, reshapes and transposes) as a view sharing
    src's buffer, as NumPy's result would be; a copy where NumPy copies (a reshape of a
    non-contiguous view). Returns the Tracer to give the user."""
    steps = []
    n = result.node
    while n is not src.node:
        step = _step(n)
        if step is None or len(n.operands) != 1:
            return result
        steps.append(step)
        n = n.operands[0]
    steps.reverse()
    buf = src.buffer()
    chain = src.view + tuple(steps)
    if any(isinstance(s, Reshape) for s in steps) and not _is_view(buf.node.shape, chain):
        return type(result)(result.ctx, result.node, scalar=result.scalar)
    view = type(result)(result.ctx, result.node, weak=result.weak, scalar=result.scalar)
    view.buf, view.view, view.version = buf, chain, buf.version
    return view


# ----------------------------------------------------------------------------- writes


class ReadOnlyError(JitcError, ValueError):
    """A write into an array NumPy would not let the user write (a broadcast view)."""


class LoopWriteError(JitcError):
    """A loop body wrote an array of the code around the loop."""


def refuse_outer_write(dest):
    """A write inside a loop body into an array from outside it would happen once, at
    trace time, not on every iteration: such an array must be a carried value."""
    body = current_ctx()
    if body is not None and body.depth > dest.ctx.depth:
        raise LoopWriteError(
            f"the loop body writes an array from outside the loop{where()}; pass it in the "
            "loop's carried values (init_val) and return its new contents from the body"
        )


def assign(dest, value):
    """Make `value` (dest's shape and dtype already) the contents of `dest`, and of every
    array sharing its memory."""
    if dest.shape != value.shape or dest.dtype != value.dtype:
        raise AssertionError(f"assign {value.node.type_str()} into {dest.node.type_str()}")
    buf = dest.buffer()
    if buf.readonly:
        raise ReadOnlyError(f"assignment destination is read-only{where()}")
    refuse_outer_write(dest)
    if value.buf is buf and value.view == dest.view and value.version == buf.version:
        return  # x[a:b] = x[a:b], as Python's `x[k] += v` ends: nothing changes
    sources = [type(dest)(dest.ctx, buf.node)]
    for step in dest.view[:-1]:
        sources.append(step.read(sources[-1]))
    new = value
    for step, src in zip(reversed(dest.view), reversed(sources)):
        new = step.write(src, new)
    buf.node = new.node
    buf.version += 1
    # dest itself re-reads the buffer too (not `value`): a later step of a stencil then reads
    # the materialized array rather than recomputing the value in its own kernel.
