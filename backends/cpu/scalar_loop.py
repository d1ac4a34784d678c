"""A loop of scalar work as one kernel, its loops inside: `while flag: step` with every
step (nested loops included) compiled into one numba function, as numba compiles the same
Python source.

The driver runs any loop as kernels per step (plan.py `_while`); a step of a few scalar
kernels (Cholesky's `s += L[i, k] * L[j, k]`) then costs a microsecond of launches per
trip where numba spends a nanosecond. A loop whose values are all scalars, except arrays it
reads by one index (gather) and arrays it carries and writes one element at a time
(scatter), is emitted here instead: scalars are locals, carried arrays are written in
place. Whether that is the loop's meaning is checked, not assumed: every array value is a
version of one buffer, and a read of a version that a write has since replaced, a write
into a buffer the loop does not carry, or a carried array that its step does not hand back
as the buffer's newest version makes the loop ineligible (the driver's per-step kernels
then run it). Anything else that is not scalar work (a vector op, a dot, a sort) does too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from jitc.backends.cpu.loops import Sizes
from jitc.backends.cpu.lowering import STORAGE, TYPE_NAMES, literal, load, lower_elementwise, store
from jitc.backends.cpu.scatter import ERROR as SCATTER_ERROR
from jitc.core import ops
from jitc.core.errors import UnsupportedError
from jitc.core.ir import Graph, Node

GATHER_FAILURE = "raise IndexError('gather index out of bounds for axis 0')"
SCATTER_FAILURE = "raise IndexError('scatter index out of bounds')"
GATHER_ERROR = ("IndexError", "index out of bounds in integer-array indexing (gather)")
# a kernel reports one kind of failure: a loop that reads and writes by index, either
INDEX_ERROR = ("IndexError", "index out of bounds in integer-array indexing or assignment")


class NotScalar(Exception):
    """The loop does work this emitter does not compile as scalar code (internal)."""


@dataclass(frozen=True)
class Scalar:
    expr: str  # a local or a literal: evaluated when it was made
    dtype: np.dtype
    value: object = None  # an int or bool the emitter knows it to be
    # a lower bound the emitter knows: a loop index counting up from 0 or more (`index`),
    # a constant, sums, differences and products of those (as the Python ints they are
    # under NumPy, which do not wrap)
    low: int | None = None
    # an upper bound the emitter knows: a loop index whose loop runs while its next value
    # is below a known stop, a constant, and what `_high` derives from those
    high: int | None = None
    index: bool = False
    counts: str | None = None  # the loop index local this is that local + a positive int
    below: tuple | None = None  # a bool that is `expr < y`, y at most K: (expr, K)

    @property
    def nonneg(self) -> bool:
        return self.low is not None and self.low >= 0


@dataclass(frozen=True)
class Array:
    """A version of buffer `key`, passed flat as `name`, read as `shape`."""

    name: str
    key: object
    version: int
    shape: tuple
    dtype: np.dtype


@dataclass(frozen=True)
class VectorConstant:
    """A constant array: only a sum's elements read it (`element`)."""

    node: Node


@dataclass(frozen=True)
class LazyVector:
    """A fused 1-d value (a window's safe indices): computed element by element where a
    sum's loop reads it. `env`: its body's parameters and scalars, `out` its value."""

    out: Node
    env: dict


@dataclass
class ScalarLoop:
    source: str  # def BODY(flag0, invariants..., carried..., lo, hi, n)
    raises: frozenset  # "gather", "scatter": the failures the body can raise

    @property
    def error(self) -> tuple | None:
        """(exception class name, message) of the kernel's failure (plan.Kernel.error)."""
        if len(self.raises) == 2:
            return INDEX_ERROR
        if self.raises:
            return GATHER_ERROR if "gather" in self.raises else SCATTER_ERROR
        return None


class _Emitter:
    def __init__(self, sizes: Sizes, rows: bool):
        self.sz = sizes
        self.rows = rows  # may allocate scratch rows (not in AOT: no runtime)
        self.lines: list[str] = []
        self.depth = 1
        self.count = 0
        self.constants: dict = {}  # (dtype, value) -> its local, hoisted to the top
        self.constant_lines: list[str] = []
        self.current: dict = {}  # buffer key -> its newest version
        self.versions = 0
        self.writable: frozenset = frozenset()  # keys the innermost loop carries
        self.raises: set = set()
        # while a window loop is emitted without its clips (`over`): local -> (base, sign)
        # for the locals that are base + sign * t, t the loop's index; the loop's bounds;
        # the tests, made before the loop, under which each dropped clip is a no-op
        self.affine: dict | None = None
        self.span: tuple = ()
        self.guards: list = []
        self.forms: dict = {}  # constant node -> _vector_constant's form (sizes made once)

    def line(self, text: str):
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def new_version(self, key) -> int:
        self.versions += 1
        self.current[key] = self.versions
        return self.versions

    def newest(self, a: Array) -> Array:
        if self.current.get(a.key) != a.version:
            raise NotScalar("reads an array version a write has replaced")
        return a

    def scalar(self, entry) -> str:
        """`entry` as a scalar expression: a one-element array is read now."""
        if isinstance(entry, Scalar):
            return entry.expr
        if not isinstance(entry, Array) or int(np.prod(entry.shape, dtype=np.int64)) != 1:
            raise NotScalar("an array where a scalar is computed")
        var = self.fresh("v")
        self.line(f"{var} = {load(entry.dtype, f'{self.newest(entry).name}[0]')}")
        return var

    def constant(self, value, dtype) -> str:
        """A scalar constant, read into a local at the top. Floats and int64s come from the
        size vector (loops.Sizes), so that shapes differing only in extents share the
        compiled code; but 0 and ±1 stay literals: the starts and steps LLVM must see to
        know a loop index for one."""
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            return literal(value, dtype)
        key = (dtype, value.tobytes())
        if key not in self.constants:
            if dtype == np.int64 and abs(int(value)) > 1:
                expr = f"np.int64({self.sz(int(value))})"
            elif dtype in (np.float64, np.float32):
                expr = self.sz.scalar(value, dtype)
            else:
                expr = literal(value, dtype)
            name = f"k{len(self.constants)}"
            self.constants[key] = name
            self.constant_lines.append(f"    {name} = {expr}")
        return self.constants[key]

    # -- graphs
    def graph(self, g: Graph, params: list) -> list:
        env = {p: params[p.attrs["index"]] for p in g.params}
        for n in g.nodes:
            if n.op != "parameter":
                env[n] = self.node(n, [env[o] for o in n.operands])
        return [env[o] for o in g.outputs]

    def node(self, n: Node, args: list):
        op = n.op
        if op == "constant":
            if n.size != 1:
                return VectorConstant(n)
            value = n.attrs["value"].reshape(())[()]
            known = value.item() if n.dtype.kind in "biu" else None
            bound = known if n.dtype.kind in "iu" else None
            return Scalar(
                self.constant(value, n.dtype), n.dtype, value=known, low=bound, high=bound
            )
        if op in ops.ELEMENTWISE:
            return self.elementwise(n, args)
        if op == "reshape" and isinstance(args[0], Array):
            return replace(self.newest(args[0]), shape=n.shape)
        if op in ("reshape", "broadcast_in_dim") and n.size == 1:
            return Scalar(self.scalar(args[0]), n.dtype)
        if op == "gather":
            return self.gather(n, *args)
        if op == "scatter":
            return self.scatter(n, *args)
        if op == "get":
            return args[0][n.attrs["index"]]
        if op == "fusion" and n.attrs["kind"] == "reduction" and n.tuple_types is None:
            return self.sum(n.subgraph, args)[0]
        if op == "fusion" and n.attrs["kind"] == "reduction" and n.tuple_types is not None:
            return tuple(self.sum(n.subgraph, args))
        if op == "fusion" and n.attrs["kind"] == "loop" and n.tuple_types is None and n.ndim == 1:
            lazy = LazyVector(n.subgraph.outputs[0], self.prepared(n.subgraph, args))
            return self.window_write(lazy) or lazy
        if op == "fusion" and n.attrs["kind"] == "loop":
            outs = self.graph(n.subgraph, args)
            return tuple(outs) if n.tuple_types is not None else outs[0]
        if op == "while":
            return self.loop(n, args)
        raise NotScalar(f"{op} is not scalar work")

    def sum(self, body: Graph, params: list) -> list:
        """A fused sum over one axis (`A[i, :j] @ A[j, :j]`: a window's products) as a loop
        over its elements; the body's outputs. Where the terms are `select(a <= t < b, x, 0)`
        (trace/window.py's mask), the loop runs over [a, b) alone: the window's extent, not
        the axis's. The body's other outputs are scalars (`A[i, j] - that sum`, index
        arithmetic fused alongside), computed before the loop or after it, and window
        writes of carried arrays, made after it."""
        sums = [m for m in body.nodes if m.op == "reduce"]
        if len(sums) != 1:
            raise NotScalar("a fusion of several reductions")
        (out,) = sums
        if out.attrs["kind"] != "sum" or out.operands[0].ndim != 1:
            raise NotScalar("a reduction other than a sum over one axis")
        if out.dtype not in (np.float64, np.int64):  # NumPy sums float32 pairwise
            raise NotScalar(f"a {out.dtype} sum")
        terms = out.operands[0]
        env = self.prepared(body, params, out)
        lo, hi = 0, self.sz(terms.shape[0])
        window = _window(terms, env)
        if window is not None:
            terms, starts, stops = window
            lo = self._bound("max", [0] + [self.scalar(a) for a in starts])
            hi = self._bound("min", [hi] + [self.scalar(b) for b in stops])
        acc, t = self.fresh("s"), self.fresh("t")
        self.line(f"{acc} = {literal(0, out.dtype)}")

        def accumulate():
            value = self.element(terms, t, env, {})
            if out.dtype.kind == "f":  # reordered into vector lanes, as reduction kernels are
                self.line(f"{acc} = reassoc_add({acc}, {value})")
            else:
                add = lower_elementwise("add", out.dtype, out.dtype, [acc, value], {})
                self.line(f"{acc} = {add}")

        self.over(t, lo, hi, accumulate)
        env[out] = Scalar(acc, out.dtype)
        for m in body.nodes:  # the scalars that read the sum
            if m not in env and m.shape == ():
                self._scalar_of(m, env)
        for o in body.outputs:  # `a[:k + 1] = a[:k + 1] + lam * a[k::-1]`, lam the sum's
            if o not in env:
                env[o] = self.window_write(LazyVector(o, env)) if o.ndim == 1 else None
                if env[o] is None:
                    raise NotScalar("a reduction fusion with an array output")
        return [env[o] for o in body.outputs]

    def window_write(self, lazy: LazyVector) -> Array | None:
        """`x[a:b] = f(...)` of an array the loop carries (`select(window, f, x)`), written
        into its buffer over [a, b) alone, or None where `lazy` is no such write. Where f
        reads x at other positions than its own (`f[:k + 1] - ef * f[k::-1]`), it is
        computed into a scratch row first, as NumPy computes the right side first."""
        window = _window(lazy.out, lazy.env, keep=True)
        if window is None:
            return None
        x, starts, stops, old = window
        base = lazy.env[old]
        if not isinstance(base, Array) or base.key not in self.writable or len(base.shape) != 1:
            return None
        self.newest(base)
        size = self.sz(base.shape[0])
        lo = self._bound("max", [0] + [self.scalar(a) for a in starts])
        hi = self._bound("min", [size] + [self.scalar(b) for b in stops])
        t = self.fresh("t")
        target = base.name
        if _reads_elsewhere(x, lazy.env, base.key):
            if not self.rows:
                raise NotScalar("a window written from itself: a scratch row, not in AOT")
            target = self.fresh("row")
            self.constant_lines.append(f"    {target} = scratch({size}, {STORAGE[base.dtype]})")

        def write():
            value = self.element(x, t, lazy.env, {})
            self.line(f"{_at(target, t)} = {store(base.dtype, value)}")

        self.over(t, lo, hi, write)
        if target != base.name:
            self.line(f"for {t} in range({lo}, {hi}):")
            self.line(f"    {_at(base.name, t)} = {_at(target, t)}")
        return Array(base.name, base.key, self.new_version(base.key), base.shape, base.dtype)

    def over(self, t: str, lo: str, hi: str, body) -> None:
        """`for t in range(lo, hi): body()`. A window's element reads clip their positions
        into the axes they read (trace/masked.py: `y[:k][::-1]` reads y at clip(k - 1 - t,
        0, n - 1)), and a clipped position is no affine index: LLVM gathers where it could
        load a vector, 3.6x slower on Levinson's `y[:k] += alpha * y[:k][::-1]`. Where
        every clip's argument is base +- t, it is a no-op wherever [lo, hi) keeps that
        argument inside its bounds: the loop is emitted without the clips, taken when a
        test made before the loop says so, then again with them, taken otherwise."""
        start, depth = len(self.lines), self.depth
        self.affine, self.span, self.guards = {t: ("0", 1)}, (lo, hi), []
        self.depth += 1
        try:
            self.line(f"for {t} in range({lo}, {hi}):")
            self.depth += 1
            body()
        finally:
            self.depth, self.affine, guards = depth, None, self.guards
        unclipped = self.lines[start:]
        if not guards:  # no clip dropped: that loop is the loop, one level out
            self.lines[start:] = [line[4:] for line in unclipped]
            return
        del self.lines[start:]
        self.line(f"if {' and '.join(dict.fromkeys(guards))}:")
        self.lines += unclipped
        self.line("else:")
        self.depth += 1
        self.line(f"for {t} in range({lo}, {hi}):")
        self.depth += 1
        body()
        self.depth = depth

    def _extremes(self, form: tuple) -> tuple:
        """(lowest, highest) of base + sign * t over the loop's [lo, hi), as expressions."""
        (base, sign), (lo, hi) = form, self.span
        if sign > 0:
            return f"{base} + {lo}", f"{base} + {hi} - 1"
        return f"{base} - ({hi} - 1)", f"{base} - {lo}"

    def _affine_element(self, n: Node, args: list, env: dict) -> str | None:
        """Element `n` of an int64 index computation as an expression affine in the loop's
        index (recorded in `self.affine`), where emitting the loop without clips (`over`):
        a clip of such an expression by an invariant bound is dropped, and the test that
        it is a no-op recorded. None: emit `n` as it is."""
        if self.affine is None or n.dtype != np.int64 or len(args) != 2:
            return None
        if any(o.dtype != np.int64 for o in n.operands):
            return None
        invariant = [_invariant(o, env) for o in n.operands]
        forms = [self.affine.get(a) for a in args]
        for i in (0, 1):
            if forms[i] is None or not invariant[1 - i]:
                continue
            (base, sign), other = forms[i], args[1 - i]
            if n.op in ("maximum", "minimum"):
                low, high = self._extremes(forms[i])
                test = f"{low} >= {other}" if n.op == "maximum" else f"{high} <= {other}"
                self.guards.append(test)
                return args[i]
            if n.op == "add":
                form = (f"({base} + {other})", sign)
            elif n.op == "subtract":
                form = (f"({base} - {other})", sign) if i == 0 else (f"({other} - {base})", -sign)
            else:
                return None
            var = self.fresh("e")
            self.line(f"{var} = np.int64({args[0]} {'+' if n.op == 'add' else '-'} {args[1]})")
            self.affine[var] = form
            return var
        return None

    def _constant_element(self, n: Node, t: str) -> str:
        """Element `t` of a constant array read without its array (`_vector_constant`)."""
        if n not in self.forms:
            self.forms[n] = _vector_constant(n, self.sz)
        form, var = self.forms[n], self.fresh("e")
        if isinstance(form, str):
            self.line(f"{var} = {form}")
            return var
        c, sign, lo, hi = form
        at = f"np.int64({c}) {'+' if sign > 0 else '-'} {t}"
        position = None if self.affine is None else self.affine.get(t)
        if position is None:
            self.line(f"{var} = {TYPE_NAMES[n.dtype]}(min(max({at}, {lo}), {hi}))")
            return var
        base, s = position
        form = (f"({c} {'+' if sign > 0 else '-'} {base})", sign * s)
        low, high = self._extremes(form)
        self.guards += [f"{low} >= {lo}", f"{high} <= {hi}"]
        self.line(f"{var} = {TYPE_NAMES[n.dtype]}({at})")
        self.affine[var] = form
        return var

    def prepared(self, body: Graph, params: list, skip=None) -> dict:
        """The environment of a body computed element by element: its parameters, and its
        scalars and the rows it gathers (checked) computed here, before any loop."""
        env = {p: params[p.attrs["index"]] for p in body.params}
        after = {skip}  # the sum `skip` and the scalars that read it: computed after it
        for m in body.nodes:
            if m.op != "parameter" and m.shape == () and m not in after:
                if any(o in after for o in m.operands):
                    after.add(m)
                    continue
                self._scalar_of(m, env)
            elif m.op == "gather" and m.operands[1].shape == () and m.operands[0].ndim == 2:
                rows = m.operands[0].shape[0]
                env["row", m] = self._index(env[m.operands[1]], rows, GATHER_FAILURE)
                self.raises.add("gather")
        return env

    def _scalar_of(self, m: Node, env: dict) -> None:
        """Compute the scalar node `m` of a body into `env`, before or after its sum."""
        if any(o not in env for o in m.operands):  # read from a 1-d value
            raise NotScalar("a scalar computed from a fused 1-d value")
        env[m] = self.node(m, [env[o] for o in m.operands])

    def _bound(self, pick: str, exprs: list) -> str:
        var = self.fresh("b")
        self.line(f"{var} = np.int64({exprs[0]})")
        for e in exprs[1:]:
            self.line(f"{var} = {pick}({var}, np.int64({e}))")
        return var

    def element(self, n: Node, t: str, env: dict, memo: dict) -> str:
        """Element `t` of the 1-d value `n` of a sum's body (written inside its loop)."""
        if n in memo:
            return memo[n]
        if n.shape == ():
            return self.scalar(env[n])
        if n.op == "parameter" and isinstance(env[n], LazyVector):
            lazy = env[n]
            return self.element(lazy.out, t, lazy.env, memo)
        if n.op == "parameter" and isinstance(env[n], VectorConstant):
            memo[n] = self._constant_element(env[n].node, t)
            return memo[n]
        elif n.op == "parameter":
            x = self.newest(env[n])
            expr = load(x.dtype, _at(x.name, t))
        elif n.op == "constant":
            memo[n] = self._constant_element(n, t)
            return memo[n]
        elif n.op == "broadcast_in_dim" and n.operands[0].shape == ():
            return self.scalar(env[n.operands[0]])
        elif n.op == "gather" and n.operands[1].shape == () and n.operands[0].ndim == 2:
            x = self.newest(env[n.operands[0]])
            row = env["row", n]  # checked before the loop (prepared)
            expr = load(x.dtype, _at(x.name, f"{row} * {self.sz(x.shape[1])} + {t}"))
        elif n.op == "gather" and n.operands[0].ndim == 1 and n.operands[1].ndim == 1:
            # x[idx[a:b]], a window reversed or aligned with another: an index per element
            source, indices = n.operands
            k = self.element(indices, t, env, memo)
            if not _clipped(indices, env, source.shape[0]):
                k = self._index(Scalar(k, indices.dtype), source.shape[0], GATHER_FAILURE)
                self.raises.add("gather")
            return self.element(source, k, env, {})  # at another position: its own memo
        elif n.op in ops.ELEMENTWISE:
            args = [self.element(o, t, env, memo) for o in n.operands]
            affine = self._affine_element(n, args, env)
            if affine is not None:
                memo[n] = affine
                return affine
            dtype = n.operands[-1].dtype if n.op == "select" else n.operands[0].dtype
            expr = lower_elementwise(n.op, dtype, n.dtype, args, n.attrs)
        else:
            raise NotScalar(f"{n.op} in a sum")
        var = self.fresh("e")
        self.line(f"{var} = {expr}")
        memo[n] = var
        return var

    def elementwise(self, n: Node, args: list) -> Scalar:
        operands = n.operands
        if n.op == "power" and n.dtype.kind == "i":
            raise NotScalar("an integer power can fail (kernel failure kinds: one per kernel)")
        if all(isinstance(a, Scalar) for a in args):
            known = _folded(n, args)
            if known is not None:
                return known
        exprs = [self.scalar(a) for a in args]
        dtype = operands[-1].dtype if n.op == "select" else operands[0].dtype
        try:
            expr = lower_elementwise(n.op, dtype, n.dtype, exprs, n.attrs)
        except UnsupportedError as e:
            raise NotScalar(str(e)) from None
        var = self.fresh("v")
        self.line(f"{var} = {expr}")
        below = None
        if n.op == "less" and all(isinstance(a, Scalar) for a in args) and args[1].high is not None:
            below = (args[0].expr, args[1].high)
        return Scalar(
            var,
            n.dtype,
            low=_low(n, args),
            high=_high(n, args),
            counts=_counted(n, args),
            below=below,
        )

    def _index(self, index, size: int, failure: str) -> str:
        """A bounds-checked flat index into an axis of `size` (a negative one wraps)."""
        k, extent = self.fresh("i"), self.sz(size)
        self.line(f"{k} = np.int64({self.scalar(index)})")
        if isinstance(index, Scalar) and index.nonneg and _at_most(index.high, size - 1):
            return k  # in bounds wherever the loop runs: no check, as numba's own loop
        if not (isinstance(index, Scalar) and index.nonneg):
            self.line(f"if {k} < 0:")
            self.line(f"    {k} += {extent}")
        self.line(f"if {k} < 0 or {k} >= {extent}:")
        self.line(f"    {failure}")
        return k

    def gather(self, n: Node, x, index) -> Scalar:
        if not isinstance(x, Array) or len(x.shape) != 1 or n.shape != ():
            raise NotScalar("a gather of more than one element")
        k = self._index(index, x.shape[0], GATHER_FAILURE)
        self.raises.add("gather")
        var = self.fresh("v")
        self.line(f"{var} = {load(x.dtype, _at(self.newest(x).name, k))}")
        return Scalar(var, n.dtype)

    def scatter(self, n: Node, base, index, update) -> Array:
        if not isinstance(base, Array) or len(base.shape) != 1 or n.operands[1].size != 1:
            raise NotScalar("a scatter of more than one element")
        if base.key not in self.writable:
            raise NotScalar("a write into an array the loop does not carry")
        self.newest(base)
        value = self.scalar(update)
        k = self._index(index, base.shape[0], SCATTER_FAILURE)
        self.raises.add("scatter")
        at = _at(base.name, k)
        mode = n.attrs["mode"]
        if mode != "set":
            value = lower_elementwise(mode, n.dtype, n.dtype, [load(n.dtype, at), value], {})
        self.line(f"{at} = {store(n.dtype, value)}")
        return Array(base.name, base.key, self.new_version(base.key), n.shape, n.dtype)

    def loop(self, n: Node, args: list) -> tuple:
        """The loop, its carried int64s that start at 0 or more taken for loop indices; a
        step that does not count one of them up by a positive constant is emitted again
        without that one (the emitter's state restored). An index whose loop runs while its
        next value is below a stop of known upper bound (a constant, an outer index + 1)
        gets that bound: the step is emitted again knowing it, and kept if the loop's test
        still bounds the index as tightly."""
        inits = args[1 : 1 + n.attrs["carried"]]
        indices = {
            j
            for j, a in enumerate(inits)
            if isinstance(a, Scalar) and a.dtype == np.int64 and (a.index or _at_least(a.value, 0))
        }
        stops, settled = {}, False
        while True:
            saved = (len(self.lines), dict(self.current), set(self.raises), self.writable)
            results, counted, bounded = self._loop(n, args, indices, stops)
            kept = counted >= indices and all(_at_most(bounded.get(j), K) for j, K in stops.items())
            if kept and (settled or not bounded):
                return results
            if kept:
                stops, settled = bounded, True
            else:
                indices &= counted
                stops, settled = {}, True
            del self.lines[saved[0] :]
            self.current, self.raises, self.writable = saved[1:]

    def _loop(self, n: Node, args: list, indices: set, stops: dict) -> tuple:
        """(the loop's results, which of `indices` its step counts up, {index: K} for those
        whose next value the loop's test keeps below a stop known to be at most K).
        `stops`: the K assumed (an index then is at most K - 1, or its start)."""
        k = n.attrs["carried"]
        flag0, inits, invariants = args[0], args[1 : 1 + k], args[1 + k :]
        keys = [a.key for a in inits if isinstance(a, Array)]
        if len(set(keys)) != len(keys) or not set(keys) <= self.writable:
            raise NotScalar("carries an array it may not write")
        if any(isinstance(a, Array) and a.key in keys for a in invariants):
            raise NotScalar("reads the array it carries as it was before the loop")
        state = []
        for j, init in enumerate(inits):
            if isinstance(init, Array):
                self.newest(init)
                state.append(replace(init, version=self.new_version(init.key)))
            else:
                var = self.fresh("c")
                self.line(f"{var} = {_cast(self.scalar(init), init.dtype)}")
                index = j in indices
                low = (init.low if init.index else init.value) if index else None
                high = None
                if j in stops:
                    start = init.high if init.value is None else init.value
                    high = None if start is None else max(stops[j] - 1, start)
                state.append(Scalar(var, init.dtype, low=low, high=high, index=index))
        flag = self.fresh("f")
        self.line(f"{flag} = {self.scalar(flag0)}")
        self.line(f"while {flag}:")
        self.depth += 1
        outer, self.writable = self.writable, frozenset(keys)
        outs = self.graph(n.subgraph, state + list(invariants))
        names, values = [], []
        for now, out in zip(state, outs[:k]):
            if isinstance(now, Array):
                if not (isinstance(out, Array) and out.key == now.key):
                    raise NotScalar("a carried array's step result is another buffer")
                self.newest(out)
            else:
                names.append(now.expr)
                values.append(_cast(self.scalar(out), now.dtype))
        names.append(flag)
        values.append(self.scalar(outs[k]))
        self.line(f"{', '.join(names)} = {', '.join(values)}")
        self.writable = outer
        self.depth -= 1
        counted = {
            j
            for j, (now, out) in enumerate(zip(state, outs))
            if isinstance(out, Scalar) and now.index and out.counts == now.expr
        }
        test = outs[k].below if isinstance(outs[k], Scalar) else None
        bounded = {j: test[1] for j in counted if test and test[0] == outs[j].expr}
        results = tuple(
            replace(s, version=self.new_version(s.key)) if isinstance(s, Array) else s
            for s in state
        )
        return results, counted, bounded


def _vector_constant(n: Node, sz: Sizes):
    """A constant the emitter can index without its array: its one repeated value (a
    literal), or (c, sign, lo, hi), its element t being clip(c + sign * t, lo, hi) (0, 1,
    2, ...: a window's positions; a window aligned with another, or reversed, by static
    bounds: t + 1, 7 - t)."""
    value = n.attrs["value"]
    if value.size and np.all(value == value.flat[0]):
        return literal(value.flat[0], n.dtype)
    if n.dtype.kind in "iu" and value.ndim == 1:
        lo, hi, size = int(value.min()), int(value.max()), value.size
        for sign in (1, -1):
            for c in (int(value[0]), int(value[-1]) - sign * (size - 1)):
                if np.array_equal(value, np.clip(c + sign * np.arange(size), lo, hi)):
                    c, lo, hi = (v if abs(v) <= 1 else sz(v) for v in (c, lo, hi))
                    return c, sign, lo, hi
    raise NotScalar("a constant array in a sum")


def _invariant(n: Node, env: dict) -> bool:
    """Is `n`, read in a window's loop, a scalar computed before the loop?"""
    if n.op == "broadcast_in_dim":
        n = n.operands[0]
    return n.shape == () and isinstance(env.get(n), Scalar)


def _positions(n: Node) -> bool:
    """Is `n` the positions 0, 1, 2, ... of the axis summed over?"""
    if n.op != "constant" or n.dtype.kind not in "iu":
        return False
    return np.array_equal(n.attrs["value"], np.arange(n.size))


def _origin(n: Node, env: dict) -> tuple:
    """(the node computing `n`, the environment it is read in): a parameter followed into
    the constant or the fused 1-d value it stands for."""
    while n.op == "parameter":
        v = env[n]
        if isinstance(v, VectorConstant):
            return v.node, env
        if not isinstance(v, LazyVector):
            break
        n, env = v.out, v.env
    return n, env


def _at(buffer: str, index: str) -> str:
    """Element `index` of a flat buffer, the index known in bounds (checked, or a window's
    position): unsigned, since numba wraps a signed index, a select per load that kept
    LLVM from vectorizing a sum over a row (7x at Cholesky N=1000)."""
    return f"{buffer}[np.uint64({index})]"


def _window(terms: Node, env: dict, keep: bool = False):
    """(x, starts, stops) where `terms` is select(mask, x, 0) and the mask holds exactly at
    the positions t with every start <= t < every stop (scalars: each as its value in
    the environment it is read in), else None. `keep`: select(mask, x, old) instead, old a
    parameter of `env` (a window write), and (x, starts, stops, old)."""
    if terms.op != "select":
        return None
    mask, x, other = terms.operands
    if keep and other.op != "parameter":
        return None
    zero, _ = _origin(other, env)
    if zero.op == "broadcast_in_dim":
        zero = zero.operands[0]
    if not keep and (zero.op != "constant" or np.any(zero.attrs["value"] != 0)):
        return None
    starts, stops, parts = [], [], [(mask, env)]
    while parts:
        m, at = _origin(*parts.pop())
        if m.op in ("bitwise_and", "logical_and"):
            parts += [(o, at) for o in m.operands]
            continue
        if m.op == "constant" and m.dtype.kind == "b" and m.ndim == 1:  # a static bound
            v = m.attrs["value"]
            first, last = int(np.argmax(v)), v.size - int(np.argmax(v[::-1]))
            if not v.any() or not np.array_equal(
                v, (first <= np.arange(v.size)) & (np.arange(v.size) < last)
            ):
                return None
            starts.append(_known(first, np.int64))
            stops.append(_known(last, np.int64))
            continue
        if m.op not in ("less", "greater_equal") or not _positions(_origin(m.operands[0], at)[0]):
            return None
        bound = m.operands[1]
        if bound.op == "broadcast_in_dim":
            bound = bound.operands[0]
        if bound.shape != ():
            return None
        (stops if m.op == "less" else starts).append(at[bound])
    return (x, starts, stops, other) if keep else (x, starts, stops)


def _clipped(indices: Node, env: dict, size: int) -> bool:
    """Are `indices` clipped into [0, size) (a window's positions aligned with another's,
    or reversed: trace/masked.py), so that reading by them needs no check?"""
    n, at = _origin(indices, env)
    if n.op == "constant":
        value = n.attrs["value"]
        return value.size > 0 and value.min() >= 0 and value.max() < size
    if n.op != "minimum":
        return False
    low, high = (_origin(o, at)[0] for o in n.operands)
    if low.op != "maximum":
        return False
    bounds = [_origin(low.operands[1], at)[0], high]
    bounds = [b.operands[0] if b.op == "broadcast_in_dim" else b for b in bounds]
    if any(b.op != "constant" or b.size != 1 for b in bounds):
        return False
    lo, hi = (int(b.attrs["value"].reshape(())) for b in bounds)
    return lo >= 0 and hi < size


def _reads_elsewhere(x: Node, env: dict, key) -> bool:
    """Does element t of `x` read buffer `key` at a position other than t (a gather of
    it: a window reversed, or aligned with another)?"""
    seen, todo = set(), [(x, env)]
    while todo:
        n, at = todo.pop()
        if (n, id(at)) in seen:
            continue
        seen.add((n, id(at)))
        if n.op == "gather":
            source, source_env = _origin(n.operands[0], at)
            value = source_env.get(source)
            if source.op != "parameter" or not isinstance(value, Array) or value.key == key:
                return True
        if n.op == "parameter" and isinstance(at.get(n), LazyVector):
            todo.append((at[n].out, at[n].env))
        todo += [(o, at) for o in n.operands]
    return False


def _known(value, dtype) -> Scalar:
    bound = value if np.dtype(dtype).kind in "iu" else None
    return Scalar(literal(value, dtype), np.dtype(dtype), value=value, low=bound, high=bound)


def _folded(n: Node, args: list) -> Scalar | None:
    """`n` on `args` where what the emitter knows decides it, else None: the wrap of a
    negative index tested on a loop index (never negative), and what that leaves (adding
    or multiplying by 0, or-ing with False, a select on a known bool). So a loop over
    `A[i, k]` keeps the bound checks only, as numba's own loop over it does."""
    op, known = n.op, [a.value for a in args]
    if op == "select" and known[0] is not None:
        return args[1] if known[0] else args[2]
    if n.dtype.kind == "b":
        if op in ("less", "greater_equal") and known[1] is not None:
            if _at_least(args[0].low, known[1]):
                return _known(op != "less", n.dtype)
            if _at_most(args[0].high, known[1] - 1):
                return _known(op == "less", n.dtype)
        if op in ("bitwise_or", "logical_or"):
            if known[0] is False or args[0].expr == args[1].expr:
                return args[1]
            if known[1] is False:
                return args[0]
        if op == "logical_not" and known[0] is not None:
            return _known(not known[0], n.dtype)
        return None
    if n.dtype.kind not in "iu":
        return None
    if op == "convert" and known[0] is not None:
        return _known(int(known[0]), n.dtype)
    if op == "multiply" and 0 in known:
        return _known(0, n.dtype)
    if op == "add" and args[0].dtype == args[1].dtype == n.dtype:
        if known[0] == 0:
            return args[1]
        if known[1] == 0:
            return args[0]
    return None


def _at_least(value, bound) -> bool:
    return value is not None and value >= bound


def _at_most(value, bound) -> bool:
    return value is not None and value <= bound


def _low(n: Node, args: list) -> int | None:
    """A lower bound of integer `n` from its operands' (`i - 1` for a loop index from 1 is
    never negative: its index wrap folds away, as in a stencil's `u[i - 1, j]`)."""
    if n.dtype.kind not in "iu" or not all(isinstance(a, Scalar) for a in args):
        return None
    lows = [a.low for a in args]
    if n.op == "add" and None not in lows:
        return lows[0] + lows[1]
    if n.op == "subtract" and lows[0] is not None and args[1].value is not None:
        return lows[0] - args[1].value
    if n.op == "multiply" and all(_at_least(low, 0) for low in lows):
        return lows[0] * lows[1]
    if n.op == "select" and None not in lows[1:]:
        return min(lows[1:])
    if n.op == "maximum" and lows != [None, None]:
        return max(low for low in lows if low is not None)
    if n.op == "minimum" and None not in lows:
        return min(lows)
    if n.op == "convert" and args[0].dtype.kind == "b":
        return 0
    if n.op == "convert" and _at_least(lows[0], 0):  # not narrowed: it does not wrap
        return lows[0] if n.dtype.itemsize >= args[0].dtype.itemsize else None
    return None


def _high(n: Node, args: list) -> int | None:
    """An upper bound of integer `n` from its operands' bounds (`i + 1`, `(i - 1) * n + j`
    for loop indices below known stops: a stencil's flat index, known in bounds)."""
    if n.dtype.kind not in "iu" or not all(isinstance(a, Scalar) for a in args):
        return None
    lows, highs = [a.low for a in args], [a.high for a in args]
    if n.op == "add" and None not in highs:
        return highs[0] + highs[1]
    if n.op == "subtract" and highs[0] is not None and lows[1] is not None:
        return highs[0] - lows[1]
    if n.op == "multiply" and all(_at_least(low, 0) for low in lows) and None not in highs:
        return highs[0] * highs[1]
    if n.op == "select" and None not in highs[1:]:
        return max(highs[1:])
    if n.op == "minimum" and highs != [None, None]:
        return min(high for high in highs if high is not None)
    if n.op == "maximum" and None not in highs:
        return max(highs)
    if n.op == "convert" and args[0].dtype.kind == "b":
        return 1
    if n.op == "convert" and _at_least(lows[0], 0) and highs[0] is not None:
        return highs[0] if n.dtype.itemsize >= args[0].dtype.itemsize else None
    return None


def _counted(n: Node, args: list) -> str | None:
    """The loop index local `n` counts up from (`i + 1`), if it does."""
    if n.op != "add" or n.dtype != np.int64:
        return None
    for x, y in (args, args[::-1]):
        if isinstance(x, Scalar) and isinstance(y, Scalar) and x.index and (y.value or 0) > 0:
            return x.expr
    return None


def _cast(expr: str, dtype) -> str:
    """`expr` typed as `dtype`, so a carried local keeps one type around the loop."""
    return f"{TYPE_NAMES[np.dtype(dtype)]}({expr})"


def scalar_loop(n: Node, carried_shapes: list, sizes: Sizes, rows: bool) -> ScalarLoop | None:
    """The body computing the `while` node `n` in one kernel, or None where its step is not
    scalar work. Its arrays, all passed flat: the first test's flag, the invariants, then
    the carried values (in and out: their initial values are there before the call).
    `rows`: the kernel may allocate scratch rows (not in AOT)."""
    k = n.attrs["carried"]
    em = _Emitter(sizes, rows)
    names = ["flag0"] + [f"invariant{j}" for j in range(len(n.operands) - 1 - k)]
    names += [f"carried{j}" for j in range(k)]
    args = [Array("flag0", "flag0", 0, (1,), np.dtype(np.bool_))]
    for j, (shape, dtype) in enumerate(carried_shapes):
        args.append(Array(f"carried{j}", ("carried", j), 0, tuple(shape), np.dtype(dtype)))
    for j, v in enumerate(n.operands[1 + k :]):
        args.append(Array(f"invariant{j}", ("invariant", j), 0, v.shape, v.dtype))
    for a in args:
        em.current[a.key] = 0
    try:
        for j, v in enumerate(n.operands):
            if v.op == "constant" and v.size == 1:  # known: the start of a loop index
                args[j] = em.node(v, [])
            elif 1 <= j <= k and v.shape == ():
                args[j] = Scalar(em.scalar(args[j]), v.dtype)
        em.writable = frozenset(a.key for a in args[1 : 1 + k] if isinstance(a, Array))
        results = em.loop(n, args)
    except NotScalar:
        return None
    for j, r in enumerate(results):
        if isinstance(r, Scalar):
            em.line(f"carried{j}[0] = {store(r.dtype, r.expr)}")
    header = f"def BODY({', '.join(names)}, lo, hi, n):"
    source = "\n".join([header] + em.constant_lines + em.lines) + "\n"
    return ScalarLoop(source, frozenset(em.raises))
