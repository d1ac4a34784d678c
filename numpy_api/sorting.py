"""Sorting: np.sort, np.argsort, np.partition, np.argpartition and the ndarray methods
(.sort and .partition in place), as the `sort` / `argsort` primitives along one axis.

Every kind NumPy accepts gives NumPy's sorted values (NaN last). The kernels sort stably, as
jax.numpy does, so argsort's order of ties is NumPy's kind='stable' order; NumPy's default
quicksort may order ties otherwise. A full stable sort meets np.partition's contract (the
element at each kth in its sorted place, no larger ones before it, no smaller ones after).
"""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import find_ctx, implements, is_tracer, lift, normalize_axis
from jitc.trace import lax
from jitc.trace.mutation.functional import assign


def _checked(what, check):
    """Run NumPy's own check of a `kind`/`stable` argument (on a one-element array), so
    jitc accepts and refuses exactly what NumPy does, with the user's line."""
    try:
        check(np.zeros(1))
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what}: {e}{where()}") from None


def _refuse_order(order, what):
    if order is not None:
        raise UnsupportedError(
            f"{what}: order= is not supported by jitc (it sorts structured "
            f"arrays by field, and jitc has no structured dtypes){where()}"
        )


def _along(a, axis, indices):
    """`a` sorted (or its argsort) along `axis`; axis=None sorts the flattened array."""
    a = lift(find_ctx([a]), a)
    if axis is None:
        a, axis = lax.reshape(a, (a.size,)), 0
    axis = normalize_axis(axis, a.ndim)
    return lax.sort(a, axis, indices)


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _refuse_order(order, "np.sort")
    _checked("np.sort", lambda z: np.sort(z, kind=kind, stable=stable))
    return _along(a, axis, False)


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _refuse_order(order, "np.argsort")
    _checked("np.argsort", lambda z: np.argsort(z, kind=kind, stable=stable))
    a = lift(find_ctx([a]), a)
    if a.ndim == 0:  # NumPy argsorts a 0-d array as one element: array([0])
        axis = None
    return _along(a, axis, True)


def _kth(kth, n, what):
    """Check the static kth (an int or a sequence of ints) against an axis of n elements."""
    if is_tracer(kth):
        raise UnsupportedError(
            f"{what}: kth must be a static int or sequence of ints, not a traced array{where()}"
        )
    ks = np.asarray(kth)
    if ks.ndim > 1:
        raise ValueError(
            f"{what}: kth must be an int or a 1-d sequence of ints, got {ks.ndim}-d{where()}"
        )
    if ks.dtype == np.dtype(bool):
        raise ValueError(f"{what}: Booleans unacceptable as partition index (kth){where()}")
    if ks.dtype.kind not in "iu":
        raise TypeError(f"{what}: Partition index must be integer, got kth={kth!r}{where()}")
    for k in ks.reshape(-1).tolist():
        if not -n <= operator.index(k) < n:
            raise ValueError(f"{what}: kth(={k}) out of bounds ({n}){where()}")


def _partition(a, kth, axis, kind, order, indices, what):
    _refuse_order(order, what)
    _checked(what, lambda z: np.partition(z, 0, kind=kind))
    a = lift(find_ctx([a]), a)
    n = a.size if axis is None else a.shape[normalize_axis(axis, a.ndim)]
    _kth(kth, n, what)
    return _along(a, axis, indices)


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    return _partition(a, kth, axis, kind, order, False, "np.partition")


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    return _partition(a, kth, axis, kind, order, True, "np.argpartition")


def sort_in_place(a, axis=-1, kind=None, order=None, *, stable=None):
    """ndarray.sort: the caller's array (or view) holds its sorted values afterwards."""
    if axis is None:
        raise TypeError(f"ndarray.sort: axis must be an integer, not None{where()}")
    assign(a, sort(a, axis, kind, order, stable=stable))


def partition_in_place(a, kth, axis=-1, kind="introselect", order=None):
    """ndarray.partition: the caller's array (or view) is partitioned afterwards."""
    if axis is None:
        raise TypeError(f"ndarray.partition: axis must be an integer, not None{where()}")
    assign(a, _partition(a, kth, axis, kind, order, False, "ndarray.partition"))
