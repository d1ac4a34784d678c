"""Scripts run as a user runs them: a fresh interpreter, jitc's default settings.

The suite's own process compiles synchronously (conftest.py sets JITC_COMPILE=sync); a user
gets tiered compiles, a cache directory that may be cold, and whatever threads jitc starts.
`run` runs a script that way: JITC_COMPILE unset, a cache directory of the test's own
unless one is given, and JITC_CHECK_LOCKS=1, which makes a lock taken out of jitc's order
an error instead of a deadlock that strikes one run in three. A script that does not finish
in time fails the test with every thread's stack (faulthandler); so does one killed by a
signal, or one whose stderr shows a traceback (also one Python ignored at exit) or an LLVM
abort.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

HANG_S = 150  # a script still running after this long is hung (a cold compile: ~1-5 s)
PRELUDE = f"import faulthandler\nfaulthandler.dump_traceback_later({HANG_S}, exit=True)\n"
BAD_STDERR = ("Traceback", "Exception ignored", "LLVM ERROR", "Fatal Python error")


def run(
    tmp_path, source: str, *args, env=None, cache=None, name="script.py", allow_stderr=False
) -> str:
    """Run `source` (dedented) as `python name args...` in `tmp_path`; its stdout."""
    script = tmp_path / name
    script.write_text(PRELUDE + textwrap.dedent(source))
    where = f"{name} {' '.join(map(str, args))}".strip()
    return _checked(
        [sys.executable, str(script), *map(str, args)], where, tmp_path, env, cache, allow_stderr
    )


def run_command(tmp_path, command: str, env=None, cache=None) -> str:
    """Run a shell command line in `tmp_path` as a user types it, this interpreter's
    environment first on PATH (its `python` and `jitc`); its stdout. Hangs are caught by
    the timeout alone (no faulthandler in a command's processes)."""
    bin_dir = os.path.dirname(sys.executable)
    env = {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), **(env or {})}
    return _checked(["bash", "-c", command], command, tmp_path, env, cache, False, timeout=HANG_S)


def _checked(argv, where, cwd, env, cache, allow_stderr, timeout=HANG_S + 60) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "JITC_COMPILE"}
    environ.update(
        JITC_CACHE_DIR=str(cache or cwd / "cache"), JITC_CHECK_LOCKS="1", PYTHONFAULTHANDLER="1"
    )
    environ.update(env or {})
    environ = {k: v for k, v in environ.items() if v is not None}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=environ, cwd=cwd, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{where} hung:\n{e.stderr}") from e
    assert done.returncode >= 0, f"{where} was killed by signal {-done.returncode}:\n{done.stderr}"
    assert done.returncode == 0, f"{where} failed ({done.returncode}):\n{done.stderr}"
    if not allow_stderr:
        bad = [b for b in BAD_STDERR if b in done.stderr]
        assert not bad, f"{where} printed {bad} on stderr:\n{done.stderr}"
    return done.stdout
