"""The cpu backend: numba kernels for every fusion and one compiled driver per function."""


def is_available():
    try:
        import numba  # noqa: F401
    except ImportError as e:
        return False, f"numba is not installed ({e})"
    return True, ""


def compile(graph):
    from jitc.backends.cpu.executable import CpuExecutable

    return CpuExecutable(graph)


def cached(graph) -> bool:
    """Is every compiled piece a call of `graph` runs (its kernels, its driver, the launcher,
    the collectors of a wide call) loaded or in the persistent cache, so that compiling it
    only loads machine code? Plans and emits the sources, compiles nothing."""
    from jitc.backends.cpu import cache, launcher, wide
    from jitc.backends.cpu.driver import emit
    from jitc.backends.cpu.plan import plan_program

    program = plan_program(graph, graph.name)
    emitted = emit(program)
    sources = emitted.kernel_sources + [emitted.driver_source]
    if emitted.wide:
        sources += wide.collector_sources(program.params + program.results)
    return cache.is_cached(launcher.SOURCE, runtime=True) and all(map(cache.is_cached, sources))
