"""The Array API namespace of traced arrays (`Tracer.__array_namespace__`).

Libraries written against the Array API standard ask an array for its namespace and call
`xp.exp`, `xp.sum`, `xp.asarray` on it. NumPy 2's main namespace is that API, and NumPy's
functions already trace through `__array_function__` and `__array_ufunc__`; what a traced
array needs besides is an `asarray` that keeps it traced (np.asarray would ask it for
concrete values). SciPy takes this route for its array-API functions (scipy.special.softmax,
log_softmax, logsumexp, ...) when SCIPY_ARRAY_API=1 is set before SciPy is imported; SciPy's
own code then runs on the traced arrays and fuses like the user's.
"""

from __future__ import annotations

import os
import sys
import types

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import library_call, where


def _is_tracer(x) -> bool:
    from jitc.trace.tracer import Tracer

    return isinstance(x, Tracer)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """np.asarray for traced arrays: a Tracer stays traced, copied where `copy` is True or
    a dtype conversion asks for a new array; anything else is NumPy's asarray."""
    if device not in (None, "cpu"):
        raise UnsupportedError(
            f"asarray: device={device!r} is not supported by jitc's "
            f"traced arrays (only 'cpu'){where()}"
        )
    if not _is_tracer(obj):
        return np.asarray(obj, dtype=dtype, copy=copy)
    if dtype is not None and np.dtype(dtype) != obj.dtype:
        if copy is False:
            raise ValueError(
                f"asarray: copy=False but converting {obj.dtype} to "
                f"{np.dtype(dtype)} needs a copy{where()}"
            )
        return obj.astype(dtype)
    return np.copy(obj) if copy else obj


class _Namespace(types.ModuleType):
    """NumPy's namespace with the traced `asarray` (and `device`, `to_device`)."""

    asarray = staticmethod(asarray)

    @staticmethod
    def device(x, /):
        return "cpu"

    @staticmethod
    def to_device(x, device, /, *, stream=None):
        return asarray(x, device=device)

    def __getattr__(self, name):
        return getattr(np, name)


NAMESPACE = _Namespace("jitc.array_api", __doc__)

# SciPy's array-API functions tested on traced arrays (tests/test_array_api.py)
SCIPY_TESTED = ("scipy.special.softmax", "scipy.special.log_softmax", "scipy.special.logsumexp")


def library_refusal() -> str | None:
    """Why an installed library's function the user called (SciPy's, ...) could not
    convert a traced array with np.asarray, naming it and the user's line; None when no
    library is converting. For SciPy with its array API support off, the switch that
    makes it trace."""
    called = library_call()
    if called is None:
        return None
    function, user = called
    head = (
        f"{function} converts its argument with np.asarray, which needs concrete "
        f"values{where(user)}"
    )
    array_api = sys.modules.get("scipy._lib._array_api")
    if function.startswith("scipy.") and not getattr(array_api, "SCIPY_ARRAY_API", True):
        state = (
            f"it is {os.environ['SCIPY_ARRAY_API']!r}"
            if "SCIPY_ARRAY_API" in os.environ
            else "it is unset"
        )
        return (
            f"{head}. SciPy runs its array-API functions (softmax, log_softmax, "
            "logsumexp, ...) on jitc's traced arrays when the environment variable "
            f"SCIPY_ARRAY_API=1 is set before SciPy is imported ({state})"
        )
    return (
        f"{head}: jitc traces NumPy's functions, not code that needs the values "
        f"themselves; call {function} outside the jitted function, or write its "
        "computation with NumPy calls"
    )
