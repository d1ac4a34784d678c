"""A traced view chain (functional.py's view steps) applied outside the trace: to a graph
node, for a stage that must compute a returned view (AOT), and to the caller's array, for a
call that returns a view of an argument. Apart from functional.py so that the stages
(jitc/stages.py) use them without importing the tracer."""

from __future__ import annotations


def view_node(graph, node, steps):
    """`node` viewed through `steps`, as new nodes of `graph`."""
    from jitc.core.primitives import PRIMITIVES

    for step in steps:
        op, attrs = step.op()
        shape, dtype = PRIMITIVES[op].infer([(node.shape, node.dtype)], attrs)
        node = graph.add(op, [node], attrs, shape, dtype, node.loc)
    return node


def numpy_view(array, steps):
    """The caller's view of `array` that a traced view chain names (a returned view)."""
    for s in steps:
        array = s.numpy(array)
    return array
