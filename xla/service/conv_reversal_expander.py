"""ConvolutionReversalExpander (``convolution-reversal-expander``): a
convolution whose window is reversed along some spatial dimensions
(``rhs_reversal``) becomes a ``reverse`` of its kernel along those
dimensions and a convolution without reversal, the same computation
(XLA defines window reversal as the kernel read backwards). Backends whose
library convolution has no reversal flag (the CPU's conv2d) then run it
there; the reverse moves the kernel once.
"""
from xla.hlo.attributes import Window
from xla.service.pass_utils import OpExpanderPass


def _reversed_dims(instr):
    window = instr.attr("window")
    if window is None:
        return ()
    return tuple(i for i, d in enumerate(window.dimensions) if d.window_reversal)


class ConvolutionReversalExpander(OpExpanderPass):
    name = "convolution-reversal-expander"

    def matches(self, instr):
        return (instr.opcode == "convolution" and len(instr.operands) == 2
                and instr.attr("dim_labels") is not None and bool(_reversed_dims(instr)))

    def expand(self, b, conv):
        lhs, rhs = conv.operands
        spatial = conv.attr("dim_labels").kernel_spatial_dimensions
        flipped = b.add("reverse", rhs.shape, [rhs],
                        dimensions=tuple(spatial[i] for i in _reversed_dims(conv)))
        window = Window(d._replace(window_reversal=False) for d in conv.attr("window").dimensions)
        attrs = dict(conv.attrs)
        attrs.pop("control-predecessors", None)
        attrs["window"] = window
        return b.add("convolution", conv.shape, [lhs, flipped], **attrs)
