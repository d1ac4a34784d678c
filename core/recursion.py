"""Recursion on an explicit stack: walks of graphs as deep as a 10,000-op elementwise chain.

A recursive function is written as a generator that yields each sub-call (another such
generator) and is sent back its result; `run` drives them without nesting Python frames, so
depth is bounded by memory, not by the interpreter's recursion limit (~1,000 frames).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

Call = Generator[Any, Any, Any]


def run(call: Call) -> Any:
    """The result of `call` and of every sub-call it yields, depth first."""
    stack, sent = [call], None
    while True:
        try:
            sub = stack[-1].send(sent)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            sent = done.value
        else:
            stack.append(sub)
            sent = None
