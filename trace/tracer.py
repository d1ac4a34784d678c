"""Tracing: run the user's NumPy code on Tracer values and record a Graph.

A Tracer stands for an array during tracing. NumPy calls reach jitc through
`__array_ufunc__` and `__array_function__`; operators, indexing and methods forward to
the same implementations in numpy_api/, so every path shares one set of rules.
"""

from __future__ import annotations

import re

import numpy as np

from jitc import numpy_api as api
from jitc.core.dtypes import check_supported
from jitc.core.errors import JitcError, TracerError, UnsupportedError
from jitc.core.ir import Graph
from jitc.core.source import calling, user_loc, where
from jitc.trace.mutation.capture import Capture, Place
from jitc.trace.mutation.functional import Buffer


class Retrace(Exception):
    """An array the trace read as a constant turned out to be written: trace again with it
    captured from the start (trace/lowering.py). `where`: the write's user line."""

    def __init__(self, array, where, reached):
        super().__init__("retrace")
        self.array = array
        self.where = where
        self.reached = reached  # ids of the captured arrays this trace used


class UnsupportedAttribute(UnsupportedError, AttributeError):
    """An ndarray attribute jitc does not trace (an AttributeError too, so hasattr works)."""


def _numpy_name(func) -> str:
    """np.sort, np.linalg.inv, np.fft.fft: how the user spelled the function."""
    module = getattr(func, "__module__", None) or "numpy"
    module = "np" + module[len("numpy") :] if module.startswith("numpy") else module
    module = ".".join(p for p in module.split(".") if not p.startswith("_"))
    return f"{module}.{func.__name__}"


class TraceContext:
    """The graph being recorded and the constants it has captured."""

    depth = 0  # how many loop bodies deep (trace/control.py LoopContext)
    closed = False  # a loop body's trace once the loop is recorded

    def __init__(self, name="main"):
        self.graph = Graph(re.sub(r"\W", "_", name) or "main")
        self._constants: dict = {}
        self.captured = Capture(self)
        self.baked: set = set()  # ids of NumPy arrays read as constants
        self.reached: set = set()  # ids of captured arrays the function used
        # parameter node of a Python int -> the integer dtypes it was converted to (its value
        # must fit each: uint8 and int8 together leave 0..127)
        self.int_ranges: dict = {}
        # a loop index's parameter node -> (lo, hi) of its values (trace/ranges.py)
        self.index_ranges: dict = {}

    def capture(self, array, write=False) -> Tracer:
        """The Tracer of a NumPy array the function writes (out=, x += on an array it
        reached): captured as a parameter read from and written back into that array."""
        t = self.captured.by_id.get(id(array))
        if t is not None:
            self.reached.add(id(array))
            return t
        if id(array) in self.baked:  # read earlier as a constant: trace again, capturing it
            raise Retrace(array, where(), self.reached)
        return self.captured.array(
            array, Place(array, (), f"a captured {array.dtype} array of shape {array.shape}")
        )

    def imported(self, t: Tracer) -> Tracer:
        """`t` as a value of this trace (a loop body's trace brings in the values of the
        traces around it: trace/control.py)."""
        if t.ctx is not self:
            raise JitcError(
                "a traced value from another jitc trace, or from inside a loop body, was "
                f"used here{where()}"
            )
        return t

    def narrowed(self, node, dtype) -> None:
        """A Python int argument's value must fit `dtype` (checked on every call)."""
        if node.op == "parameter":
            now = self.int_ranges.get(node, ())
            if np.dtype(dtype) not in now:
                self.int_ranges[node] = now + (np.dtype(dtype),)

    def parameter(self, shape, dtype, *, weak=False, scalar=False, origin=None) -> Tracer:
        node = self.graph.add_parameter(shape, dtype, user_loc())
        t = Tracer(self, node, weak=weak, scalar=scalar)
        if origin is not None:
            t.buf = Buffer(node, origin)
        return t

    def constant(self, value) -> Tracer:
        """A NumPy value captured by the trace; identical values share one node."""
        if isinstance(value, np.ndarray):
            captured = self.captured.by_id.get(id(value))
            if captured is not None:
                self.reached.add(id(value))
                return captured
            self.baked.add(id(value))
        value = np.asarray(value)
        check_supported(value.dtype, "a captured constant")
        key = (value.dtype.str, value.shape, value.tobytes()) if value.size <= 64 else id(value)
        entry = self._constants.get(key)
        if entry is None:
            frozen = np.array(value, copy=True, order="C")
            frozen.flags.writeable = False
            node = self.graph.add(
                "constant", (), {"value": frozen}, frozen.shape, frozen.dtype, user_loc()
            )
            # Keep the caller's array alive: its id is the key, and a freed temporary
            # view's id would be reused by the next one (W[1] then W[0]).
            entry = self._constants[key] = (node, value)
        return Tracer(self, entry[0])


def _no_concrete(what):
    def method(self, *args, **kwargs):
        raise TracerError(
            f"{what} needs a concrete value, but this is a traced array "
            f"{self.node.type_str()}{where()}. Python control flow on traced values is not "
            "compiled: use np.where(cond, a, b) for a data-dependent choice, or pass the "
            "value as a static argument (jitc.jit(..., static_argnames=...))."
        )

    return method


_to_numpy = _no_concrete(
    "conversion to a NumPy array (storing a traced value into an array "
    "NumPy made, such as np.arange's, or handing it to code that is not "
    "NumPy's)"
)


class Tracer:
    """An abstract array: shape and dtype are known, values are not.

    Its contents live in a Buffer shared with its views (trace/mutation/functional.py):
    after a write through any of them, `node` re-reads the buffer's new version through
    `view`."""

    __slots__ = ("ctx", "_node", "weak", "scalar", "buf", "view", "version", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, ctx, node, *, weak=False, scalar=False):
        self.ctx = ctx
        self._node = node
        self.weak = weak  # a Python scalar (NEP 50 weak typing)
        self.scalar = scalar  # NumPy would give a scalar here, not a 0-d array
        self.buf = None  # made on the first write or view (Tracer.buffer)
        self.view = ()
        self.version = 0

    @property
    def node(self):
        buf = self.buf
        if buf is not None and self.version != buf.version:
            t = Tracer(self.ctx, buf.node)
            for step in self.view:
                t = step.read(t)
            self._node, self.version = t.node, buf.version
        return self._node

    def buffer(self) -> Buffer:
        """This array's storage, made on first use (a value no one wrote is its own)."""
        if self.buf is None:
            self.buf = Buffer(self._node)
        return self.buf

    # -- static properties
    shape = property(lambda self: self.node.shape)
    dtype = property(lambda self: self.node.dtype)
    ndim = property(lambda self: len(self.node.shape))
    size = property(lambda self: int(np.prod(self.node.shape, dtype=np.int64)))
    itemsize = property(lambda self: self.node.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.node.dtype.itemsize)
    T = property(lambda self: api.transpose(self))
    real = property(lambda self: api.complex.real(self))
    imag = property(lambda self: api.complex.imag(self))
    mT = property(lambda self: api.swapaxes(self, -1, -2))

    def __repr__(self):
        return f"Tracer({self.node.type_str()})"

    def __len__(self):
        if not self.shape:
            raise TypeError(f"len() of unsized object{where()}")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError(f"iteration over a 0-d array{where()}")
        return (self[i] for i in range(self.shape[0]))

    __bool__ = _no_concrete("bool() (an `if`, `while`, `and`/`or` or assert)")
    __int__ = _no_concrete("int()")
    __float__ = _no_concrete("float()")
    __complex__ = _no_concrete("complex()")
    __index__ = _no_concrete("using a traced value as a Python index or size (__index__)")
    item = _no_concrete(".item()")
    tolist = _no_concrete(".tolist()")
    __hash__ = None

    def __array__(self, *args, **kwargs):
        from jitc.numpy_api.array_api import library_refusal

        refusal = library_refusal()
        if refusal:
            raise TracerError(refusal)
        _to_numpy(self)

    def __dlpack__(self, *args, **kwargs):
        raise UnsupportedError(
            f"np.from_dlpack (__dlpack__) shares an array's memory, which a traced array does "
            f"not have yet{where()}; inside a jitc function use the array itself"
        )

    def __array_namespace__(self, *, api_version=None):
        from jitc.numpy_api.array_api import NAMESPACE

        return NAMESPACE

    device = property(lambda self: "cpu")

    def to_device(self, device, /, *, stream=None):
        """The Array API's ndarray.to_device: NumPy's arrays live on "cpu" only."""
        from jitc.numpy_api.array_api import asarray

        return asarray(self, device=device)

    def __setitem__(self, key, value):
        from jitc.trace.indexing import setitem

        with calling("x[...] = ..."):
            setitem(self, key, value)

    # -- NumPy protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        with calling(name):
            return api.ufunc_dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        impl = api.FUNCTIONS.get(func)
        if impl is None:
            from jitc.numpy_api.refused import reason

            why = reason(func)
            raise UnsupportedError(
                f"{_numpy_name(func)} is not supported inside a jitc function{where()}: {why}"
                if why
                else f"{_numpy_name(func)} is not supported inside a jitc function{where()}; "
                "see the NumPy surface in the README (python -m jitc.numpy_api.surface)"
            )
        if func not in api.complex.FUNCTIONS and func not in api.complex.OWN_ERRORS:
            api.complex.refuse_complex(_numpy_name(func), (*args, *kwargs.values()))
        with calling(_numpy_name(func)):
            return impl(*args, **kwargs)

    def __getattr__(self, name):
        # Only reached for names the class lacks: an ndarray method jitc does not compile
        # (x.view(), x.tofile()) is an UnsupportedError, never a silent fallback.
        if not name.startswith("__") and hasattr(np.ndarray, name):
            raise UnsupportedAttribute(
                f"ndarray.{name} is not supported on a traced array"
                f"{where()}; see the NumPy surface in the README "
                "(python -m jitc.numpy_api.surface)"
            )
        raise AttributeError(f"'Tracer' object has no attribute {name!r}")

    # -- indexing
    def __getitem__(self, key):
        from jitc.trace.indexing import getitem

        with calling("x[...]"):
            return getitem(self, key)

    # -- methods
    def reshape(self, *shape, order="C"):
        return api.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def astype(self, dtype, copy=True):
        return api.astype(self, dtype)

    def transpose(self, *axes):
        return api.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def swapaxes(self, a, b):
        return api.swapaxes(self, a, b)

    def squeeze(self, axis=None):
        return api.squeeze(self, axis)

    def ravel(self, order="C"):
        return api.ravel(self, order)

    def flatten(self, order="C"):
        return api.ravel(self.copy(), order)

    def copy(self, order="C"):
        return Tracer(self.ctx, self.node, scalar=self.scalar)  # a buffer of its own

    def fill(self, value):
        from jitc.trace.indexing import setitem

        setitem(self, Ellipsis, value)

    def dot(self, other):
        return api.dot(self, other)

    def conj(self):
        return np.conjugate(self)

    conjugate = conj

    def clip(self, min=None, max=None, out=None):
        return api.clip(self, min, max, out)

    def round(self, decimals=0):
        return api.round_(self, decimals)

    def sum(self, axis=None, dtype=None, keepdims=False, out=None):
        return api.sum(self, axis, dtype=dtype, keepdims=keepdims, out=out)

    def prod(self, axis=None, dtype=None, keepdims=False, out=None):
        return api.prod(self, axis, dtype=dtype, keepdims=keepdims, out=out)

    def mean(self, axis=None, dtype=None, keepdims=False, out=None):
        return api.mean(self, axis, dtype=dtype, keepdims=keepdims, out=out)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False, out=None):
        return api.var(self, axis, dtype=dtype, ddof=ddof, keepdims=keepdims, out=out)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False, out=None):
        return api.std(self, axis, dtype=dtype, ddof=ddof, keepdims=keepdims, out=out)

    def max(self, axis=None, keepdims=False, out=None):
        return api.amax(self, axis, keepdims=keepdims, out=out)

    def min(self, axis=None, keepdims=False, out=None):
        return api.amin(self, axis, keepdims=keepdims, out=out)

    def argmax(self, axis=None, keepdims=False, out=None):
        return api.argmax(self, axis, keepdims=keepdims, out=out)

    def argmin(self, axis=None, keepdims=False, out=None):
        return api.argmin(self, axis, keepdims=keepdims, out=out)

    def any(self, axis=None, keepdims=False, out=None):
        return api.any_(self, axis, keepdims=keepdims, out=out)

    def all(self, axis=None, keepdims=False, out=None):
        return api.all_(self, axis, keepdims=keepdims, out=out)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return np.take(self, indices, axis, out, mode)

    def cumsum(self, axis=None, dtype=None, out=None):
        return np.cumsum(self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return np.cumprod(self, axis, dtype, out)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        api.sorting.sort_in_place(self, axis, kind, order, stable=stable)

    def nonzero(self):
        return np.nonzero(self)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return np.argsort(self, axis, kind, order, stable=stable)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        api.sorting.partition_in_place(self, kth, axis, kind, order)

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        return np.argpartition(self, kth, axis, kind, order)


def _real_only(name):
    """Tracer.<name> refusing complex values (ndarray methods NumPy defines with complex
    rules jitc does not compute: ordering, |.|^2 in var)."""
    method = getattr(Tracer, name)

    def checked(self, *args, **kwargs):
        api.complex.refuse_complex(f"ndarray.{name}", (self,))
        return method(self, *args, **kwargs)

    checked.__name__ = name
    return checked


REAL_ONLY_METHODS = (
    "var",
    "std",
    "max",
    "min",
    "argmax",
    "argmin",
    "any",
    "all",
    "clip",
    "round",
    "sort",
    "partition",
    "argsort",
    "argpartition",
    "cumsum",
    "cumprod",
)
for _name in REAL_ONLY_METHODS:
    setattr(Tracer, _name, _real_only(_name))


def _binary(ufunc, reflected=False):
    name = f"np.{ufunc.__name__}"  # how run-time errors name the operator (a ** b: np.power)

    def method(self, other):
        if getattr(other, "__array_priority__", 0) > Tracer.__array_priority__:
            return NotImplemented  # x[mask], x[a:b] (trace/masked.py) compute their own
        with calling(name):
            return api.apply_operator(ufunc, (other, self) if reflected else (self, other))

    return method


for _name, _ufunc in [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("truediv", np.divide),
    ("floordiv", np.floor_divide),
    ("mod", np.remainder),
    ("pow", np.power),
    ("matmul", np.matmul),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
    ("lshift", np.left_shift),
    ("rshift", np.right_shift),
]:
    setattr(Tracer, f"__{_name}__", _binary(_ufunc))
    setattr(Tracer, f"__r{_name}__", _binary(_ufunc, reflected=True))
for _name, _ufunc in [
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("eq", np.equal),
    ("ne", np.not_equal),
]:
    setattr(Tracer, f"__{_name}__", _binary(_ufunc))


def _inplace(ufunc):
    name = f"np.{ufunc.__name__}"  # with, not a decorator: no contextlib frame for user_loc

    def method(self, other):
        from jitc.numpy_api.writes import ufunc_into

        with calling(name):
            if self.scalar or self.weak:  # Python and NumPy scalars are immutable: rebind
                return api.apply_operator(ufunc, (self, other))
            return ufunc_into(ufunc, (self, other), self)

    return method


for _name, _ufunc in [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("truediv", np.divide),
    ("floordiv", np.floor_divide),
    ("mod", np.remainder),
    ("pow", np.power),
    ("matmul", np.matmul),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
    ("lshift", np.left_shift),
    ("rshift", np.right_shift),
]:
    setattr(Tracer, f"__i{_name}__", _inplace(_ufunc))
Tracer.__neg__ = lambda self: api.apply_operator(np.negative, (self,))
Tracer.__pos__ = lambda self: api.apply_operator(np.positive, (self,))
Tracer.__abs__ = lambda self: api.apply_operator(np.absolute, (self,))
Tracer.__invert__ = lambda self: api.apply_operator(np.invert, (self,))
