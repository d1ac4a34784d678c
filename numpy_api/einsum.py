"""np.einsum as a left-to-right chain of dot_generals (no diagonals)."""

from __future__ import annotations

import string

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.numpy_api.core import _mark, find_ctx, lift, result_type
from jitc.trace import lax


def _parse(subscripts, operands):
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {len(terms)} terms for {len(operands)} operands{where()}")
    spare = iter(c for c in string.ascii_uppercase if c not in spec)
    ell = None
    expanded = []
    for term, op in zip(terms, operands):
        if "..." in term:
            n = op.ndim - (len(term) - 3)
            if ell is None or len(ell) < n:
                ell = (ell or "") + "".join(next(spare) for _ in range(n - len(ell or "")))
            term = term.replace("...", ell[len(ell) - n :] if n else "")
        if len(term) != op.ndim:
            raise ValueError(
                f"einsum: term {term!r} does not match operand of shape {op.shape}{where()}"
            )
        if len(set(term)) != len(term):
            raise UnsupportedError(
                f"einsum: repeated index in {term!r} (diagonals) is not supported{where()}"
            )
        expanded.append(term)
    if arrow:
        output = output.replace("...", ell or "")
    else:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        output = (ell or "") + "".join(
            sorted(c for c, k in counts.items() if k == 1 and c not in (ell or ""))
        )
    return expanded, output


def einsum(subscripts, *operands):
    if not isinstance(subscripts, str):
        raise UnsupportedError(f"einsum: only the string form is supported{where()}")
    ctx = find_ctx(operands)
    ops = [lift(ctx, o) for o in operands]
    dt = result_type(*ops)
    if dt == np.float16:
        raise UnsupportedError(
            f"np.einsum of float16 operands: NumPy adds each product into its float16 output, "
            f"rounding after every step, where jitc's einsum is a float32 dot rounded once; "
            f"use np.matmul/np.dot (NumPy computes those in float32 too) or float32 operands"
            f"{where()}"
        )
    ops = [lax.convert(o, dt) for o in ops]
    terms, output = _parse(subscripts, ops)
    sizes = {}
    for t, o in zip(terms, ops):
        for c, n in zip(t, o.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum: size of label {c!r} differs: {sizes[c]} vs {n}{where()}")
    acc, acc_t = None, None
    for i, (o, t) in enumerate(zip(ops, terms)):
        later = set(output).union(*terms[i + 1 :])
        # Sum out labels no one else needs before contracting.
        keep_self = set(later) | (set(acc_t) if acc_t else set())
        drop = [d for d, c in enumerate(t) if c not in keep_self]
        if drop:
            o = lax.reduce(o, "sum", drop)
            t = "".join(c for d, c in enumerate(t) if d not in drop)
        if acc is None:
            acc, acc_t = o, t
            continue
        shared = [c for c in acc_t if c in t]
        batch = [c for c in shared if c in later]
        contract = [c for c in shared if c not in later]
        acc = lax.dot_general(
            acc,
            o,
            [acc_t.index(c) for c in contract],
            [t.index(c) for c in contract],
            [acc_t.index(c) for c in batch],
            [t.index(c) for c in batch],
        )
        acc_t = (
            "".join(batch)
            + "".join(c for c in acc_t if c not in shared)
            + "".join(c for c in t if c not in shared)
        )
    drop = [d for d, c in enumerate(acc_t) if c not in output]
    if drop:
        acc = lax.reduce(acc, "sum", drop)
        acc_t = "".join(c for d, c in enumerate(acc_t) if d not in drop)
    out = lax.transpose(acc, [acc_t.index(c) for c in output])
    return _mark(out, out.ndim == 0)
