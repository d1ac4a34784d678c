"""Compiling for the next process: a process that exits while its kernels still compile in
the background (runtime/tiered.py) hands their sources to a detached Python process that
compiles them into the cache and seals them. Else a script shorter than its compiles (1-3 s
a function) never caches its kernels, and every run of it takes the reference tier.

The exiting process does not wait: it writes the sources to a private file in the cache and
starts `python -c CHILD file` in a session of its own, at a lower priority. A later process
whose first call finds everything sealed runs the compiled tier at once; one that starts
before the child is done compiles in its own background as usual (the cache's writes are
atomic, and unsealed files are never loaded).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time

from jitc.backends.native import cache, target

log = logging.getLogger("jitc")

CHILD = (
    "import json, os, sys\n"
    "with open(sys.argv[1]) as f:\n"
    "    request = json.load(f)\n"
    "os.remove(sys.argv[1])\n"
    "sys.path[:0] = request['path']\n"
    "from jitc.backends.native.precompile import compile_all\n"
    "compile_all(request['sources'], request['parent'])\n"
)


def hand_on(sources: list) -> int | None:
    """Start the detached compile of `sources` ((source, runtime) pairs, as
    backends.cpu.uncached gives them); its pid, or None where nothing would be cached."""
    directory, store = cache.resolved()
    if directory is None or not sources:
        return None
    env = dict(os.environ, JITC_CACHE_DIR=directory, **target.child_environment())
    if store is not None:
        env["JITC_RUNTIME_DIR"] = os.path.dirname(store)  # `store` is this installation's
        #                                                   subdirectory of the root
    try:
        fd, request = tempfile.mkstemp(dir=directory, suffix=".compile.json")
        with os.fdopen(fd, "w") as f:
            json.dump({"path": sys.path, "sources": sources, "parent": os.getpid()}, f)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, request],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as e:  # the cache directory went away, or the disk is full: the next run
        log.info("exit while compiling: not handed on (%s)", e)  # compiles them itself
        return None
    child.returncode = 0  # never waited for (it outlives this process): no warning that
    #                       it is still running when this Popen is collected
    return child.pid


def compile_all(sources: list, parent: int) -> None:
    """Compile and seal each source, runtime pieces in the runtime store (the child), once
    the `parent` process is gone: its compile thread runs on while Python finalizes, and
    numba files it wrote after this process sealed them would unseal them."""
    from jitc.backends.cpu import blas
    from jitc.backends.cpu.threads import start_thread_pool

    os.nice(10)
    while os.getppid() == parent:
        time.sleep(0.02)
    blas.preload()  # before the first numba compile or cache load, as executable.py does
    start_thread_pool()  # the launcher links against the pool's functions
    for source, runtime in sources:
        cache.seal(cache.load_module(source, runtime=runtime))
