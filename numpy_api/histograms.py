"""np.histogram with the number of bins known when the function is traced: an int (with
or without range=), or an array of edges. The result's shape is then fixed, and the
counting is NumPy's own algorithm in traced ops: each value's bin from its offset (uniform
bins, corrected by one against the edges as NumPy does) or from the edges (an array), then
np.add.at into the bins, one value after the other (NumPy's bincount adds in the same
order). Without range=, the edges come from the data's min and max at run time, and data
holding NaN or inf raises NumPy's ValueError from the kernel.
"""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import checked, find_ctx, implements, is_tracer, lift
from jitc.numpy_api.indexing import take
from jitc.trace import lax


def _outer_edges(a, range_):
    """NumPy's (first, last) edges for an int `bins`: range= checked when tracing, else the
    data's min and max (0 and 1 for no data), NumPy's ValueError raised at run time when
    they are not finite; equal edges widened by 0.5 each way."""
    if range_ is None:
        if a.size == 0:
            return 0, 1
        first, last = np.min(a), np.max(a)
        if a.dtype.kind == "f":  # NaN or inf in the data: NumPy's ValueError, at run time
            first = checked(first, ~(np.isfinite(first) & np.isfinite(last)))
        else:  # NumPy's integer edges turn float64 when widened
            first, last = first.astype(np.float64), last.astype(np.float64)
        same = first == last
        return np.where(same, first - 0.5, first), np.where(same, last + 0.5, last)
    if is_tracer(range_) or any(is_tracer(v) for v in range_):
        raise UnsupportedError(f"np.histogram range= must be numbers, not traced arrays{where()}")
    first, last = range_
    if first > last:
        raise ValueError(f"max must be larger than min in range parameter.{where()}")
    if not (np.isfinite(first) and np.isfinite(last)):
        raise ValueError(f"supplied range of [{first}, {last}] is not finite{where()}")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _uniform_bins(a, n, first, last):
    """Each value's bin among n equal bins from first to last (n: out of range), and the
    edges: NumPy's estimate from the value's offset, then one step against the edges."""
    bin_type = np.result_type(*(v.dtype if is_tracer(v) else v for v in (first, last)), a.dtype)
    if bin_type.kind in "iub":
        bin_type = np.result_type(bin_type, float)
    edges = np.linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
    keep = (a >= first) & (a <= last)
    x = np.where(keep, a, first)
    index = (((x - first) / np.subtract(last, first)) * n).astype(np.intp)
    index = np.where(index == n, n - 1, index)
    table = lift(find_ctx([a]), edges)
    index = np.where(x < take(table, index), index - 1, index)
    index = np.where((x >= take(table, index + 1)) & (index != n - 1), index + 1, index)
    return np.where(keep, index, n), edges


def _edge_bins(a, edges):
    """Each value's bin between sorted `edges` (the last bin closed), len(edges) - 1 out of
    range."""
    n = len(edges) - 1
    keep = (a >= edges[0]) & (a <= edges[-1])
    index = np.searchsorted(edges, a, side="right") - 1
    index = np.where(index == n, n - 1, index)
    return np.where(keep, index, n)


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 (NumPy's name)
    ctx = find_ctx([a, weights])
    a = lift(ctx, a)
    if weights is not None:
        weights = lift(ctx, weights)
        if weights.shape != a.shape:
            raise ValueError(f"weights should have the same shape as a.{where()}")
        weights = np.ravel(weights)
    a = np.ravel(a)
    if is_tracer(bins):
        raise UnsupportedError(
            f"np.histogram bins= must be an int or edges made in the "
            f"function (np.array([...])), not a traced array (an argument "
            f"or a captured global, which jitc reads at each call){where()}"
        )
    if np.ndim(bins) == 0:
        n = operator.index(bins)
        if n < 1:
            raise ValueError(f"`bins` must be positive, when an integer{where()}")
        index, edges = _uniform_bins(a, n, *_outer_edges(a, range))
    else:
        edges = np.asarray(bins)
        if edges.ndim != 1 or np.any(edges[:-1] > edges[1:]):
            raise ValueError(f"`bins` must increase monotonically, when an array{where()}")
        if weights is not None:
            raise UnsupportedError(
                f"np.histogram with weights= and an array of edges: NumPy "
                f"sums the weights as differences of a cumulative sum, "
                f"which jitc does not reproduce; pass an int bins={where()}"
            )
        n = len(edges) - 1
        index = _edge_bins(a, edges)
    count_type = np.dtype(np.intp) if weights is None else weights.dtype
    # bincount adds in float64 (weights) or intp, then NumPy casts to the weights' dtype
    counts = lax.full(ctx, (n + 1,), 0, np.float64 if weights is not None else np.intp)
    np.add.at(counts, index, 1 if weights is None else weights.astype(np.float64))
    hist = counts[:n].astype(count_type)
    if density:
        widths = np.diff(edges).astype(float)
        return hist / widths / hist.sum(), edges
    return hist, edges


@implements(np.bincount)
def bincount(x, weights=None, minlength=0):
    """NumPy's bincount into a result of the static length `minlength`: a negative value,
    or one that would make NumPy's result longer, fails at run time (jitc.core.failures names
    np.bincount and the line), through the same np.add.at as np.histogram."""
    ctx = find_ctx([x, weights])
    x = lift(ctx, x)
    if x.dtype.kind not in "biu" or not np.can_cast(x.dtype, np.intp, "safe"):
        raise TypeError(
            f"np.bincount: Cannot cast array data from {x.dtype!r} to "
            f"dtype('int64') according to the rule 'safe'{where()}"
        )
    if x.ndim != 1:
        raise ValueError(
            f"np.bincount: x must be 1-dimensional, got {x.ndim} dimensions "
            f"(NumPy: object too deep for desired array){where()}"
        )
    if is_tracer(minlength):
        raise UnsupportedError(
            f"np.bincount minlength= must be an int, not a traced array{where()}"
        )
    n = operator.index(minlength)
    if n < 0:
        raise ValueError(f"np.bincount: 'minlength' must not be negative{where()}")
    if n == 0:
        raise UnsupportedError(
            f"np.bincount without minlength=: the result's length (the largest value + 1) "
            f"depends on the data, which jitc does not know when it compiles; pass "
            f"minlength=N with N above every value{where()}"
        )
    if weights is not None:
        weights = lift(ctx, weights)
        if weights.shape != x.shape:
            raise ValueError(
                f"np.bincount: The weights and list don't have the same length.{where()}"
            )
    index = lax.convert(x, np.dtype(np.intp))
    index = np.where(index < 0, n, index)  # out of bounds: negative counts from the end
    counts = lax.full(ctx, (n,), 0, np.float64 if weights is not None else np.intp)
    np.add.at(counts, index, 1 if weights is None else weights.astype(np.float64))
    return counts
