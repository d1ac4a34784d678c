"""AOT signature digests: libNAME.so, NAME.py, NAME.h and the C test agree on what was
compiled. A library built for another shape (which wrote past the result arrays: SIGSEGV),
for another function with the same shapes (its numbers, silently), by an older jitc, or a
truncated copy (SIGBUS) is refused with an error naming the file, before any call.

Every swap imports the loader in a fresh process, so a regression shows as a failed test
with the child's exit status, not as a dead pytest.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

import jitc.aot as aot  # noqa: E402
from jitc.aot import link  # noqa: E402
from jitc.aot.link import build_object, signature_digest, symbol_sizes  # noqa: E402

CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no system C compiler to link libfn.so")


def _twice(x):
    return np.tanh(x) * 2


def _thrice(x):
    return np.tanh(x) * 3


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """key -> (artifact, directory), all named fn as rebuilds in one place would be: "mine"
    (_twice, f32[4,8]), "shape" (_twice, f32[64,64]: a bigger result, no temp arena either,
    so the old temp-bytes check passed), "other" (_thrice, f32[4,8])."""
    out = {}
    for key, fn, spec in [
        ("mine", _twice, "f32[4,8]"),
        ("shape", _twice, "f32[64,64]"),
        ("other", _thrice, "f32[4,8]"),
    ]:
        art = aot.compile(fn, spec, name="fn")
        directory = tmp_path_factory.mktemp(key)
        art.write(str(directory), emit_test=True)
        out[key] = (art, directory)
    return out


@pytest.fixture(scope="module")
def old_object(built, tmp_path_factory):
    """mine's object as a jitc before digests built it (no fn_signature_digest)."""
    art, _ = built["mine"]
    path = tmp_path_factory.mktemp("old") / "fn.o"
    path.write_bytes(build_object(art.program.kernels, art.plan, "host"))
    return path


def _import_beside(tmp_path, built, library: bytes):
    """mine's fn.py with `library` as its libfn.so, imported and called in a new process."""
    directory = tmp_path / "fn"
    shutil.copytree(built["mine"][1], directory)
    (directory / "libfn.so").write_bytes(library)
    code = "import numpy as np, fn; print(fn.fn(np.ones((4, 8), np.float32)).sum())"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=directory, capture_output=True, text=True, timeout=60
    )


def _refused(run, *says):
    assert run.returncode == 1, (
        f"exit {run.returncode} (negative: killed by a signal)\n{run.stdout}{run.stderr}"
    )
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and "fn/libfn.so: " in last, last
    assert "rebuild fn.py and libfn.so together with `jitc aot`" in last, last
    for s in says:
        assert s in last, last


def _library(built, key) -> bytes:
    return (built[key][1] / "libfn.so").read_bytes()


# --------------------------------------------------------------------------- what it is


def test_digest_is_in_the_object_header_loader_and_size_report(built):
    art, directory = built["mine"]
    assert re.fullmatch("[0-9a-f]{32}", art.digest)
    assert len({built[k][0].digest for k in built}) == 3
    assert symbol_sizes(art.object)["fn_signature_digest"] == 33
    assert art.digest.encode() + b"\0" in art.object
    header = (directory / "fn.h").read_text()
    assert f'#define FN_SIGNATURE_DIGEST "{art.digest}"' in header
    assert "extern const char fn_signature_digest[33];" in header
    assert f"DIGEST = '{art.digest}'" in (directory / "fn.py").read_text()
    assert art.size_report()["signature_digest"] == art.digest
    assert f"signature digest {art.digest}" in art.format_size_report()


def test_digest_covers_what_makes_objects_incompatible(built, monkeypatch):
    art, _ = built["mine"]
    plan, code = art.plan, art.source
    digest = signature_digest(plan, code)
    assert digest == art.digest  # a rebuild of the same plan and kernels keeps it
    weights = dataclasses.replace(plan, constants=(np.zeros(3, np.float32),))
    changed = [
        signature_digest(dataclasses.replace(plan, name="fn2"), code),
        signature_digest(dataclasses.replace(plan, inout=(0,)), code),
        signature_digest(dataclasses.replace(plan, temp_bytes=64), code),
        signature_digest(weights, code),
        signature_digest(dataclasses.replace(plan, constants=(np.ones(3, np.float32),)), code),
        signature_digest(plan, code + "# another kernel\n"),
    ]
    monkeypatch.setattr(link, "ABI_VERSION", link.ABI_VERSION + 1)
    changed.append(signature_digest(plan, code))
    assert len({digest, *changed}) == 1 + len(changed)


# --------------------------------------------------------------------------- the loader


def test_loader_accepts_its_own_library(built, tmp_path):
    run = _import_beside(tmp_path, built, _library(built, "mine"))
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) == pytest.approx(float(_twice(np.ones((4, 8), np.float32)).sum()))


def test_library_built_for_another_shape_is_refused(built, tmp_path):
    run = _import_beside(tmp_path, built, _library(built, "shape"))
    _refused(
        run,
        f"its signature digest is {built['shape'][0].digest}, expected {built['mine'][0].digest}",
    )


def test_library_of_another_function_with_the_same_shapes_is_refused(built, tmp_path):
    run = _import_beside(tmp_path, built, _library(built, "other"))
    _refused(run, f"its signature digest is {built['other'][0].digest}", "another function")


def test_library_without_a_digest_is_refused(built, old_object, tmp_path):
    so = tmp_path / "old.so"
    subprocess.run([CC, "-shared", "-o", str(so), str(old_object)], check=True)
    _refused(
        _import_beside(tmp_path, built, so.read_bytes()),
        "no fn_signature_digest (built by a jitc older",
    )


@pytest.mark.parametrize("keep", [0, 40, "half", "all but 1"])
def test_truncated_library_is_refused_before_it_is_mapped(built, tmp_path, keep):
    whole = _library(built, "mine")
    n = {"half": len(whole) // 2, "all but 1": len(whole) - 1}.get(keep, keep)
    says = "not a 64-bit little-endian ELF" if n < 64 else f"truncated: {n} bytes"
    _refused(_import_beside(tmp_path, built, whole[:n]), says)


def test_object_file_in_place_of_the_library_is_refused(built, tmp_path):
    obj = (built["mine"][1] / "fn.o").read_bytes()  # ELF and whole, but not a shared library
    _refused(_import_beside(tmp_path, built, obj), "cannot be loaded (")


def test_missing_library_is_refused(built, tmp_path):
    directory = tmp_path / "fn"
    shutil.copytree(built["mine"][1], directory)
    os.remove(directory / "libfn.so")
    run = subprocess.run(
        [sys.executable, "-c", "import fn"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=60,
    )
    _refused(run, "No such file or directory")


# --------------------------------------------------------------------------- C


def _c_test(built, tmp_path, obj):
    """mine's fn_test.c (and fn.h) linked with `obj`: (link result, run result or None)."""
    exe = tmp_path / "fn_test"
    link_run = subprocess.run(
        [CC, "fn_test.c", str(obj), "-o", str(exe)],
        cwd=built["mine"][1],
        capture_output=True,
        text=True,
    )
    if link_run.returncode:
        return link_run, None
    return link_run, subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)


def test_c_test_checks_the_digest_before_calling(built, tmp_path):
    mine = built["mine"][0].digest
    _, run = _c_test(built, tmp_path, built["mine"][1] / "fn.o")
    assert run.returncode == 0 and run.stdout.startswith("PASS fn"), run.stdout
    for key in ("shape", "other"):
        _, run = _c_test(built, tmp_path, built[key][1] / "fn.o")
        assert run.returncode == 1, run
        assert run.stdout == (
            f"FAIL fn: fn.o has signature digest {built[key][0].digest}, "
            f"fn.h expects {mine}: rebuild both with jitc aot\n"
        )


def test_c_test_does_not_link_with_an_object_without_a_digest(built, old_object, tmp_path):
    link_run, _ = _c_test(built, tmp_path, old_object)
    assert link_run.returncode != 0 and "fn_signature_digest" in link_run.stderr
