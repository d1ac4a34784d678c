"""Device arrays (CuPy's, numba's, its simulator's) as jitc recognizes them, cheaply.

CuPy builds its `__cuda_array_interface__` dict (the dtype's descr and all) at every access,
and a call looks at each argument several times: the class is asked first, which has the
property without evaluating it.
"""

from __future__ import annotations


def has_cuda_array_interface(x) -> bool:
    return hasattr(type(x), "__cuda_array_interface__") or hasattr(x, "__cuda_array_interface__")


def is_device_array(x) -> bool:
    """A device array: the cuda backend takes it as it is, without a host copy."""
    return bool(getattr(type(x), "__cuda_ndarray__", False)) or has_cuda_array_interface(x)
