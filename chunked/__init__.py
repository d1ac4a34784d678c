"""Jitted functions on dask arrays: the traced graph partitioned along chunked axes, each
block computed by compiled programs, cross-block reductions combined, lazily, on any dask
scheduler.

Dask is optional: nothing here imports it until a dask array is passed.
"""

from __future__ import annotations

from jitc.chunked.blocks import Plan, is_dask
from jitc.core.pytree import flatten

__all__ = ["Plan", "call", "is_dask"]


def call(jitted, args, kwargs):
    """`jitted(*args, **kwargs)` with dask arrays among the arguments: dask arrays out. The
    plan is made once per signature (shapes, dtypes, chunks, static values), so workers
    reuse the programs they compiled for earlier calls."""
    from jitc.api import _leaf_signature

    dyn, dyn_kw, static, _ = jitted._split(args, kwargs)
    leaves, tree = flatten((dyn, dyn_kw))
    key = (tree, static, tuple(("dask", x.shape, x.dtype, x.chunks) if is_dask(x)
                               else _leaf_signature(x) for x in leaves))
    plans = jitted.__dict__.setdefault("_chunk_plans", {})
    plan = plans.get(key)
    if plan is None:
        plan = plans.setdefault(key, Plan(jitted, args, kwargs))
    return plan.build(leaves)
