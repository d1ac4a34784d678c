"""Builders that emit one primitive on Tracers, with the obvious no-op cases elided.

The NumPy layer (numpy_api/) is written in terms of these, as jax.numpy is in terms of lax.
"""

from __future__ import annotations

import numpy as np

from jitc.core.dtypes import check_rank
from jitc.core.errors import JitcError, ShapeError, UnsupportedError
from jitc.core.ops import COMPLEX, COMPLEX_COMPUTED, COMPLEX_REDUCE_KINDS, ELEMENTWISE
from jitc.core.source import user_loc, where
from jitc.trace.rebind import current_ctx

_LAZY = None  # (PRIMITIVES, Tracer), imported on first use (both modules import this one)


def _lazy():
    """One assignment of a tuple: threads racing through a first trace all bind the same
    pair (an append-based version once left four items, breaking every later trace)."""
    global _LAZY
    if _LAZY is None:
        from jitc.core.primitives import PRIMITIVES
        from jitc.trace.tracer import Tracer

        _LAZY = (PRIMITIVES, Tracer)
    return _LAZY


# Ops that can fail at run time (an index out of bounds, a negative integer power, a
# singular matrix): run where the body runs them, never hoisted out of a loop or a branch
# that may not run (`if i < n: x = a[i]` must not read a[n]).
_FALLIBLE = frozenset({"gather", "scatter", "power", "linalg"})


def _recorded_in(ctx, op, operands):
    """The trace an op on `operands` goes into: the deepest of theirs, so that a loop body's
    op on values of the code around it runs once, before the loop (hoisted), unless it can
    fail: that one stays in the body tracing it."""
    for o in operands:
        if o.ctx.depth > ctx.depth:
            ctx = o.ctx
    here = current_ctx()
    if here is None or here.depth <= ctx.depth:
        return ctx
    return here if op in _FALLIBLE else ctx


def emit(ctx, op, operands, **attrs):
    """Add `op` to the trace; its type comes from the primitive's rule."""
    primitives, tracer = _lazy()
    loc = user_loc()
    ctx = _recorded_in(ctx, op, operands)
    if ctx.closed:
        raise JitcError(
            f"a value computed inside a loop body was used after the loop{where(loc)}; "
            "return it from the body as a carried value"
        )
    nodes = [ctx.imported(o).node for o in operands]
    try:
        shape, dtype = primitives[op].infer([(n.shape, n.dtype) for n in nodes], attrs)
    except ShapeError as e:
        raise ShapeError(f"{e}{where(loc)}") from None
    _refuse_complex(op, [n.dtype for n in nodes] + [dtype], attrs, loc)
    check_rank(shape, f"the result of {op}{where(loc)}")
    return tracer(ctx, ctx.graph.add(op, nodes, attrs, shape, dtype, loc))


def _refuse_complex(op, dtypes, attrs, loc):
    """Complex operands reach only the ops jitc computes as NumPy does (ops.COMPLEX): any
    other (ordering, sorting, LAPACK, trig, ...) is an UnsupportedError naming it here,
    never a real-number kernel run on complex values."""
    dtype = next((d for d in dtypes if d is not None and d.kind == "c"), None)
    if dtype is None:
        return
    what = op if op != "reduce" else f"reduce {attrs['kind']}"
    if op == "convert" and dtypes[0].kind == "c" and dtypes[-1].kind not in "cb":
        what = f"convert to {dtypes[-1]}"  # only of a real part (lax.real), never silently
    elif op in COMPLEX and (op != "reduce" or attrs["kind"] in COMPLEX_REDUCE_KINDS):
        return
    raise UnsupportedError(
        f"{what} on {dtype} is not supported by jitc{where(loc)}: jitc computes {COMPLEX_COMPUTED}"
    )


def real(x):
    """The real part (NumPy: a real array is its own real part)."""
    return emit(x.ctx, "real", [x]) if x.dtype.kind == "c" else x


def imag(x):
    """The imaginary part (NumPy: zeros of a real array's dtype)."""
    if x.dtype.kind == "c":
        return emit(x.ctx, "imag", [x])
    return full(x.ctx, x.shape, 0, x.dtype)


def conjugate(x):
    return emit(x.ctx, "conjugate", [x]) if x.dtype.kind == "c" else x


def convert(x, dtype):
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if getattr(x, "weak", False) and x.dtype.kind == "i" and dtype.kind in "iu":
        x.ctx.narrowed(x.node, dtype)  # NumPy 2 refuses a Python int out of its range
    return emit(x.ctx, "convert", [x], dtype=dtype)


def broadcast_in_dim(x, shape, dims):
    shape = tuple(shape)
    if x.shape == shape and tuple(dims) == tuple(range(len(shape))):
        return x
    return emit(x.ctx, "broadcast_in_dim", [x], shape=shape, broadcast_dimensions=tuple(dims))


def broadcast_to(x, shape):
    """NumPy-style broadcast (trailing dims aligned)."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    offset = len(shape) - x.ndim
    if offset < 0:
        raise ShapeError(f"cannot broadcast {x.shape} to {shape}{where()}")
    for size, out in zip(x.shape, shape[offset:]):
        if size not in (1, out):
            raise ShapeError(f"cannot broadcast {x.shape} to {shape}{where()}")
    # Size-1 dims that grow are dropped first, so broadcast_in_dim only maps equal sizes.
    keep = [i for i, size in enumerate(x.shape) if size == shape[offset + i]]
    if len(keep) != x.ndim:
        x = reshape(x, [x.shape[i] for i in keep])
    return broadcast_in_dim(x, shape, [offset + i for i in keep])


def reshape(x, shape):
    shape = tuple(int(d) for d in shape)
    if x.shape == shape:
        return x
    return emit(x.ctx, "reshape", [x], new_sizes=shape)


def transpose(x, perm):
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(x.ndim)):
        return x
    return emit(x.ctx, "transpose", [x], permutation=perm)


def slice_(x, start, limit, stride):
    if all(s == 0 and l == n and st == 1 for s, l, st, n in zip(start, limit, stride, x.shape)):
        return x
    return emit(x.ctx, "slice", [x], start=tuple(start), limit=tuple(limit), stride=tuple(stride))


def concatenate(xs, axis):
    if len(xs) == 1:
        return xs[0]
    return emit(xs[0].ctx, "concatenate", list(xs), dimension=int(axis))


def gather(x, idx, axis):
    return emit(x.ctx, "gather", [x, idx], axis=int(axis))


_HALF, _SINGLE = np.dtype(np.float16), np.dtype(np.float32)


def _in_single(fn, *xs):
    """`fn` of float16 operands computed in float32 and rounded once to float16, as NumPy's
    float16 sums and products along its inner loop (a float accumulator) and matmul/dot."""
    return convert(fn(*(convert(x, _SINGLE) for x in xs)), _HALF)


def _memory_order(node, depth=8) -> list:
    """The axes of `node`'s value from outermost to innermost in memory as NumPy lays it
    out: a transpose is a view (its operand's order, permuted), an elementwise result
    follows its operands where they agree (NumPy's order="K"; broadcasts, stride 0, do not
    count), anything else is a new C-order array."""
    order = list(range(len(node.shape)))
    if depth == 0:
        return order
    if node.op == "transpose":
        perm = list(node.attrs["permutation"])
        return [perm.index(d) for d in _memory_order(node.operands[0], depth - 1)]
    if node.op in ELEMENTWISE:
        orders = {
            tuple(_memory_order(o, depth - 1))
            for o in node.operands
            if o.shape == node.shape and o.op != "broadcast_in_dim"
        }
        if len(orders) == 1:
            return list(orders.pop())
    return order


def _numpy_inner_axis(x):
    """The axis of `x` NumPy's iterator runs innermost: the innermost one longer than 1."""
    long = [d for d in _memory_order(x.node) if x.shape[d] > 1]
    return long[-1] if long else None


def reduce(x, kind, axes):
    axes = tuple(sorted(axes))
    if not axes:
        return x
    if x.dtype == _HALF and kind in ("sum", "prod"):
        inner = _numpy_inner_axis(x)
        if inner is not None and inner not in axes:
            # NumPy's inner loop runs along a kept axis: each add (multiply) is a float16
            # op, rounded, in C order of the reduced axes; a float16 reduce does that
            return emit(x.ctx, "reduce", [x], kind=kind, axes=axes)
        return _in_single(lambda y: reduce(y, kind, axes), x)
    return emit(x.ctx, "reduce", [x], kind=kind, axes=axes)


def cumulative(x, kind, axis):
    """The running `kind` (sum, prod, max, min) along `axis`: ufunc.accumulate."""
    return emit(x.ctx, "cumulative", [x], kind=kind, axis=axis)


def sort(x, axis, indices=False):
    """`x` sorted stably along `axis` (NaN last), or with `indices` the int64 permutation
    that sorts it (argsort)."""
    return emit(x.ctx, "argsort" if indices else "sort", [x], axis=axis)


def linalg(kind, *operands):
    """LAPACK-backed `kind` (ops.LINALG_KINDS) on stacks of square matrices."""
    return emit(operands[0].ctx, "linalg", list(operands), kind=kind)


def fft(x, kind, axes, n, norm):
    """The `kind` transform (ops.FFT_KINDS) over whole `axes`; `n`: the logical length of
    the last of them (irfft: of its result)."""
    return emit(x.ctx, "fft", [x], kind=kind, axes=tuple(axes), n=int(n), norm=norm)


def dot_general(lhs, rhs, lhs_contracting, rhs_contracting, lhs_batch=(), rhs_batch=()):
    if lhs.dtype == _HALF and rhs.dtype == _HALF:
        return _in_single(
            lambda a, b: dot_general(a, b, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch),
            lhs,
            rhs,
        )
    return emit(
        lhs.ctx,
        "dot_general",
        [lhs, rhs],
        lhs_contracting=tuple(lhs_contracting),
        rhs_contracting=tuple(rhs_contracting),
        lhs_batch=tuple(lhs_batch),
        rhs_batch=tuple(rhs_batch),
    )


def select(pred, on_true, on_false):
    return emit(pred.ctx, "select", [pred, on_true, on_false])


def iota(ctx, shape, dtype, dimension):
    return emit(ctx, "iota", [], shape=tuple(shape), dtype=np.dtype(dtype), dimension=dimension)


def full(ctx, shape, value, dtype):
    """A constant scalar broadcast to `shape` (fusion keeps this free)."""
    return broadcast_in_dim(ctx.constant(np.array(value, dtype=dtype)), shape, ())
