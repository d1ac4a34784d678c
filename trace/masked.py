"""x[mask] during a trace: the selected elements, whose count is known only at run time.

A Masked keeps them as the full-shape values plus the mask, which is enough for what does
not need the count: elementwise math with scalars and equally masked values, a few
whole-array reductions, and assignment back through an equal mask, the NumPy idioms
`x[m] *= 2`, `x[m] = f(x[m])` and `x[m].sum()`. What needs them in order (returning them,
sorting, indexing, np.unique) compacts them first (trace/sized.py): a "sized" Masked, the
elements at the front of the static bound and their count. Anything else names the
data-dependent shape as the reason it cannot compile.
"""

from __future__ import annotations

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import user_loc, where
from jitc.trace import ranges


def _data_dependent(what, loc=None, kind="mask", label=None):
    if kind == "sized":  # trace/sized.py
        return UnsupportedError(
            f"{what} of {label} depends on its size, known only at run time{where(loc)}; "
            "return it, reduce it (.sum(), .max()), sort it, or compute with it elementwise"
        )
    if kind == "window":  # trace/window.py
        return UnsupportedError(
            f"{what} of x[a:b] depends on its extent, known only at run time (its bounds are "
            f"traced){where(loc)}; reduce it (x[a:b].sum(), x[a:b] @ y[a:b]), compute with "
            "it elementwise, or assign through it: x[a:b] = f(x[a:b])"
        )
    return UnsupportedError(
        f"{what} of x[mask] depends on how many elements the mask selects (a boolean mask "
        f"index), known only at run time{where(loc)}; count it with np.count_nonzero(mask), "
        "return it, reduce or sort it, compute with it elementwise, or assign through it: "
        "x[mask] = f(x[mask])"
    )


def same_mask(a, b, depth=16) -> bool:
    """Whether two mask nodes compute the same values: the same node, equal constants, or
    the same op on the same operands (`x[x > 0] = x[x > 0] ** 2` builds `x > 0` twice)."""
    if a is b:
        return True
    if a.op == b.op == "constant":  # `np.arange(n) < j` built twice: two equal constants
        return a.dtype == b.dtype and np.array_equal(a.attrs["value"], b.attrs["value"])
    if (
        depth == 0
        or a.op != b.op
        or a.op in ("parameter", "constant")
        or a.attrs != b.attrs
        or len(a.operands) != len(b.operands)
    ):
        return False
    return all(same_mask(p, q, depth - 1) for p, q in zip(a.operands, b.operands))


class Masked:
    __slots__ = ("values", "mask", "loc", "kind", "window", "rows", "label")
    __array_priority__ = 1001

    def __init__(self, values, mask, kind="mask", window=None, rows=None, label=None):
        self.values = values  # a Tracer of the indexed array's shape
        self.mask = mask  # a bool Tracer of the same shape
        self.loc = user_loc()  # where x[mask] was written
        # "mask": x[mask]; "window": x[a:b] with traced bounds; "sized": a window [0:count)
        # along axis 0 of a result whose size depends on the data (trace/sized.py)
        self.kind = kind
        # a window's (axis, a, b): position p of that axis holds its element p - a
        self.window = window
        self.rows = rows  # x[mask]'s mask as written (it may index x's leading axes only)
        self.label = label  # what a "sized" value is, for errors: "np.nonzero's result"

    def like(self, values):
        """`values` (computed position by position) selected as these are."""
        masked = Masked(values, self.mask, self.kind, self.window, self.rows, self.label)
        masked.loc = self.loc
        return masked

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self):
        return self.values.ndim if self.rows is None else 1 + self.values.ndim - self.rows.ndim

    def describe(self) -> str:
        """What this value is and where it was made, for stages that cannot return it."""
        what = {"mask": "x[mask]", "window": "x[a:b] with traced bounds"}.get(self.kind)
        return f"{what or self.label}{where(self.loc)}"

    def front(self) -> Masked:
        """These elements in order at the front of an array of the static bound, and their
        count: a "sized" Masked (trace/sized.py)."""
        from jitc.trace import sized

        if self.kind == "sized":
            return self
        if self.window is None:  # x[mask]: the selected rows of x, its leading axes merged
            lead = self.rows.ndim
            rows = int(np.prod(self.values.shape[:lead]))
            values = np.reshape(self.values, (rows, *self.values.shape[lead:]))
            return sized.selected(values, np.reshape(self.rows, (rows,)), "x[mask]")
        axis, a, b = self.window
        if axis != 0:
            raise self._refused("this operation along another axis than the first")
        at_front = isinstance(a, int) and a == 0
        values = self.values if at_front else sized.shifted(self.values, a)
        return sized.front(values, np.maximum(b - a, 0), "x[a:b]")

    def sized(self):
        """(values, axis, start, stop): this value is values[start:stop] along axis."""
        if self.window is None:
            return self.front().sized()
        axis, a, b = self.window
        return self.values, axis, a, b

    def _refused(self, what):
        return _data_dependent(what, kind=self.kind, label=self.label)

    def _operand(self, x):
        if isinstance(x, Masked):
            if same_mask(x.mask.node, self.mask.node):
                return x.values
            if self.window is not None and x.window is not None:
                return self.aligned(x).values
            raise UnsupportedError(
                f"combining x[mask1] with y[mask2] needs the masks to "
                f"be the same computation{where()}"
            )
        if getattr(x, "ndim", 0) == 0:  # a Python or NumPy scalar, a 0-d array
            return x
        selected = self.window[0] + 1 if self.window is not None else self.rows.ndim
        if self.values.ndim - selected >= x.ndim:
            return x  # broadcast along the axes after the selected one (`rows - row`)
        raise self._refused("combining an array with the elements")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            raise self._refused(
                f"np.{ufunc.__name__}.{method} with {sorted(kwargs)}"
                if kwargs
                else f"np.{ufunc.__name__}.{method}"
            )
        kinds = {x.kind == "sized" for x in inputs if isinstance(x, Masked)}
        if len(kinds) == 2:  # x[mask] with np.sort(x[mask]): both in order, at the front
            inputs = [x.front() if isinstance(x, Masked) else x for x in inputs]
            return ufunc(*inputs)
        result = ufunc(*(self._operand(x) for x in inputs))
        if isinstance(result, tuple):
            return tuple(self.like(r) for r in result)
        return self.like(result)

    def aligned(self, other):
        """The window `other` at this window's positions: NumPy pairs their elements in
        order, so `r[1:k + 1]` and `a[:k]` combine when their extents are the same sum of
        the loop index (trace/ranges.py), whatever their bounds."""
        if same_mask(other.mask.node, self.mask.node):
            return other
        axis, a, b = self.window
        other_axis, c, d = other.window
        if other_axis != axis or other.values.ndim != self.values.ndim:
            raise UnsupportedError(
                f"combining windows x[a:b] on different axes{where()}: each must have its "
                "run-time extent on the same axis"
            )
        if "sized" in (self.kind, other.kind) and not ranges.same_extent((a, b), (c, d)):
            raise UnsupportedError(
                f"combining {self.describe()} with {other.describe()} elementwise{where()}: "
                "their sizes are known only at run time and come from different "
                "computations, so jitc cannot tell that they match"
            )
        if not ranges.same_extent((a, b), (c, d)):
            raise UnsupportedError(
                f"combining x[a:b] with y[c:d]{where()}: jitc combines windows whose "
                "extents are the same sum of a loop index and constants (a[:k] with "
                "r[1:k + 1] in a for loop over range(...) of Python ints), and cannot tell "
                "that these two hold as many elements"
            )
        n, m = self.values.shape[axis], other.values.shape[axis]
        index = np.clip(np.arange(n) - a + c, 0, m - 1)  # positions outside: masked out
        return self.like(np.take(other.values, index, axis=axis))

    def reversed(self):
        """The window in reverse order (`np.flip(y[:k])`, `y[:k][::-1]`, `r[k:0:-1]`): the
        element at position p is the one at a + b - 1 - p."""
        axis, a, b = self.window
        n = self.values.shape[axis]
        index = np.clip(a + b - 1 - np.arange(n), 0, n - 1)
        return self.like(np.take(self.values, index, axis=axis))

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in _DOTS and len(args) == 2 and not kwargs:
            return _dot(*args)
        if func.__name__ == "flip" and self.window is not None and args[0] is self:
            return self._flipped(*args[1:], **kwargs)
        on_front = _on_front().get(func.__name__)
        if on_front is not None and args and args[0] is self:
            return on_front(self.front(), *args[1:], **kwargs)
        reduce = _REDUCTIONS.get(func.__name__)
        if (
            reduce is None
            or args[0] is not self
            or len(args) > 1
            or any(v is not None for v in kwargs.values())
        ):
            raise self._refused(f"np.{func.__name__}")
        return reduce(self)

    def sum(self):
        zero = np.zeros((), self.values.dtype)
        return np.sum(np.where(self.mask, self.values, zero))

    def mean(self):
        # An empty selection gives nan, as NumPy's mean of an empty array does.
        dtype = self.values.dtype if self.values.dtype.kind in "fc" else np.dtype(np.float64)
        return np.divide(self.sum(), np.sum(self.mask)).astype(dtype)

    def any(self):
        return np.any(self.mask & (self.values != 0))

    def all(self):
        return np.all(~self.mask | (self.values != 0))

    def count_nonzero(self):
        return np.sum(self.mask & (self.values != 0))

    def __getattr__(self, name):
        if name not in _METHODS:
            raise self._refused(f".{name}")
        from jitc.trace import sized

        return lambda *args, **kwargs: sized.FUNCTIONS[name](self.front(), *args, **kwargs)

    def astype(self, dtype):
        return self.like(self.values.astype(dtype))

    def copy(self):
        return self.like(self.values.copy())

    def __array__(self, *args, **kwargs):
        raise self._refused("a NumPy array")

    def __len__(self):
        raise self._refused("len()")

    def __iter__(self):
        raise self._refused("iteration")

    def __getitem__(self, key):
        from jitc.trace import sized

        ordered = self if self.window is not None else self.front()
        if isinstance(key, slice) and key == slice(None, None, -1) and ordered.values.ndim == 1:
            return ordered.reversed()
        return sized.getitem(ordered.front(), key)

    def _flipped(self, axis=None):
        """np.flip along the window's axis (any axis of a 1-d window)."""
        ndim = self.values.ndim
        if (axis is None and ndim == 1) or (axis is not None and axis % ndim == self.window[0]):
            return self.reversed()
        raise self._refused(f"np.flip(axis={axis})")

    def __bool__(self):
        raise self._refused("bool()")


def _dot(a, b):
    """np.dot of two 1-d selections of the same mask (`A[i, :j] @ A[j, :j]`): the sum of
    their products where the mask holds."""
    if not (isinstance(a, Masked) and isinstance(b, Masked) and a.values.ndim == 1):
        kind = a.kind if isinstance(a, Masked) else b.kind
        raise _data_dependent("a matrix product with more than 1-d elements", kind=kind)
    products = a * b
    return products.sum()


def _on_front():
    """NumPy functions of the elements in order (trace/sized.py, numpy_api/data_sized.py)."""
    from jitc.numpy_api import data_sized
    from jitc.trace import sized

    return sized.FUNCTIONS | data_sized.ON_SIZED


# ndarray methods of the elements in order (trace/sized.py's FUNCTIONS)
_METHODS = frozenset({"max", "min", "prod", "argmax", "argmin", "cumsum", "cumprod", "argsort"})

_DOTS = frozenset({"dot", "inner", "matmul"})  # not vdot: it conjugates
_REDUCTIONS = {
    "sum": Masked.sum,
    "mean": Masked.mean,
    "any": Masked.any,
    "all": Masked.all,
    "count_nonzero": Masked.count_nonzero,
}


def _operator(ufunc, reflected=False):
    if reflected:
        return lambda self, other: self.__array_ufunc__(ufunc, "__call__", other, self)
    return lambda self, other: self.__array_ufunc__(ufunc, "__call__", self, other)


for _name, _ufunc in [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("truediv", np.divide),
    ("floordiv", np.floor_divide),
    ("mod", np.remainder),
    ("pow", np.power),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
]:
    # In place too: `t = x[m]; t *= 2` rebinds t, and `x[m] = t` writes it back.
    setattr(Masked, f"__{_name}__", _operator(_ufunc))
    setattr(Masked, f"__i{_name}__", _operator(_ufunc))
    setattr(Masked, f"__r{_name}__", _operator(_ufunc, reflected=True))
for _name, _ufunc in [
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("eq", np.equal),
    ("ne", np.not_equal),
]:
    setattr(Masked, f"__{_name}__", _operator(_ufunc))
Masked.__matmul__ = _dot
Masked.__rmatmul__ = lambda self, other: _dot(other, self)
Masked.__neg__ = lambda self: self.like(-self.values)
Masked.__abs__ = lambda self: self.like(abs(self.values))
Masked.__invert__ = lambda self: self.like(~self.values)
Masked.__hash__ = None
