"""The sort kernel: a stable sort (values, or argsort's indices) of each row along one axis.

The array is viewed as (pre, N, post) around the sorted axis; a row is one (pre, post)
pair, and rows split across threads. Each row is copied into scratch rows (its values, and
for argsort the indices 0..N-1 beside them), NaNs moved to the tail in input order (NumPy
sorts NaN last). The rest is sorted between two sets of scratch rows: rows of RADIX_MIN or
more by an LSD radix sort on keys that order like the values (8 passes for 64-bit values,
fewer where a byte is the same in every key), shorter ones (and every row under AOT, which
has no allocator for the counts) insertion-sorted in runs of RUN with a plain `<`, then
merged bottom-up. The row is written out last: so the output may be the input's own buffer
(the caller's array in `x.sort()`). Ties, -0.0 beside 0.0 included, keep their input
order.

Scratch rows: allocated once per call of the body under the JIT, kernel arguments from
the temp arena under AOT (no allocator there).
"""

from __future__ import annotations

import numpy as np

from jitc.backends.cpu.lowering import HALF, TYPE_NAMES, load, store

RUN = 16  # insertion-sorted run length before merging
RADIX_MIN = 256  # rows at least this long sort by bytes (LSD radix) under the JIT


def radix_key(x: str, dtype) -> tuple[str, int]:
    """(an int64 expression ordering like `x` in NumPy's sort, how many bytes it uses)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":  # float16 rows hold float32 values
        return (f"radix_key_f64({x})", 8) if dtype.itemsize == 8 else (f"radix_key_f32({x})", 4)
    if dtype.kind == "i":
        return f"(np.int64({x}) ^ np.int64({-(1 << (8 * dtype.itemsize - 1))}))", dtype.itemsize
    return f"np.int64({x})", dtype.itemsize  # unsigned (uint64 wraps: same bits), bool


def less(x: str, y: str, dtype) -> str:
    """x < y in NumPy's sort order: a NaN is larger than every number."""
    if np.dtype(dtype).kind == "f":
        return f"(({x}) < ({y}) or (({y}) != ({y}) and ({x}) == ({x})))"
    return f"({x}) < ({y})"


def scratch_rows(dtype, indices: bool) -> list:
    """Dtypes of the body's scratch rows (each N long): keys twice, then indices twice.
    float16 keys are float32 values (a kernel's float16 arrays hold bits, which do not sort
    as the numbers do)."""
    key = np.dtype(np.float32) if np.dtype(dtype) == HALF else np.dtype(dtype)
    return [key] * 2 + [np.dtype(np.int64)] * 2 * indices


def sort_source(dtype, indices: bool, scratch_args: bool) -> str:
    """`def BODY(a, out, [k0, k1, (i0, i1,)] lo, hi, n)` over rows [lo, hi) of pre * post."""
    dtype = np.dtype(dtype)
    names = ["k0", "k1", "i0", "i1"][: len(scratch_rows(dtype, indices))]
    floats = dtype.kind == "f"
    lines = []

    def put(depth, *stmts):
        lines.extend("    " * depth + s for s in stmts)

    def move(depth, dst, d, src, s):
        """dst[d] = src[s] for the keys, and for the indices beside them."""
        put(depth, f"k{dst}[{d}] = k{src}[{s}]")
        if indices:
            put(depth, f"i{dst}[{d}] = i{src}[{s}]")

    def gather(depth, test):
        put(depth, "for k in range(m):", f"    v = {load(dtype, 'a[p, k, q]')}")
        body = ["k0[c] = v", *(["i0[c] = k"] if indices else []), "c += 1"]
        if test:
            put(depth + 1, f"if {test}:")
        put(depth + 1 + bool(test), *body)

    put(
        0,
        f"def BODY(a, out, {', '.join(names)}, lo, hi, n):"
        if scratch_args
        else "def BODY(a, out, lo, hi, n):",
    )
    put(1, "m = a.shape[1]", "post = a.shape[2]")
    if not scratch_args:
        put(
            1,
            *(
                f"{nm} = np.empty(m, {TYPE_NAMES[d]})"
                for nm, d in zip(names, scratch_rows(dtype, indices))
            ),
        )
        put(1, "counts = np.empty(256, np.int64)")
    put(1, "for r in range(lo, hi):")
    put(2, "p = r // post", "q = r - p * post", "c = 0")
    gather(2, "v == v" if floats else "")
    put(2, "sorted_n = c")  # the numbers; NaNs (if any) follow them in input order
    if floats:
        put(2, "if c < m:")
        gather(3, "v != v")
    put(2, "src = 0")
    if scratch_args:  # AOT has no allocator for the radix counts: it merges
        base = 2
    else:
        put(2, f"if sorted_n >= {RADIX_MIN}:")
        _radix(put, move, dtype, indices)
        put(2, "else:")
        base = 3
    # insertion-sorted runs
    put(base + 0, f"for start in range(0, sorted_n, {RUN}):")
    put(base + 1, f"end = min(start + {RUN}, sorted_n)", "for i in range(start + 1, end):")
    put(base + 2, "v = k0[i]", *(["vi = i0[i]"] if indices else []), "j = i - 1")
    put(base + 2, "while j >= start and v < k0[j]:")
    move(base + 3, 0, "j + 1", 0, "j")
    put(base + 3, "j -= 1")
    put(base + 2, "k0[j + 1] = v", *(["i0[j + 1] = vi"] if indices else []))
    # bottom-up merges, k0 -> k1 -> k0 ...
    put(base + 0, f"width = {RUN}", "while width < sorted_n:")
    put(base + 1, "for start in range(0, sorted_n, 2 * width):")
    put(base + 2, "mid = min(start + width, sorted_n)", "end = min(start + 2 * width, sorted_n)")
    for s, d in ((0, 1), (1, 0)):
        put(base + 2, f"if src == {s}:")
        put(base + 3, "i = start", "j = mid", "k = start", "while i < mid and j < end:")
        # branch-free: the loads and stores are selected, not jumped to (random data
        # mispredicts a branch half the time)
        put(base + 4, f"t = k{s}[j] < k{s}[i]", f"k{d}[k] = k{s}[j] if t else k{s}[i]")
        if indices:
            put(base + 4, f"i{d}[k] = i{s}[j] if t else i{s}[i]")
        put(base + 4, "j += t", "i += 1 - t", "k += 1")
        put(base + 3, "while i < mid:")
        move(base + 4, d, "k", s, "i")
        put(base + 4, "i += 1", "k += 1")
        put(base + 3, "while j < end:")
        move(base + 4, d, "k", s, "j")
        put(base + 4, "j += 1", "k += 1")
    put(base + 1, "src = 1 - src", "width *= 2")

    def result(row):
        return f"i{row}[k]" if indices else store(dtype, f"k{row}[k]")

    put(2, "if src == 0:")
    put(3, "for k in range(sorted_n):", f"    out[p, k, q] = {result(0)}")
    put(2, "else:")
    put(3, "for k in range(sorted_n):", f"    out[p, k, q] = {result(1)}")
    put(2, "for k in range(sorted_n, m):", f"    out[p, k, q] = {result(0)}")
    return "\n".join(lines) + "\n"


def _radix(put, move, dtype, indices):
    """LSD radix sort of k0[:sorted_n] by the bytes of its keys, least significant first:
    each pass counts the bytes, and (unless one byte value holds every key) moves the keys,
    stably, into the other row in byte order. Values and indices move; keys are computed
    from the values each pass."""
    key, width = radix_key("{row}[k]", dtype)
    put(3, f"for shift in range(0, {8 * width}, 8):")
    put(4, "counts[:] = 0")
    for s, d in ((0, 1), (1, 0)):
        put(4, "if src == 0:" if s == 0 else "else:")
        put(
            5,
            "for k in range(sorted_n):",
            f"    counts[({key.format(row=f'k{s}')} >> shift) & 255] += 1",
            f"b = ({key.format(row=f'k{s}').replace('[k]', '[0]')} >> shift) & 255",
            "if counts[b] == sorted_n:",
            "    continue  # one byte value: order unchanged",
            "total = 0",
            "for byte in range(256):",
            "    here = counts[byte]",
            "    counts[byte] = total",
            "    total += here",
            "for k in range(sorted_n):",
            f"    b = ({key.format(row=f'k{s}')} >> shift) & 255",
            "    at = counts[b]",
            "    counts[b] = at + 1",
        )
        move(6, d, "at", s, "k")
        put(5, f"src = {d}")
