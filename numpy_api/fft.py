"""np.fft's transforms: fft, ifft, rfft, irfft, hfft, ihfft and their 2-d and n-d forms, as
the `fft` primitive (kind fft / ifft / rfft / irfft over whole axes) with NumPy's dtypes,
lengths, axes and normalization.

NumPy's n= and s= crop or pad with zeros before each transform; here that happens when
tracing (a slice, or a join with zeros, which fuse), so the primitive only transforms whole
axes. NumPy runs an n-d transform as 1-d ones, axis by axis; over distinct axes that is one
primitive (one library call, scaled once for all its axes), and only repeated axes (NumPy
allows them) take one primitive per axis, in NumPy's order. hfft and ihfft are NumPy's
definitions: irfft of the conjugate, and the conjugate of rfft, with the normalization's
direction swapped.

Dtypes as NumPy 2: float16 and float32 compute in complex64 (irfft of float16 casts back to
float16), complex stays as it is, everything else computes in complex128.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from jitc.core import ops
from jitc.core.errors import UnsupportedError
from jitc.core.primitives import real_dtype
from jitc.core.source import where
from jitc.numpy_api.core import _lifted, implements, normalize_axis
from jitc.trace import lax

_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _norm(norm, name: str, swap: bool = False) -> str:
    if norm is None:
        norm = "backward"
    if not isinstance(norm, str) or norm not in ops.FFT_NORMS:
        raise ValueError(
            f"{name}: argument norm: invalid norm value {norm!r}; should be "
            f'"backward", "ortho" or "forward"{where()}'
        )
    return _SWAPPED[norm] if swap else norm


def _length(n, name: str, arg: str) -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name}: argument {arg} must be an integer, got {n!r}{where()}") from None
    if n < 1:
        raise ValueError(
            f"{name}: argument {arg}: invalid number of FFT data points ({n}) specified{where()}"
        )
    return n


def _axis(axis, ndim: int, name: str, arg: str) -> int:
    return normalize_axis(axis, ndim, f"{name}: argument {arg}")


def _operand(x, name: str, real_input: bool):
    """`x` in the dtype NumPy transforms it in."""
    if real_input and x.dtype.kind == "c":
        raise TypeError(
            f"{name}: argument a: the input must be real, got {x.dtype} (NumPy has no "
            f"loop for complex input){where()}"
        )
    dtype = np.result_type(x.dtype, 1j)
    return lax.convert(x, real_dtype(dtype) if real_input else dtype)


def _fit(x, axis: int, n: int):
    """`x` cropped, or padded with zeros, to length `n` along `axis` (NumPy's n= and s=)."""
    m = x.shape[axis]
    shape = x.shape[:axis] + (n,) + x.shape[axis + 1 :]
    if n <= m:
        return lax.slice_(x, (0,) * x.ndim, shape, (1,) * x.ndim)
    zeros = lax.full(x.ctx, x.shape[:axis] + (n - m,) + x.shape[axis + 1 :], 0, x.dtype)
    return zeros if m == 0 else lax.concatenate([x, zeros], axis)


def _apply(x, kind: str, axes: list, lengths: list, norm: str):
    """One primitive: `x` fitted to `lengths` along distinct `axes` (for irfft the last one
    to the n//2+1 points it reads), then transformed."""
    for i, (axis, n) in enumerate(zip(axes, lengths)):
        last = i == len(axes) - 1
        x = _fit(x, axis, n // 2 + 1 if last and kind == "irfft" else n)
    return lax.fft(x, kind, axes, lengths[-1], norm)


def _stages(kind: str, axes: list, lengths: list) -> list:
    """NumPy's 1-d transforms of an n-d one, in its order: (kind, axis, n)."""
    k = len(axes)
    if kind == "rfft":
        order = [("rfft", k - 1)] + [("fft", i) for i in reversed(range(k - 1))]
    elif kind == "irfft":
        order = [("ifft", i) for i in range(k - 1)] + [("irfft", k - 1)]
    else:
        order = [(kind, i) for i in reversed(range(k))]
    return [(stage, axes[i], lengths[i]) for stage, i in order]


def _transform(x, kind: str, axes: list, lengths: list, norm: str):
    if len(set(axes)) == len(axes):
        return _apply(x, kind, axes, lengths, norm)
    for stage, axis, n in _stages(kind, axes, lengths):
        x = _apply(x, stage, [axis], [n], norm)
    return x


def _real_result(y, dtype):
    """irfft's result in NumPy's dtype for an input of `dtype`: float16 gives float16."""
    return lax.convert(y, np.result_type(real_dtype(dtype), 1.0))


def _no_out(out, name: str):
    if out is not None:
        raise UnsupportedError(f"{name}: out= is not supported{where()}")


def _one_d(name, a, n, axis, norm, out, kind, hermitian=False):
    """NumPy's 1-d transforms; irfft's default n is 2 * (m - 1) of the m points it reads.
    hermitian: hfft (irfft of the conjugate) or ihfft (the conjugate of rfft), the
    normalization's direction swapped."""
    _no_out(out, name)
    norm = _norm(norm, name, swap=hermitian)
    a = _lifted(a)
    x = _operand(a, name, kind == "rfft")
    axis = _axis(axis, x.ndim, name, "axis")
    if n is None:
        n = x.shape[axis] if kind != "irfft" else 2 * (x.shape[axis] - 1)
    if hermitian and kind == "irfft":
        x = lax.conjugate(x)
    y = _transform(x, kind, [axis], [_length(n, name, "n")], norm)
    if kind == "irfft":
        return _real_result(y, a.dtype)
    return lax.conjugate(y) if hermitian else y


def _cook(name, x, s, axes, kind) -> tuple[list, list]:
    """NumPy's _cook_nd_args: the axes and their lengths (-1 or None: the default)."""
    if axes is None:
        if s is not None:
            warnings.warn(
                f"{name}: `axes` should not be `None` if `s` is not `None` (Deprecated in "
                f"NumPy 2.0){where()}",
                DeprecationWarning,
                stacklevel=2,
            )
        axes = range(-len(s), 0) if s is not None else range(x.ndim)
    axes = [_axis(a, x.ndim, name, "axes") for a in axes]
    if not axes and kind in ("rfft", "irfft"):
        raise IndexError(f"{name}: argument axes: no axes to transform{where()}")
    s = [None] * len(axes) if s is None else list(s)
    if len(s) != len(axes):
        raise ValueError(
            f"{name}: arguments s and axes have different lengths ({len(s)} and "
            f"{len(axes)}){where()}"
        )
    lengths = [x.shape[d] if v is None or v == -1 else v for v, d in zip(s, axes)]
    if kind == "irfft" and s[-1] is None:
        lengths[-1] = 2 * (lengths[-1] - 1)
    return axes, [_length(n, name, "s") for n in lengths]


def _n_d(name, a, s, axes, norm, out, kind):
    _no_out(out, name)
    norm = _norm(norm, name)
    a = _lifted(a)
    x = _operand(a, name, kind == "rfft")
    axes, lengths = _cook(name, x, s, axes, kind)
    if not axes:  # NumPy returns its input as it is
        return a
    y = _transform(x, kind, axes, lengths, norm)
    return _real_result(y, a.dtype) if kind == "irfft" else y


@implements(np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    return _one_d("np.fft.fft", a, n, axis, norm, out, "fft")


@implements(np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    return _one_d("np.fft.ifft", a, n, axis, norm, out, "ifft")


@implements(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    return _one_d("np.fft.rfft", a, n, axis, norm, out, "rfft")


@implements(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    return _one_d("np.fft.irfft", a, n, axis, norm, out, "irfft")


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    return _one_d("np.fft.hfft", a, n, axis, norm, out, "irfft", hermitian=True)


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    return _one_d("np.fft.ihfft", a, n, axis, norm, out, "rfft", hermitian=True)


@implements(np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    return _n_d("np.fft.fftn", a, s, axes, norm, out, "fft")


@implements(np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    return _n_d("np.fft.ifftn", a, s, axes, norm, out, "ifft")


@implements(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    return _n_d("np.fft.rfftn", a, s, axes, norm, out, "rfft")


@implements(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    return _n_d("np.fft.irfftn", a, s, axes, norm, out, "irfft")


@implements(np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _n_d("np.fft.fft2", a, s, axes, norm, out, "fft")


@implements(np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _n_d("np.fft.ifft2", a, s, axes, norm, out, "ifft")


@implements(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _n_d("np.fft.rfft2", a, s, axes, norm, out, "rfft")


@implements(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return _n_d("np.fft.irfft2", a, s, axes, norm, out, "irfft")
