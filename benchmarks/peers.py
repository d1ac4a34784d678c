"""The implementations compared: NumPy, numba @njit, JAX jax.jit, jitc (backend="cpu").

Each `prepare_*` takes a workload Case and returns (fn, args, note): the compiled function,
the arguments to run it on (JAX gets device arrays) and a footnote or None.
"""

from __future__ import annotations

import os
import re
import types

import numba
import numpy as np

IMPLS = ("NumPy", "numba", "JAX", "jitc")


def rebind(fn, np_module=None, wrap=None):
    """A copy of `fn` with `np` rebound to `np_module`, and the helper functions it reaches
    (module-level or closure-captured, from the same module) rebound the same way and
    wrapped by `wrap` (numba.njit: numba can only call compiled functions)."""
    g = dict(fn.__globals__)
    if np_module is not None:
        g["np"] = np_module
    memo = {}

    def convert(f):
        if f not in memo:
            cells = None
            if f.__closure__:
                cells = tuple(
                    types.CellType(convert(c.cell_contents))
                    if _is_helper(c.cell_contents, fn)
                    else c
                    for c in f.__closure__
                )
            new = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, cells)
            new.__kwdefaults__ = f.__kwdefaults__
            memo[f] = wrap(new) if wrap else new
        return memo[f]

    for name, value in fn.__globals__.items():
        if _is_helper(value, fn):
            g[name] = convert(value)
    return convert(fn)


def _is_helper(value, fn):
    return isinstance(value, types.FunctionType) and value.__module__ == fn.__module__


def call(case, fn, args):
    return case.run(fn, *args) if case.run else fn(*args)


def prepare_numpy(case, probe=True):
    return case.fn, case.args, None


def prepare_numba(case, probe=True):
    """numba.njit on the NumPy code itself; the hand-written loops version if that fails to
    compile (or directly, with probe=False)."""
    if not probe and case.numba_fn is not None:
        return case.numba_fn, case.args, "hand-written numba loops (workloads.py)"
    if case.fn not in _numba_compiled:  # cases sharing a function share its compilation
        fn, note = rebind(case.fn, wrap=numba.njit), None
        try:
            call(case, fn, case.args)
        except numba.core.errors.NumbaError as e:
            if case.numba_fn is None:
                raise
            lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines()]
            reason = next((ln[4:] for ln in lines if ln.startswith(">>> ")), None) or next(
                (ln for ln in lines if ln and "Failed in" not in ln), type(e).__name__
            )
            fn = case.numba_fn
            note = (
                f"numba cannot compile the NumPy code as written ({reason.rstrip('.')[:150]});"
                " timed instead: the natural numba version with loops (workloads.py)"
            )
        _numba_compiled[case.fn] = fn, note
    fn, note = _numba_compiled[case.fn]
    return fn, case.args, note


_numba_compiled = {}


_jax = None


def jax_module():
    """jax, or None when `import jax` fails (install the extra: pip install -e .[bench])."""
    global _jax
    if _jax is None:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        try:
            import jax

            _jax = jax
        except Exception:  # noqa: BLE001 - any import failure means "not available"
            _jax = False
    return _jax or None


def prepare_jax(case, probe=True):
    jax = jax_module()
    import jax.numpy as jnp

    fn = jax.jit(rebind(case.jax_fn or case.fn, np_module=jnp))
    note = (
        "written functionally (.at[].set(), lax.fori_loop, lax.while_loop)" if case.jax_fn else None
    )
    return fn, jax.device_put(case.args), note


def prepare_jitc(case, probe=True):
    import jitc

    return jitc.jit(case.fn, backend="cpu"), case.args, None


def import_backend(impl):
    """Import what the first call of `impl` would otherwise import inside the timed call
    (numba and JAX are imported by prepare already)."""
    if impl == "jitc":
        import jitc.backends.cpu.executable  # noqa: F401


PREPARE = {"NumPy": prepare_numpy, "numba": prepare_numba, "JAX": prepare_jax, "jitc": prepare_jitc}


def sync(impl, out):
    """Wait for the result (JAX dispatches asynchronously)."""
    if impl == "JAX":
        _jax.block_until_ready(out)
    return out


def leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in leaves(t)]
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    return [tree]


def check(got, want, rtol, atol, exact_dtype=True):
    """Raise AssertionError unless `got` matches NumPy's `want`: structure, shape, dtype,
    values (allclose). With exact_dtype=False a different dtype is returned as a note."""
    g, w, note = leaves(got), leaves(want), None
    assert len(g) == len(w), f"{len(g)} results, NumPy gives {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        a, b = np.asarray(a), np.asarray(b)
        where = f"result {i}: " if len(w) > 1 else ""
        assert a.shape == b.shape, f"{where}shape {a.shape}, NumPy {b.shape}"
        if a.dtype != b.dtype:
            note = f"{where}returns {a.dtype}, NumPy {b.dtype}"
            assert not exact_dtype, note
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            err = np.abs(a.astype(np.float64) - b) / (atol + rtol * np.abs(b))
            k = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err)), b.shape)
            raise AssertionError(
                f"{where}mismatch: {np.sum(~np.isclose(a, b, rtol, atol, True))} of {b.size} "
                f"elements off (rtol {rtol}, atol {atol}); worst at {tuple(map(int, k))}: "
                f"got {a[k]!r}, NumPy {b[k]!r}"
            )
    return note
