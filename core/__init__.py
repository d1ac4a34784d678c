"""jitc.core: what every layer uses and that uses no layer: the IR (graph, text form,
verifier), the primitive and op vocabulary, dtypes, errors, configuration knobs, pytrees,
specs, the user's source location, and small shared mechanisms (device arrays, explicit-stack
recursion, deferred Ctrl-C, locating kernel failures)."""
