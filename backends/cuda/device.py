"""Device memory and streams: CuPy's pool on a GPU, numba device arrays otherwise.

Two implementations of one small interface, chosen once per process by `current()`:

- CupyDevice (a GPU with CuPy installed): buffers come from CuPy's memory pool, kernels run on
  CuPy's current stream (numba launches on the same stream through `external_stream`), so
  kernels, cuBLAS calls and the caller's own CuPy work stay ordered without host syncs.
  Buffers are handed to numba kernels as `as_cuda_array(..., sync=False)` views: numba would
  otherwise synchronize the producer's stream at every launch. That path costs ~200 µs a
  launch on the host, so only a kernel's first launch takes it: later launches go straight to
  the compiled kernel (`DirectLaunch`).
- NumbaDevice (the simulator, or a GPU without CuPy): numba device arrays on one numba stream;
  no cuBLAS, dots run on our kernels.

Inputs that are NumPy arrays are copied in and results copied back; inputs that are already on
the device (`__cuda_array_interface__`, or numba/simulator device arrays) are used in place
when C-contiguous, and results stay on the device: numba device arrays when every device input
is one, else CuPy arrays.
"""

from __future__ import annotations

import ctypes
import functools
import sys

import numpy as np

from jitc.backends.cuda import toolchain


def is_numba_array(x) -> bool:
    return bool(getattr(type(x), "__cuda_ndarray__", False))


class NumbaDevice:
    name = "numba"
    has_blas = False

    def __init__(self):
        from numba import cuda

        self.cuda = cuda
        self.simulator = toolchain.simulator_enabled()
        if self.simulator:
            _make_simulator_shared_arrays_atomic()
        self.stream = cuda.stream()

    def upload(self, host: np.ndarray):
        flat = np.ascontiguousarray(host).reshape(-1)
        return self.cuda.to_device(flat, stream=self.stream)

    def empty(self, size: int, dtype):
        return self.cuda.device_array(size, dtype=dtype, stream=self.stream)

    def zeros_int32(self, size: int):
        return self.upload(np.zeros(size, np.int32))

    def adopt(self, x):
        """A flat view of device array `x` (a contiguous copy when it is strided)."""
        if not is_numba_array(x):
            x = self.cuda.as_cuda_array(x, sync=False)
        if x.is_c_contiguous():
            return x.reshape(x.size) if x.ndim != 1 else x
        return self.upload(x.copy_to_host(stream=self.stream))

    def copy(self, buf):
        out = self.empty(buf.size, buf.dtype)
        out.copy_to_device(buf, stream=self.stream)
        return out

    def launch(self, fn, grid, block, args):
        """Launch through numba; None: no faster launch for the next calls."""
        fn[grid, block, self.stream](*args)

    def to_host(self, buf, shape) -> np.ndarray:
        out = buf.copy_to_host(stream=self.stream)
        self.stream.synchronize()  # a copy on a stream may return before it is done
        return out.reshape(shape)

    def to_result(self, buf, shape, numba_arrays=True):
        return buf.reshape(shape)

    def finish(self):
        """Results stay on the device: our private stream must be done before the caller
        (on its own stream) reads them."""
        self.stream.synchronize()

    def read_int(self, buf) -> int:
        return int(self.to_host(buf, (buf.size,))[0])


def _make_simulator_shared_arrays_atomic():
    """numba-cuda's simulator runs a block's threads as Python threads and makes a shared
    array when the first of them asks for it, with a check-then-set that is not atomic: two
    threads asking at once each get their own uninitialized array, and a reduction tree
    then reads slots no thread wrote (garbage in ~1 run of 3 of the simulator suite). The
    same lookup, under a lock, keyed as numba-cuda keys it (the caller's file and line)."""
    import threading

    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "jitc_atomic", False):
        return
    lock = threading.Lock()
    original = shared.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory, or unsupported
            return original(self, shape, dtype, alignment)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                if isinstance(dtype, types.Type):
                    dtype = numpy_support.as_dtype(dtype)
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    shared.array = array
    shared.jitc_atomic = True


class CupyDevice:
    """Needs a GPU: nothing of this class runs in CI (no GPU is available there)."""

    name = "cupy"
    has_blas = True

    def __init__(self):
        import cupy
        from numba import cuda

        self.cp = cupy
        self.cuda = cuda
        self.simulator = False
        self._streams = {}

    @property
    def stream(self):
        """numba's wrapper of CuPy's current stream, made once per stream."""
        ptr = self.cp.cuda.get_current_stream().ptr
        stream = self._streams.get(ptr)
        if stream is None:
            stream = self.cuda.external_stream(ptr) if ptr else self.cuda.default_stream()
            self._streams[ptr] = stream
        return stream

    def upload(self, host: np.ndarray):
        return self.cp.asarray(np.ascontiguousarray(host).reshape(-1))

    def empty(self, size: int, dtype):
        return self.cp.empty(size, dtype=dtype)

    def zeros_int32(self, size: int):
        return self.cp.zeros(size, dtype=np.int32)

    def adopt(self, x):
        if type(x) is self.cp.ndarray and x.flags.c_contiguous:  # the common case, cheaply
            return x.reshape(-1)
        return self.cp.ascontiguousarray(self.cp.asarray(x)).reshape(-1)

    def copy(self, buf):
        return buf.copy()

    def launch(self, fn, grid, block, args):
        """Launch through numba (which compiles on a first launch) and return a DirectLaunch
        for later launches with arguments of the same types (None where it cannot make one)."""
        views = [
            self.cuda.as_cuda_array(a, sync=False) if isinstance(a, self.cp.ndarray) else a
            for a in args
        ]
        fn[grid, block, self.stream](*views)
        return DirectLaunch.of(fn, grid, block, views, self)

    def matmul(self, lhs3, rhs3, out3):
        self.cp.matmul(lhs3, rhs3, out=out3)

    def to_host(self, buf, shape) -> np.ndarray:
        return self.cp.asnumpy(buf).reshape(shape)

    def to_result(self, buf, shape, numba_arrays=False):
        """A CuPy array, or a numba device array over the same memory (a caller who passed
        numba arrays gets numba arrays; the view waits for the stream the result is on)."""
        out = buf.reshape(shape)
        return self.cuda.as_cuda_array(out) if numba_arrays else out

    def finish(self):
        """Results stay on the device, ordered on the caller's current stream: no sync."""

    def read_int(self, buf) -> int:
        return int(buf[0].get())


class DirectLaunch:
    """A compiled kernel launched through cuda.core as numba-cuda launches it, without the
    per-launch work of numba's dispatcher (typing every argument, wrapping every CuPy buffer,
    building a launch configuration): ~200 µs of host time per launch on an H200.

    Arguments are marshalled as numba marshals them (numba_cuda's `_Kernel._prepare_args`):
    a 1-D C-contiguous array as meminfo, parent, size, itemsize, data pointer, shape and
    stride; an integer as its C type. Those are the only arguments jitc's kernels take; a
    kernel with any other is left to numba (`of` returns None). The compiled kernel belongs
    to the GPU current at its first launch: a launch while another GPU is current goes
    through numba, which loads the kernel there.
    """

    def __init__(self, kernel, config, integer_types, device, numba_launch):
        from cuda.core import launch

        self.launch = launch
        self.kernel = kernel
        self.config = config
        self.integer_types = integer_types  # per argument: None for an array
        self.device = device
        self.current_gpu = device.cp.cuda.runtime.getDevice
        self.gpu = self.current_gpu()
        self.numba_launch = numba_launch  # (fn, grid, block)

    @classmethod
    def of(cls, fn, grid, block, views, device):
        from cuda.core import LaunchConfig
        from numba.cuda import types

        compiled = fn.overloads.get(tuple(fn.typeof_pyval(v) for v in views))
        if compiled is None or compiled.debug or compiled.extensions:
            return None
        integer_types = []
        for t in compiled.argument_types:
            if isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C":
                integer_types.append(None)
            elif isinstance(t, types.Integer):
                integer_types.append(getattr(ctypes, f"c_{t}"))
            else:
                return None
        kernel = compiled._codelibrary.get_cufunc().kernel
        return cls(
            kernel, LaunchConfig(grid=grid, block=block), integer_types, device, (fn, grid, block)
        )

    def __call__(self, args):
        if self.current_gpu() != self.gpu:
            self.device.launch(*self.numba_launch, args)
            return
        flat = []
        for a, integer in zip(args, self.integer_types):
            if integer is None:
                n, itemsize = a.size, a.itemsize
                flat += (0, 0, n, itemsize, a.data.ptr, n, itemsize)
            else:
                flat.append(integer(a))
        self.launch(self.device.stream, self.config, self.kernel, *flat)


@functools.cache
def current():
    """The device implementation for this process (see the module docstring)."""
    if not toolchain.simulator_enabled() and toolchain.gpu_present():
        try:
            import cupy  # noqa: F401
        except ImportError:
            return NumbaDevice()
        return CupyDevice()
    return NumbaDevice()
