"""What the factorizing kinds of the `linalg` primitive take and give, in one place.

A factorization that has several results (eigh's eigenvalues and eigenvectors, svd's U, S
and Vh, gtsv's overwritten diagonals and solution) is one call of one LAPACK routine, so
the primitive computes them together and packs them into one array (..., P): per matrix of
the stack, each part's elements in row-major order, one part after the other. The NumPy
functions slice the parts apart at trace level (`unpack`), as slogdet does its pair.

A kind is a name, optionally with integer parameters after colons ("gbsv:2:1": two lower
and one upper diagonals); `base` strips them.
"""

from __future__ import annotations

import math

# kind (without parameters) -> how many operands it takes
OPERANDS = {
    "eigh_L": 1,
    "eigh_U": 1,
    "eigvalsh_L": 1,
    "eigvalsh_U": 1,
    "svd_full": 1,
    "svd_reduced": 1,
    "svdvals": 1,
    "qr_reduced": 1,
    "qr_complete": 1,
    "qr_r": 1,
    "qr_raw": 1,
    "gtsv": 4,  # dl (..., n-1), d (..., n), du (..., n-1), b (..., n, k): SciPy's dgtsv
    "gtsv_solve": 4,  # the same, the solution only (solve_banded with l = u = 1)
    "gbsv": 2,  # ab (..., l+u+1, n), b (..., n, k): solve_banded, "gbsv:l:u"
}


def base(kind: str) -> str:
    return kind.split(":")[0]


def params(kind: str) -> tuple:
    return tuple(int(p) for p in kind.split(":")[1:])


def is_packed(kind: str) -> bool:
    return base(kind) in OPERANDS


def parts(kind: str, shapes: list) -> list:
    """[(name, shape)] of the results of one matrix (one system), in packing order;
    `shapes` are the operands' shapes without the stack dims."""
    kind = base(kind)
    if kind.startswith(("gtsv", "gbsv")):
        n, k = shapes[-1]
        x = [("x", (n, k))]
        if kind == "gtsv":
            return (
                [("du2", (max(n - 1, 0),)), ("d", (n,)), ("du", (max(n - 1, 0),))]
                + x
                + [("info", (1,))]
            )
        return x
    m, n = shapes[0]
    k = min(m, n)
    if kind.startswith("eigvalsh"):
        return [("w", (n,))]
    if kind.startswith("eigh"):
        return [("w", (n,)), ("v", (n, n))]
    if kind == "svdvals":
        return [("s", (k,))]
    if kind == "svd_full":
        return [("u", (m, m)), ("s", (k,)), ("vh", (n, n))]
    if kind == "svd_reduced":
        return [("u", (m, k)), ("s", (k,)), ("vh", (k, n))]
    if kind == "qr_raw":
        return [("h", (n, m)), ("tau", (k,))]
    if kind == "qr_r":
        return [("r", (k, n))]
    columns = m if kind == "qr_complete" else k
    return [("q", (m, columns)), ("r", (columns, n))]


def core_ndims(kind: str) -> tuple:
    """How many trailing dims of each operand are one matrix's (the rest is the stack)."""
    return (1, 1, 1, 2) if base(kind).startswith("gtsv") else (2,) * OPERANDS[base(kind)]


def packed_size(kind: str, shapes: list) -> int:
    return sum(math.prod(shape) for _, shape in parts(kind, shapes))


def offsets(kind: str, shapes: list) -> dict:
    """name -> (offset into the packed row, shape)."""
    out, at = {}, 0
    for name, shape in parts(kind, shapes):
        out[name] = (at, shape)
        at += math.prod(shape)
    return out


def check(kind: str, shapes: list) -> str | None:
    """Why operands of these shapes do not fit `kind` (the same stack dims, matrices of the
    kind's shape), or None."""
    b = base(kind)
    if b not in OPERANDS:
        return f"unknown kind {kind!r}"
    if len(shapes) != OPERANDS[b]:
        return f"{kind} takes {OPERANDS[b]} operands"
    cores = core_ndims(kind)
    if any(len(s) < c for s, c in zip(shapes, cores)):
        return f"operands {shapes} have too few dims for {kind}"
    stacks = {s[: len(s) - c] for s, c in zip(shapes, cores)}
    if len(stacks) != 1:
        return f"operands {shapes} have different stack dims"
    core = [s[len(s) - c :] for s, c in zip(shapes, cores)]
    if b.startswith("eig") and core[0][0] != core[0][1]:
        return f"{kind} needs square matrices, got {core[0]}"
    if b.startswith("gtsv"):
        (dl,), (d,), (du,), (n, _) = core
        if d != n or dl != max(n - 1, 0) or du != dl:
            return f"diagonals {core[:3]} do not fit a system of size {n}"
    if b == "gbsv":
        lower, upper = params(kind)
        if core[0] != (lower + upper + 1, core[1][0]):
            return f"ab {core[0]} does not fit {lower} + {upper} diagonals and b {core[1]}"
    return None


def result_shape(kind: str, shapes: list) -> tuple:
    cores = core_ndims(kind)
    stack = shapes[0][: len(shapes[0]) - cores[0]]
    return stack + (packed_size(kind, [s[len(s) - c :] for s, c in zip(shapes, cores)]),)


def reference(kind: str, *operands):
    """The packed results computed by NumPy's and SciPy's own LAPACK calls (the reference
    backend's implementation)."""
    import numpy as np

    b, cores = base(kind), core_ndims(kind)
    stack = operands[0].shape[: operands[0].ndim - cores[0]]
    flat = [x.reshape((-1,) + x.shape[x.ndim - c :]) for x, c in zip(operands, cores)]
    rows = []
    for i in range(int(np.prod(stack, dtype=np.int64))):
        results = _reference_one(b, kind, [x[i] for x in flat])
        rows.append(np.concatenate([np.ravel(r) for r in results]) if results else [])
    size = packed_size(kind, [x.shape[1:] for x in flat])
    return np.asarray(rows, operands[0].dtype).reshape(stack + (size,))


def _reference_one(b: str, kind: str, operands: list) -> list:
    import numpy as np
    import scipy.linalg.lapack as lapack

    a = operands[0]
    if b.startswith("eigvalsh"):
        return [np.linalg.eigvalsh(a, UPLO=b[-1])]
    if b.startswith("eigh"):
        return list(np.linalg.eigh(a, UPLO=b[-1]))
    if b == "svdvals":
        return [np.linalg.svd(a, compute_uv=False)]
    if b.startswith("svd"):
        return list(np.linalg.svd(a, full_matrices=b == "svd_full"))
    if b.startswith("qr"):
        result = np.linalg.qr(a, mode=b[3:])
        return [result] if b == "qr_r" else list(result)
    prefix = "s" if a.dtype == np.float32 else "d"
    if b.startswith("gtsv"):
        du2, d, du, x, info = getattr(lapack, prefix + "gtsv")(*operands)
        if b == "gtsv":
            return [du2, d, du, x, [info]]
        results = [x]
    else:
        lower, upper = params(kind)
        ab = np.zeros((2 * lower + upper + 1, a.shape[1]), a.dtype)
        ab[lower:] = a
        *_, x, info = getattr(lapack, prefix + "gbsv")(lower, upper, ab, operands[1])
        results = [x]
    if info > 0:
        raise np.linalg.LinAlgError("singular matrix")
    return results
