"""np.histogramdd and np.histogram2d with the number of bins known when tracing: NumPy's
algorithm (numpy/lib/_histograms_impl.py) in traced ops. Each dimension's edges (np.linspace
from range= or from the data's min and max, or an array of edges), each sample's bin by
searchsorted with the rightmost edge closed, one flat index over the bins plus an outlier
bin at each end, np.add.at in the samples' order (NumPy's bincount), the outliers cut off.
"""

from __future__ import annotations

import operator

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import find_ctx, implements, is_tracer, lift
from jitc.numpy_api.histograms import _outer_edges
from jitc.trace import lax


def _samples(sample, ctx):
    """(N, D): an array's rows, or a sequence of D 1-d arrays as columns."""
    if isinstance(sample, (list, tuple)):
        return np.stack([lift(ctx, s) for s in sample], axis=1)
    sample = lift(ctx, sample)
    return sample if sample.ndim == 2 else np.atleast_2d(sample).T


def _edges(column, bins, range_, i: int):
    """Dimension i's edges: from an int (np.linspace over range= or the data) or an array."""
    if is_tracer(bins):
        raise UnsupportedError(
            f"np.histogramdd: argument bins[{i}] must be an int or edges known when tracing, "
            f"not a traced array{where()}"
        )
    if np.ndim(bins) == 0:
        if bins < 1:
            raise ValueError(
                f"np.histogramdd: `bins[{i}]` must be positive, when an integer{where()}"
            )
        n = operator.index(bins)
        first, last = _outer_edges(column, range_)
        return np.linspace(first, last, n + 1)
    if np.ndim(bins) != 1:
        raise ValueError(f"np.histogramdd: `bins[{i}]` must be a scalar or 1d array{where()}")
    edges = np.asarray(bins)
    if np.any(edges[:-1] > edges[1:]):
        raise ValueError(
            f"np.histogramdd: `bins[{i}]` must be monotonically increasing, when an array{where()}"
        )
    return edges


@implements(np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    ctx = find_ctx([sample, weights] + (list(sample) if isinstance(sample, (list, tuple)) else []))
    sample = _samples(sample, ctx)
    d = sample.shape[1]
    try:
        count = len(bins)
    except TypeError:  # an int: every dimension's
        bins, count = d * [bins], d
    if count != d:
        raise ValueError(
            "np.histogramdd: The dimension of bins must be equal to the dimension of the "
            f"sample x.{where()}"
        )
    if range is None:
        range = (None,) * d  # noqa: A001
    elif len(range) != d:
        raise ValueError(
            f"np.histogramdd: range argument must have one entry per dimension{where()}"
        )
    edges = [_edges(sample[:, i], bins[i], range[i], i) for i in np.arange(d)]
    nbin = [len(e) + 1 for e in edges]  # an outlier bin at each end
    flat = 0
    for i, e in enumerate(edges):
        column = sample[:, i]
        index = np.searchsorted(e, column, side="right")
        index = np.where(column == e[-1], index - 1, index)  # the rightmost edge is closed
        flat = flat * nbin[i] + index
    size = int(np.prod(nbin))
    counts = lax.full(ctx, (size,), 0, np.float64 if weights is not None else np.intp)
    if weights is not None:
        weights = np.ravel(lift(ctx, weights)).astype(np.float64)
    np.add.at(counts, flat, 1 if weights is None else weights)
    hist = counts.reshape(nbin).astype(float)[(slice(1, -1),) * d]
    if density:
        total = hist.sum()
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = nbin[i] - 2
            hist = hist / np.diff(e).reshape(shape)
        hist = hist / total
    return hist, edges


@implements(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """np.histogramdd of the pairs (x, y); one array of bins is both dimensions' edges."""
    try:
        count = len(bins)
    except TypeError:
        count = 1
    if count not in (1, 2):
        bins = [bins, bins]
    hist, (xedges, yedges) = histogramdd([x, y], bins, range, density, weights)
    return hist, xedges, yedges
