"""The CPU backend's fusion policy: which ops its kernels compute per
element, and the bounds its code generator needs.

- Loop fusions may hold every elementwise op but ``map``, and the cheap data
  movement the element generators index through (broadcast, reshape,
  bitcast, transpose, slice, pad, concatenate, iota, dynamic-slice,
  gather, reverse): the target-independent set.
- Transcendental ops, divisions and gathers are expensive: computed once,
  never copied into several kernels.
- ``max_depth`` 100: the element generators (``elemental_ir_emitter``)
  recurse once per fused instruction along an operand chain.
- ``max_emitted_ops`` 500: a fused member read through k index maps is
  emitted k times; the bound keeps kernels (and LLVM's time on them) small.
A reduce is never fused into a consumer (the C++ planner's rule, as on
XLA:CPU); a reduction kernel's epilogue is a separate loop fusion.
"""
from xla.service.instruction_fusion import FusionPolicy

CPU_FUSION_POLICY = FusionPolicy(max_depth=100, max_emitted_ops=500, max_operands=64,
                                 max_duplicates=4, multi_output=True, sibling_min_bytes=256)
