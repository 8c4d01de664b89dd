"""GpuCompiler: the GPU pipeline, buffer assignment, and one NVPTX kernel
per computing instruction (``kernel_emitter.py``), giving a GpuExecutable.

``--xla_gpu_arch`` is not an XLA flag; the compute capability is the
compiler's ``arch`` (default sm_80), which the PTX dump and ptxas use.
"""
from xla.backends.gpu.executable import GpuExecutable
from xla.backends.gpu.kernel_emitter import emit_thunks
from xla.backends.gpu.nvptx import check_arch
from xla.backends.cpu.loop_emitter import major_to_minor
from xla.errors import UnimplementedError
from xla.hlo.verifier import verify_module
from xla.runtime import Compiler
from xla.service.buffer_assignment import assign_buffers


class GpuCompiler(Compiler):
    platform = "gpu"

    def __init__(self, device=None, arch="sm_80", platform_name="gpu", gemm=True):
        self.device = device
        self.arch = check_arch(arch)
        self.platform = platform_name
        self.gemm = gemm     # plain matrix products through cuBLAS (else kernels)

    def pipeline(self, **options):
        from xla.backends.gpu.pipeline import gpu_pipeline
        return gpu_pipeline(**options)

    def compile(self, module, hooks=None, allow_mixed_precision=False):
        # allow_mixed_precision: the verifier's option; mixed-precision-normalizer
        # then makes the converts explicit.
        verify_module(module, allow_mixed_precision=allow_mixed_precision)
        if allow_mixed_precision:   # not skippable with --xla_disable_hlo_passes
            from xla.service.mixed_precision_normalizer import MixedPrecisionNormalizer
            MixedPrecisionNormalizer().run(module)
        for p in module.entry.parameters:
            if p.shape.is_dynamic:
                raise UnimplementedError(f"the gpu backend does not support dynamic shapes "
                                         f"(parameter {p.name}: {p.shape})")
        _row_major_entry(module)
        from xla.debug_options import debug_options
        pipeline = self.pipeline()
        pipeline.disabled_passes = pipeline.disabled_passes | frozenset(
            debug_options().xla_disable_hlo_passes)
        if hooks is not None and hooks.pass_hook is not None:
            pipeline.dump_hook = hooks.pass_hook
        pipeline.run(module)
        entry = module.entry
        for what, shape in [(p.name, p.shape) for p in entry.parameters] + \
                [("the result", entry.root_instruction.shape)]:
            for _, leaf in shape.leaves():
                if leaf.is_array and major_to_minor(leaf) != list(range(leaf.rank)):
                    raise UnimplementedError(f"the gpu backend takes and returns row-major "
                                             f"arrays only ({what}: {leaf})")
        assignment = assign_buffers(module)
        thunks = emit_thunks(module, assignment, gemm=self.gemm)
        return GpuExecutable(module, assignment, thunks, self.device, self.arch, self.platform)


def _row_major_entry(module):
    """The GPU's buffers are row-major, so the entry's parameters and result
    are too: the header's ``entry_computation_layout`` says so, and layout
    assignment copies where the module's own layouts differ (a JAX-lowered
    ``x.T`` returns f32[m,n]{0,1}: it becomes a transpose into row-major).
    Logical values are unchanged; only where bytes lie."""
    from xla.hlo.attributes import RawAttr
    from xla.hlo.shape import Layout, Shape

    def row_major(shape):
        if shape.is_tuple:
            return Shape.tuple([row_major(s) for s in shape.tuple_shapes])
        if shape.is_array:
            return shape.with_layout(Layout.row_major(shape.rank))
        return shape
    entry = module.entry
    params = ", ".join(row_major(p.shape).to_text() for p in entry.parameters)
    result = row_major(entry.root_instruction.shape).to_text()
    module.header_attrs["entry_computation_layout"] = RawAttr(f"{{({params})->{result}}}")
