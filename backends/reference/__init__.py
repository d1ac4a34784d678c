"""The reference backend: a NumPy interpreter of the graph, the oracle for every other backend."""

from jitc.backends.reference.interpreter import ReferenceExecutable


def is_available():
    return True, ""


def compile(graph):
    return ReferenceExecutable(graph)
