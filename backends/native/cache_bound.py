"""A size bound on the cache directory: least recently used entries go first.

An entry is a generated module and everything named after it (`jitc_<hash>.py`, its seal,
numba's index and data files in __pycache__). A load touches the module's mtime, so mtime
orders entries by last use. Eviction runs after a new entry is written (a compile, which
costs far more than the directory scan) and never removes a module this process imported.
"""

from __future__ import annotations

import os

from jitc.core import config
from jitc.core.errors import JitcError

DEFAULT_MAX_BYTES = 1 << 30


def max_bytes() -> int:
    value = config.cache_max_bytes_setting()
    try:
        return int(value) if value else DEFAULT_MAX_BYTES
    except ValueError:
        raise JitcError(f"JITC_CACHE_MAX_BYTES={value!r} is not a number of bytes") from None


def touch(path: str) -> None:
    try:
        os.utime(path)
    except OSError:
        pass  # a read-only cache still loads; its order just goes stale


def _entries(root: str) -> dict:
    """{module name: [mtime, bytes, files]} over the root and its subdirectories."""
    entries: dict = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.startswith("jitc_"):
                continue
            path = os.path.join(directory, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = name.split(".", 1)[0]
            entry = entries.setdefault(key, [0.0, 0, []])
            if name == key + ".py":
                entry[0] = st.st_mtime
            entry[1] += st.st_size
            entry[2].append(path)
    return entries


def evict(root: str, keep) -> None:
    """Remove least recently used entries until the directory holds at most max_bytes();
    modules named in `keep` (this process's sys.modules) stay."""
    limit = max_bytes()
    entries = _entries(root)
    total = sum(e[1] for e in entries.values())
    for key, (_, size, files) in sorted(entries.items(), key=lambda kv: kv[1][0]):
        if total <= limit:
            return
        if key in keep:
            continue
        for path in files:
            try:
                os.remove(path)
            except OSError:
                pass
        total -= size
