"""The CPU backend's HLO pipeline: ``custom-fusion-inliner`` (kCustom
fusions, e.g. XLA:CPU's YNNPACK dot fusions, become plain HLO to re-fuse),
``ragged-dot-expander`` (ragged-dot as dots and selects, where it can),
``scaled-dot-expander`` (scaled-dot as multiplies and a dot),
``scan-expander`` (scan as a while loop),
the target-independent pipeline (``xla/service/pipelines.py``), fusion with
the CPU's policy (``fusion_policy.py``) and ``dynamic-update-slice-fusion``
(a DUS joins the fusion computing its update: one in-place kernel), then
copy insertion and the memory scheduler, after which buffer assignment
runs."""
from xla.backends.cpu.fusion_policy import CPU_FUSION_POLICY
from xla.service.pass_registry import make_pass
from xla.service.pipelines import add_fusion_stage, add_scheduling_stage, target_independent_pipeline


def cpu_pipeline(**options):
    pipeline = target_independent_pipeline(**options)
    pipeline.passes.insert(0, make_pass("custom-fusion-inliner"))
    pipeline.passes.insert(1, make_pass("ragged-dot-expander"))
    pipeline.passes.insert(2, make_pass("scaled-dot-expander"))
    pipeline.passes.insert(3, make_pass("scan-expander"))
    add_fusion_stage(pipeline, CPU_FUSION_POLICY)
    pipeline.add_pass(make_pass("dynamic-update-slice-fusion"))
    return add_scheduling_stage(pipeline)
