"""The reference backend: a NumPy interpreter of the graph, the oracle for every other backend."""

from jitc.backends.reference.interpreter import ReferenceExecutable


def is_available():
    return True, ""


def compile(graph):
    return ReferenceExecutable(graph)


def refuse_dtypes(graph, arg_names=()):
    """Every jitc dtype is NumPy's: nothing to refuse."""


def uncached(graph) -> list:
    """Nothing this backend compiles is handed on at exit."""
    return []


def cached(graph) -> bool:
    """Nothing to compile."""
    return True
