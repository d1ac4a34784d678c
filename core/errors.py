"""The exceptions jitc raises; every message names the op and the user's file:line."""


class JitcError(Exception):
    """Base class of every jitc error."""


class UnsupportedError(JitcError, NotImplementedError):
    """A NumPy function, argument or dtype jitc does not compile (never silently run by NumPy)."""


class TracerError(JitcError, TypeError):
    """A traced value was used where a concrete Python value is needed (a branch, int(), ...)."""


class ShapeError(JitcError, ValueError):
    """Operand shapes do not fit an op at trace time."""


class VerifyError(JitcError):
    """A graph broke an invariant (operand types, shape rules, ordering)."""


class SignatureMiss(Exception):
    """A compiled call got arguments of another signature than it was built for; the
    caller takes the slow path, which finds (or compiles) the right one. Never escapes."""


class StaleCapture(Exception):
    """A captured place holds an array of another shape or dtype than the compiled code was
    traced for (the user bound a new array there): trace again. Never escapes."""
