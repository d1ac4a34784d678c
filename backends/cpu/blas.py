"""BLAS gemm for generated kernels: Fortran s/d/c/zgemm and gemv, called through an address.

The library is MKL's sequential layer where the `mkl` wheel is installed (`pip install
'jitc[mkl]'`): on this project's AVX-512 Intel machine its sgemm took 0.85-0.90x the time of
SciPy's OpenBLAS on the dense layers' shapes, one thread each, and whole W2, W7 and MLP calls
0.64-0.78x (README, Speed); BLIS ran its AVX2 kernels there at half the speed, and oneDNN's
wheel was no faster than NumPy. On an AMD EPYC (Zen 3, AVX2) MKL's sgemm still ran at
0.76-0.93x OpenBLAS's time on those shapes, but its sgemv took 1.7x OpenBLAS's (55 against
32 us for [1,512]x[512,1024]): gemv is MKL's on Intel only (MKL_GEMV_VENDORS). Else, or
with JITC_BLAS=openblas, SciPy's OpenBLAS. LAPACK (lapack.py) is SciPy's either way.

numba's np.dot costs ~0.45 s to compile per kernel and copies any operand that is not
contiguous; calling gemm directly compiles in milliseconds and reads transposed operands
and sub-blocks in place (through trans flags and leading dimensions). The address is a
run-time value (a kernel size slot), so cached kernels stay valid in a new process.

Row-major C[m,n] = A[m,k] @ B[k,n] is column-major C^T = B^T A^T: gemm is called with the
operands swapped. One row (m = 1) goes to gemv: OpenBLAS's gemm packs the whole of B even
then, which made a batch-1 layer twice as slow. So does one column (n = 1): a 2000x2000
float32 matrix times a vector took 250-330 us through MKL's gemm, 150-190 us through its
gemv. SciPy's BLAS is LP64 (32-bit ints).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@functools.cache
def cython_module(library: str):
    """scipy.linalg.cython_blas (library "blas") or cython_lapack ("lapack"), loaded without
    running scipy.linalg's __init__ (~0.2 s of imports a first call would wait for). It is
    registered under its own name, so a later `import scipy.linalg` finds it loaded.

    It is loaded under Python's own import lock for that name, as `import` would: when a
    tiered call's background compile and the main thread loaded it at once, Cython refused
    the second load ("has already been imported"), whose cleanup then took the first out of
    sys.modules; a README example's `lo.compile()` failed so in one run."""
    import importlib.machinery
    import importlib.util

    import scipy

    name = f"scipy.linalg.cython_{library}"
    with importlib._bootstrap._ModuleLockManager(name):  # what `import name` holds
        if name in sys.modules:
            return sys.modules[name]
        directory = os.path.join(scipy.__path__[0], "linalg")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, f"cython_{library}{suffix}")
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec._initializing = True  # an `import` meanwhile waits on the lock, as for its own
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
                finally:
                    spec._initializing = False
                return module
    return importlib.import_module(name)  # another layout: the ordinary import


def preload() -> None:
    """Load cython_blas before numba's target context first loads its registries: numba
    then imports scipy.linalg.cython_blas itself (numba.np.arraymath's BLAS check), and
    finding it loaded skips scipy.linalg's __init__ (0.2-0.4 s of every new process)."""
    try:
        cython_module("blas")
    except ImportError:  # no SciPy: numba says so where a dot needs it
        pass


MKL_SEQUENTIAL, MKL_LP64 = 1, 0  # mkl_set_threading_layer, mkl_set_interface_layer


@functools.cache
def mkl():
    """MKL's single dynamic library from the `mkl` wheel, on its sequential layer with 32-bit
    integers (SciPy's BLAS interface): jitc splits products over its own threads. None
    where the wheel is missing, JITC_BLAS=openblas, or MKL was already running threaded in
    this process (the layer is chosen once per process)."""
    if os.environ.get("JITC_BLAS", "").lower() == "openblas":
        return None
    import importlib.metadata

    try:
        files = importlib.metadata.files("mkl") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    path = next((f.locate() for f in files if f.name.startswith("libmkl_rt.so")), None)
    if path is None:
        return None
    lib = ctypes.CDLL(os.path.realpath(path), mode=ctypes.RTLD_LOCAL)
    for name in ("MKL_Set_Threading_Layer", "MKL_Set_Interface_Layer"):
        getattr(lib, name).argtypes, getattr(lib, name).restype = [ctypes.c_int], ctypes.c_int
    if lib.MKL_Set_Interface_Layer(MKL_LP64) != MKL_LP64:
        return None
    if lib.MKL_Set_Threading_Layer(MKL_SEQUENTIAL) != MKL_SEQUENTIAL:
        return None
    return lib


# CPU vendors (/proc/cpuinfo's vendor_id) on which MKL's gemv was measured faster than
# OpenBLAS's: 52-61 against 60-64 us for W2 at batch 1 on an Intel Xeon.
MKL_GEMV_VENDORS = ("GenuineIntel",)


@functools.cache
def cpu_vendor() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def uses_mkl(routine: str) -> bool:
    """Does `routine` ("gemm", "gemv") call MKL's rather than SciPy's OpenBLAS?"""
    return mkl() is not None and (routine != "gemv" or cpu_vendor() in MKL_GEMV_VENDORS)


def library_name(routine: str) -> str:
    """Which BLAS `routine` calls, for as_text()."""
    if uses_mkl(routine):
        import importlib.metadata

        return f"MKL {importlib.metadata.version('mkl')}, sequential"
    return "OpenBLAS (SciPy's), one thread"


def gemm_library() -> str:
    """Which BLAS the products call, for as_text(): gemm's, and gemv's where it differs."""
    gemm_, gemv_ = library_name("gemm"), library_name("gemv")
    return gemm_ if gemm_ == gemv_ else f"{gemm_}; matrix-vector: {gemv_}"


@functools.cache
def blas_address(dtype, routine: str, library: str = "blas") -> int:
    """Address of s<routine> (float32), d<routine> (float64), c<routine> (complex64) or
    z<routine> (complex128), e.g. "gemm": MKL's for library "blas" where uses_mkl(), else
    SciPy's from scipy.linalg.cython_blas ("blas") or cython_lapack ("lapack"). The first
    SciPy one taken keeps that BLAS to one thread (threads.py): functions without a dot or
    a solve never load it."""
    prefix = _PREFIX[np.dtype(dtype).char]
    if library == "blas" and uses_mkl(routine):
        return _mkl_address(dtype, routine)
    single_threaded_scipy_blas()
    module = cython_module(library)
    capsule = module.__pyx_capi__[prefix + routine]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def gemv_address(dtype, vector_product: bool) -> int:
    """The gemv a product's kernel calls: the faster library's (uses_mkl) where the product
    is a matrix times a vector (one row or one column), else gemm's library, whose gemv
    then serves only a one-row block of a split product: so a kernel of matrix products
    never loads SciPy's BLAS, nor sets its threads, beside MKL."""
    if vector_product or not uses_mkl("gemm"):
        return blas_address(dtype, "gemv")
    return _mkl_address(dtype, "gemv")


_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}


def _mkl_address(dtype, routine: str) -> int:
    name = f"{_PREFIX[np.dtype(dtype).char]}{routine}_"
    return ctypes.cast(getattr(mkl(), name), ctypes.c_void_p).value


I8, I32 = ir.IntType(8), ir.IntType(32)


def _scalar(real, value):
    """An LLVM constant `value` of the element type (a complex one is a {re, im} struct)."""
    if isinstance(real, ir.LiteralStructType):
        return ir.Constant(
            real, [ir.Constant(real.elements[0], value), ir.Constant(real.elements[1], 0.0)]
        )
    return ir.Constant(real, value)


def _by_reference(builder, real):
    """Fortran passes every argument by reference: helpers that put a value in a stack slot
    (`slot`), an int64 in an int32 slot (`int32`), and make an address a `real` pointer."""

    def slot(ty, value):
        ptr = cgutils.alloca_once(builder, ty)
        builder.store(value, ptr)
        return ptr

    def int32(v):
        return slot(I32, builder.trunc(v, I32))

    def address(v):
        return builder.inttoptr(v, real.as_pointer())

    return slot, int32, address


@intrinsic
def gemm(typingctx, fn, dtype, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc):
    """C = op(A) @ op(B) (column-major, alpha 1, beta 0) through the gemm at address `fn`;
    trans_a/trans_b are ord("N") or ord("T"); a, b, c are addresses."""
    element = dtype.instance_type
    sig = types.void(fn, dtype, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc)

    def codegen(context, builder, signature, args):
        fn, _, ta, tb, m, n, k, a, lda, b, ldb, c, ldc = args
        real = context.get_data_type(element)
        slot, int32, address = _by_reference(builder, real)
        fnty = ir.FunctionType(
            ir.VoidType(),
            [I8.as_pointer()] * 2
            + [I32.as_pointer()] * 3
            + [
                real.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
                real.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
            ],
        )
        builder.call(
            builder.inttoptr(fn, fnty.as_pointer()),
            [
                slot(I8, builder.trunc(ta, I8)),
                slot(I8, builder.trunc(tb, I8)),
                int32(m),
                int32(n),
                int32(k),
                slot(real, _scalar(real, 1.0)),
                address(a),
                int32(lda),
                address(b),
                int32(ldb),
                slot(real, _scalar(real, 0.0)),
                address(c),
                int32(ldc),
            ],
        )
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def gemv(typingctx, fn, dtype, trans, m, n, a, lda, x, incx, y):
    """y = op(A) @ x (column-major A of m rows, alpha 1, beta 0, y contiguous) through the
    gemv at address `fn`; trans is ord("N") or ord("T"); a, x, y are addresses."""
    element = dtype.instance_type
    sig = types.void(fn, dtype, trans, m, n, a, lda, x, incx, y)

    def codegen(context, builder, signature, args):
        fn, _, trans, m, n, a, lda, x, incx, y = args
        real = context.get_data_type(element)
        slot, int32, address = _by_reference(builder, real)
        one = slot(I32, ir.Constant(I32, 1))
        fnty = ir.FunctionType(
            ir.VoidType(),
            [I8.as_pointer()]
            + [I32.as_pointer()] * 2
            + [
                real.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
                real.as_pointer(),
                real.as_pointer(),
                I32.as_pointer(),
            ],
        )
        builder.call(
            builder.inttoptr(fn, fnty.as_pointer()),
            [
                slot(I8, builder.trunc(trans, I8)),
                int32(m),
                int32(n),
                slot(real, _scalar(real, 1.0)),
                address(a),
                int32(lda),
                address(x),
                int32(incx),
                slot(real, _scalar(real, 0.0)),
                address(y),
                one,
            ],
        )
        return context.get_dummy_value()

    return sig, codegen


@functools.cache
def single_threaded_scipy_blas() -> bool:
    """numba calls BLAS through SciPy's OpenBLAS (a different library from NumPy's). Left
    at its default, that BLAS spins its own threads beside numba's prange workers and on 2
    cores the two pools fight (an ~8 ms floor per call was measured): jitc runs SciPy's
    BLAS single-threaded and parallelizes large dots itself, over row blocks inside numba's
    pool. NumPy's own BLAS is left untouched."""
    try:
        cython_module("blas")  # loads the library numba will call
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return False
    done = False
    for lib in ThreadpoolController().lib_controllers:
        if lib.user_api == "blas" and "scipy.libs" in os.path.dirname(lib.filepath):
            lib.set_num_threads(1)
            done = True
    return done
