"""The cpu backend: numba kernels for every fusion and one compiled driver per function."""

from jitc.backends.native import target
from jitc.core import interrupts

with interrupts.deferred():  # imports numba; before anything here compiles, as numba reads
    target.configure()  #      its target once


def is_available():
    try:
        import numba  # noqa: F401
    except ImportError as e:
        return False, f"numba is not installed ({e})"
    return True, ""


def compile(graph):
    with interrupts.deferred():  # numba's modules: see core/interrupts.py
        from jitc.backends.cpu.executable import CpuExecutable

    return CpuExecutable(graph)


def refuse_dtypes(graph, arg_names=()):
    """The cpu backend computes every jitc dtype."""


def cached(graph) -> bool:
    """Is every compiled piece a first call of `graph` waits for (its kernels, the launcher,
    its own driver or else the wide driver, the collectors of a wide call) loaded or in the
    persistent cache, so that compiling it only loads machine code? Plans and emits the
    sources, compiles nothing."""
    with interrupts.deferred():
        from jitc.backends.native import cache
    return all(cache.is_cached(s, runtime=r) for s, r in _pieces(graph)[0])


def uncached(graph) -> list:
    """(source, runtime) of each piece not sealed on disk among those `cached` looks for and
    the function's own driver: what to compile for a later process's first call of `graph`
    to load machine code only (runtime/tiered.py hands them on when a process exits first)."""
    with interrupts.deferred():
        from jitc.backends.native import cache
    waited_for, driver = _pieces(graph)
    own = [] if driver is None else [(driver, False)]
    return [(s, r) for s, r in waited_for + own if not cache.is_cached(s, runtime=r, loaded=False)]


def _pieces(graph) -> tuple:
    """([(source, runtime)] of the pieces a first call of `graph` waits for, the source of
    its own driver, None if it runs the wide driver); runtime: a piece of the runtime
    store."""
    with interrupts.deferred():
        from jitc.backends.cpu import launcher, wide
        from jitc.backends.cpu.driver import WIDE_DRIVER_SOURCE, emit
        from jitc.backends.cpu.plan import plan_program
        from jitc.backends.native import cache

    program = plan_program(graph, graph.name)
    emitted = emit(program)
    runtime = [launcher.SOURCE]
    if emitted.wide:
        runtime += [WIDE_DRIVER_SOURCE, *wide.collector_sources(program.params + program.results)]
    elif not cache.is_cached(emitted.driver_source):  # the first calls run the wide driver
        runtime.append(WIDE_DRIVER_SOURCE)
    return (
        [(s, True) for s in runtime] + [(s, False) for s in emitted.kernel_sources],
        None if emitted.wide else emitted.driver_source,
    )
