"""Sequentially consistent atomics on int64 words and futex waits, for jitc's native worker
(worker.py), whose thread never holds the GIL: Python's own locks are not an option there.

Every operation takes the word's address as an int64 and is seq_cst: the worker and a
caller each store a word and then load the other's (a job posted / the worker asleep),
and only a total order keeps both from missing the other's store. A futex wait sleeps
while the low 32 bits of a word still hold what the caller last saw (little-endian
x86-64 and aarch64: the low half is at the word's address), so a counter that moves on
wakes any waiter; every wait has a timeout as well (TIMEOUT_NS), so a lost wake-up costs
that much at most.
"""

from __future__ import annotations

import ctypes
import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_ORDER = "seq_cst"

# Linux futex: the syscall number per architecture, the private (one process) operations
SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine())
FUTEX_WAIT, FUTEX_WAKE = 128, 129
TIMEOUT_NS = 20_000_000  # a waiter looks again this often even if nobody wakes it


def syscall_address() -> int | None:
    """libc's syscall() (the worker calls futex through it), or None where there is no
    futex to call (then jitc's Python executor serves every submit)."""
    if SYS_FUTEX is None:
        return None
    try:
        return ctypes.cast(ctypes.CDLL(None).syscall, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None


def _word(builder, address):
    return builder.inttoptr(address, _I64.as_pointer())


@intrinsic
def atomic_load(typingctx, address):
    """The int64 word at `address`."""

    def codegen(context, builder, signature, args):
        return builder.load_atomic(_word(builder, args[0]), _ORDER, 8)

    return types.int64(types.int64), codegen


@intrinsic
def atomic_store(typingctx, address, value):
    """Store `value` in the int64 word at `address`."""

    def codegen(context, builder, signature, args):
        builder.store_atomic(args[1], _word(builder, args[0]), _ORDER, 8)
        return context.get_dummy_value()

    return types.none(types.int64, types.int64), codegen


@intrinsic
def atomic_add(typingctx, address, value):
    """Add `value` to the int64 word at `address`; its value before."""

    def codegen(context, builder, signature, args):
        return builder.atomic_rmw("add", _word(builder, args[0]), args[1], _ORDER)

    return types.int64(types.int64, types.int64), codegen


@intrinsic
def compare_exchange(typingctx, address, expected, value):
    """Store `value` at `address` if the word holds `expected`; the word's value before."""

    def codegen(context, builder, signature, args):
        pair = builder.cmpxchg(_word(builder, args[0]), args[1], args[2], _ORDER, _ORDER)
        return builder.extract_value(pair, 0)

    return types.int64(types.int64, types.int64, types.int64), codegen


@intrinsic
def futex(typingctx, syscall, address, operation, value, timespec):
    """syscall(SYS_FUTEX, address, operation, value, timespec) through libc's syscall() at
    the address `syscall` (variadic, called as such); `timespec` an address or 0."""
    sig = types.int64(types.int64, types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(_I64, [_I64], var_arg=True)
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(
            fn,
            [
                ir.Constant(_I64, SYS_FUTEX or 0),
                args[1],
                builder.trunc(args[2], ir.IntType(32)),
                builder.trunc(args[3], ir.IntType(32)),
                args[4],
            ],
        )

    return sig, codegen


_PAUSE = {
    "x86_64": ("llvm.x86.sse2.pause", []),
    "aarch64": ("llvm.aarch64.hint", [ir.Constant(ir.IntType(32), 1)]),
}.get(platform.machine())  # x86 `pause`, arm `yield`


@intrinsic
def spin_pause(typingctx):
    """The processor's spin-wait hint: a spinning loop leaves the other hardware thread of
    its core and the memory bus alone."""

    def codegen(context, builder, signature, args):
        if _PAUSE:
            name, operands = _PAUSE
            fnty = ir.FunctionType(ir.VoidType(), [o.type for o in operands])
            builder.call(cgutils.get_or_insert_function(builder.module, fnty, name), operands)
        return context.get_dummy_value()

    return types.none(), codegen
