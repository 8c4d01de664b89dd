"""The interpreter backend: the IR-level evaluator (``xla.hlo.evaluator``)
as a platform, the semantics every other backend is tested against."""
