"""jitc.backends.native: what the cpu and cuda backends and AOT share: the private, sealed
compile cache of generated modules (cache.py, its size bound and numba locator), the
runtime store of jitc's fixed pieces, and the process that compiles what an exiting process
left (precompile.py)."""
