"""Written contents back into the caller's arrays after a call: NumPy's side effects, once
the compiled function has computed them functionally (trace/lowering.py records which
outputs are which arrays' new contents: stages.WriteBack)."""

from __future__ import annotations

import numpy as np

from jitc.core.device_arrays import is_device_array
from jitc.core.errors import UnsupportedError


def write_back(dst, value) -> None:
    """Copy a written argument's new contents into the caller's array (NumPy or device)."""
    if dst is value:
        return
    if isinstance(dst, np.ndarray):
        np.copyto(dst, value, casting="no")
    elif is_device_array(dst):
        dst[...] = value


def check_overlap(lowered, leaves) -> None:
    """A written argument must not partly overlap another (the trace saw separate buffers)."""
    for w in lowered.writebacks:
        if w.kind != "arg":
            continue
        i = w.target
        for j, other in enumerate(leaves):
            if (
                j != i
                and other is not leaves[i]
                and isinstance(other, np.ndarray)
                and np.may_share_memory(leaves[i], other)
            ):
                names = lowered.arg_names
                raise UnsupportedError(
                    f"{lowered.function.name}: arguments {names[i]!r} and {names[j]!r} "
                    f"share memory and {names[i]!r} is written; pass the same array object "
                    f"twice, or copies"
                )


def donated(lowered, can_write_into) -> list:
    """(parameter index, output index) for written arrays an executable may compute in
    place (`can_write_into(parameter, output)`): outputs that are not also returned, and
    that no kernel writes before the last read of the array's old contents."""
    # stages.GraphResult's outputs (this module sits below stages.py: no import of it)
    returned = {s.index for s in lowered.out_specs if hasattr(s, "index")}
    n = len(lowered.arg_types)
    out = []
    for w in lowered.writebacks:
        param = w.target if w.kind == "arg" else n + w.target if w.kind == "captured" else None
        if param is not None and w.output not in returned and can_write_into(param, w.output):
            out.append((param, w.output))
    return out
