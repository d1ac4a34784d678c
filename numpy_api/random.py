"""np.random inside a jitted function: refused, naming the call and the user's line.

NumPy draws new numbers on every call; a compiled function would draw once, at trace time,
and return the same numbers on every call, which is not NumPy's answer. So while a trace
runs, np.random's functions called from the user's code raise UnsupportedError (they are
rebound by trace/rebind.py), and a Generator, RandomState, BitGenerator or SeedSequence the
function reaches (through a closure, a global, an attribute, an argument, or made by
np.random.default_rng inside it) is a stand-in that refuses every method. Draw outside the
jitted function and pass the numbers as an argument.
"""

from __future__ import annotations

import numpy as np

from jitc.core.errors import UnsupportedError
from jitc.core.source import where
from jitc.trace import rebind

RANDOM_STATES = (
    np.random.Generator,
    np.random.RandomState,
    np.random.BitGenerator,
    np.random.SeedSequence,
)
_ADVICE = (
    "it draws new numbers on every call, and a compiled function would return the "
    "numbers drawn once when it was traced; draw them outside the jitted function "
    "and pass them as an argument"
)


def refusal(what: str) -> UnsupportedError:
    return UnsupportedError(f"{what} is not supported inside a jitc function{where()}: {_ADVICE}")


def _refusing(name, original):
    def draw(*args, **kwargs):
        if rebind.current_ctx() is None or not rebind.user_call(draw):
            return original(*args, **kwargs)
        raise refusal(f"np.random.{name}")

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = getattr(original, "__doc__", None)
    draw.__wrapped__ = original
    return draw


class RefusedRandomState:
    """A random state object seen by a trace: every attribute is a refusal."""

    __slots__ = ("_what",)

    def __init__(self, value, name: str):
        self._what = f"{name} (a {type(value).__module__}.{type(value).__qualname__})"

    def __getattr__(self, attr):
        if attr.startswith("__"):  # a protocol probe (copy, __array__): not the user's call
            raise AttributeError(attr)
        raise refusal(f"{self._what}.{attr}")

    def __repr__(self):
        return f"<jitc: {self._what}, refused while tracing>"


def is_random_state(value) -> bool:
    """A NumPy random state object, or a bound method of one (`rand = rng.random`)."""
    return isinstance(value, RANDOM_STATES) or isinstance(
        getattr(value, "__self__", None), RANDOM_STATES
    )


for _name in np.random.__all__:
    _value = getattr(np.random, _name)
    if callable(_value) and not isinstance(_value, type):
        rebind.rebind(np.random, _name, lambda original, name=_name: _refusing(name, original))
del _name, _value
