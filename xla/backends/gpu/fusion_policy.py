"""The GPU backend's fusion policy.

A kernel launch costs microseconds and every unfused value is a round trip
through device memory, so fusions are allowed more operands and more code
than on the CPU; the depth bound stays (the shared element generators
recurse once per fused instruction). Expensive ops are still never
duplicated.
"""
from xla.service.instruction_fusion import FusionPolicy

GPU_FUSION_POLICY = FusionPolicy(max_depth=100, max_emitted_ops=1000, max_operands=96,
                                 max_duplicates=8, multi_output=True, sibling_min_bytes=1024)
