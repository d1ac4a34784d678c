"""Reliability regressions (issue 14): each test fails on the code before its fix.

Races are tested in fresh processes: lazy initialization and the module cache only race on
a process's first traces and compiles.
"""

import os
import subprocess
import sys
import textwrap

import pytest

FIRST_TRACES_FROM_THREADS = textwrap.dedent("""
    import sys, threading
    import numpy as np
    import jitc

    errors, barrier = [], threading.Barrier(8)

    def work():
        try:  # eight jitted functions whose graphs share every kernel
            f = jitc.jit(lambda x: np.tanh(x * 2.0) + x.sum() * 3, backend=sys.argv[1])
            barrier.wait()
            got = f(np.arange(8.0))
            np.testing.assert_allclose(got, np.tanh(np.arange(8.0) * 2.0) + 84.0)
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(len(errors), errors[:2])
""")


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_first_traces_and_compiles_from_threads_in_a_fresh_process(backend, tmp_path):
    """Before: the first traces raced in lax.py's lazy import (`too many values to unpack`,
    and every later trace failed too); threads compiling a shared kernel found its module
    half-imported (`has no attribute 'kernel'`)."""
    script = tmp_path / "race.py"
    script.write_text(FIRST_TRACES_FROM_THREADS)
    env = dict(os.environ, JITC_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, str(script), backend], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "0 []", run.stdout
