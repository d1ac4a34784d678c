"""The direction of imports (issue 34), counting imports inside functions: the front door
(jitc.api) is imported by jitc/__init__.py and the CLI alone; backends import the core,
fusion's graph analyses (buffer planning, views) and each other; no import circle but the
tracer's with numpy_api (JAX's core <-> numpy). Failures print the circles found."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = {
    "jitc": "jitc",
    "core": "jitc.core",
    "trace": "jitc.trace",
    "fusion": "jitc.fusion",
    "numpy_api": "jitc.numpy_api",
    "runtime": "jitc.runtime",
    "aot": "jitc.aot",
    "backends": "jitc.backends",
    "chunked": "jitc.chunked",
    "report": "jitc.report",
}
ACCEPTED_CIRCLE = ("jitc.numpy_api", "jitc.trace.")


def modules() -> dict:
    out = {}
    for folder, package in FOLDERS.items():
        for path, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(path, f[:-3]), os.path.join(ROOT, folder))
                    out[f"{package}.{rel.replace(os.sep, '.')}".removesuffix(".__init__")] = (
                        os.path.join(path, f)
                    )
    return out


def imports(path: str, known) -> set:
    """The jitc modules `path` imports, anywhere but under `if TYPE_CHECKING:`."""
    tree = ast.parse(open(path).read())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                for a in node.names
            }
    return {m for m in out if m in known}


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while not part or part[-1] != v:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for v in graph:
        if v not in index:
            visit(v)
    return found


GRAPH = {m: imports(p, set(modules())) for m, p in modules().items()}


def test_only_the_package_and_the_cli_import_the_front_door():
    importers = {m for m, deps in GRAPH.items() if "jitc.api" in deps}
    assert "jitc" in importers and importers <= {"jitc", "jitc.cli"}, importers


def test_backends_import_only_the_core_fusion_and_backends():
    allowed = ("jitc.core", "jitc.fusion", "jitc.backends")
    wrong = {
        m: sorted(d for d in deps if not d.startswith(allowed))
        for m, deps in GRAPH.items()
        if m.startswith("jitc.backends")
    }
    assert not {m: d for m, d in wrong.items() if d}


def test_no_import_circle_but_the_tracers_with_numpy_api():
    found = circles(GRAPH)
    print("import circles:", found)
    assert all(all(m.startswith(ACCEPTED_CIRCLE) for m in c) for c in found), found
    assert len(found) <= 1
