"""SubByteNormalization (``sub-byte-size-removal``): removes the element size
``E(n)`` from every layout, so that sub-byte arrays (s4, u4, f4e2m1fn, ...)
are stored one element per byte.

XLA:CPU packs them (its optimized dumps say ``s4[4,4]{1,0:E(4)}``: two
elements a byte); this project's CPU backend keeps one element per byte, as
NumPy holds ml_dtypes arrays, so CpuCompiler runs this pass first. What a
module computes does not depend on the packing: every op but ``bitcast``
reads elements, not bytes. A ``bitcast`` whose operand or result is packed
and that changes the element width would reinterpret packed bytes: this
pass refuses it (UnimplementedError naming the instruction) rather than
change its meaning. The header's ``entry_computation_layout`` loses its
element sizes too. Tiling and every other part of a layout are kept.

XLA's SubByteNormalization has a second mode that sets the element size;
this one only removes it.
"""
import re

from xla.errors import UnimplementedError
from xla.hlo.attributes import RawAttr
from xla.hlo.shape import Layout, Shape
from xla.service.hlo_pass import HloPass

_ELEMENT_SIZE = re.compile(r"(?<![A-Za-z])E\(\d+\)")


def _is_packed(shape):
    if shape.is_array:   # the usual case, without walking leaves
        layout = shape.layout
        return layout is not None and bool(layout.extra) and bool(layout.element_size_in_bits)
    return any(leaf.is_array and leaf.layout is not None and leaf.layout.element_size_in_bits
               for _, leaf in shape.leaves())


def unpacked(shape):
    """``shape`` without element sizes in its layouts."""
    if shape.is_tuple:
        return Shape.tuple([unpacked(s) for s in shape.tuple_shapes])
    if not shape.is_array or shape.layout is None or not shape.layout.element_size_in_bits:
        return shape
    extra = _ELEMENT_SIZE.sub("", shape.layout.extra)
    return shape.with_layout(Layout(shape.layout.minor_to_major, extra))


class SubByteNormalization(HloPass):
    name = "sub-byte-size-removal"

    def run(self, module):
        changed = False
        for comp in module.computations:
            for instr in comp.instructions:
                if not _is_packed(instr.shape):
                    continue
                self._check_bitcasts(instr)
                instr.shape = unpacked(instr.shape)
                changed = True
        layout = module.header_attrs.get("entry_computation_layout")
        if isinstance(layout, RawAttr) and _ELEMENT_SIZE.search(layout.text):
            text = re.sub(r":\}", "}", _ELEMENT_SIZE.sub("", layout.text))
            module.header_attrs["entry_computation_layout"] = RawAttr(text)
            changed = True
        return changed

    @staticmethod
    def _check_bitcasts(instr):
        """Refuses a bitcast that ``instr`` (packed) produces or feeds and
        that changes the element width."""
        pairs = [(instr.operands[0], instr)] if instr.opcode == "bitcast" else []
        pairs += [(instr, u) for u in instr.users if u.opcode == "bitcast"]
        for src, dst in pairs:
            if src.shape.is_array and dst.shape.is_array \
                    and src.shape.element_type.bits != dst.shape.element_type.bits:
                raise UnimplementedError(
                    f"{SubByteNormalization.name}: bitcast {dst.name} reinterprets the packed "
                    f"{src.shape.to_text()} as {dst.shape.to_text()}; this backend keeps one "
                    "element per byte")
