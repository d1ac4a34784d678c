"""Products and contractions: matmul, dot, vdot, vecdot, inner, outer, cross, tensordot,
einsum."""

from __future__ import annotations

import operator
import warnings

import numpy as np

from jitc.core.dtypes import check_supported
from jitc.core.errors import ShapeError, UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import (
    _lifted,
    _mark,
    find_ctx,
    implements,
    lift,
    normalize_axis,
    result_type,
)
from jitc.numpy_api.shapes import ravel
from jitc.numpy_api.ufuncs import apply_ufunc
from jitc.trace import lax


def _promote_pair(a, b, what):
    ctx = find_ctx([a, b])
    a, b = lift(ctx, a), lift(ctx, b)
    dt = check_supported(result_type(a, b), f"{what} result")
    return lax.convert(a, dt), lax.convert(b, dt)


@implements(np.matmul)
def matmul(a, b):
    a, b = _promote_pair(a, b, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul: Input operand {0 if a.ndim == 0 else 1} does not have "
            f"enough dimensions{where()}"
        )
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = lax.reshape(a, (1,) + a.shape)
    if squeeze_b:
        b = lax.reshape(b, b.shape + (1,))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {a.shape} and {b.shape} are not aligned: "
            f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-2]} "
            f"(dim {b.ndim - 2}){where()}"
        )
    if b.ndim == 2:  # one GEMM over all leading dims of a
        out = lax.dot_general(a, b, (a.ndim - 1,), (0,))
    else:
        out = _batched_dot("matmul", a, b, 2)
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
        raise ShapeError(
            f"dot: shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} "
            f"(dim {a.ndim - 1}) != {b.shape[rc]} (dim {rc}){where()}"
        )
    out = lax.dot_general(a, b, (a.ndim - 1,), (rc,))
    return _mark(out, out.ndim == 0)


@implements(np.vecdot)  # a gufunc: ufunc_dispatch calls it; listed for the surface
def vecdot(x1, x2, /, *, axis=-1):
    """NumPy's vecdot gufunc (n),(n)->(): the dot product along `axis` of each pair of
    vectors, x1 conjugated, batch axes broadcast (as matmul: one dot_general, so float16
    accumulates as NumPy's float16 dot does)."""
    a, b = _promote_pair(x1, x2, "vecdot")
    if a.dtype.kind == "c":
        a = lax.conjugate(a)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(
                f"vecdot: Input operand {i} does not have enough dimensions "
                f"(has 0, gufunc core with signature (n),(n)->() requires 1)"
                f"{where()}"
            )
    a = lax.transpose(a, _to_end(a.ndim, normalize_axis(axis, a.ndim)))
    b = lax.transpose(b, _to_end(b.ndim, normalize_axis(axis, b.ndim)))
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"vecdot: Input operand 1 has a mismatch in its core dimension 0, "
            f"with gufunc signature (n),(n)->() (size {b.shape[-1]} is "
            f"different from {a.shape[-1]}){where()}"
        )
    out = _batched_dot("vecdot", a, b, 1)
    return _mark(out, out.ndim == 0)


def _batched_dot(name, a, b, core):
    """dot_general of a's last axis with b's first core axis (matmul: core 2, (m,k)@(k,n);
    vecdot: core 1, (n).(n)), over the broadcast leading (batch) axes of both."""
    try:
        batch = np.broadcast_shapes(a.shape[:-core], b.shape[:-core])
    except ValueError:
        raise ShapeError(
            f"{name}: batch dims of {a.shape} and {b.shape} do not broadcast{where()}"
        ) from None
    nb = len(batch)
    a = lax.broadcast_to(a, batch + a.shape[-core:])
    b = lax.broadcast_to(b, batch + b.shape[-core:])
    return lax.dot_general(a, b, (nb + core - 1,), (nb,), tuple(range(nb)), tuple(range(nb)))


def _to_end(ndim, axis):
    return [d for d in range(ndim) if d != axis] + [axis]


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


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's component formulas, op for op (so float16 rounds as NumPy's does): vectors
    of 3, or of 2 (NumPy 2.0 deprecates those, with its DeprecationWarning here too)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _promote_pair(a, b, "np.cross")
    a = lax.transpose(a, _to_end(a.ndim, normalize_axis(axisa, a.ndim, "axisa")))
    b = lax.transpose(b, _to_end(b.ndim, normalize_axis(axisb, b.ndim, "axisb")))
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(
            f"np.cross: incompatible dimensions for cross product (dimension "
            f"must be 2 or 3), got {na} and {nb}{where()}"
        )
    if na == 2 or nb == 2:
        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of "
            "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=3,
        )
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return _mark(z, False)
    if na == 2:
        b2 = b[..., 2]
        parts = (a1 * b2, -(a0 * b2), z)
    elif nb == 2:
        a2 = a[..., 2]
        parts = (-(a2 * b1), a2 * b0, z)
    else:
        a2, b2 = a[..., 2], b[..., 2]
        parts = (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z)
    shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    cp = lax.concatenate(
        [lax.reshape(lax.broadcast_to(p, shape), shape + (1,)) for p in parts], len(shape)
    )
    return np.moveaxis(cp, -1, normalize_axis(axisc, cp.ndim, "axisc"))


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
        raise ShapeError(
            f"tensordot: shape-mismatch for sum ({a.shape} axes {la}, {b.shape} axes {lb}){where()}"
        )
    return _mark(lax.dot_general(a, b, la, lb), False)  # NumPy: an array even when 0-d


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, **kwargs):
    from jitc.numpy_api.einsum import einsum as _einsum

    if out is not None or kwargs or dtype is not None:
        raise UnsupportedError(f"np.einsum: out=/dtype=/{list(kwargs)} are not supported{where()}")
    return _einsum(*operands)


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise UnsupportedError(f"np.trace: out= is not supported{where()}")
    return np.sum(np.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@implements(np.kron)
def kron(a, b):
    """Every a[i] * b[j] at i * b.shape + j: a and b interleaved on new axes, merged."""
    ctx = find_ctx([a, b])
    a, b = lift(ctx, a), lift(ctx, b)
    ndim = max(a.ndim, b.ndim)
    a = lax.reshape(a, (1,) * (ndim - a.ndim) + a.shape)
    b = lax.reshape(b, (1,) * (ndim - b.ndim) + b.shape)
    wide_a = lax.reshape(a, [s for n in a.shape for s in (n, 1)])
    wide_b = lax.reshape(b, [s for n in b.shape for s in (1, n)])
    product = apply_ufunc(np.multiply, (wide_a, wide_b))
    return _mark(lax.reshape(product, [m * n for m, n in zip(a.shape, b.shape)]), False)


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - NumPy's name
    x = _lifted(x)
    if x.dtype.kind not in "fc":
        x = lax.convert(x, np.float64)
    if axis is None and (
        ord is None or ord in ("f", "fro") and x.ndim == 2 or ord == 2 and x.ndim == 1
    ):
        whole = np.sqrt(np.sum(x * x))
        return lax.reshape(whole, (1,) * x.ndim) if keepdims else whole
    if axis is None:
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        axis = (operator.index(axis),)
    axes = tuple(normalize_axis(d, x.ndim) for d in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"Improper number of dimensions to norm.{where()}")


def _vector_norm(x, ord, axes, keepdims):  # noqa: A002
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors{where()}")
    a = np.abs(x)
    if ord is None or ord == 2:
        return np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims))
    if ord == np.inf:
        return np.max(a, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return np.sum(x != 0, axis=axes, keepdims=keepdims).astype(x.dtype)
    if ord == 1:
        return np.sum(a, axis=axes, keepdims=keepdims)
    return np.sum(a**ord, axis=axes, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    row, col = axes
    if row == col:
        raise ValueError(f"Duplicate axes given.{where()}")
    a = np.abs(x)
    if ord is None or ord == "fro":
        result = np.sqrt(np.sum(x * x, axis=axes))
    elif ord in (1, -1):
        sums = np.sum(a, axis=row)
        result = (np.max if ord == 1 else np.min)(sums, axis=col - (col > row))
    elif ord in (np.inf, -np.inf):
        sums = np.sum(a, axis=col)
        result = (np.max if ord == np.inf else np.min)(sums, axis=row - (row > col))
    elif ord in (2, -2, "nuc"):
        from jitc.numpy_api.linalg_factor import singular_value_norm

        result = singular_value_norm(x, ord, row, col)
    else:
        raise ValueError(f"Invalid norm order for matrices.{where()}")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        result = lax.reshape(result, shape)
    return result
