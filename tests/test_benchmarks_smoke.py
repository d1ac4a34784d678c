"""The benchmark runner must not rot: every workload at tiny sizes (no timing is asserted)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_benchmark_runner_quick(tmp_path):
    env = dict(os.environ, JITC_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--repeats", "1", "--strict"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = p.stdout
    # every implementation, jitc included, matches NumPy on every workload (--strict: a
    # mismatch or an error is exit status 1, and the run lists it after "failure(s):")
    assert p.returncode == 0 and "failure(s):" not in out, out[-3000:] + p.stderr[-3000:]
    for key in ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"):
        assert f"== {key} " in out, f"no table for {key}:\n{out}"
    assert "copy bandwidth" in out and "jitc/NumPy" in out


def test_workloads_run_under_numpy():
    sys.path.insert(0, ROOT)
    from benchmarks.workloads import WORKLOADS

    for make in WORKLOADS.values():
        for case in make(quick=True):
            out = case.run(case.fn, *case.args) if case.run else case.fn(*case.args)
            assert out is not None


def test_dask_benchmark_quick():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_dask",
            "--rows",
            "2048",
            "--chunk",
            "512",
            "--workers",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "| layernorm | 1 | 4 |" in p.stdout and "| softmax MLP | 1 | 4 |" in p.stdout


def test_async_benchmark_quick():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_async",
            "--hidden",
            "8",
            "--steps",
            "5",
            "--rounds",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    for loop in ("sync", "naive", "submit"):
        assert f"| {loop} |" in p.stdout, p.stdout
