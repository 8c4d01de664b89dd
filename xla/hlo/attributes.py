"""Typed instruction attributes.

An HloInstruction keeps its attributes in ``instr.attrs``, a dict from the
attribute's name as spelled in HLO text (``dimensions``, ``window``,
``to_apply``, ``control-predecessors``...) to a typed value. ``ATTRIBUTE_KINDS``
says which type each known name has; the parser parses and the printer
prints by kind. A name not in the table is kept as ``RawAttr`` (its text,
exactly as written) and printed back unchanged, so nothing is dropped.

Kinds and their Python values:

=================  ==========================================================
``dims``           tuple of int, text ``{1,0}``
``int``            int
``bool``           bool, text ``true``/``false``
``enum``           str, a bare word (``LT``, ``TOTALORDER``, ``kLoop``)
``string``         str, text in double quotes
``slice``          tuple of SliceDim, text ``{[0:4:2], [1:3]}``
``padding``        tuple of PaddingDim, text ``0_0_1x1_2``
``window``         Window, text ``{size=3x3 stride=2x2 pad=0_1x0_1 ...}``
``dim_labels``     ConvDimensionNumbers, text ``b01f_01io->b01f``
``computation``    HloComputation, text ``%name``
``computations``   tuple of HloComputation, text ``{%a, %b}``
``instructions``   tuple of HloInstruction, text ``{%a, %b}``
``raw``            RawAttr: text kept verbatim (metadata, backend_config...)
=================  ==========================================================
"""
from typing import NamedTuple


class SliceDim(NamedTuple):
    start: int
    limit: int
    stride: int = 1


class PaddingDim(NamedTuple):
    low: int
    high: int
    interior: int = 0


class RawAttr:
    """An attribute value kept as the exact text that followed ``name=``."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, RawAttr) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return f"RawAttr({self.text!r})"


class WindowDimension(NamedTuple):
    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1   # text: rhs_dilate
    base_dilation: int = 1     # text: lhs_dilate
    window_reversal: bool = False  # text: rhs_reversal


class Window:
    """The window of convolution, reduce-window and select-and-scatter."""

    __slots__ = ("dimensions",)

    def __init__(self, dimensions):
        self.dimensions = tuple(dimensions)

    def __eq__(self, other):
        return isinstance(other, Window) and other.dimensions == self.dimensions

    def __hash__(self):
        return hash(self.dimensions)

    def __repr__(self):
        return f"Window({self.to_text()})"

    def to_text(self):
        dims = self.dimensions
        if not dims:
            return "{}"
        parts = ["size=" + "x".join(str(d.size) for d in dims)]
        if any(d.stride != 1 for d in dims):
            parts.append("stride=" + "x".join(str(d.stride) for d in dims))
        if any(d.padding_low or d.padding_high for d in dims):
            parts.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
        if any(d.base_dilation != 1 for d in dims):
            parts.append("lhs_dilate=" + "x".join(str(d.base_dilation) for d in dims))
        if any(d.window_dilation != 1 for d in dims):
            parts.append("rhs_dilate=" + "x".join(str(d.window_dilation) for d in dims))
        if any(d.window_reversal for d in dims):
            parts.append("rhs_reversal=" + "x".join(str(int(d.window_reversal)) for d in dims))
        return "{" + " ".join(parts) + "}"


class ConvDimensionNumbers:
    """Convolution dimension numbers, written as ``dim_labels=b01f_01io->b01f``.

    In the input and output labels ``b`` is the batch dimension, ``f`` the
    feature dimension and digits the spatial dimensions in order; in the
    kernel labels ``i`` and ``o`` are the input and output feature dimensions.
    ``?`` marks a dimension the numbers do not name (XLA's parser accepts it;
    the verifier then refuses a convolution whose operand has it, as XLA's
    does). As XLA, each part prints up to its highest named dimension, so a
    trailing ``?`` is not printed back.
    """

    __slots__ = ("input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
                 "kernel_input_feature_dimension", "kernel_output_feature_dimension",
                 "kernel_spatial_dimensions", "output_batch_dimension",
                 "output_feature_dimension", "output_spatial_dimensions")

    def __init__(self, input_batch_dimension, input_feature_dimension, input_spatial_dimensions,
                 kernel_input_feature_dimension, kernel_output_feature_dimension,
                 kernel_spatial_dimensions, output_batch_dimension, output_feature_dimension,
                 output_spatial_dimensions):
        self.input_batch_dimension = input_batch_dimension
        self.input_feature_dimension = input_feature_dimension
        self.input_spatial_dimensions = tuple(input_spatial_dimensions)
        self.kernel_input_feature_dimension = kernel_input_feature_dimension
        self.kernel_output_feature_dimension = kernel_output_feature_dimension
        self.kernel_spatial_dimensions = tuple(kernel_spatial_dimensions)
        self.output_batch_dimension = output_batch_dimension
        self.output_feature_dimension = output_feature_dimension
        self.output_spatial_dimensions = tuple(output_spatial_dimensions)

    def _key(self):
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other):
        return isinstance(other, ConvDimensionNumbers) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"ConvDimensionNumbers({self.to_text()})"

    @staticmethod
    def _labels(specials, spatial):
        chars = ["?"] * (max([dim for dim, _ in specials] + list(spatial)) + 1)
        for dim, ch in specials:
            chars[dim] = ch
        for i, dim in enumerate(spatial):
            chars[dim] = str(i)
        return "".join(chars)

    def to_text(self):
        lhs = self._labels([(self.input_batch_dimension, "b"), (self.input_feature_dimension, "f")],
                           self.input_spatial_dimensions)
        rhs = self._labels([(self.kernel_input_feature_dimension, "i"),
                            (self.kernel_output_feature_dimension, "o")], self.kernel_spatial_dimensions)
        out = self._labels([(self.output_batch_dimension, "b"), (self.output_feature_dimension, "f")],
                           self.output_spatial_dimensions)
        return f"{lhs}_{rhs}->{out}"

    @staticmethod
    def from_text(text):
        """Parses ``b01f_01io->b01f``; raises ValueError on a malformed label."""
        try:
            operands, out = text.split("->")
            lhs, rhs = operands.split("_")
        except ValueError:
            raise ValueError(f"expected dim_labels like b01f_01io->b01f, got {text!r}") from None

        def parse(labels, a, b):
            if len(labels) < 2:
                raise ValueError(f"dim_labels part {labels!r} is too short")
            first = labels.find(a)
            second = labels.find(b)
            if first < 0 or second < 0 or labels.count(a) != 1 or labels.count(b) != 1:
                raise ValueError(f"dim_labels part {labels!r} needs exactly one {a!r} and one {b!r}")
            spatial = {}
            for pos, ch in enumerate(labels):
                if ch in (a, b, "?"):
                    continue
                if not ch.isdigit():
                    raise ValueError(f"unexpected character {ch!r} in dim_labels part {labels!r}")
                if int(ch) in spatial:
                    raise ValueError(f"spatial dimension {ch} appears twice in dim_labels part "
                                     f"{labels!r}")
                spatial[int(ch)] = pos
            if sorted(spatial) != list(range(len(spatial))):
                raise ValueError(f"spatial dimensions of dim_labels part {labels!r} must be "
                                 f"0..{len(spatial) - 1}")
            return first, second, tuple(spatial[i] for i in range(len(spatial)))

        ib, if_, isp = parse(lhs, "b", "f")
        ki, ko, ksp = parse(rhs, "i", "o")
        ob, of, osp = parse(out, "b", "f")
        if not len(isp) == len(ksp) == len(osp):
            raise ValueError(f"dim_labels {text!r}: operands disagree on the number of spatial dimensions")
        return ConvDimensionNumbers(ib, if_, isp, ki, ko, ksp, ob, of, osp)


_DIMS = """dimensions lhs_batch_dims lhs_contracting_dims rhs_batch_dims
rhs_contracting_dims offset_dims collapsed_slice_dims start_index_map
operand_batching_dims start_indices_batching_dims slice_sizes
update_window_dims inserted_window_dims scatter_dims_to_operand_dims
input_batching_dims scatter_indices_batching_dims dynamic_slice_sizes
fft_length lhs_ragged_dims rhs_group_dims""".split()
_INT = """index iota_dimension index_vector_dim feature_group_count
batch_group_count channel_id k exponent_bits mantissa_bits
all_gather_dimension scatter_dimension split_dimension
lhs_contracting_dims_count num_carries""".split()
_BOOL = """is_stable largest indices_are_sorted unique_indices lower left_side
unit_diagonal custom_call_has_side_effect constrain_layout
use_global_device_ids is_cross_program_prefetch is_reverse is_associative""".split()
_ENUM = """direction type distribution algorithm kind api_version transpose_a
fft_type custom_call_schedule""".split()
_STRING = ["custom_call_target"]
_COMPUTATION = """to_apply calls condition body true_computation
false_computation select scatter""".split()
_COMPUTATIONS = ["branch_computations", "called_computations"]
_INSTRUCTIONS = ["control-predecessors"]

ATTRIBUTE_KINDS = {}
for _names, _kind in ((_DIMS, "dims"), (_INT, "int"), (_BOOL, "bool"), (_ENUM, "enum"),
                      (_STRING, "string"), (_COMPUTATION, "computation"),
                      (_COMPUTATIONS, "computations"), (_INSTRUCTIONS, "instructions")):
    for _name in _names:
        ATTRIBUTE_KINDS[_name] = _kind
ATTRIBUTE_KINDS.update({"slice": "slice", "padding": "padding", "window": "window",
                        "dim_labels": "dim_labels"})

# Compare directions and comparison types.
COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
COMPARISON_TYPES = ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")
FUSION_KINDS = ("kLoop", "kInput", "kOutput", "kCustom")
RNG_ALGORITHMS = ("rng_default", "rng_three_fry", "rng_philox")
RNG_DISTRIBUTIONS = ("rng_uniform", "rng_normal")


def kind_of(name):
    """The kind of attribute ``name`` (see the module docstring), 'raw' if unknown."""
    return ATTRIBUTE_KINDS.get(name, "raw")
