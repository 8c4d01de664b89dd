"""Convolution: the runtime's conv2d for the layouts it supports, else a
loop per output element.

Fast path (an instruction emitter): f32/f64 convolutions whose operands
and result have the result's element type, no batch groups (but a
depthwise kernel gradient's), no window reversal (the pipeline's
``convolution-reversal-expander`` reverses the kernel instead), one or two
spatial dimensions, and buffers stored as the runtime reads them (any dim_labels: the CPU's layout assignment arranges the
physical orders of ``layout_constraints.conv2d_form``) become one call to
``__xla_cpu_conv2d_f32/f64`` (input NHWC, kernel HWIO, output NHWC) or
``__xla_cpu_conv2d_filter_f32/f64`` (a kernel gradient's order: input
[feature, spatial, batch], kernel [input feature, spatial, output feature],
output [spatial, batch, feature]), or in that order
``__xla_cpu_conv2d_depthwise_filter_f32/f64`` (a depthwise layer's kernel
gradient: batch groups of one entry and one output feature); parallel
inside the runtime. A 1-D convolution is a 2-D one with a unit height.

bf16/f16/f8 and narrow integer convolutions the runtime would take in f32
or f64 reach here widened to that type (the pipeline's
``convolution-type-widening``). Everything else (other integer and
narrow types, other layouts, batch groups,
reversal, any number of spatial dimensions, convolutions inside fusions)
goes through the generator: for one output element, a loop nest over the
kernel's spatial positions (skipping positions that fall in padding or
in lhs-dilation holes, see ``emit_window.window_position``) and, inside,
over the input features of the output feature's group, accumulating
``lhs * rhs`` in the result's register type (operands converted to the
result type first; integers wrap around, narrow floats accumulate in f32
and round once, as the interpreter does; preds: an OR of ANDs; complex
numbers: part by part).

Groups, as the interpreter defines them: with feature_group_count G the
output feature ``o`` reads input features ``[g*I, (g+1)*I)`` with
``g = o // (O/G)`` (I the kernel's input feature size); with
batch_group_count Bg the output batch ``b`` and output feature ``o`` read
input batch ``(o // (O/Bg)) * (N/Bg) + b`` and every input feature.
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.emit_window import all_valid, window_dimensions, window_position
from xla.backends.cpu.ir_emitter import (Slice, convert_register, register_generator,
                                         register_instruction, unsupported)
from xla.backends.cpu.layout_constraints import conv2d_candidate, conv2d_form
from xla.backends.cpu.llvm_types import register_type, round_result
from xla.backends.cpu.loop_emitter import i64

PTR = ir.PointerType()
VOID = ir.VoidType()


@register_generator("convolution")
def generate_convolution(g, h, index):
    lhs, rhs = h.operands
    dn = h.attr("dim_labels")
    et = h.shape.element_type
    boolean = et.kind == "pred"   # an OR of ANDs, as for a dot of preds
    if boolean and (lhs.shape.element_type.kind != "pred" or rhs.shape.element_type.kind != "pred"):
        raise unsupported(h, f"element type {et} from {lhs.shape.element_type}")
    complex_ = et.kind == "c"
    if complex_ and (lhs.shape.element_type is not et or rhs.shape.element_type is not et):
        raise unsupported(h, f"element type {et} from {lhs.shape.element_type}")
    if not boolean and not complex_ and (et.kind not in "suf" or "c" in (
            lhs.shape.element_type.kind, rhs.shape.element_type.kind)):
        raise unsupported(h, f"element type {et}")
    nsp = len(dn.input_spatial_dimensions)
    wdims = window_dimensions(h, nsp)
    G = int(h.attr("feature_group_count", 1) or 1)
    Bg = int(h.attr("batch_group_count", 1) or 1)
    ldims, rdims = lhs.shape.dimensions, rhs.shape.dimensions
    N, C = ldims[dn.input_batch_dimension], ldims[dn.input_feature_dimension]
    O, I = rdims[dn.kernel_output_feature_dimension], rdims[dn.kernel_input_feature_dimension]
    in_sizes = [ldims[d] for d in dn.input_spatial_dimensions]
    ksizes = [rdims[d] for d in dn.kernel_spatial_dimensions]
    out_sizes = [h.shape.dimensions[d] for d in dn.output_spatial_dimensions]
    rt = register_type(et)
    if complex_:
        part = rt.elements[0]
        zero = ir.Constant(rt, [ir.Constant(part, 0.0), ir.Constant(part, 0.0)])
    else:
        zero = ir.Constant(rt, 0.0 if et.kind == "f" else 0)
    if min([N, C, O, I] + in_sizes + ksizes, default=1) == 0:
        return zero
    b = g.b
    ob = index[dn.output_batch_dimension]
    of = index[dn.output_feature_dimension]
    if Bg > 1:
        group = b.udiv(of, i64(O // Bg))
        in_batch = b.add(b.mul(group, i64(N // Bg)), ob)
        feature_base = None
    else:
        in_batch = ob
        feature_base = b.mul(b.udiv(of, i64(O // G)), i64(I)) if G > 1 else None

    acc = g.kernel.alloca(rt, name="acc")
    b.store(zero, acc)
    saved = g.push_scope()
    li, ri = [None] * lhs.shape.rank, [None] * rhs.shape.rank
    li[dn.input_batch_dimension] = in_batch
    ri[dn.kernel_output_feature_dimension] = of

    def features():
        b = g.b
        with le.for_loop(b, 0, I, name="c") as c:
            li[dn.input_feature_dimension] = c if feature_base is None else b.add(feature_base, c)
            ri[dn.kernel_input_feature_dimension] = c
            x = convert_register(b, g.value(lhs, list(li)), lhs.shape.element_type, et)
            y = convert_register(b, g.value(rhs, list(ri)), rhs.shape.element_type, et)
            cur = b.load(acc, typ=rt)
            if boolean:
                b.store(b.or_(cur, b.and_(x, y)), acc)
            elif complex_:   # cur + x * y, part by part
                xr, xi, yr, yi = (b.extract_value(v, i) for v in (x, y) for i in (0, 1))
                re = b.fadd(b.extract_value(cur, 0), b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)))
                im = b.fadd(b.extract_value(cur, 1), b.fadd(b.fmul(xr, yi), b.fmul(xi, yr)))
                b.store(b.insert_value(b.insert_value(cur, re, 0), im, 1), acc)
            else:
                b.store(b.fadd(cur, b.fmul(x, y)) if et.kind == "f" else b.add(cur, b.mul(x, y)), acc)

    def spatial(level):
        if level == nsp:
            features()
            return
        b = g.b
        wd = wdims[level]
        with le.for_loop(b, 0, ksizes[level], name=f"k{level}") as k:
            o = index[dn.output_spatial_dimensions[level]]
            valid, pos = window_position(b, o, k, wd, in_sizes[level], out_sizes[level])
            li[dn.input_spatial_dimensions[level]] = pos
            ri[dn.kernel_spatial_dimensions[level]] = (
                b.sub(i64(ksizes[level] - 1), k) if wd.window_reversal else k)
            valid = all_valid(b, [valid])
            if valid is None:
                spatial(level + 1)
            else:
                with b.if_then(valid):
                    spatial(level + 1)

    spatial(0)
    g.pop_scope(saved)
    return round_result(g.b, g.b.load(acc, typ=rt), et)


def _runtime_conv_params(h):
    """(the runtime function's name without its type, its shape arguments)
    for ``h``, or None when neither form applies."""
    lhs, rhs = h.operands
    if not conv2d_candidate(h):
        return None
    dn = h.attr("dim_labels")
    nsp = len(dn.input_spatial_dimensions)
    wdims = window_dimensions(h, nsp)
    isp, ksp, osp = (list(dn.input_spatial_dimensions), list(dn.kernel_spatial_dimensions),
                     list(dn.output_spatial_dimensions))
    form, orders = conv2d_form(h)
    if [le.major_to_minor(s) for s in (lhs.shape, rhs.shape, h.shape)] != list(orders):
        return None
    # conv2d_depthwise_filter takes the batch group count in its place
    G = int(h.attr("batch_group_count" if form == "conv2d_depthwise_filter"
                   else "feature_group_count", 1) or 1)
    ld, rd, od = lhs.shape.dimensions, rhs.shape.dimensions, h.shape.dimensions
    in_c, out_c = ld[dn.input_feature_dimension], rd[dn.kernel_output_feature_dimension]
    sizes = [(ld[i], rd[k], od[o], wd) for i, k, o, wd in zip(isp, ksp, osp, wdims)]
    if nsp == 1:
        from xla.hlo.attributes import WindowDimension
        sizes.insert(0, (1, 1, 1, WindowDimension(size=1)))
    (ih, kh, oh, wh), (iw, kw, ow, ww) = sizes
    return form, [ld[dn.input_batch_dimension], ih, iw, in_c, kh, kw, out_c, oh, ow,
                  wh.stride, ww.stride, wh.padding_low, ww.padding_low,
                  wh.base_dilation, ww.base_dilation, wh.window_dilation, ww.window_dilation, G]


@register_instruction("convolution")
def emit_convolution(me, h):
    runtime = _runtime_conv_params(h)
    name = runtime and f"__xla_cpu_{runtime[0]}_{h.shape.element_type.text}"
    if name not in me.runtime_symbols:
        me.emit_loops(h, h)
        return
    params = runtime[1]
    if h.shape.num_elements() == 0:
        return
    b = me.builder
    fn = me.declare(name, ir.FunctionType(VOID, [PTR] * 3 + [le.I64] * len(params)))
    ptrs = [me.slice_pointer(b, me.table, Slice(me.assignment.buffer(x)).key)
            for x in (h.operands[0], h.operands[1], h)]
    b.call(fn, ptrs + [i64(p) for p in params])

