"""The GPU backend's HLO pipeline: custom fusions inlined, scan as a while
loop (``scan-expander``), f32/f64 convolutions as im2col and a matrix
product (``convolution-im2col``: the product goes to cuBLAS), collectives
with their one participant's result (``async-to-sync``,
``one-device-collectives``: a GPU module runs on one device here), the
target-independent passes, reshapes that move no byte as bitcasts
(``reshape-to-bitcast``), fusion with the GPU's policy, scheduling."""
from xla.backends.gpu.fusion_policy import GPU_FUSION_POLICY
from xla.hlo.shape import Layout
from xla.runtime.collectives import COLLECTIVE_OPCODES
from xla.service.pass_registry import make_pass
from xla.service.pipelines import add_fusion_stage, add_scheduling_stage, target_independent_pipeline


def gpu_pipeline(**options):
    pipeline = target_independent_pipeline(**options)
    pipeline.passes.insert(0, make_pass("custom-fusion-inliner"))
    pipeline.passes.insert(1, make_pass("scan-expander"))
    pipeline.passes.insert(2, make_pass("convolution-im2col"))
    pipeline.passes.insert(3, make_pass("async-to-sync"))
    pipeline.passes.insert(4, make_pass("one-device-collectives"))
    layout = [p.name for p in pipeline.passes].index("layout-assignment")
    pipeline.passes[layout] = make_pass("layout-assignment", constraints=layout_constraints)
    pipeline.add_pass(make_pass("reshape-to-bitcast"))   # layouts are final here
    add_fusion_stage(pipeline, GPU_FUSION_POLICY)
    return add_scheduling_stage(pipeline)


def layout_constraints(instr):
    """(operand layouts, result layout) ``instr`` needs, or None: the
    collectives read and write row-major arrays."""
    if instr.opcode not in COLLECTIVE_OPCODES:
        return None

    def row_major(shape):
        return Layout.row_major(shape.rank) if shape.is_array else None
    return [row_major(o.shape) for o in instr.operands], row_major(instr.shape)
