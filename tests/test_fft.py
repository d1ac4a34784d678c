"""np.fft's transforms inside @jitc.jit (fft ... ihfft, 2-d and n-d) against NumPy: dtypes,
n= and s= (padding and cropping), axes, norms and repeated axes on the reference and cpu
backends; sizes by hypothesis; a filter between rfft and irfft; NumPy's errors with the
argument, the function and the user's line; the cuda backend's and AOT's refusal.

One jitted function per test computes many transforms, so the cpu kernels compile once."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitc
from jitc.backends.native import background
from jitc.core.errors import ShapeError, UnsupportedError
from jitc.core.primitives import PRIMITIVES

HERE = "test_fft.py"


def _close(got, want):
    """Same dtype and shape; values within a few ulp of the largest magnitude (DUCC0 and
    NumPy's pocketfft round differently)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            try:
                _close(g, w)
            except AssertionError as e:
                raise AssertionError(f"result {k}: {e}") from None
        return
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    if want.size:
        eps = np.finfo(want.dtype).eps
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got.astype(np.complex128) - want).max())
        assert err <= 16 * eps * scale, (err, scale, want.dtype)


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def transforms(x32, x64, c64, c128, i32, b):
    """x*: real (4, 6); c*: complex (4, 6); i32, b: (5,)."""
    return (
        np.fft.fft(x32),
        np.fft.fft(c64, n=9, axis=0),
        np.fft.ifft(c128, n=4, norm="ortho"),
        np.fft.fft(i32),
        np.fft.ifft(b, norm="forward"),
        np.fft.rfft(x32, n=9),
        np.fft.rfft(x64, axis=0, norm="forward"),
        np.fft.rfft(i32, n=3),
        np.fft.irfft(c64),
        np.fft.irfft(c128, n=5, axis=0, norm="ortho"),
        np.fft.irfft(x64, n=11),
        np.fft.hfft(c128, n=7),
        np.fft.hfft(c64, norm="forward"),
        np.fft.ihfft(x32),
        np.fft.ihfft(x64, n=10, axis=0, norm="ortho"),
        np.fft.fft2(c128, s=(3, 8)),
        np.fft.ifft2(x64, norm="forward"),
        np.fft.rfft2(x32),
        np.fft.irfft2(c64, s=(5, 7)),
        np.fft.fftn(c64, axes=(1, 0, 1)),
        np.fft.ifftn(c128, s=(6, -1), axes=(0, 1)),
        np.fft.rfftn(x64, s=(2, 3), axes=(1, 0), norm="ortho"),
        np.fft.irfftn(c128, axes=(0, 1, 1)),
        np.fft.fftn(x64[None], axes=()),
    )


def test_transforms_match_numpy(backend):
    args = (
        _values((4, 6), np.float32),
        _values((4, 6), np.float64, 1),
        _values((4, 6), np.complex64, 2),
        _values((4, 6), np.complex128, 3),
        _values((5,), np.int32, 4),
        _values((5,), np.bool_, 5),
    )
    _close(jitc.jit(transforms, backend=backend)(*args), transforms(*args))


# ------------------------------------------------------------------ sizes


def lengths(x2, x3, x8, x13, x16, x31, x97, z):
    """Primes, powers of two and odd lengths, cropped and padded; an empty batch."""
    return (
        np.fft.fft(x2),
        np.fft.rfft(x3, n=8),
        np.fft.fft(x8, n=5),
        np.fft.irfft(np.fft.rfft(x13), n=13),
        np.fft.ifft(x16, n=31),
        np.fft.rfft(x31, n=16),
        np.fft.fft(x97),
        np.fft.irfft(x97, n=50),
        np.fft.fft(z),
        np.fft.rfft(x2, n=1),
    )


def test_sizes_primes_powers_of_two_padding_and_cropping(backend):
    args = [_values((n,), np.float64, n) for n in (2, 3, 8, 13, 16, 31, 97)]
    args.append(np.zeros((0, 4), np.complex128))
    _close(jitc.jit(lengths, backend=backend)(*args), lengths(*args))


@settings(max_examples=15, deadline=None)
@given(
    m=st.integers(1, 40),
    n=st.integers(1, 40),
    batch=st.integers(1, 3),
    norm=st.sampled_from(["backward", "ortho", "forward"]),
    data=st.data(),
)
def test_any_length_and_n_on_the_reference_backend(m, n, batch, norm, data):
    """The trace's cropping and padding, and the result shapes, over lengths by hypothesis."""
    axis = data.draw(st.sampled_from([0, 1, -1]))
    x = _values((batch, m) if axis else (m, batch), np.float64, m)

    def f(x):
        c = np.fft.rfft(x, n=n, axis=axis, norm=norm)
        return np.fft.fft(x, n=n, axis=axis, norm=norm), c, np.fft.irfft(c, n=n, axis=axis)

    _close(jitc.jit(f, backend="reference")(x), f(x))


# ------------------------------------------------------------------ a filter


def lowpass(x, H):
    return np.fft.irfft(np.fft.rfft(x) * H, n=len(x))


def test_a_filter_between_rfft_and_irfft(backend):
    x = _values((1001,), np.float64)
    H = 1 / (1 + np.arange(501.0) / 50)
    _close(jitc.jit(lowpass, backend=backend)(x, H), lowpass(x, H))


# ------------------------------------------------------------------ errors

X = np.arange(6.0)
ERRORS = [
    (lambda x: np.fft.fft(x, n=0), ValueError, r"np\.fft\.fft: argument n: .*\(0\)"),
    (lambda x: np.fft.irfft(x[:1]), ValueError, r"np\.fft\.irfft: argument n: .*\(0\)"),
    (lambda x: np.fft.rfftn(x, s=(-3,), axes=(0,)), ValueError, r"np\.fft\.rfftn: argument s"),
    (lambda x: np.fft.fft(x, n=2.0), TypeError, r"np\.fft\.fft: argument n must be an integer"),
    (lambda x: np.fft.fft(x, axis=1), IndexError, r"np\.fft\.fft: argument axis: axis 1 is out"),
    (lambda x: np.fft.fft2(x), IndexError, r"np\.fft\.fft2: argument axes: axis -2"),
    (lambda x: np.fft.fft(x, axis="0"), TypeError, r"np\.fft\.fft: argument axis must be"),
    (lambda x: np.fft.ifft(x, norm="none"), ValueError, r"np\.fft\.ifft: argument norm: .*'none'"),
    (lambda x: np.fft.hfft(x, norm=1), ValueError, r"np\.fft\.hfft: argument norm"),
    (lambda x: np.fft.rfft(x * 1j), TypeError, r"np\.fft\.rfft: argument a: .*complex128"),
    (lambda x: np.fft.ihfft(x * 1j), TypeError, r"np\.fft\.ihfft: argument a: .*complex128"),
    (lambda x: np.fft.fftn(x, s=(2, 2), axes=(0,)), ValueError, r"np\.fft\.fftn: arguments s and"),
    (lambda x: np.fft.irfftn(x, axes=()), IndexError, r"np\.fft\.irfftn: argument axes: no axes"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_numpys_errors_name_the_argument_the_function_and_the_line(k):
    fn, error, message = ERRORS[k]
    with pytest.raises(error):
        fn(X)  # NumPy raises the same type
    with pytest.raises(error, match=message) as e:
        jitc.jit(fn, backend="reference")(X)
    assert HERE in str(e.value)


def test_out_is_refused():
    with pytest.raises(UnsupportedError, match=r"np\.fft\.fft: out= is not supported") as e:
        jitc.jit(lambda x: np.fft.fft(x, out=x * 1j), backend="reference")(X)
    assert HERE in str(e.value)


def test_s_without_axes_warns_as_numpy_does():
    def f(x):
        return np.fft.fftn(x, s=(3, 5))

    x = _values((4, 6), np.float64)
    background.wait()  # a numba compile in the background enters catch_warnings(record=True),
    #  which swaps the process-wide warning hooks: pytest.warns could miss this warning
    with pytest.warns(DeprecationWarning, match=r"np\.fft\.fftn: `axes` should not be `None`"):
        got = jitc.jit(f, backend="reference")(x)
    with pytest.warns(DeprecationWarning):
        _close(got, f(x))


@pytest.mark.parametrize(
    "attrs, operand, message",
    [
        ({"kind": "dct"}, ((4,), "complex128"), "unknown kind 'dct'"),
        ({"norm": "none"}, ((4,), "complex128"), "unknown norm 'none'"),
        ({"axes": (0, 0)}, ((4,), "complex128"), r"axes \(0, 0\) are not distinct"),
        ({}, ((4,), "float16"), "operand must be float32, float64"),
        ({"kind": "fft"}, ((4,), "float64"), "fft of float64"),
        ({"kind": "irfft"}, ((4,), "complex128"), "irfft of length 4 over axes"),
    ],
)
def test_the_primitive_checks_its_operand(attrs, operand, message):
    a = {"kind": "fft", "axes": (0,), "n": 4, "norm": "backward", **attrs}
    shape, dtype = operand
    with pytest.raises(ShapeError, match=f"fft: {message}"):
        PRIMITIVES["fft"].infer([(shape, np.dtype(dtype))], a)


# ------------------------------------------------------------------ refusals


def spectrum(x):
    return np.abs(np.fft.rfft2(x))


def test_the_cuda_backend_refuses_by_name():
    """No FFT kernels on the GPU: building its program (no GPU needed) names the call."""
    cuda = pytest.importorskip("jitc.backends.cuda")
    graph = (
        jitc.jit(spectrum)
        .lower(jitc.ShapeDtype((8, 8), np.float32))
        .compile(backend="reference")
        .graph
    )
    with pytest.raises(UnsupportedError, match=r"np\.fft\.rfft2 is not supported on the cuda"):
        cuda.kernels(graph)


def test_aot_refuses_by_name(tmp_path):
    import jitc.aot as aot

    with pytest.raises(UnsupportedError, match=r"np\.fft\.rfft2 is not supported in AOT") as e:
        aot.compile(spectrum, "f32[8,8]", name="spectrum").write(str(tmp_path))
    assert HERE in str(e.value)


def test_the_cpu_backend_without_rocket_fft_names_the_extra(monkeypatch):
    """rocket-fft is pyproject's `fft` extra: without it the cpu backend refuses by name
    (the reference backend computes with NumPy itself)."""
    from jitc.backends.cpu import plan

    monkeypatch.setattr(plan, "fft_available", lambda: False)

    def spectrum(x):
        return np.fft.fft(x) * 2

    with pytest.raises(UnsupportedError, match=r"np\.fft\.fft on the cpu .*jitc\[fft\].*test_fft"):
        jitc.jit(spectrum, backend="cpu").lower(np.ones(8)).compile()
