"""Large buffers on transparent huge pages, as NumPy does for its own arrays.

A fresh result of a few MB is first touched by a kernel; on 4 KB pages each page faults
separately (here: 16 MB took 8-10 ms to allocate and fill on 4 KB pages, 2.9 ms after
madvise(MADV_HUGEPAGE), NumPy 2.5 ms). Linux only; elsewhere, and on kernels that say no,
the advice is simply not taken.
"""

from __future__ import annotations

import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl

HUGE_PAGE = 1 << 21
MIN_BYTES = 4 << 20  # NumPy's threshold for the same advice
_MADV_HUGEPAGE = 14
_LINUX = sys.platform.startswith("linux")


@intrinsic
def advise_huge_pages(typingctx, address, nbytes):
    """madvise(MADV_HUGEPAGE) over the whole huge pages inside [address, address + nbytes)
    when nbytes >= MIN_BYTES."""
    sig = types.none(address, nbytes)

    def codegen(context, builder, signature, args):
        if not _LINUX:
            return context.get_dummy_value()
        i64, i32, i8p = ir.IntType(64), ir.IntType(32), ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i32, [i8p, i64, i32]), "madvise"
        )
        address, nbytes = args
        with builder.if_then(builder.icmp_signed(">=", nbytes, ir.Constant(i64, MIN_BYTES))):
            mask = ir.Constant(i64, ~(HUGE_PAGE - 1))
            start = builder.and_(builder.add(address, ir.Constant(i64, HUGE_PAGE - 1)), mask)
            end = builder.and_(builder.add(address, nbytes), mask)
            builder.call(
                fn,
                [
                    builder.inttoptr(start, i8p),
                    builder.sub(end, start),
                    ir.Constant(i32, _MADV_HUGEPAGE),
                ],
            )
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def scratch(typingctx, size, dtype):
    """np.empty(size, dtype) for a kernel's scratch row, without numba's np.empty overload:
    numba compiles that again in every process (0.06-0.1 s, paid by a cold first call)."""
    element = dtype.dtype if isinstance(dtype, types.DType) else dtype.instance_type
    array_type = types.Array(element, 1, "C")
    sig = array_type(size, dtype)

    def codegen(context, builder, signature, args):
        n = context.cast(builder, args[0], signature.args[0], types.intp)
        array = _empty_nd_impl(context, builder, array_type, [n])
        return impl_ret_new_ref(context, builder, array_type, array._getvalue())

    return sig, codegen
