"""The benchmark runner must not rot: every workload at tiny sizes (no timing is asserted)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Two halves of about the same time (~60 s each alone), run side by side on CI's two cores.
# W14 (FFT) and W15 (LAPACK) are left out: tests/test_fft.py and test_linalg_factorizations.py
# check the same functions against NumPy, and CI's 30 minutes are tight.
HALVES = ("W1,W4,W6,W8,W9,W16", "W2,W3,W5,W7,W10,W11,W12,W13")


def test_benchmark_runner_quick(tmp_path):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks", "--quick", "--repeats", "1", "--strict"]
            + ["--only", half],
            cwd=ROOT,
            env=dict(os.environ, JITC_CACHE_DIR=str(tmp_path / f"cache{i}")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, half in enumerate(HALVES)
    ]
    outs = [p.communicate(timeout=900) for p in procs]
    out = "".join(o for o, _ in outs)
    # every implementation, jitc included, matches NumPy on every workload (--strict: a
    # mismatch or an error is exit status 1, and the run lists it after "failure(s):")
    for p, (o, e) in zip(procs, outs):
        assert p.returncode == 0 and "failure(s):" not in o, o[-3000:] + e[-3000:]
    for key in ",".join(HALVES).split(","):
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
