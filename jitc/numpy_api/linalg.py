"""Products and contractions: matmul, dot, vdot, inner, outer, tensordot, einsum."""

from __future__ import annotations

import numpy as np

from jitc import lax
from jitc.dtypes import check_supported
from jitc.errors import ShapeError, UnsupportedError
from jitc.numpy_api.core import _mark, find_ctx, implements, lift, normalize_axis, result_type
from jitc.numpy_api.shapes import ravel
from jitc.numpy_api.ufuncs import apply_ufunc
from jitc.source import where


def _promote_pair(a, b, what):
    ctx = find_ctx([a, b])
    a, b = lift(ctx, a), lift(ctx, b)
    dt = check_supported(result_type(a, b), f"{what} result")
    return lax.convert(a, dt), lax.convert(b, dt)


@implements(np.matmul)
def matmul(a, b):
    a, b = _promote_pair(a, b, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: Input operand {0 if a.ndim == 0 else 1} does not have "
                         f"enough dimensions{where()}")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = lax.reshape(a, (1,) + a.shape)
    if squeeze_b:
        b = lax.reshape(b, b.shape + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-2]} "
                         f"(dim {b.ndim - 2}){where()}")
    if b.ndim == 2:  # one GEMM over all leading dims of a
        out = lax.dot_general(a, b, (a.ndim - 1,), (0,))
    else:
        try:
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ShapeError(f"matmul: batch dims of {a.shape} and {b.shape} do not broadcast"
                             f"{where()}") from None
        nb = len(batch)
        a = lax.broadcast_to(a, batch + a.shape[-2:])
        b = lax.broadcast_to(b, batch + b.shape[-2:])
        out = lax.dot_general(a, b, (nb + 1,), (nb,), tuple(range(nb)), tuple(range(nb)))
    shape = list(out.shape)
    if squeeze_b:
        shape.pop(-1)
    if squeeze_a:
        shape.pop(-2 if not squeeze_b else -1)
    out = lax.reshape(out, shape)
    return _mark(out, out.ndim == 0)


@implements(np.dot)
def dot(a, b, out=None):
    if out is not None:
        raise UnsupportedError(f"np.dot: out= is not supported{where()}")
    a, b = _promote_pair(a, b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return apply_ufunc(np.multiply, (a, b))
    rc = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[rc]:
        raise ShapeError(f"dot: shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} "
                         f"(dim {a.ndim - 1}) != {b.shape[rc]} (dim {rc}){where()}")
    out = lax.dot_general(a, b, (a.ndim - 1,), (rc,))
    return _mark(out, out.ndim == 0)


@implements(np.vdot)
def vdot(a, b):
    return dot(ravel(a), ravel(b))


@implements(np.inner)
def inner(a, b):
    a, b = _promote_pair(a, b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return apply_ufunc(np.multiply, (a, b))
    out = lax.dot_general(a, b, (a.ndim - 1,), (b.ndim - 1,))
    return _mark(out, out.ndim == 0)


@implements(np.outer)
def outer(a, b, out=None):
    a, b = ravel(a), ravel(b)
    return apply_ufunc(np.multiply, (lax.reshape(a, (a.size, 1)), lax.reshape(b, (1, b.size))))


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    a, b = _promote_pair(a, b, "tensordot")
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        la, lb = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        la, lb = axes
        la = [la] if isinstance(la, (int, np.integer)) else list(la)
        lb = [lb] if isinstance(lb, (int, np.integer)) else list(lb)
    la = [normalize_axis(x, a.ndim) for x in la]
    lb = [normalize_axis(x, b.ndim) for x in lb]
    if len(la) != len(lb) or any(a.shape[i] != b.shape[j] for i, j in zip(la, lb)):
        raise ShapeError(f"tensordot: shape-mismatch for sum ({a.shape} axes {la}, "
                         f"{b.shape} axes {lb}){where()}")
    return _mark(lax.dot_general(a, b, la, lb), False)  # NumPy: an array even when 0-d


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, **kwargs):
    from jitc.numpy_api.einsum import einsum as _einsum

    if out is not None or kwargs or dtype is not None:
        raise UnsupportedError(f"np.einsum: out=/dtype=/{list(kwargs)} are not supported"
                               f"{where()}")
    return _einsum(*operands)
