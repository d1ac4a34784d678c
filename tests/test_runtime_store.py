"""jitc's runtime store (backends/native/cache.py, runtime_cache.py): the launcher and vmath's
functions compile once per installation, not once per cache directory or process; the
store is private and sealed like the cache, and a store that cannot be used costs nothing.

Every test runs jitc in a fresh process (the store is decided once per process), on one
small function whose kernel calls vmath's tanh and exp, against NumPy.
"""

import os
import pickle
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np, jitc
    from jitc.backends.cpu import vmath
    def soft(x):
        e = np.exp(np.tanh(x) - 1)
        return e / e.sum(axis=-1, keepdims=True)
    x = np.linspace(-3, 3, 48, dtype=np.float32).reshape(4, 12)
    np.testing.assert_allclose(jitc.jit(soft)(x), soft(x), rtol=2e-6)
    from jitc.backends.cpu.launcher import launcher_module
    launcher = launcher_module()
    print(json.dumps({"tanh_compiled": sum(vmath.tanh_f32._cache_misses.values()),
                      "tanh_loaded": sum(vmath.tanh_f32._cache_hits.values()),
                      "launcher": launcher.__file__,
                      "launcher_compiled": sum(launcher._parallel._cache_misses.values())}))
""")


def run(cache, store, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    full.update(JITC_CACHE_DIR=str(cache), JITC_RUNTIME_DIR=str(store), **env)
    return subprocess.run(
        [sys.executable, "-c", PROGRAM], env=full, capture_output=True, text=True, timeout=300
    )


def report(result) -> dict:
    import json

    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A runtime store one process filled (with its own cache directory)."""
    base = tmp_path_factory.mktemp("store")
    first = report(run(base / "cache", base / "store"))
    assert first["tanh_compiled"] == 1 and first["launcher_compiled"] == 1
    return base / "store"


def test_a_fresh_cache_directory_reuses_the_runtime_pieces(store, tmp_path):
    again = report(run(tmp_path / "cache", store))
    assert again["tanh_loaded"] == 1 and again["tanh_compiled"] == 0
    assert again["launcher_compiled"] == 0
    assert again["launcher"].startswith(str(store))
    assert not list((tmp_path / "cache").rglob("*.launch-*"))  # only the function's code


def test_planted_pickles_in_the_runtime_store_are_never_loaded(store, tmp_path):
    import shutil

    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    marker = tmp_path / "pwned"
    indexes = list(copy.rglob("__pycache__/*.nbi"))
    assert any("vmath.tanh_f32" in p.name for p in indexes)
    assert any(".launch-" in p.name for p in indexes)
    for index in indexes:
        for path in (index, index.with_name(index.name[: -len(".nbi")] + ".1.nbc")):
            path.write_bytes(pickle.dumps(Planted(marker)))
    rebuilt = report(run(tmp_path / "cache", copy))
    assert not marker.exists()
    assert rebuilt["tanh_compiled"] == 1 and rebuilt["launcher_compiled"] == 1


class Planted:
    """Unpickling it creates `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_runtime_store_others_can_write_is_refused(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o777)
    result = run(tmp_path / "cache", store)
    assert result.returncode != 0
    assert (
        f"refusing to use the jitc cache directory {store}: other users can write" in result.stderr
    )
    assert "set JITC_RUNTIME_DIR to a private directory" in result.stderr


def test_an_unusable_runtime_store_leaves_the_pieces_in_the_cache_silently(tmp_path):
    result = run(tmp_path / "cache", "/proc/jitc-no-store")  # no one can create it
    got = report(result)
    assert got["launcher"].startswith(str(tmp_path / "cache"))
    assert got["tanh_compiled"] == 1
    assert "Warning" not in result.stderr


def test_functions_that_differ_only_in_constants_share_their_kernels():
    """Constants (captured arrays, Python scalars) are run-time values, not kernel source:
    a second such function loads no new kernel or driver module."""
    import sys

    import numpy as np

    import jitc
    from jitc.runtime import tiered

    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    w1, w2 = np.arange(6, dtype=np.float32), np.full(6, 3, np.float32)
    functions = [lambda x: np.tanh(x * w1) + 0.5, lambda x: np.tanh(x * w2) + 0.25]
    before = {m for m in sys.modules if m.startswith("jitc_")}
    loaded = []
    for fn in functions:
        np.testing.assert_allclose(jitc.jit(fn, backend="cpu")(x), fn(x), rtol=2e-6)
        tiered.wait()  # the first function's own driver compiles in the background
        loaded.append({m for m in sys.modules if m.startswith("jitc_")} - before)
        before |= loaded[-1]
    assert loaded[1] == set()
