"""The Python frontend: ``xla.jit`` over NumPy code, the builder, pytrees.

- ``builder``: XlaBuilder, op-by-op construction with shape inference.
- ``tracing``: Tracer, NumPy's dispatch protocols, trace contexts.
- ``ufuncs`` / ``numpy/`` (a package, one module per topic) / ``indexing``: NumPy semantics in
  HLO, one row per function.
- ``jit``: tracing + compilation caches; ``compilation``: the call into a backend.
"""
