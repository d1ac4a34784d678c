"""NAME.py: the Python loader of an artifact, needing only NumPy and ctypes.

It checks every argument (ndarray, dtype, shape) and raises ValueError naming the argument,
so a mistake is an exception, never a crash in C; non-contiguous or misaligned inputs are
copied. Results are fresh arrays; an in-out argument (one the function writes) is written in
the caller's array, as NumPy would, and returned as itself where the function returns it.
The temp arena is one per thread, reused.

Before the first call the loader makes sure libNAME.so is the library it was generated
with: a file shorter than its ELF headers say is refused before it is mapped (a truncated
copy would die of SIGBUS), and the library's NAME_signature_digest must equal the digest
written here (one built for another shape would write past the result arrays, one for
another function would return its numbers). Either is an ImportError naming the file.
"""

from __future__ import annotations

import numpy as np

from jitc.aot.link import EntryPlan

TEMPLATE = '''\
"""Loader for the jitc AOT artifact {name} ({origin}); needs only NumPy and ctypes.

    from {name} import {name}
    {call}
"""

import ctypes
import os
import struct
import threading

import numpy as np

__all__ = ["{name}", "ARGS", "RESULTS", "TEMP_BYTES"]

ARGS = {args!r}  # (name, shape, dtype) per argument
RESULTS = {results!r}  # (shape, dtype) per result of the C entry
OUTPUTS = {outputs!r}  # per returned value: ("res", k, scalar), ("arg", k), ("copy", k, scalar)
INOUT = {inout!r}  # the arguments the function writes
SINGLE = {single!r}  # one returned value, not a tuple
TEMP_BYTES = {temp_bytes}
FAILURES = {failures!r}  # (exception class, message) per way the compiled code can fail
DIGEST = {digest!r}  # lib{name}.so must export the same as {name}_signature_digest


def _refuse(path, why):
    raise ImportError(f"{{path}}: {{why}}; rebuild {name}.py and lib{name}.so together with "
                      f"`jitc aot` (from {origin})")


def _check_whole(path):
    """dlopen maps the file's loadable segments, and touching a page past the end of a
    truncated copy kills the process (SIGBUS): refuse a file shorter than its ELF headers
    say it is (its segments, and the section table linkers write last)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(64)
            if len(head) < 64 or head[:6] != b"\\x7fELF\\x02\\x01":
                _refuse(path, f"not a 64-bit little-endian ELF library ({{size}} bytes)")
            phoff, shoff = struct.unpack_from("<QQ", head, 32)
            phsize, phnum, shsize, shnum = struct.unpack_from("<4H", head, 54)
            need = [phoff + phnum * phsize, shoff + shnum * shsize]
            f.seek(phoff)
            table = f.read(phnum * phsize) if need[0] <= size else b""
    except OSError as e:
        _refuse(path, e.strerror)
    for k in range(len(table) // phsize if phsize >= 40 else 0):
        kind, _, offset, _, _, filesz = struct.unpack_from("<IIQQQQ", table, k * phsize)
        if kind == 1:  # PT_LOAD
            need.append(offset + filesz)
    if max(need) > size:
        _refuse(path, f"truncated: {{size}} bytes where its ELF headers need {{max(need)}}")


def _open(path):
    """The library, once it is whole and carries this loader's digest: a mismatch is an
    ImportError here, never a call into code compiled for something else."""
    _check_whole(path)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        _refuse(path, f"cannot be loaded ({{e}})")
    try:
        found = (ctypes.c_char * len(DIGEST)).in_dll(lib, "{name}_signature_digest").raw
    except ValueError:
        _refuse(path, "it has no {name}_signature_digest (built by a jitc older than "
                      "signature digests, or under another name)")
    if found != DIGEST.encode():
        _refuse(path, f"its signature digest is {{found.decode(errors='replace')}}, expected "
                      f"{{DIGEST}} (built for another function, shape or dtype)")
    return lib


_lib = _open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib{name}.so"))
_entry = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * {n_ptrs})(("{name}", _lib))

_dtypes = [np.dtype(d) for _, _, d in ARGS]
_shapes = [tuple(shape) for _, shape, _ in ARGS]
_strides = [tuple(d.itemsize * int(np.prod(s[k + 1:], dtype=np.int64))
                  for k in range(len(s))) for s, d in zip(_shapes, _dtypes)]
_rdtypes = [np.dtype(d) for _, d in RESULTS]
_rshapes = [tuple(shape) for shape, _ in RESULTS]
_ndarray, _empty = np.ndarray, np.empty
_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof
_local = threading.local()


_ERRORS = {{"IndexError": IndexError, "ValueError": ValueError,
            "LinAlgError": np.linalg.LinAlgError}}


def _failure(status):
    """The exception NumPy raises where the compiled code failed (its one way to fail), or
    a RuntimeError naming each way it could have."""
    if len(FAILURES) == 1:
        cls, message = FAILURES[0]
        return _ERRORS.get(cls, RuntimeError)(message)
    ways = "; or ".join(f"{{cls}}: {{message}}" for cls, message in FAILURES)
    return RuntimeError(f"{name}: the compiled code failed with status {{status}}"
                        + (f": {{ways}}" if ways else ""))


def _new_arena():
    buf = np.zeros(TEMP_BYTES + 64, np.uint8)
    base = _addressof(_from_buffer(buf))
    _local.arena = (buf, base + (-base % 64))
    _local.address = _local.arena[1]
    return _local.address


# Python scalars take the argument's dtype where NumPy's own promotion would (NEP 50): a
# float for a float32 argument, an int that fits for an int8 one, never a float for an int
_WEAK_KINDS = {{bool: "biufc", int: "iufc", float: "fc", complex: "c"}}


def _as_array(a, name, shape, dtype):
    """What np.asarray makes of a non-array argument, a Python scalar at the dtype."""
    if type(a) in _WEAK_KINDS and dtype.kind in _WEAK_KINDS[type(a)]:
        try:
            return np.asarray(a, dtype=dtype)
        except OverflowError:
            raise ValueError(f"{name}: argument {{name!r}}: Python {{type(a).__name__}} {{a}} "
                             f"is out of bounds for {{dtype}}") from None
    try:
        return np.asarray(a)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: argument {{name!r}} must be an array of "
                         f"{{dtype}}{{list(shape)}}, got {{type(a).__name__}}") from None


def _slow(a, k):
    """Check argument k; a C-contiguous, aligned, writable-or-copied array (or ValueError)."""
    name, shape, dtype = ARGS[k][0], _shapes[k], _dtypes[k]
    if not isinstance(a, np.ndarray):
        a = _as_array(a, name, shape, dtype)
    if a.dtype != dtype:
        raise ValueError(f"{name}: argument {{name!r}} has dtype {{a.dtype}}, expected "
                         f"{{dtype}} (compiled for {{dtype}}{{list(shape)}})")
    if a.shape != shape:
        what = "rank" if a.ndim != len(shape) else "shape"
        raise ValueError(f"{name}: argument {{name!r}} has {{what}} {{a.ndim}}-d "
                         f"{{list(a.shape)}}, expected {{list(shape)}} (shapes are static "
                         f"in an AOT artifact)")
    return np.array(a, dtype=dtype, order="C", copy=True)  # strided, misaligned or read-only


def _address(a, k):
    """The data address of argument k, copying it first when it is not usable as is."""
    if (type(a) is not _ndarray or a.dtype is not _dtypes[k] or a.shape != _shapes[k]
            or a.strides != _strides[k]):
        a = _slow(a, k)
    if not a.nbytes:
        return None, a
    try:
        p = _addressof(_from_buffer(a))
    except TypeError:  # read-only
        a = _slow(a, k)
        p = _addressof(_from_buffer(a))
    if p % _dtypes[k].itemsize:
        a = _slow(a, k)
        p = _addressof(_from_buffer(a))
    return p, a


{function}
'''


def _function(plan: EntryPlan, arg_names, outputs, single: bool, doc: str) -> str:
    """The call, unrolled per argument: the common case (an ndarray of the exact dtype, shape
    and C strides) costs a few attribute reads; anything else goes through `_slow`."""
    name = plan.name
    n = len(plan.params)
    lines = [
        f"def {name}(*arrays):",
        f'    """{doc}"""',
        f"    if len(arrays) != {n}:",
        f'        raise ValueError(f"{name}: expected {n} arguments ({", ".join(arg_names)})'
        f', got {{len(arrays)}}")',
    ]
    if n:
        lines.append(f"    {', '.join(f'a{k}' for k in range(n))}, = arrays")
    for k, (shape, dtype) in enumerate(plan.params):
        size = int(np.prod(shape, dtype=np.int64))
        if size == 0:
            lines.append(f"    p{k}, a{k} = _address(a{k}, {k})")
            continue
        align = np.dtype(dtype).itemsize - 1
        lines += [
            "    try:",
            f"        if not (type(a{k}) is _ndarray and a{k}.dtype is _dtypes[{k}] and "
            f"a{k}.shape == _shapes[{k}]",
            f"                and a{k}.strides == _strides[{k}]):",
            "            raise TypeError",
            f"        p{k} = _addressof(_from_buffer(a{k}))",
            *([f"        if p{k} & {align}:", "            raise TypeError"] if align else []),
            "    except TypeError:",
            f"        p{k}, a{k} = _address(a{k}, {k})",
        ]
    for k in plan.inout:
        others = [f"arrays[{j}]" for j in range(n) if j != k]
        lines += [
            f"    if not arrays[{k}].flags.writeable:",
            f'        raise ValueError(f"{name}: argument {arg_names[k]!r} is written '
            f'by the function (in-out) but is read-only")',
        ]
        if others:
            lines += [
                f"    if any(np.may_share_memory(arrays[{k}], b) for b in ({', '.join(others)},)):",
                f'        raise ValueError(f"{name}: argument {arg_names[k]!r} is '
                f'written by the function and shares memory with another argument")',
            ]
    for k, (shape, _) in enumerate(plan.results):
        lines.append(f"    r{k} = _empty(_rshapes[{k}], _rdtypes[{k}])")
        size = int(np.prod(shape, dtype=np.int64))
        lines.append(f"    q{k} = _addressof(_from_buffer(r{k}))" if size else f"    q{k} = None")
    if plan.temp_bytes:
        lines += [
            "    try:",
            "        t = _local.address",
            "    except AttributeError:",
            "        t = _new_arena()",
        ]
    else:
        lines.append("    t = None")
    ptrs = [f"p{k}" for k in range(n)] + [f"q{k}" for k in range(len(plan.results))] + ["t"]
    lines += [
        f"    status = _entry({', '.join(ptrs)})",
        "    if status:",
        "        raise _failure(status)",
    ]
    for k in plan.inout:  # the caller's array, where the call wrote a copy of it
        lines += [f"    if a{k} is not arrays[{k}]:", f"        arrays[{k}][...] = a{k}"]
    values = []
    for spec in outputs:
        if spec[0] == "res":
            values.append(f"r{spec[1]}[()]" if spec[2] else f"r{spec[1]}")
        elif spec[0] == "arg":
            values.append(f"arrays[{spec[1]}]")
        else:
            values.append(f"arrays[{spec[1]}][()]" if spec[2] else f"arrays[{spec[1]}].copy()")
    if single:
        lines.append(f"    return {values[0]}")
    else:
        lines.append(f"    return ({', '.join(values)}{',' if len(values) == 1 else ''})")
    return "\n".join(lines) + "\n"


def loader_source(
    plan: EntryPlan, arg_names, outputs, single: bool, origin: str, digest: str, failures=()
) -> str:
    """outputs: Artifact.outputs, where each value the function returns comes from; digest:
    the signature digest the library must carry; failures: aot.plan.Program.failures."""
    args = tuple((n, tuple(s), str(d)) for n, (s, d) in zip(arg_names, plan.params))
    results = tuple((tuple(s), str(d)) for s, d in plan.results)
    call = f"out = {plan.name}({', '.join(arg_names)})"
    doc = (
        f"{plan.name}({', '.join(arg_names)}) -> "
        + ("one array" if single else f"a tuple of {len(outputs)} arrays")
        + "; numpy arrays of exactly the compiled dtypes and shapes"
    )
    text = TEMPLATE.format(
        name=plan.name,
        origin=origin,
        call=call,
        args=args,
        results=results,
        outputs=tuple(outputs),
        inout=tuple(plan.inout),
        single=single,
        temp_bytes=plan.temp_bytes,
        digest=digest,
        failures=tuple(failures),
        n_ptrs=len(plan.params) + len(plan.results) + 1,
        function="{function}",
    )
    return text.replace("{function}", _function(plan, arg_names, outputs, single, doc))
