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
    """`jitted(*args, **kwargs)` with dask arrays among the arguments (`args`: the bound
    object first, where the function has one): dask arrays out. The plan is made once per
    signature (shapes, dtypes, chunks, static values), so workers reuse the programs they
    compiled for earlier calls."""
    from jitc.stages import leaf_signature
    from jitc.trace.mutation.capture import split_arguments

    split = split_arguments(jitted.function, args, kwargs)
    leaves, tree = flatten((split.dynamic, split.dynamic_kwargs))
    key = (
        tree,
        split.static_key,
        tuple(
            ("dask", x.shape, x.dtype, x.chunks) if is_dask(x) else leaf_signature(x)
            for x in leaves
        ),
    )
    plans = jitted.__dict__.setdefault("_chunk_plans", {})
    plan = plans.get(key)
    if plan is None:
        plan = plans.setdefault(key, Plan(jitted.function, args, kwargs))
    return plan.build(leaves)
