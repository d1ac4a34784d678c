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
