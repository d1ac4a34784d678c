"""Plain Python loops and branches compiled, not unrolled: TensorFlow's AutoGraph in small.

Tracing runs the user's Python, so a `for` over range(n) would be recorded n times and an
`if` on a traced value cannot be decided at all. Before the first trace, the function's
source is rewritten so that each `for ... in range(...)`, `while` and `if` statement calls
trace/statements.py with its body as a function of the names it assigns (its carried
values), and `a if c else b`, `and`, `or`, `not`, `max` and `min` call it too. There each
decides at trace time: a Python test or a short static range runs as Python does (so W12's
`for ip in range(2)` keeps literal indices), a traced test or a long range becomes one loop
traced once (trace/control.py).

A statement holding `return`, `break`, `continue`, `yield`, `del`, `global` or `nonlocal`
is left as Python wrote it (a traced test there keeps raising the tracer's error), and so
is a whole function that uses `super()`, `locals()`, `eval` or `exec`, or whose source
Python cannot show (a lambda, code typed at the prompt)."""

from __future__ import annotations
import __future__

import ast
import builtins
import inspect
import logging
import os
import sysconfig
import textwrap
import types
import weakref

log = logging.getLogger("jitc")

PREFIX = "_jitc_"  # the names of what the rewrite adds
AG = PREFIX + "ag"  # the statements module, bound in a closure cell of the new function
_CONVERTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# where installed packages and the standard library live: their functions are not converted
_INSTALLED = tuple(
    {p + os.sep for p in (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"])}
    | {p + os.sep for p in (sysconfig.get_paths()["platstdlib"], sysconfig.get_paths()["platlib"])}
)
# what makes a whole function unconvertible: names whose meaning a nested function changes
_SCOPE_NAMES = {"super", "locals", "vars", "eval", "exec", "__class__"}
_STATEMENT = {
    ast.Return: "return",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Await: "await",
    ast.Delete: "del",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
}
_STOPS = tuple(_STATEMENT)
_NESTED = (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
_FUTURES = sum(getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
_BUILTINS = set(dir(builtins))  # calls of these stay as written (range, len, locals, ...)
# method calls that change a Python container: a body making them has Python side effects
_EFFECTS = {"append", "extend", "insert", "pop", "remove", "update", "add", "setdefault", "clear"}


def converted(fun, runtime):
    """`fun` with its loops and branches rewritten to call `runtime` (trace/statements.py);
    the same function where nothing is."""
    if not isinstance(fun, types.FunctionType):
        return fun
    try:
        return _CONVERTED[fun]
    except KeyError:
        pass
    new = _convert(fun, runtime)
    _CONVERTED[fun] = new
    return new


def users_function(fn) -> bool:
    """Is `fn` a plain function of the user's: not jitc's, NumPy's, the standard
    library's or an installed package's (those are not converted)?"""
    from jitc.core.source import INTERNAL

    return isinstance(fn, types.FunctionType) and not fn.__code__.co_filename.startswith(
        INTERNAL + _INSTALLED + ("<",)
    )


def _convert(fun, runtime):
    code = fun.__code__
    if fun.__name__ == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE):
        return fun
    try:
        source = textwrap.dedent(inspect.getsource(fun))
        filename = inspect.getsourcefile(fun) or code.co_filename
    except (OSError, TypeError):
        return fun
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a method whose source dedent cannot fix (a continuation line)
        return fun
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fun.__name__:
        return fun
    if _unsafe(fdef, code):
        return fun
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    fdef.decorator_list = []
    declared = {
        name
        for n in ast.walk(fdef)
        if isinstance(n, (ast.Global, ast.Nonlocal))
        for name in n.names
    }
    rewrite = _Rewrite(declared)
    fdef.body = rewrite.block(fdef.body)
    if not rewrite.count:
        return fun
    maker = ast.FunctionDef(
        name=PREFIX + "maker",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=name) for name in (AG, *code.co_freevars)],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))],
        decorator_list=[],
    )
    module = ast.Module(body=[ast.copy_location(maker, fdef)], type_ignores=[])
    ast.fix_missing_locations(module)
    made = compile(module, filename, "exec", flags=code.co_flags & _FUTURES, dont_inherit=True)
    maker_code = next(c for c in made.co_consts if isinstance(c, types.CodeType))
    new_code = next(
        c for c in maker_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name
    )
    cells = dict(zip(code.co_freevars, fun.__closure__ or ()))
    cells[AG] = types.CellType(runtime)
    new = types.FunctionType(
        new_code,
        fun.__globals__,
        fun.__name__,
        fun.__defaults__,
        tuple(cells[name] for name in new_code.co_freevars),
    )
    new.__kwdefaults__ = fun.__kwdefaults__
    new.__qualname__ = fun.__qualname__
    new.__module__ = fun.__module__
    new.__wrapped__ = fun
    log.debug("%s: %d loops and branches rewritten", fun.__qualname__, rewrite.count)
    return new


def _unsafe(fdef, code) -> bool:
    """Would the function compiled again from its source differ from `code`: its source
    edited since (other parameters), a name it uses meaning something else in a nested
    function (super(), locals()), or a private name its class would have mangled?"""
    a = fdef.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if params != list(code.co_varnames[: len(params)]):
        return True
    for n in ast.walk(fdef):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if name in _SCOPE_NAMES or (name.startswith("__") and not name.endswith("__")):
            return True
    return False


class _Rewrite(ast.NodeTransformer):
    """The rewrite of one function's statements, innermost first."""

    def __init__(self, declared: set):
        self.count = 0
        self.declared = declared  # global or nonlocal names: a nested function cannot bind them

    def block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            new = self.visit(s)
            out += new if isinstance(new, list) else [new]
        return out

    def _fresh(self, kind: str) -> str:
        self.count += 1
        return f"{PREFIX}{kind}_{self.count}"

    # -- statements
    def visit_FunctionDef(self, node):
        node.body = self.block(node.body)
        return node

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_For(self, node):
        names, effects, written = _carried(node.body), _effects(node.body), _written(node.body)
        ranged = _is_range(node.iter) and isinstance(node.target, ast.Name)
        why = "an `else` clause" if node.orelse else _stops(node.body) or self._declared(names)
        node.body = self.block(node.body)
        node.iter = self.visit(node.iter)
        if not ranged:
            return node
        if why is not None:  # range() refuses a traced bound: say why this loop is Python's
            self.count += 1
            call = _ag_call("python_range", *node.iter.args, ast.Constant(why))
            node.iter = _on_line(call, node.iter)
            return node
        names.discard(node.target.id)
        body = self._def("for_body", [node.target.id, PREFIX + "vals"], names, node.body, node)
        call = _ag_call(
            "for_range",
            ast.Name("range", ast.Load()),
            ast.Tuple(node.iter.args, ast.Load()),
            ast.Name(body.name, ast.Load()),
            *_state(names, effects, written),
            ast.Constant(node.target.id),
            _values({node.target.id}),
        )
        index = ast.Name(node.target.id, ast.Store())  # as Python leaves it after the loop
        assign = ast.Assign([ast.Tuple([_tuple(names, ast.Store()), index], ast.Store())], call)
        return [body, _on_line(assign, node)]

    def visit_While(self, node):
        names, effects, written = _carried(node.body), _effects(node.body), _written(node.body)
        why = "an `else` clause" if node.orelse else _stops(node.body) or self._declared(names)
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test)):
            why = "a `:=` in its test (the test runs as a function of its own)"
        node.body = self.block(node.body)
        node.test = self.visit(node.test)
        if why is not None:
            self.count += 1
            call = _ag_call("python_test", node.test, ast.Constant("while loop"), ast.Constant(why))
            node.test = _on_line(call, node.test)
            return node
        test = self._def(
            "while_test", [PREFIX + "vals"], names, [ast.Return(node.test)], node, returns=False
        )
        body = self._def("while_body", [PREFIX + "vals"], names, node.body, node)
        call = _ag_call(
            "while_stmt",
            ast.Name(test.name, ast.Load()),
            ast.Name(body.name, ast.Load()),
            *_state(names, effects, written),
        )
        return [test, body, _assign(names, call, node)]

    def visit_If(self, node):
        names = _carried(node.body) | _carried(node.orelse)
        effects, written = _effects(node.body + node.orelse), _written(node.body + node.orelse)
        why = _stops(node.body + node.orelse) or self._declared(names)
        node.test = self.visit(node.test)
        node.body = self.block(node.body)
        node.orelse = self.block(node.orelse)
        if why is not None:
            self.count += 1
            call = _ag_call("python_test", node.test, ast.Constant("if"), ast.Constant(why))
            node.test = _on_line(call, node.test)
            return node
        yes = self._def("if_true", [PREFIX + "vals"], names, node.body, node)
        no = self._def("if_false", [PREFIX + "vals"], names, node.orelse or [ast.Pass()], node)
        call = _ag_call(
            "if_stmt",
            node.test,
            ast.Name(yes.name, ast.Load()),
            ast.Name(no.name, ast.Load()),
            *_state(names, effects, written),
        )
        return [yes, no, _assign(names, call, node)]

    def _declared(self, names) -> str | None:
        shared = sorted(names & self.declared)
        return f"an assignment to the global or nonlocal {shared[0]}" if shared else None

    def _def(self, kind, params, names, body, at, returns=True) -> ast.FunctionDef:
        """def _jitc_<kind>_N(params): <names> = _jitc_vals; body; return <names>"""
        unpack = [_assign(names, ast.Name(PREFIX + "vals", ast.Load()), at)] if names else []
        end = [ast.Return(_tuple(names, ast.Load()))] if returns else []
        fdef = ast.FunctionDef(
            name=self._fresh(kind),
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=p) for p in params],
                kwonlyargs=[],
                kw_defaults=[],
                defaults=[],
            ),
            body=unpack + body + end,
            decorator_list=[],
        )
        return ast.copy_location(fdef, at)

    # -- expressions
    def visit_IfExp(self, node):
        self.generic_visit(node)
        self.count += 1
        return ast.copy_location(
            _ag_call("if_exp", node.test, _thunk(node.body), _thunk(node.orelse)), node
        )

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        self.count += 1
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_ag_call(op, *(_thunk(v) for v in node.values)), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.count += 1
        return ast.copy_location(_ag_call("not_", node.operand), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("max", "min") and not node.keywords:
            if len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
                self.count += 1
                return ast.copy_location(_ag_call(f.id + "_", f, *node.args), node)
        if isinstance(f, ast.Name) and f.id in _BUILTINS:
            return node
        self.count += 1  # a function of the user's is called converted, from this frame
        node.func = ast.copy_location(_ag_call("callee", f), f)
        return node


def _is_range(it) -> bool:
    return (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and 1 <= len(it.args) <= 3
        and not it.keywords
        and not any(isinstance(a, ast.Starred) for a in it.args)
    )


def _walk_scope(stmts):
    """The nodes of `stmts` in this function's scope (not inside nested defs, lambdas,
    classes or comprehensions)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield child  # its name is bound here, its body is another scope
            elif not isinstance(child, _NESTED):
                stack.append(child)


def _carried(stmts) -> set:
    """The names a block binds, and the names of the arrays it writes into (`A[i] = v`,
    `A[i] += v`): what a loop or branch made of it carries."""
    names = set()
    for n in _walk_scope(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).partition(".")[0] for a in n.names}
        elif isinstance(n, ast.NamedExpr):
            names.add(n.target.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name) and isinstance(n, ast.Subscript):
                names.add(base.id)
    return {name for name in names if not name.startswith(PREFIX)}


def _stops(stmts) -> str | None:
    """What makes the block leave its statement other than at its end (a `return` or
    `yield`, a `break`/`continue` of the statement's loop, or of an enclosing one for an
    `if`), or changes a scope a nested function cannot (None: nothing)."""
    for n in _walk_scope(stmts):
        if isinstance(n, _STOPS):
            return f"a `{_STATEMENT[type(n)]}`"
        if isinstance(n, (ast.Break, ast.Continue)) and _not_nested(n, stmts):
            return "a `break`" if isinstance(n, ast.Break) else "a `continue`"
    return None


def _not_nested(target, stmts) -> bool:
    """Is `target` (a break/continue) outside every loop inside `stmts`?"""
    for n in _walk_scope(stmts):
        if isinstance(n, (ast.For, ast.While)) and any(
            c is target for c in _walk_scope(n.body + n.orelse)
        ):
            return False
    return True


def _written(stmts) -> tuple:
    """The names the block writes items of (`A[i] = v`): an array's is a carried value,
    a Python list's a change to that list (statements.py tells them apart)."""
    names = set()
    for n in _walk_scope(stmts):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
    return tuple(sorted(names))


def _effects(stmts) -> bool:
    """Does the block set an attribute, change a Python container or print (done once if
    traced once)?"""
    for n in _walk_scope(stmts):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            return True
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in _EFFECTS:
                return True
            if isinstance(f, ast.Name) and f.id == "print":
                return True
    return False


def _ag_call(fn: str, *args) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name(AG, ast.Load()), fn, ast.Load()), list(args), [])


def _thunk(expr) -> ast.Lambda:
    none = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.copy_location(ast.Lambda(none, expr), expr)


def _tuple(names, ctx) -> ast.Tuple:
    return ast.Tuple([ast.Name(n, ctx) for n in sorted(names)], ctx)


def _names(names) -> ast.Tuple:
    return ast.Tuple([ast.Constant(n) for n in sorted(names)], ast.Load())


def _values(names) -> ast.Call:
    """_jitc_ag.values(locals(), names): each name's value, or Undefined where unbound.
    `locals()` is the enclosing function's own: the call is made in its scope."""
    return _ag_call("values", ast.Call(ast.Name("locals", ast.Load()), [], []), _names(names))


def _state(names, effects, written) -> list:
    """The arguments every statement call ends with: its names' values, the names, and
    what its body does to Python objects (statements.py decides with them)."""
    return [_values(names), _names(names), ast.Constant(effects), ast.Constant(written)]


def _assign(names, value, at) -> ast.stmt:
    stmt = ast.Assign([_tuple(names, ast.Store())], value) if names else ast.Expr(value)
    return _on_line(stmt, at)


def _on_line(new, at):
    """`new`'s nodes without a location placed on `at`'s first line, where the user's
    statement starts (a frame running them reports that line)."""
    for n in ast.walk(new):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            n.lineno, n.col_offset = at.lineno, at.col_offset
            n.end_lineno, n.end_col_offset = at.lineno, at.col_offset
    return new
