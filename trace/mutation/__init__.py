"""jitc.trace.mutation: NumPy's side effects, compiled functionally. functional.py versions
written buffers, capture.py reads the state a function reaches (closures, globals, objects),
leaks.py refuses traced values left outside the trace, writeback.py puts written contents
back into the caller's arrays after a call."""
