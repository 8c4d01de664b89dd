"""The GPU backend's HLO pipeline: custom fusions inlined, scan as a while
loop (``scan-expander``), the target-independent passes, fusion with the
GPU's policy, scheduling."""
from xla.backends.gpu.fusion_policy import GPU_FUSION_POLICY
from xla.service.pass_registry import make_pass
from xla.service.pipelines import add_fusion_stage, add_scheduling_stage, target_independent_pipeline


def gpu_pipeline(**options):
    pipeline = target_independent_pipeline(**options)
    pipeline.passes.insert(0, make_pass("custom-fusion-inliner"))
    pipeline.passes.insert(1, make_pass("scan-expander"))
    add_fusion_stage(pipeline, GPU_FUSION_POLICY)
    return add_scheduling_stage(pipeline)
