"""The interpreter as a platform: compiling is verifying (after the
target-independent pipeline when asked for); executing evaluates with the
IR-level evaluator (``xla.hlo.evaluator``).

It defines the semantics every other backend is tested against. Its memory
is host memory (NumPy arrays); it does not honour donation.
"""
from xla.errors import UnimplementedError
from xla.hlo.evaluator import Evaluator
from xla.hlo.verifier import verify_module
from xla.runtime import Capabilities, Compiler, Executable, Platform
from xla.runtime.collectives import current_device


class InterpreterExecutable(Executable):
    platform = "interpreter"

    def execute(self, *args, donated=()):
        """Runs the module on NumPy arrays; a tuple result comes back as a
        tuple. ``donated`` is accepted and ignored (no aliasing here)."""
        result = Evaluator(device=current_device()).evaluate(self.module, list(args))
        for hook in self.execute_hooks:
            hook(args, result)
        return result


class InterpreterCompiler(Compiler):
    platform = "interpreter"

    def __init__(self, device=None):
        self.device = device

    def pipeline(self, **options):
        """The passes ``hlo_opt --platform=interpreter`` runs: the
        target-independent pipeline with default fusion and scheduling (the
        evaluator runs fusions like calls). ``compile`` runs none of them:
        the interpreter evaluates the module as written."""
        from xla.service.pipelines import default_pipeline
        return default_pipeline(**options)

    def compile(self, module, hooks=None, allow_mixed_precision=False):
        """Verifies ``module`` (``allow_mixed_precision``: the verifier's
        option, after which ``mixed-precision-normalizer`` makes the converts
        explicit, as the compiling backends' pipelines do) for the evaluator."""
        verify_module(module, allow_mixed_precision=allow_mixed_precision)
        if allow_mixed_precision:
            from xla.service.mixed_precision_normalizer import MixedPrecisionNormalizer
            MixedPrecisionNormalizer().run(module)
        for comp in module.computations:
            for instr in comp.instructions:
                if instr.shape.has_buffer:
                    raise UnimplementedError(
                        f"the interpreter does not support buffer shapes ({instr.opcode} "
                        f"{instr.name}: {instr.shape.to_text(False)})")
        return InterpreterExecutable(module, self.device)


class InterpreterPlatform(Platform):
    name = "interpreter"
    capabilities = Capabilities(host_buffers=True)

    def compiler(self):
        return InterpreterCompiler(self.default_device())
