"""The interpreter as a backend: compiling is verifying; executing evaluates.

It defines the semantics every other backend is tested against.
"""
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.verifier import verify_module


class InterpreterExecutable:
    platform = "interpreter"

    def __init__(self, module):
        self.module = module

    @property
    def parameter_shapes(self):
        return [p.shape for p in self.module.entry.parameters]

    @property
    def result_shape(self):
        return self.module.entry.root_instruction.shape

    def execute(self, *args):
        """Runs the module on NumPy arrays; a tuple result comes back as a tuple."""
        return Evaluator().evaluate(self.module, list(args))


class InterpreterCompiler:
    platform = "interpreter"

    def optimization_pipeline(self, **options):
        """The passes ``hlo_opt --platform=interpreter`` runs: the
        target-independent pipeline (the interpreter evaluates fusions)."""
        from xla.service.pipelines import target_independent_pipeline
        return target_independent_pipeline(**options)

    def compile(self, module):
        verify_module(module)
        return InterpreterExecutable(module)
