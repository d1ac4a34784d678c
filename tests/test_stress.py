"""Issue 33's stress test: what a user's first scripts do, many at once, in jitc's default
mode. N processes share one cold cache directory (they compile the same kernels at the
same time), then N more run on the warm cache; each calls several different jitted
functions in a row (the abs-then-arccos sequence that deadlocked, a product with `submit`
after a plain call, an in-place update, a softmax), writes a report in between, and
records a Chrome trace (JITC_TRACE). Zero hangs, zero signals, every result NumPy's
(tests/fresh.py checks the processes; the script checks the numbers)."""

import json
import time
from concurrent.futures import ThreadPoolExecutor

from tests.fresh import run

PROCESSES = 4
SCRIPT = """
    import sys
    import numpy as np, jitc
    from jitc.runtime import tiered

    rng = np.random.default_rng(int(sys.argv[1]))
    for dt in (np.int8, np.int32, np.float32, np.float64):
        x = (rng.standard_normal(7) * 50).astype(dt)
        assert np.array_equal(jitc.jit(lambda x: np.abs(x))(x), np.abs(x))
    x = np.linspace(-1, 1, 9)
    assert np.allclose(jitc.jit(lambda x: np.arccos(x))(x), np.arccos(x))

    W = rng.standard_normal((8, 4)).astype(np.float32)

    @jitc.jit
    def dense(x, W):
        return np.tanh(x @ W)

    x = rng.standard_normal((2, 8)).astype(np.float32)
    assert np.allclose(dense(x, W), np.tanh(x @ W), atol=1e-6)
    assert np.allclose(dense.submit(x, W).result(), np.tanh(x @ W), atol=1e-6)

    @jitc.jit
    def sgd(w, g, lr):
        w -= lr * g
        return (w * w).sum()

    w, g = rng.standard_normal(64), rng.standard_normal(64)
    want_w = w.copy()
    for _ in range(3):
        got = sgd(w, g, 0.1)
        want_w -= 0.1 * g
        assert np.allclose(w, want_w) and np.isclose(got, (want_w * want_w).sum())

    report = dense.lower(x, W).compile().report(sys.argv[2])

    @jitc.jit
    def softmax(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    z = rng.standard_normal((16, 32))
    want = np.exp(z - z.max(axis=-1, keepdims=True))
    assert np.allclose(softmax(z), want / want.sum(axis=-1, keepdims=True))
    tiered.wait()
    assert np.allclose(softmax(z), want / want.sum(axis=-1, keepdims=True))
    assert np.allclose(dense.submit(x, W).result(), np.tanh(x @ W), atol=1e-6)
    print("ok")
"""


def _round(tmp_path, cache, label):
    def one(k):
        out = tmp_path / f"{label}{k}"
        out.mkdir()
        stdout = run(
            out,
            SCRIPT,
            k,
            out / "report.html",
            cache=cache,
            env={"JITC_TRACE": str(out / "trace.json")},
        )
        assert stdout.split() == ["ok"]
        events = json.loads((out / "trace.json").read_text())["traceEvents"]
        assert {e["args"]["backend"] for e in events if e["cat"] == "call"} >= {"cpu"}
        assert (out / "report.html").stat().st_size > 1000

    start = time.perf_counter()
    with ThreadPoolExecutor(PROCESSES) as pool:
        list(pool.map(one, range(PROCESSES)))
    return time.perf_counter() - start


def test_processes_on_a_cold_then_a_warm_cache_never_hang_crash_or_differ(tmp_path):
    cache = tmp_path / "cache"
    cold = _round(tmp_path, cache, "cold")
    warm = _round(tmp_path, cache, "warm")
    print(f"{PROCESSES} processes: cold cache {cold:.1f} s, warm cache {warm:.1f} s")
