"""The tree is formatted by `ruff format` and clean under `ruff check` (pyproject.toml's
settings): CI runs both through this test, so neither drifts."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ruff(*args) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (it is in the test extra: pip install -e .[test])")
    return subprocess.run([exe, *args, ROOT], capture_output=True, text=True, cwd=ROOT)


def test_ruff_check_is_clean():
    done = ruff("check", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tree_is_formatted():
    done = ruff("format", "--check", "--quiet")
    assert done.returncode == 0, "run `ruff format .`:\n" + done.stdout + done.stderr
