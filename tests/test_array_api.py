"""Traced arrays speak the Array API: code that asks an array for its namespace (SciPy's
softmax/log_softmax/logsumexp with SCIPY_ARRAY_API=1, array-API libraries) traces, with
NumPy's answers and NumPy's side effects; SciPy without the switch is refused at the
user's line, naming the switch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitc
from jitc.core.errors import TracerError, UnsupportedError


def normalize_rows(x):
    """Array API code as a library writes it: the namespace comes from the array."""
    xp = x.__array_namespace__()
    y = xp.asarray(x, copy=True)
    y[:, 0] = 0.0  # writes into the copy only
    z = xp.asarray(y, dtype=xp.float32)
    return xp.exp(y) / xp.sum(xp.exp(y), axis=-1, keepdims=True), z, xp.astype(x, xp.int32)


def test_array_api_code_traces_with_numpys_answers_and_leaves_the_argument_alone():
    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    x0 = x.copy()
    want = normalize_rows(x.copy())
    got = jitc.jit(normalize_rows)(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-15)
    np.testing.assert_array_equal(x, x0)


def test_asarray_without_copy_is_the_same_array_so_writes_reach_the_caller():
    def zero_first(x):
        xp = x.__array_namespace__()
        y = xp.asarray(x)
        y[0] = 0.0
        return y * 2

    x = np.arange(1.0, 5.0)
    expected_x = x.copy()
    want = zero_first(expected_x)
    got = jitc.jit(zero_first)(x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, expected_x)  # NumPy's side effect on the caller


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda xp, x: xp.asarray(x, device="gpu"), UnsupportedError, "device='gpu'"),
        (lambda xp, x: xp.asarray(x, dtype=xp.float32, copy=False), ValueError, "copy=False"),
        (
            lambda xp, x: np.astype(x, np.float32, device="gpu"),
            UnsupportedError,
            "np.astype: device='gpu'",
        ),
    ],
)
def test_namespace_errors_name_the_argument_and_the_line(call, error, message):
    def f(x):
        return call(x.__array_namespace__(), x)

    with pytest.raises(error, match=message) as info:
        jitc.jit(f)(np.ones(3))
    assert "test_array_api.py" in str(info.value)


@pytest.mark.skipif(os.environ.get("SCIPY_ARRAY_API") == "1", reason="the switch is on")
def test_scipy_without_its_array_api_switch_converts_in_python_and_refuses_in_c():
    """SciPy's Python code converts with np.asarray, which keeps a traced array traced
    while tracing (trace/creation.py): softmax traces. A function that converts in compiled
    code (ndimage) is refused at the user's line, naming the switch."""
    import scipy.ndimage
    import scipy.special

    def softmax(x):
        return scipy.special.softmax(x, axis=-1)

    def smooth(x):
        return scipy.ndimage.uniform_filter1d(x, 3)

    def special(x):  # SciPy's ufuncs beside its Python functions, as with the switch on
        return scipy.special.erf(x) + scipy.special.expit(x) - scipy.special.logsumexp(x, axis=0)

    x = np.linspace(-2, 2, 6).reshape(2, 3)
    np.testing.assert_allclose(jitc.jit(softmax)(x), softmax(x), rtol=1e-12)
    np.testing.assert_allclose(jitc.jit(special)(x), special(x), rtol=1e-14)
    with pytest.raises(TracerError) as info:
        jitc.jit(smooth)(x)
    message = str(info.value)
    assert "scipy.ndimage.uniform_filter1d" in message and "SCIPY_ARRAY_API=1" in message
    assert f"test_array_api.py:{smooth.__code__.co_firstlineno + 1}" in message


SCIPY_PROGRAM = textwrap.dedent("""
    import numpy as np, scipy.special as sp, jitc

    def attention_scores(q, k, b):
        s = q @ k.T / np.sqrt(q.shape[-1])
        return (sp.softmax(s, axis=-1), sp.log_softmax(s, axis=0), sp.logsumexp(s, axis=-1),
                sp.logsumexp(s, b=b, axis=1, keepdims=True), sp.logsumexp(s), sp.softmax(s),
                sp.erf(s) + sp.expit(s) - sp.logsumexp(s, axis=-1, keepdims=True) * sp.erfc(b))

    rng = np.random.default_rng(0)
    for dtype, rtol in ((np.float64, 1e-14), (np.float32, 2e-6)):
        q, k = rng.standard_normal((6, 8)).astype(dtype), rng.standard_normal((5, 8)).astype(dtype)
        b = rng.random((6, 5)).astype(dtype)
        q[0, :] = -np.inf  # a row of -inf scores: SciPy's nan/-inf handling
        args = (q, k, b)
        before = [a.copy() for a in args]
        want = attention_scores(*args)
        for backend in ("reference", "cpu"):
            got = jitc.jit(attention_scores, backend=backend)(*args)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape, (backend, g.dtype, w.dtype)
                np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True)
            for a, a0 in zip(args, before):
                np.testing.assert_array_equal(a, a0)
    print("ok")
""")


def test_scipy_softmax_log_softmax_and_logsumexp_trace_with_scipys_switch_on():
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    run = subprocess.run(
        [sys.executable, "-c", SCIPY_PROGRAM], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("ok")


def test_a_failure_inside_an_installed_librarys_function_names_it_and_the_users_line(
    tmp_path, monkeypatch
):
    """Code the user calls from site-packages fails at its own line; the message names
    that line, the library function and the user's call."""
    lib = tmp_path / "site-packages"
    lib.mkdir()
    (lib / "fakelib.py").write_text(
        "import numpy as np\n\ndef total(x):\n    return float(np.sum(x)) + 1.0\n\n"
        "OUT = np.zeros(3)\n\ndef fill(x):\n    OUT[:] = x\n    return OUT\n"
    )
    monkeypatch.syspath_prepend(str(lib))
    import fakelib

    def f(x):
        return fakelib.total(x) * x

    with pytest.raises(TracerError) as info:
        jitc.jit(f)(np.ones(3))
    message = str(info.value)
    assert f"fakelib.py:4 in fakelib.total, called at {__file__}:" in message, message
    assert f":{f.__code__.co_firstlineno + 1})" in message, message

    def g(x):
        return fakelib.fill(x)

    with pytest.raises(TracerError) as info:
        jitc.jit(g)(np.ones(3))
    message = str(info.value)
    assert "fakelib.fill converts its argument with np.asarray" in message, message
    assert f"(at {__file__}:{g.__code__.co_firstlineno + 1})" in message, message
    assert "call fakelib.fill outside the jitted function" in message, message
