"""The calling convention between a driver and its kernels: addresses, not linked code.

Every kernel is a numba `cfunc` with one C signature, `int64 kernel(int64* pack, int64 lo,
int64 hi)`: `pack` holds the data pointers of its arrays followed by its sizes, [lo, hi) is
the range of outer rows to compute, the result is 0 or 1 (the kernel raised). The driver
calls kernels through their addresses, which it receives at run time, so:

- compiling a driver never links or re-optimizes kernel code (numba links a callee's whole
  module into every caller and optimizes it again: a driver of 13 kernels cost more to
  compile than its kernels);
- a kernel is compiled once per process for every graph that contains the same source, and
  cached on disk by numba like any function;
- the same launcher, compiled once, runs any kernel on numba's threads.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

KERNEL_SIGNATURE = types.int64(types.CPointer(types.int64), types.int64, types.int64)
LAUNCHER_SIGNATURE = types.int64(types.int64, types.int64, types.int64, types.int64)

_I64 = ir.IntType(64)


@intrinsic
def call_kernel(typingctx, kernel, pack, lo, hi):
    """kernel(pack, lo, hi) for a kernel address and a pack address (both int64)."""
    sig = types.int64(types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(_I64, [_I64.as_pointer(), _I64, _I64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.inttoptr(args[1], _I64.as_pointer()), args[2], args[3]])

    return sig, codegen


@intrinsic
def call_launcher(typingctx, launcher, kernel, pack, rows, work):
    """launcher(kernel, pack, rows, work) through the launcher's address."""
    sig = types.int64(types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(_I64, [_I64, _I64, _I64, _I64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, list(args[1:]))

    return sig, codegen


@intrinsic
def typed_pointer(typingctx, address, dtype):
    """The int64 `address` as a pointer to `dtype` elements (for numba.carray)."""
    element = dtype.dtype if isinstance(dtype, types.DType) else dtype.instance_type
    sig = types.CPointer(element)(address, dtype)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_data_type(element).as_pointer())

    return sig, codegen


@intrinsic
def array_at(typingctx, address, dtype, shape):
    """The C-contiguous `dtype` array of `shape` (a tuple of int64) over the memory at the
    int64 `address`: numba.carray(typed_pointer(address, dtype), shape) without carray's
    overload, which numba compiles again in every process for each dtype and rank (~18 ms
    each, paid by a cold first call)."""
    element = dtype.dtype if isinstance(dtype, types.DType) else dtype.instance_type
    ndim = len(shape)
    array_type = types.Array(element, ndim, "C")
    sig = array_type(address, dtype, shape)

    def codegen(context, builder, signature, args):
        data_type = context.get_data_type(element)
        itemsize = ir.Constant(_I64, context.get_abi_sizeof(data_type))
        dims = cgutils.unpack_tuple(builder, args[2], ndim)
        strides, stride = [], itemsize
        for d in reversed(dims):  # C order: the last axis is contiguous
            strides.insert(0, stride)
            stride = builder.mul(stride, d)
        array = make_array(array_type)(context, builder)
        populate_array(
            array,
            data=builder.inttoptr(args[0], data_type.as_pointer()),
            shape=dims,
            strides=strides,
            itemsize=itemsize,
            meminfo=None,
        )
        return impl_ret_borrowed(context, builder, array_type, array._getvalue())

    return sig, codegen


@intrinsic
def pointer_address(typingctx, pointer):
    """The address a CPointer points at, as an int64 (for call_kernel)."""
    sig = types.int64(pointer)

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], _I64)

    return sig, codegen


@intrinsic
def thread_count(typingctx):
    """numba's get_num_threads() through the threading layer's symbol (numba's own Python
    level get_num_threads goes through a ctypes pointer, which keeps a function from being
    cached). The layer must be started first: launcher.py does it at import."""
    sig = types.int64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(32), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "get_num_threads")
        return builder.sext(builder.call(fn, []), _I64)

    return sig, codegen


@intrinsic
def set_thread_count(typingctx, count):
    """numba's set_num_threads(count) for the calling thread (numba keeps the count per
    thread), through the threading layer's symbol as thread_count."""
    sig = types.none(types.int64)

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), "set_num_threads"
        )
        builder.call(fn, [builder.trunc(args[0], ir.IntType(32))])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def swap_chunksize(typingctx, size):
    """Set numba's parallel chunksize (iterations per task of the next prange) to `size`
    and return the previous one, through the threading layer's symbols as thread_count:
    numba's own set_parallel_chunksize also goes through a ctypes pointer."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        get = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_I64, []), "get_parallel_chunksize"
        )
        set_ = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [_I64]), "set_parallel_chunksize"
        )
        previous = builder.call(get, [])
        builder.call(set_, [args[0]])
        return previous

    return sig, codegen


@intrinsic
def load_flag(typingctx, address):
    """The bool at the int64 `address` (a loop's flag: driver.py BRANCH), as an int64."""
    sig = types.int64(address)

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], ir.IntType(8).as_pointer())
        return builder.zext(builder.load(pointer), _I64)

    return sig, codegen


@intrinsic
def keep_alive(typingctx, values):
    """Nothing, but its call is a use of the tuple `values`: numba releases an array after
    its last use, and the driver hands arrays to kernels as raw addresses it then stops
    using. The driver's last statement keeps every such array alive until the kernels ran."""
    sig = types.none(values)

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def monotonic_ns(typingctx):
    """clock_gettime(CLOCK_MONOTONIC) in nanoseconds: the clock of Python's
    time.perf_counter_ns on Linux, so a kernel's timestamps line up with its call's."""
    sig = types.int64()

    def codegen(context, builder, signature, args):
        spec = cgutils.alloca_once(builder, ir.ArrayType(_I64, 2))  # struct timespec
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), _I64.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        seconds = builder.bitcast(spec, _I64.as_pointer())
        builder.call(fn, [ir.Constant(ir.IntType(32), 1), seconds])  # CLOCK_MONOTONIC
        nanos = builder.gep(seconds, [ir.Constant(ir.IntType(32), 1)])
        return builder.add(
            builder.mul(builder.load(seconds), ir.Constant(_I64, 10**9)), builder.load(nanos)
        )

    return sig, codegen


@njit(nogil=True, inline="always")
def run_from(a, start):
    """The elements of C-contiguous `a` from its flat position `start` on, as one 1-d array:
    `a.reshape(-1)[start:]` without reshape, whose numba runtime helper an ahead-of-time
    object cannot import."""
    return array_at(np.int64(a.ctypes.data) + start * a.itemsize, a.dtype, (a.size - start,))
