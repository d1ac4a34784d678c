"""Every primitive defined once: typed attributes, shape+dtype rule, NumPy reference.

`PRIMITIVES[name].infer(operand_types, attrs)` returns the result (shape, dtype) or raises
ShapeError; the verifier and the tracer both call it, so they cannot disagree.
`PRIMITIVES[name].impl(*arrays, **attrs)` is the executable meaning (the reference backend).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from jitc.core import linalg_layout, ops
from jitc.core.dtypes import type_str
from jitc.core.errors import ShapeError

# Attribute kinds, used by the IR parser and the verifier.
INT, INTS, DTYPE, STR, ARRAY = "int", "ints", "dtype", "str", "array"


@dataclass(frozen=True)
class Primitive:
    name: str
    infer: Callable  # (list[(shape, dtype)], attrs) -> (shape, dtype)
    impl: Callable | None  # (*np.ndarray, **attrs) -> np.ndarray
    attrs: dict = field(default_factory=dict)  # attr name -> kind
    n_operands: int | None = None  # None: any number


PRIMITIVES: dict[str, Primitive] = {}


def _register(name, infer, impl, attrs=None, n_operands=None):
    PRIMITIVES[name] = Primitive(name, infer, impl, attrs or {}, n_operands)


def _fail(op, msg):
    raise ShapeError(f"{op}: {msg}")


# ----------------------------------------------------------------------------- elementwise


def _same_types(name, types):
    shape, dtype = types[0]
    for s, d in types[1:]:
        if s != shape:
            _fail(name, f"operand shapes differ: {shape} vs {s}")
        if d != dtype:
            _fail(name, f"operand dtypes differ: {dtype} vs {d}")
    return shape, dtype


def _elementwise_rule(name, result_bool):
    def infer(types, attrs):
        shape, dtype = _same_types(name, types)
        return shape, (np.dtype(bool) if result_bool else dtype)

    return infer


def _ufunc_impl(name):
    ufunc = getattr(np, name)

    def impl(*arrays):
        return ufunc(*arrays)

    return impl


def _power_impl(x, y):
    """pow, elementwise. NumPy's float power loop computes a stride-0 exponent of 0.5 as
    sqrt (nan at -inf, -0.0 at -0.0); the primitive means pow, so the exponent is passed
    as an array of its own with a real stride."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    x = np.broadcast_to(x, shape).reshape(-1)
    y = np.array(np.broadcast_to(y, shape)).reshape(-1)
    return np.power(x, y).reshape(shape)


for _name in ops.UNARY:
    _register(_name, _elementwise_rule(_name, False), _ufunc_impl(_name), n_operands=1)


def real_dtype(dtype) -> np.dtype:
    """The dtype of a complex dtype's parts (complex64: float32); a real dtype itself."""
    dtype = np.dtype(dtype)
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def _part_rule(name, real_result):
    def infer(types, attrs):
        ((shape, dtype),) = types
        if dtype.kind != "c" and name != "absolute":
            _fail(name, f"operand must be complex, got {dtype}")
        return shape, (real_dtype(dtype) if real_result else dtype)

    return infer


# |z| of a complex z is real (NumPy's complex absolute loop: F->f, D->d)
_register("absolute", _part_rule("absolute", True), _ufunc_impl("absolute"), n_operands=1)
_register("real", _part_rule("real", True), lambda x: np.real(x).copy(), n_operands=1)
_register("imag", _part_rule("imag", True), lambda x: np.imag(x).copy(), n_operands=1)
_register("conjugate", _part_rule("conjugate", False), _ufunc_impl("conjugate"), n_operands=1)
for _name in ops.PREDICATES:
    _register(_name, _elementwise_rule(_name, True), _ufunc_impl(_name), n_operands=1)
for _name in ops.BINARY:
    _register(_name, _elementwise_rule(_name, False), _ufunc_impl(_name), n_operands=2)
_register("power", _elementwise_rule("power", False), _power_impl, n_operands=2)
for _name in ops.COMPARE:
    _register(_name, _elementwise_rule(_name, True), _ufunc_impl(_name), n_operands=2)


def _select_infer(types, attrs):
    (ps, pd), (ts, td), (fs, fd) = types
    if pd != np.dtype(bool):
        _fail("select", f"predicate must be bool, got {pd}")
    if not (ps == ts == fs):
        _fail("select", f"operand shapes differ: {ps}, {ts}, {fs}")
    if td != fd:
        _fail("select", f"branch dtypes differ: {td} vs {fd}")
    return ts, td


_register("select", _select_infer, lambda p, t, f: np.where(p, t, f), n_operands=3)


def _convert_impl(x, dtype):
    return x.astype(dtype)


_register(
    "convert",
    lambda types, a: (types[0][0], np.dtype(a["dtype"])),
    _convert_impl,
    {"dtype": DTYPE},
    1,
)


# ----------------------------------------------------------------------------- sources


def _parameter_infer(types, attrs):  # parameters carry their own type
    raise AssertionError("parameter types are given, not inferred")


_register("parameter", _parameter_infer, None, {"index": INT}, 0)
_register(
    "constant",
    lambda types, a: (a["value"].shape, a["value"].dtype),
    lambda value: value,
    {"value": ARRAY},
    0,
)


def _iota_infer(types, a):
    shape, dim = tuple(a["shape"]), a["dimension"]
    if not 0 <= dim < len(shape):
        _fail("iota", f"dimension {dim} out of range for shape {shape}")
    return shape, np.dtype(a["dtype"])


def _iota_impl(shape, dtype, dimension):
    idx = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(view), shape).copy()


_register("iota", _iota_infer, _iota_impl, {"shape": INTS, "dtype": DTYPE, "dimension": INT}, 0)


# ----------------------------------------------------------------------------- shape ops


def _broadcast_infer(types, a):
    (shape, dtype), out, dims = types[0], tuple(a["shape"]), tuple(a["broadcast_dimensions"])
    if len(dims) != len(shape):
        _fail("broadcast_in_dim", f"broadcast_dimensions {dims} do not match operand {shape}")
    if list(dims) != sorted(set(dims)) or any(not 0 <= d < len(out) for d in dims):
        _fail("broadcast_in_dim", f"broadcast_dimensions {dims} invalid for result {out}")
    for d, size in zip(dims, shape):
        if size not in (1, out[d]):
            _fail("broadcast_in_dim", f"cannot broadcast {shape} to {out}")
    return out, dtype


def _broadcast_impl(x, shape, broadcast_dimensions):
    view = [1] * len(shape)
    for d, size in zip(broadcast_dimensions, x.shape):
        view[d] = size
    return np.broadcast_to(x.reshape(view), shape).copy()


_register(
    "broadcast_in_dim",
    _broadcast_infer,
    _broadcast_impl,
    {"shape": INTS, "broadcast_dimensions": INTS},
    1,
)


def _reshape_infer(types, a):
    (shape, dtype), new = types[0], tuple(a["new_sizes"])
    if int(np.prod(shape, dtype=np.int64)) != int(np.prod(new, dtype=np.int64)):
        _fail("reshape", f"cannot reshape {shape} into {new}")
    return new, dtype


_register(
    "reshape", _reshape_infer, lambda x, new_sizes: x.reshape(new_sizes), {"new_sizes": INTS}, 1
)


def _transpose_infer(types, a):
    (shape, dtype), perm = types[0], tuple(a["permutation"])
    if sorted(perm) != list(range(len(shape))):
        _fail("transpose", f"permutation {perm} invalid for shape {shape}")
    return tuple(shape[p] for p in perm), dtype


_register(
    "transpose",
    _transpose_infer,
    lambda x, permutation: np.ascontiguousarray(x.transpose(permutation)),
    {"permutation": INTS},
    1,
)


def slice_size(start, limit, stride) -> int:
    """Number of elements of range(start, limit, stride); limit -1 means 'past index 0'."""
    return len(range(start, limit, stride))


def _slice_infer(types, a):
    (shape, dtype) = types[0]
    start, limit, stride = a["start"], a["limit"], a["stride"]
    if not len(start) == len(limit) == len(stride) == len(shape):
        _fail("slice", f"start/limit/stride ranks do not match operand {shape}")
    out = []
    for d, (s, l, st) in enumerate(zip(start, limit, stride)):
        if st == 0 or not (0 <= s <= shape[d] and -1 <= l <= shape[d]):
            if not (st < 0 and s == shape[d] == 0):
                _fail("slice", f"bad bounds {s}:{l}:{st} on axis {d} of {shape}")
        out.append(slice_size(s, l, st))
    return tuple(out), dtype


def _slice_impl(x, start, limit, stride):
    idx = tuple(slice(s, None if l < 0 else l, st) for s, l, st in zip(start, limit, stride))
    return x[idx].copy()


_register("slice", _slice_infer, _slice_impl, {"start": INTS, "limit": INTS, "stride": INTS}, 1)


def _concat_infer(types, a):
    dim = a["dimension"]
    shape, dtype = types[0]
    if not 0 <= dim < len(shape):
        _fail("concatenate", f"dimension {dim} out of range for {shape}")
    total = 0
    for s, d in types:
        if d != dtype:
            _fail("concatenate", f"operand dtypes differ: {dtype} vs {d}")
        if len(s) != len(shape) or any(
            x != y for i, (x, y) in enumerate(zip(s, shape)) if i != dim
        ):
            _fail("concatenate", f"operand shapes {shape} and {s} differ off axis {dim}")
        total += s[dim]
    return shape[:dim] + (total,) + shape[dim + 1 :], dtype


_register(
    "concatenate",
    _concat_infer,
    lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    {"dimension": INT},
)


# ----------------------------------------------------------------------------- gather


def _gather_infer(types, a):
    (shape, dtype), (ishape, idtype) = types
    axis = a["axis"]
    if not 0 <= axis < len(shape):
        _fail("gather", f"axis {axis} out of range for {shape}")
    if idtype.kind != "i":
        _fail("gather", f"indices must be integers, got {idtype}")
    return shape[:axis] + ishape + shape[axis + 1 :], dtype


_register(
    "gather", _gather_infer, lambda x, idx, axis: np.take(x, idx, axis=axis), {"axis": INT}, 2
)


# ----------------------------------------------------------------------------- updates


def _update_slice_infer(types, a):
    (shape, dtype), (ushape, udtype) = types
    region, _ = _slice_infer([(shape, dtype)], a)
    if ushape != region:
        _fail("update_slice", f"update {ushape} does not fit the region {region} of {shape}")
    if udtype != dtype:
        _fail("update_slice", f"update dtype {udtype} != buffer dtype {dtype}")
    return shape, dtype


def _update_slice_impl(x, update, start, limit, stride):
    out = np.array(x, copy=True)
    idx = tuple(slice(s, None if l < 0 else l, st) for s, l, st in zip(start, limit, stride))
    out[idx] = update
    return out


_register(
    "update_slice",
    _update_slice_infer,
    _update_slice_impl,
    {"start": INTS, "limit": INTS, "stride": INTS},
    2,
)


def _scatter_infer(types, a):
    (shape, dtype), (ishape, idtype), (ushape, udtype) = types
    axis, mode = a["axis"], a["mode"]
    if not 0 <= axis < len(shape):
        _fail("scatter", f"axis {axis} out of range for {shape}")
    if idtype.kind != "i":
        _fail("scatter", f"indices must be integers, got {idtype}")
    if mode not in ops.SCATTER_MODES:
        _fail("scatter", f"unknown mode {mode!r}")
    if ushape != shape[:axis] + ishape + shape[axis + 1 :] or udtype != dtype:
        _fail(
            "scatter",
            f"updates {type_str(ushape, udtype)} do not fit {type_str(shape, dtype)}"
            f" indexed by {ishape} on axis {axis}",
        )
    return shape, dtype


def _scatter_impl(x, indices, updates, axis, mode):
    """NumPy's x[..., indices, ...] = updates (the last write to a row wins), or
    np.<mode>.at, which applies every update in order, repeats included."""
    out = np.array(x, copy=True)
    key = (slice(None),) * axis + (indices,)
    if mode == "set":
        out[key] = updates
    else:
        getattr(np, mode).at(out, key, updates)
    return out


_register("scatter", _scatter_infer, _scatter_impl, {"axis": INT, "mode": STR}, 3)


# ----------------------------------------------------------------------------- reductions

REDUCE_UFUNCS = {
    "sum": np.add,
    "prod": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "and": np.logical_and,
    "or": np.logical_or,
}


def _reduce_infer(types, a):
    (shape, dtype), axes, kind = types[0], tuple(a["axes"]), a["kind"]
    if kind not in REDUCE_UFUNCS:
        _fail("reduce", f"unknown kind {kind!r}")
    if list(axes) != sorted(set(axes)) or any(not 0 <= x < len(shape) for x in axes):
        _fail("reduce", f"axes {axes} invalid for {shape}")
    if kind in ("and", "or") and dtype != np.dtype(bool):
        _fail("reduce", f"{kind} needs bool operands, got {dtype}")
    if kind in ("max", "min") and any(shape[x] == 0 for x in axes):
        _fail("reduce", f"{kind} over a zero-size axis of {shape} has no identity")
    return tuple(s for i, s in enumerate(shape) if i not in axes), dtype


def _reduce_impl(x, kind, axes):
    if x.dtype == np.float16 and kind in ("sum", "prod") and axes:
        # a float16 sum/product reduce means NumPy's loop along kept axes: every add rounds
        # to float16, in C order of the reduced axes (lax.reduce); laid out so that NumPy
        # runs exactly that whatever this array's own layout
        rows = np.ascontiguousarray(np.moveaxis(x, axes, range(len(axes))))
        rows = rows.reshape(-1, *rows.shape[len(axes) :])
        return np.asarray(REDUCE_UFUNCS[kind].reduce(rows, axis=0), dtype=x.dtype)
    return np.asarray(REDUCE_UFUNCS[kind].reduce(x, axis=tuple(axes)), dtype=x.dtype)


_register("reduce", _reduce_infer, _reduce_impl, {"kind": STR, "axes": INTS}, 1)


def _arg_infer(name):
    def infer(types, a):
        (shape, _), axis = types[0], a["axis"]
        if not 0 <= axis < len(shape):
            _fail(name, f"axis {axis} out of range for {shape}")
        if shape[axis] == 0:
            _fail(name, f"attempt to get {name} of an empty sequence (axis {axis} of {shape})")
        return shape[:axis] + shape[axis + 1 :], np.dtype(np.int64)

    return infer


_register("argmax", _arg_infer("argmax"), lambda x, axis: np.argmax(x, axis=axis), {"axis": INT}, 1)
_register("argmin", _arg_infer("argmin"), lambda x, axis: np.argmin(x, axis=axis), {"axis": INT}, 1)


SCAN_KINDS = ("sum", "prod", "max", "min")


def _scan_infer(types, a):
    (shape, dtype), axis, kind = types[0], a["axis"], a["kind"]
    if kind not in SCAN_KINDS:
        _fail("cumulative", f"unknown kind {kind!r}")
    if not 0 <= axis < len(shape):
        _fail("cumulative", f"axis {axis} out of range for {shape}")
    return shape, dtype


def _scan_impl(x, kind, axis):
    """NumPy's ufunc.accumulate (np.cumsum is np.add.accumulate): one element after the
    other along `axis`, in the operand's dtype."""
    return REDUCE_UFUNCS[kind].accumulate(x, axis=axis, dtype=x.dtype)


_register("cumulative", _scan_infer, _scan_impl, {"kind": STR, "axis": INT}, 1)


def _sort_infer(name):
    def infer(types, a):
        (shape, dtype), axis = types[0], a["axis"]
        if not 0 <= axis < len(shape):
            _fail(name, f"axis {axis} out of range for {shape}")
        return shape, (np.dtype(np.int64) if name == "argsort" else dtype)

    return infer


# NumPy's stable sort (NaN last, ties in input order): every backend sorts stably, so the
# reference is exact for the values and the indices alike.
_register(
    "sort",
    _sort_infer("sort"),
    lambda x, axis: np.sort(x, axis=axis, kind="stable"),
    {"axis": INT},
    1,
)
_register(
    "argsort",
    _sort_infer("argsort"),
    lambda x, axis: np.argsort(x, axis=axis, kind="stable").astype(np.int64),
    {"axis": INT},
    1,
)


# ----------------------------------------------------------------------------- linalg


def _linalg_infer(types, a):
    """Square matrices on the last two axes; solve's b is (..., n, k) with a's batch."""
    kind = a["kind"]
    if linalg_layout.is_packed(kind):  # the factorizations: one packed result (linalg_layout)
        shapes = [shape for shape, _ in types]
        why = linalg_layout.check(kind, shapes)
        if why is None and any(dtype != types[0][1] or dtype.kind != "f" for _, dtype in types):
            why = f"operands must be all float32 or all float64, got {[d for _, d in types]}"
        if why is not None:
            _fail("linalg", why)
        return linalg_layout.result_shape(kind, shapes), types[0][1]
    if kind not in ops.LINALG_KINDS:
        _fail("linalg", f"unknown kind {kind!r}")
    if len(types) != (2 if kind == "solve" else 1):
        _fail("linalg", f"{kind} takes {2 if kind == 'solve' else 1} operands")
    shape, dtype = types[0]
    if dtype.kind != "f":
        _fail("linalg", f"operands must be float32 or float64, got {dtype}")
    if len(shape) < 2 or shape[-1] != shape[-2]:
        _fail("linalg", f"{type_str(shape, dtype)} is not a stack of square matrices")
    if kind == "solve":
        bshape, bdtype = types[1]
        if bdtype != dtype or len(bshape) != len(shape) or bshape[:-1] != shape[:-1]:
            _fail("linalg", f"b {type_str(bshape, bdtype)} does not fit a {type_str(shape, dtype)}")
        return bshape, dtype
    if kind == "slogdet":
        return shape[:-2] + (2,), dtype
    return shape, dtype


def _linalg_impl(a, *b, kind):
    """np.linalg itself (another LAPACK build); slogdet as (..., [sign, logabsdet])."""
    if linalg_layout.is_packed(kind):
        return linalg_layout.reference(kind, a, *b)
    if kind == "solve":
        return np.linalg.solve(a, b[0])
    if kind == "slogdet":
        return np.stack(np.linalg.slogdet(a), axis=-1)
    if kind.startswith("cholesky"):
        return np.linalg.cholesky(a, upper=kind == "cholesky_upper")
    return np.linalg.inv(a)


_register("linalg", _linalg_infer, _linalg_impl, {"kind": STR})

# ----------------------------------------------------------------------------- fft


def _fft_infer(types, a):
    """Whole axes: fft/ifft complex -> complex; rfft real -> complex with the last of `axes`
    n -> n//2+1; irfft complex with that axis n//2+1 -> real with it n long. The other axes
    keep their lengths."""
    kind, axes, n = a["kind"], tuple(a["axes"]), a["n"]
    ((shape, dtype),) = types
    if kind not in ops.FFT_KINDS:
        _fail("fft", f"unknown kind {kind!r}")
    if a["norm"] not in ops.FFT_NORMS:
        _fail("fft", f"unknown norm {a['norm']!r}")
    if not axes or len(set(axes)) != len(axes) or not all(0 <= d < len(shape) for d in axes):
        _fail("fft", f"axes {axes} are not distinct axes of {shape}")
    if dtype.char not in "fdFD":
        _fail("fft", f"operand must be float32, float64, complex64 or complex128, got {dtype}")
    if (dtype.kind == "f") != (kind == "rfft"):
        _fail("fft", f"{kind} of {dtype}")
    last, half = axes[-1], n // 2 + 1
    if n < 1 or shape[last] != (half if kind == "irfft" else n) or 0 in [shape[d] for d in axes]:
        _fail("fft", f"{kind} of length {n} over axes {axes} of {type_str(shape, dtype)}")
    length = {"rfft": half, "irfft": n}.get(kind, n)
    if kind == "irfft":
        dtype = real_dtype(dtype)
    elif kind == "rfft":
        dtype = np.result_type(dtype, np.complex64)
    return shape[:last] + (length,) + shape[last + 1 :], dtype


def _fft_impl(x, kind, axes, n, norm):
    """NumPy's n-d transforms, which run NumPy's 1-d ones axis by axis."""
    if kind == "irfft":
        s = [x.shape[d] for d in axes[:-1]] + [n]
        return np.fft.irfftn(x, s=s, axes=axes, norm=norm)
    return getattr(np.fft, kind + "n")(x, axes=axes, norm=norm)


_register("fft", _fft_infer, _fft_impl, {"kind": STR, "axes": INTS, "n": INT, "norm": STR}, 1)

# ----------------------------------------------------------------------------- dot

DOT_ATTRS = ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")


def dot_free_dims(ndim, contracting, batch):
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def _dot_infer(types, a):
    (ls, ld), (rs, rd) = types
    lc, rc, lb, rb = (tuple(a[k]) for k in DOT_ATTRS)
    if ld != rd:
        _fail("dot_general", f"operand dtypes differ: {ld} vs {rd}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        _fail("dot_general", "contracting/batch dimension counts differ")
    for x, y in zip(lc + lb, rc + rb):
        if not (0 <= x < len(ls) and 0 <= y < len(rs)):
            _fail("dot_general", f"dimension out of range for {ls} @ {rs}")
        if ls[x] != rs[y]:
            _fail("dot_general", f"shapes {ls} and {rs} not aligned: {ls[x]} != {rs[y]}")
    out = (
        [ls[d] for d in lb]
        + [ls[d] for d in dot_free_dims(len(ls), lc, lb)]
        + [rs[d] for d in dot_free_dims(len(rs), rc, rb)]
    )
    return tuple(out), ld


def _dot_impl(lhs, rhs, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch):
    """Bring both sides to (batch, free, contract) / (batch, contract, free) and np.matmul."""
    lf = dot_free_dims(lhs.ndim, lhs_contracting, lhs_batch)
    rf = dot_free_dims(rhs.ndim, rhs_contracting, rhs_batch)
    size = lambda x, dims: int(np.prod([x.shape[d] for d in dims], dtype=np.int64))  # noqa: E731
    b, m, n, k = size(lhs, lhs_batch), size(lhs, lf), size(rhs, rf), size(lhs, lhs_contracting)
    lt = lhs.transpose(list(lhs_batch) + lf + list(lhs_contracting)).reshape(b, m, k)
    rt = rhs.transpose(list(rhs_batch) + list(rhs_contracting) + rf).reshape(b, k, n)
    out = np.matmul(lt, rt)
    shape = (
        [lhs.shape[d] for d in lhs_batch] + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
    )
    return out.reshape(shape)


_register("dot_general", _dot_infer, _dot_impl, {k: INTS for k in DOT_ATTRS}, 2)


# ----------------------------------------------------------------------------- structure


def _fusion_infer(types, a):
    raise AssertionError("fusion types come from their nested graph")


def _get_infer(types, a):
    raise AssertionError("get types come from the tuple it reads")


def _while_infer(types, a):
    raise AssertionError("while types come from their step graph")


_register("fusion", _fusion_infer, None, {"kind": STR})
# How a while loop stops: "count" (a range's trip count, fixed when it starts), "once" (a
# branch: one step or none), "values" (when its values say so: it may never stop)
WHILE_STOPS = ("count", "once", "values")
_register("while", _while_infer, None, {"carried": INT, "stops": STR})
_register("get", _get_infer, None, {"index": INT}, 1)

assert set(PRIMITIVES) == ops.ALL, set(PRIMITIVES) ^ ops.ALL
