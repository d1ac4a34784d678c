"""jitc.trace: a call of the user's function run on traced arrays, recorded as a Graph and
handed on as a Lowered stage (lowering.py). The tracer (tracer.py) dispatches NumPy's calls
to numpy_api/; lax.py builds primitives; indexing, creation and masked arrays have their own
modules; rebind.py binds the NumPy names NumPy never dispatches; mutation/ turns NumPy's
writes into a functional graph and back into the caller's arrays."""
