"""Every pass by name, for ``hlo_opt --passes=a,b`` and
``--xla_disable_hlo_passes``. Names are XLA's where XLA has the pass.

Modules are imported on first use, so listing the names costs nothing.
"""
import importlib

from xla.errors import InvalidArgumentError

# pass name -> "module:class" (constructor arguments are the pass's options).
PASSES = {
    "async-to-sync": "xla.service.async_to_sync:AsyncToSync",
    "algsimp": "xla.service.algebraic_simplifier:AlgebraicSimplifier",
    "batchnorm_expander": "xla.service.batchnorm_expander:BatchNormExpander",
    "call-inliner": "xla.service.call_inliner:CallInliner",
    "constant_folding": "xla.service.constant_folding:HloConstantFolding",
    "copy-insertion": "xla.service.copy_insertion:CopyInsertion",
    "cse": "xla.service.cse:HloCSE",
    "custom-fusion-inliner": "xla.service.custom_fusion_inliner:CustomFusionInliner",
    "convolution-im2col": "xla.service.convolution_im2col:ConvolutionIm2Col",
    "convolution-type-widening": "xla.service.convolution_type_widening:ConvolutionTypeWidening",
    "convolution-reversal-expander": "xla.service.conv_reversal_expander:ConvolutionReversalExpander",
    "convolution-batch-group-splitter": "xla.service.conv_batch_group_splitter:ConvolutionBatchGroupSplitter",
    "dce": "xla.service.dce:HloDCE",
    "dot_decomposer": "xla.service.dot_decomposer:DotDecomposer",
    "dot-merger": "xla.service.dot_merger:DotMerger",
    "dot-scale-motion": "xla.service.dot_scale_motion:DotScaleMotion",
    "dot-type-widening": "xla.service.dot_type_widening:DotTypeWidening",
    "dynamic-padder": "xla.service.dynamic_padder:DynamicPadder",
    "dynamic-index-splitter": "xla.service.dynamic_index_splitter:DynamicIndexSplitter",
    "dynamic-update-slice-fusion": "xla.service.dus_fusion:DynamicUpdateSliceFusion",
    "flatten-call-graph": "xla.service.flatten_call_graph:FlattenCallGraph",
    "fusion": "xla.service.instruction_fusion:InstructionFusion",
    "hlo-memory-scheduler": "xla.service.hlo_memory_scheduler:HloMemoryScheduler",
    "layout-assignment": "xla.service.layout_assignment:LayoutAssignment",
    "mixed-precision-normalizer": "xla.service.mixed_precision_normalizer:MixedPrecisionNormalizer",
    "one-device-collectives": "xla.service.one_device_collectives:OneDeviceCollectives",
    "ragged-dot-expander": "xla.service.ragged_dot_expander:RaggedDotExpander",
    "scaled-dot-expander": "xla.service.scaled_dot_expander:ScaledDotExpander",
    "reshape-to-bitcast": "xla.service.reshape_to_bitcast:ReshapeToBitcast",
    "reduction-dimension-grouper": "xla.service.reduction_dimension_grouper:ReductionDimensionGrouper",
    "scan-expander": "xla.service.scan_expander:ScanExpander",
    "scatter-to-dynamic-update-slice": "xla.service.scatter_to_dus:ScatterToDynamicUpdateSlice",
    "tuple-simplifier": "xla.service.tuple_simplifier:TupleSimplifier",
    "while-loop-invariant-code-motion":
        "xla.service.while_loop_invariant_code_motion:WhileLoopInvariantCodeMotion",
    "sharding-propagation": "xla.service.sharding_propagation:ShardingPropagation",
    "sub-byte-size-removal": "xla.service.sub_byte_normalization:SubByteNormalization",
    "stochastic_convert_decomposer":
        "xla.service.stochastic_convert_decomposer:StochasticConvertDecomposer",
    "simplify-while-loops": "xla.service.while_loop_simplifier:WhileLoopSimplifier",
}


def pass_names():
    return sorted(PASSES)


def make_pass(name, **options):
    """A new instance of the pass called ``name`` with ``options`` (its
    constructor's keyword arguments; None values are left at the pass's
    defaults); unknown names and options are a clear error."""
    try:
        target = PASSES[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(name, PASSES, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InvalidArgumentError(
            f"unknown pass {name!r}{hint}; known passes: {', '.join(pass_names())}") from None
    module_name, cls = target.split(":")
    cls = getattr(importlib.import_module(module_name), cls)
    options = {k: v for k, v in options.items() if v is not None}
    try:
        return cls(**options)
    except TypeError as e:
        raise InvalidArgumentError(f"pass {name!r} does not take options "
                                   f"{', '.join(sorted(options))}: {e}") from None


def check_pass_names(names, what="pass"):
    for name in names:
        if name not in PASSES:
            make_pass(name)  # raises with suggestions
