"""Jitted functions on dask arrays: the traced graph partitioned along chunked axes, each
block computed by the whole compiled function, lazily, on any dask scheduler.

Dask is optional: nothing here imports it until a dask array is passed.
"""

from __future__ import annotations

from jitc.chunked.blocks import Plan, is_dask

__all__ = ["Plan", "call", "is_dask"]


def call(jitted, args, kwargs):
    """`jitted(*args, **kwargs)` with dask arrays among the arguments: dask arrays out."""
    return Plan(jitted, args, kwargs).build()
