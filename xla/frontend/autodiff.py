"""Reverse-mode automatic differentiation of traced HLO: ``grad``, ``vjp``...

Differentiation works on the HLO a trace has built, one opcode at a time:
``VJP_RULES`` has one row per differentiable opcode, a function of the
builder, the primal instruction and the cotangent of its result that returns
the cotangents of its operands (None where an operand gets none). The
backward pass walks the instructions between the differentiated inputs and
the outputs in reverse order and accumulates cotangents, emitting the
adjoint ops into the same builder, so forward and backward compile into one
module (fused and scheduled together, as XLA does with JAX's training steps).

Computations that ops call are handled by re-tracing: a conditional's
branches and a counted while loop's body are inlined into new builders and
differentiated there (``_vjp_of_computation``). A while loop is
differentiable when its trip count is known (``xla.lax.fori_loop`` with
static bounds and ``xla.lax.scan`` record it as ``known_trip_count``): the
forward loop is re-run storing each iteration's state, and a second loop
runs the body's VJP backwards over the stored states.

``jvp`` is derived from the VJP (the VJP is linear in the cotangent, and
differentiating it again gives the Jacobian-vector product), so every
opcode with a VJP rule whose rule is itself differentiable has a JVP.

Non-differentiable values (integers, booleans, comparisons, iota, rng)
carry no cotangent: their inputs get zero gradients, as in JAX.
"""
import functools

import numpy as np

from xla.hlo.opcodes import OpcodeTable
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.frontend import pytree, tracing
from xla.frontend.builder import XlaOp
from xla.frontend.tracing import Tracer, as_tracer, current_context, tracing_error
from xla.hlo.attributes import PaddingDim, SliceDim
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape

VJP_RULES = OpcodeTable("vjp")


def vjp_rule(*opcodes):
    def register(fn):
        for op in opcodes:
            VJP_RULES[op] = fn
        return fn
    return register


def _is_float(shape):
    return shape.is_array and shape.element_type.kind in ("f", "c")


# ----- small builder helpers --------------------------------------------------------

class _G:
    """Terse builder ops over XlaOps for the rules."""

    def __init__(self, b):
        self.b = b

    def op(self, instr):
        return XlaOp(self.b, instr)

    def const(self, like, value):
        c = self.b.constant(np.asarray(value, dtype=like.dtype))
        return self.b.broadcast_in_dim(c, like.dims, ()) if like.dims else c

    def zeros(self, shape):
        dtype = shape.element_type.dtype
        c = self.b.constant(np.zeros((), dtype))
        return self.b.broadcast_in_dim(c, shape.dimensions, ()) if shape.dimensions else c

    def add(self, x, y):
        return self.b.binary("add", x, y)

    def sub(self, x, y):
        return self.b.binary("subtract", x, y)

    def mul(self, x, y):
        return self.b.binary("multiply", x, y)

    def div(self, x, y):
        return self.b.binary("divide", x, y)

    def neg(self, x):
        return self.b.unary("negate", x)

    def u(self, opcode, x):
        return self.b.unary(opcode, x)

    def select(self, p, x, y):
        return self.b.select(p, x, y)

    def cmp(self, x, y, direction):
        return self.b.compare(x, y, direction)

    def sum_to(self, x, dims):
        """Sums ``x`` over ``dims``."""
        if not dims:
            return x
        et = x.element_type
        return self.b.reduce(x, self.b.constant(np.zeros((), et.dtype)),
                             self.b.scalar_computation("add", et), sorted(dims))


# ----- elementwise rules ------------------------------------------------------------

@vjp_rule("add")
def _add(g, instr, ct):
    return [ct, ct]


@vjp_rule("subtract")
def _subtract(g, instr, ct):
    return [ct, g.neg(ct)]


@vjp_rule("multiply")
def _multiply(g, instr, ct):
    x, y = map(g.op, instr.operands)
    return [g.mul(ct, y), g.mul(ct, x)]


@vjp_rule("divide")
def _divide(g, instr, ct):
    x, y = map(g.op, instr.operands)
    out = g.op(instr)
    cx = g.div(ct, y)
    return [cx, g.neg(g.mul(cx, out))]


@vjp_rule("negate")
def _negate(g, instr, ct):
    return [g.neg(ct)]


@vjp_rule("exponential")
def _exp(g, instr, ct):
    return [g.mul(ct, g.op(instr))]


@vjp_rule("exponential-minus-one")
def _expm1(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.add(out, g.const(out, 1)))]


@vjp_rule("log")
def _log(g, instr, ct):
    return [g.div(ct, g.op(instr.operands[0]))]


@vjp_rule("log-plus-one")
def _log1p(g, instr, ct):
    x = g.op(instr.operands[0])
    return [g.div(ct, g.add(x, g.const(x, 1)))]


@vjp_rule("sqrt")
def _sqrt(g, instr, ct):
    out = g.op(instr)
    return [g.div(g.mul(ct, g.const(out, 0.5)), out)]


@vjp_rule("rsqrt")
def _rsqrt(g, instr, ct):
    x, out = g.op(instr.operands[0]), g.op(instr)
    return [g.mul(g.mul(ct, g.const(out, -0.5)), g.div(out, x))]


@vjp_rule("cbrt")
def _cbrt(g, instr, ct):
    x, out = g.op(instr.operands[0]), g.op(instr)
    return [g.div(g.mul(ct, out), g.mul(g.const(x, 3), x))]


@vjp_rule("tanh")
def _tanh(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.sub(g.const(out, 1), g.mul(out, out)))]


@vjp_rule("logistic")
def _logistic(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.mul(out, g.sub(g.const(out, 1), out)))]


@vjp_rule("sine")
def _sin(g, instr, ct):
    return [g.mul(ct, g.u("cosine", g.op(instr.operands[0])))]


@vjp_rule("cosine")
def _cos(g, instr, ct):
    return [g.neg(g.mul(ct, g.u("sine", g.op(instr.operands[0]))))]


@vjp_rule("tan")
def _tan(g, instr, ct):
    out = g.op(instr)
    return [g.mul(ct, g.add(g.const(out, 1), g.mul(out, out)))]


@vjp_rule("erf")
def _erf(g, instr, ct):
    x = g.op(instr.operands[0])
    scale = g.const(x, 2 / np.sqrt(np.pi))
    return [g.mul(ct, g.mul(scale, g.u("exponential", g.neg(g.mul(x, x)))))]


@vjp_rule("atan2")
def _atan2(g, instr, ct):
    y, x = map(g.op, instr.operands)
    denom = g.add(g.mul(x, x), g.mul(y, y))
    return [g.div(g.mul(ct, x), denom), g.neg(g.div(g.mul(ct, y), denom))]


@vjp_rule("power")
def _power(g, instr, ct):
    x, y = map(g.op, instr.operands)
    out = g.op(instr)
    zero = g.const(x, 0)
    one = g.const(x, 1)
    # d/dx x^y = y x^(y-1); at x == 0 use y * 0^(y-1) computed directly.
    cx = g.mul(ct, g.mul(y, g.b.binary("power", x, g.sub(y, one))))
    safe_log = g.u("log", g.select(g.cmp(x, zero, "EQ"), one, x))
    cy = g.mul(ct, g.mul(out, safe_log))
    cy = g.select(g.cmp(x, zero, "EQ"), g.const(x, 0), cy)
    return [cx, cy]


def _chooser(g, instr, ct, direction):
    x, y = map(g.op, instr.operands)
    # Ties split the cotangent evenly, as JAX defines max/min's derivative.
    half = g.mul(ct, g.const(ct, 0.5))
    zero = g.zeros(ct.shape)
    pick_x = g.cmp(x, y, direction)
    tie = g.cmp(x, y, "EQ")
    cx = g.select(tie, half, g.select(pick_x, ct, zero))
    cy = g.select(tie, half, g.select(pick_x, zero, ct))
    return [cx, cy]


@vjp_rule("maximum")
def _maximum(g, instr, ct):
    return _chooser(g, instr, ct, "GT")


@vjp_rule("minimum")
def _minimum(g, instr, ct):
    return _chooser(g, instr, ct, "LT")


@vjp_rule("abs")
def _abs(g, instr, ct):
    x = g.op(instr.operands[0])
    if x.element_type.kind == "c":
        raise UnimplementedError("gradient of abs of a complex value is not supported")
    return [g.mul(ct, g.u("sign", x))]


@vjp_rule("sign", "floor", "ceil", "round-nearest-afz", "round-nearest-even")
def _zero_grad(g, instr, ct):
    return [g.zeros(instr.operands[0].shape)]


@vjp_rule("copy", "opt-barrier")
def _identity(g, instr, ct):
    return [ct]


@vjp_rule("convert")
def _convert(g, instr, ct):
    src = instr.operands[0].shape
    if not _is_float(src):
        return [None]
    if ct.element_type.kind == "c" and src.element_type.kind != "c":
        ct = g.u("real", ct)   # real -> complex: the imaginary part of the cotangent drops
    return [g.b.convert(ct, src.element_type)]


@vjp_rule("reduce-precision")
def _reduce_precision(g, instr, ct):
    return [ct]


@vjp_rule("real")
def _real(g, instr, ct):
    zero = g.zeros(ct.shape)
    return [g.b.binary("complex", ct, zero)]


@vjp_rule("imag")
def _imag(g, instr, ct):
    zero = g.zeros(ct.shape)
    return [g.b.binary("complex", zero, g.neg(ct))]


@vjp_rule("complex")
def _complex(g, instr, ct):
    return [g.u("real", ct), g.neg(g.u("imag", ct))]


@vjp_rule("select")
def _select(g, instr, ct):
    p = g.op(instr.operands[0])
    zero = g.zeros(ct.shape)
    return [None, g.select(p, ct, zero), g.select(p, zero, ct)]


@vjp_rule("clamp")
def _clamp(g, instr, ct):
    lo, x, hi = map(g.op, instr.operands)
    zero = g.zeros(ct.shape)
    below = g.cmp(x, lo if lo.dims == x.dims else g.b.broadcast_in_dim(lo, x.dims, ()), "LT")
    above = g.cmp(x, hi if hi.dims == x.dims else g.b.broadcast_in_dim(hi, x.dims, ()), "GT")
    inside = g.b.binary("and", g.u("not", below), g.u("not", above))
    clo = g.select(below, ct, zero)
    chi = g.select(above, ct, zero)
    if not lo.dims and x.dims:
        clo = g.sum_to(clo, range(len(x.dims)))
    if not hi.dims and x.dims:
        chi = g.sum_to(chi, range(len(x.dims)))
    return [clo, g.select(inside, ct, zero), chi]


# ----- shape ops --------------------------------------------------------------------

@vjp_rule("broadcast")
def _broadcast(g, instr, ct):
    dims = tuple(instr.attr("dimensions", ()))
    out_rank = len(instr.shape.dimensions)
    summed = [d for d in range(out_rank) if d not in dims]
    r = g.sum_to(ct, summed)
    kept = sorted(dims)
    perm = [kept.index(d) for d in dims]
    if perm != list(range(len(perm))):
        r = g.b.transpose(r, perm)
    return [r]


@vjp_rule("reshape", "bitcast")
def _reshape(g, instr, ct):
    return [g.b.reshape(ct, instr.operands[0].shape.dimensions)]


@vjp_rule("transpose")
def _transpose(g, instr, ct):
    perm = list(instr.attr("dimensions"))
    inverse = [perm.index(i) for i in range(len(perm))]
    return [g.b.transpose(ct, inverse)]


@vjp_rule("reverse")
def _reverse(g, instr, ct):
    return [g.b.reverse(ct, instr.attr("dimensions"))]


@vjp_rule("slice")
def _slice(g, instr, ct):
    operand = instr.operands[0].shape
    padding = []
    for sd, size, n in zip(instr.attr("slice"), operand.dimensions, instr.shape.dimensions):
        last = sd.start + (n - 1) * sd.stride + 1 if n else sd.start
        padding.append((sd.start, size - last, sd.stride - 1 if n > 1 else 0))
    zero = g.b.constant(np.zeros((), ct.dtype))
    return [g.b.pad(ct, zero, padding)]


@vjp_rule("pad")
def _pad(g, instr, ct):
    pads = instr.attr("padding")
    if any(p.low < 0 or p.high < 0 for p in pads):
        raise UnimplementedError("gradient of pad with negative padding is not supported")
    operand = instr.operands[0].shape
    starts = [p.low for p in pads]
    limits = [p.low + (d - 1) * (p.interior + 1) + 1 if d else p.low
              for p, d in zip(pads, operand.dimensions)]
    strides = [p.interior + 1 for p in pads]
    c_operand = g.b.slice(ct, starts, limits, strides)
    total = g.sum_to(ct, range(len(ct.dims)))
    inner = g.sum_to(c_operand, range(len(c_operand.dims)))
    return [c_operand, g.sub(total, inner)]


@vjp_rule("concatenate")
def _concatenate(g, instr, ct):
    axis = instr.attr("dimensions")[0]
    out, offset = [], 0
    for o in instr.operands:
        dims = o.shape.dimensions
        starts = [0] * len(dims)
        limits = list(ct.dims)
        starts[axis] = offset
        limits[axis] = offset + dims[axis]
        out.append(g.b.slice(ct, starts, limits))
        offset += dims[axis]
    return out


@vjp_rule("dynamic-slice")
def _dynamic_slice(g, instr, ct):
    operand = instr.operands[0]
    idx = [g.op(i) for i in instr.operands[1:]]
    return [g.b.dynamic_update_slice(g.zeros(operand.shape), ct, idx)] + [None] * len(idx)


@vjp_rule("dynamic-update-slice")
def _dynamic_update_slice(g, instr, ct):
    update = instr.operands[1]
    idx = [g.op(i) for i in instr.operands[2:]]
    c_operand = g.b.dynamic_update_slice(ct, g.zeros(update.shape), idx)
    c_update = g.b.dynamic_slice(ct, idx, update.shape.dimensions)
    return [c_operand, c_update] + [None] * len(idx)


# ----- reductions -------------------------------------------------------------------

def reducer_opcode(comp):
    """The binary opcode a scalar reducer applies to its two parameters, or None."""
    root = comp.root_instruction
    params = comp.parameters
    if len(params) == 2 and len(comp.instructions) == 3 and len(root.operands) == 2 and \
            set(map(id, root.operands)) == set(map(id, params)):
        return root.opcode
    return None


@vjp_rule("reduce")
def _reduce(g, instr, ct):
    if len(instr.operands) != 2:
        raise UnimplementedError("gradient of a variadic reduce (e.g. argmax values) is not supported")
    operand, init = instr.operands
    op = reducer_opcode(instr.attr("to_apply"))
    dims = tuple(instr.attr("dimensions"))
    kept = [d for d in range(len(operand.shape.dimensions)) if d not in dims]
    spread = g.b.broadcast_in_dim(ct, operand.shape.dimensions, kept)
    if op == "add":
        return [spread, g.sum_to(ct, range(len(ct.dims)))]
    if op in ("maximum", "minimum"):
        x = g.op(operand)
        out = g.b.broadcast_in_dim(g.op(instr), operand.shape.dimensions, kept)
        hit = g.cmp(x, out, "EQ")
        ones = g.b.convert(hit, x.element_type)
        counts = g.b.broadcast_in_dim(g.sum_to(ones, dims), operand.shape.dimensions, kept)
        c_operand = g.div(g.mul(spread, ones), counts)
        # The init value wins only where no element reached it.
        init_wins = g.cmp(g.sum_to(ones, dims), g.zeros(ct.shape), "EQ")
        c_init = g.sum_to(g.select(init_wins, ct, g.zeros(ct.shape)), range(len(ct.dims)))
        return [c_operand, c_init]
    if op == "multiply":
        x = g.op(operand)
        out = g.b.broadcast_in_dim(g.op(instr), operand.shape.dimensions, kept)
        init_v = g.op(init)
        return [g.div(g.mul(spread, out), x),
                g.sum_to(g.div(g.mul(ct, g.op(instr)), g.b.broadcast_in_dim(init_v, ct.dims, ())
                               if ct.dims else init_v), range(len(ct.dims)))]
    raise UnimplementedError(f"gradient of reduce with reducer {op or 'computation'} is not supported")


@vjp_rule("dot")
def _dot(g, instr, ct):
    lhs, rhs = instr.operands
    a = instr.attrs
    lc, rc = list(a.get("lhs_contracting_dims", ())), list(a.get("rhs_contracting_dims", ()))
    lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
    lr, rr = len(lhs.shape.dimensions), len(rhs.shape.dimensions)
    lf = [d for d in range(lr) if d not in lc and d not in lb]
    rf = [d for d in range(rr) if d not in rc and d not in rb]
    nb = len(lb)
    ct_batch = list(range(nb))
    ct_lf = list(range(nb, nb + len(lf)))
    ct_rf = list(range(nb + len(lf), nb + len(lf) + len(rf)))
    x, y = g.op(lhs), g.op(rhs)
    # d lhs: contract ct's rhs-free dims with rhs's free dims.
    d_lhs = g.b.dot_general(ct, y, ct_rf, rf, ct_batch, rb)
    # d_lhs dims: batch, lhs free, rhs contracting (in rc order) -> lhs order.
    order = lb + lf + [lc[rc.index(d)] for d in sorted(rc, key=rc.index)]
    d_lhs = _permute_to(g, d_lhs, order)
    d_rhs = g.b.dot_general(x, ct, lf, ct_lf, lb, ct_batch)
    # d_rhs dims: batch, lhs contracting (lc order), rhs free -> rhs order.
    order_r = rb + [rc[i] for i in range(len(lc))] + rf
    d_rhs = _permute_to(g, d_rhs, order_r)
    if d_lhs.element_type != lhs.shape.element_type:
        d_lhs = g.b.convert(d_lhs, lhs.shape.element_type)
    if d_rhs.element_type != rhs.shape.element_type:
        d_rhs = g.b.convert(d_rhs, rhs.shape.element_type)
    return [d_lhs, d_rhs]


def _permute_to(g, x, order):
    """``x``'s dim i is operand dim ``order[i]``; transpose into operand order."""
    perm = [order.index(d) for d in range(len(order))]
    if perm == list(range(len(perm))):
        return x
    return g.b.transpose(x, perm)


# ----- convolution (JAX's transpose rules, re-derived for HLO dimension numbers) --------

def _dilate(n, d):
    return 0 if n == 0 else 1 + d * (n - 1)


def _conv_parts(instr):
    dn = instr.attr("dim_labels")
    window = instr.attr("window").dimensions
    lhs, rhs = instr.operands
    lhs_sp = [lhs.shape.dimensions[d] for d in dn.input_spatial_dimensions]
    rhs_sp = [rhs.shape.dimensions[d] for d in dn.kernel_spatial_dimensions]
    out_sp = [instr.shape.dimensions[d] for d in dn.output_spatial_dimensions]
    return dn, window, lhs_sp, rhs_sp, out_sp


def _window(sizes, strides, pads, lhs_dil, rhs_dil):
    from xla.hlo.attributes import Window, WindowDimension
    return Window([WindowDimension(size=k, stride=s, padding_low=lo, padding_high=hi,
                                   window_dilation=rd, base_dilation=ld)
                   for k, s, (lo, hi), ld, rd in zip(sizes, strides, pads, lhs_dil, rhs_dil)])


def _conv_lhs_padding(lhs_sp, rhs_sp, window, out_sp):
    pads = []
    for n, k, w, o in zip(lhs_sp, rhs_sp, window, out_sp):
        lhs_d = _dilate(n, w.base_dilation)
        rhs_d = _dilate(k, w.window_dilation)
        out_d = _dilate(o, w.stride)
        before = rhs_d - w.padding_low - 1
        after = lhs_d + rhs_d - 1 - out_d - before
        pads.append((before, after))
    return pads


def _conv_rhs_padding(lhs_sp, rhs_sp, window, out_sp):
    pads = []
    for n, k, w, o in zip(lhs_sp, rhs_sp, window, out_sp):
        lhs_d = _dilate(n, w.base_dilation)
        rhs_d = _dilate(k, w.window_dilation)
        out_d = _dilate(o, w.stride)
        lo = w.padding_low
        hi = (out_d - lhs_d) + (rhs_d - lo - 1)
        pads.append((lo, hi))
    return pads


@vjp_rule("convolution")
def _convolution(g, instr, ct):
    from xla.hlo.attributes import ConvDimensionNumbers
    b = g.b
    dn, window, lhs_sp, rhs_sp, out_sp = _conv_parts(instr)
    fgc = instr.attr("feature_group_count", 1)
    bgc = instr.attr("batch_group_count", 1)
    if bgc != 1:
        raise UnimplementedError("gradient of a convolution with batch_group_count > 1")
    if any(w.window_reversal for w in window):
        raise UnimplementedError("gradient of a convolution with window reversal")
    lhs, rhs = instr.operands
    x, w = g.op(lhs), g.op(rhs)
    # d lhs: ct convolved with the reversed kernel, in/out features swapped.
    kern = w
    ko, ki = dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension
    if fgc > 1:
        dims = list(kern.dims)
        split = dims[:ko] + [fgc, dims[ko] // fgc] + dims[ko + 1:]
        kern = b.reshape(kern, split)
        # Move the group axis (at ko) next to (before) the input feature axis and merge.
        rank = len(split)
        perm = [i for i in range(rank) if i != ko]
        dst = ki  # in the numbering without the group axis
        perm.insert(dst, ko)
        moved = b.transpose(kern, perm)
        merged = [d for i, d in enumerate(split) if i != ko]
        merged[dst] *= fgc
        kern = b.reshape(moved, merged)
    kern = b.reverse(kern, list(dn.kernel_spatial_dimensions))
    t_dn = ConvDimensionNumbers(dn.output_batch_dimension, dn.output_feature_dimension,
                                dn.output_spatial_dimensions, ko, ki, dn.kernel_spatial_dimensions,
                                dn.input_batch_dimension, dn.input_feature_dimension,
                                dn.input_spatial_dimensions)
    pads = _conv_lhs_padding(lhs_sp, rhs_sp, window, out_sp)
    win = _window(rhs_sp, [w_.base_dilation for w_ in window], pads, [w_.stride for w_ in window],
                  [w_.window_dilation for w_ in window])
    d_lhs = b.convolution(ct, kern, win, t_dn, fgc, 1, lhs.shape.element_type)
    # d rhs: lhs convolved with ct, batch acting as the contracted feature.
    r_dn = ConvDimensionNumbers(dn.input_feature_dimension, dn.input_batch_dimension,
                                dn.input_spatial_dimensions, dn.output_batch_dimension,
                                dn.output_feature_dimension, dn.output_spatial_dimensions,
                                ki, ko, dn.kernel_spatial_dimensions)
    pads = _conv_rhs_padding(lhs_sp, rhs_sp, window, out_sp)
    win = _window(out_sp, [w_.window_dilation for w_ in window], pads, [w_.base_dilation for w_ in window],
                  [w_.stride for w_ in window])
    d_rhs = b.convolution(x, ct, win, r_dn, 1, fgc, rhs.shape.element_type)
    return [d_lhs, d_rhs]


# ----- windows: pooling ----------------------------------------------------------------

@vjp_rule("reduce-window")
def _reduce_window(g, instr, ct):
    if len(instr.operands) != 2:
        raise UnimplementedError("gradient of a variadic reduce-window is not supported")
    operand, init = instr.operands
    op = reducer_opcode(instr.attr("to_apply"))
    window = instr.attr("window").dimensions
    b = g.b
    dims = operand.shape.dimensions
    if op == "add":
        pads = _conv_lhs_padding(dims, [w.size for w in window], window, instr.shape.dimensions)
        padded = b.pad(ct, b.constant(np.zeros((), ct.dtype)),
                       [(lo, hi, w.stride - 1) for (lo, hi), w in zip(pads, window)])
        win = _window([w.size for w in window], [w.base_dilation for w in window],
                      [(0, 0)] * len(dims), [1] * len(dims), [w.window_dilation for w in window])
        out = b.reduce_window(padded, b.constant(np.zeros((), ct.dtype)),
                              b.scalar_computation("add", ct.element_type), win)
        return [out, None]
    if op in ("maximum", "minimum"):
        if any(w.base_dilation != 1 or w.window_dilation != 1 for w in window):
            raise UnimplementedError("gradient of a dilated max/min reduce-window is not supported")
        et = ct.element_type
        from xla.hlo.shape import Shape as _S
        sel = b.sub_builder("select_ge" if op == "maximum" else "select_le")
        a_ = sel.parameter(0, _S.scalar(et), "a")
        c_ = sel.parameter(1, _S.scalar(et), "b")
        sel_comp = sel.build(sel.compare(a_, c_, "GE" if op == "maximum" else "LE"))
        out = b.select_and_scatter(g.op(operand), ct, b.constant(np.zeros((), ct.dtype)),
                                   instr.attr("window"), sel_comp, b.scalar_computation("add", et))
        return [out, None]
    raise UnimplementedError(f"gradient of reduce-window with reducer {op or 'computation'}")


# ----- gather, scatter, sort ---------------------------------------------------------------

def _clamped_indices(g, instr):
    """Gather's start indices clamped as gather clamps them, so that the
    scatter of the gradient lands where the values came from."""
    b = g.b
    operand, indices = instr.operands
    ivd = instr.attr("index_vector_dim")
    start_map = instr.attr("start_index_map")
    sizes = instr.attr("slice_sizes")
    idx = g.op(indices)
    dims = idx.dims
    hi = np.array([operand.shape.dimensions[d] - sizes[d] for d in start_map], dtype=idx.dtype)
    if ivd == len(dims):
        upper = b.broadcast_in_dim(b.constant(hi.reshape(())), dims, ()) if dims else b.constant(hi.reshape(()))
    else:
        upper = b.broadcast_in_dim(b.constant(hi), dims, (ivd,))
    zero = b.broadcast_in_dim(b.constant(np.zeros((), idx.dtype)), dims, ()) if dims else \
        b.constant(np.zeros((), idx.dtype))
    return b.binary("minimum", b.binary("maximum", idx, zero), upper)


@vjp_rule("gather")
def _gather(g, instr, ct):
    operand = instr.operands[0]
    a = instr.attrs
    b = g.b
    idx = _clamped_indices(g, instr)
    et = operand.shape.element_type
    out = b.scatter(g.zeros(operand.shape), idx, ct, b.scalar_computation("add", et),
                    update_window_dims=a["offset_dims"], inserted_window_dims=a["collapsed_slice_dims"],
                    scatter_dims_to_operand_dims=a["start_index_map"], index_vector_dim=a["index_vector_dim"],
                    input_batching_dims=a.get("operand_batching_dims", ()),
                    scatter_indices_batching_dims=a.get("start_indices_batching_dims", ()))
    return [out, None]


@vjp_rule("scatter")
def _scatter(g, instr, ct):
    if len(instr.operands) != 3:
        raise UnimplementedError("gradient of a variadic scatter is not supported")
    operand, indices, updates = instr.operands
    a = instr.attrs
    b = g.b
    comp = a["to_apply"]
    root = comp.root_instruction
    is_set = root.opcode == "parameter" and root.parameter_number == 1
    op = reducer_opcode(comp)
    window_dims = list(a["update_window_dims"])
    inserted = set(a["inserted_window_dims"]) | set(a.get("input_batching_dims", ()))
    win_sizes = iter(updates.shape.dimensions[d] for d in window_dims)
    slice_sizes = [1 if d in inserted else next(win_sizes) for d in range(len(operand.shape.dimensions))]
    gathered = b.gather(ct, g.op(indices), offset_dims=window_dims,
                        collapsed_slice_dims=a["inserted_window_dims"],
                        start_index_map=a["scatter_dims_to_operand_dims"],
                        index_vector_dim=a["index_vector_dim"], slice_sizes=slice_sizes,
                        operand_batching_dims=a.get("input_batching_dims", ()),
                        start_indices_batching_dims=a.get("scatter_indices_batching_dims", ()))
    if op == "add":
        return [ct, None, gathered]
    if is_set:
        zeros = g.zeros(updates.shape)
        set_comp = comp
        c_operand = b.scatter(ct, g.op(indices), zeros, set_comp,
                              update_window_dims=window_dims, inserted_window_dims=a["inserted_window_dims"],
                              scatter_dims_to_operand_dims=a["scatter_dims_to_operand_dims"],
                              index_vector_dim=a["index_vector_dim"],
                              input_batching_dims=a.get("input_batching_dims", ()),
                              scatter_indices_batching_dims=a.get("scatter_indices_batching_dims", ()))
        return [c_operand, None, gathered]
    raise UnimplementedError(f"gradient of scatter with combiner {op or 'computation'} is not supported")


@vjp_rule("sort")
def _sort(g, instr, ct):
    from xla.hlo.shape import Shape as _S
    from xla.hlo.types import PrimitiveType
    b = g.b
    ops = [g.op(o) for o in instr.operands]
    dim = instr.attr("dimensions")[0]
    comp = instr.attr("to_apply")
    n = len(ops)
    # The permutation: sort again with an iota riding along.
    ext = b.sub_builder(f"{comp.name}_with_iota")
    params = [ext.parameter(i, p.shape, f"p{i}") for i, p in enumerate(comp.parameters)]
    ext.parameter(2 * n, _S.scalar(PrimitiveType.S32), "i_lhs")
    ext.parameter(2 * n + 1, _S.scalar(PrimitiveType.S32), "i_rhs")
    ext_comp = ext.build(inline(ext, comp, params))
    iota = b.iota(PrimitiveType.S32, ops[0].dims, dim)
    sorted_all = b.sort(ops + [iota], ext_comp, dim, bool(instr.attr("is_stable", False)))
    perm = b.get_tuple_element(sorted_all, n)
    by_perm = b.sub_builder("by_permutation")
    pl = by_perm.parameter(0, _S.scalar(PrimitiveType.S32), "a")
    pr = by_perm.parameter(1, _S.scalar(PrimitiveType.S32), "b")
    cts = ct if isinstance(ct, list) else [ct]
    for k, o in enumerate(ops):
        by_perm.parameter(2 + 2 * k, _S.scalar(o.element_type), f"x{k}")
        by_perm.parameter(3 + 2 * k, _S.scalar(o.element_type), f"y{k}")
    by_perm_comp = by_perm.build(by_perm.compare(pl, pr, "LT"))
    filled = [c if c is not None else g.zeros(o.shape) for c, o in zip(cts, ops)]
    # Sorting (perm, ct...) by perm puts each cotangent back in operand order.
    back = b.sort([perm] + filled, by_perm_comp, dim, False)
    out = [b.get_tuple_element(back, 1 + k) for k in range(n)]
    return out if n > 1 else out


# ----- the backward pass ------------------------------------------------------------

class _Cts:
    """Cotangents being accumulated, per instruction (lists for tuples)."""

    def __init__(self, g):
        self.g = g
        self.cts = {}

    def add(self, instr, ct, index=None):
        if ct is None:
            return
        key = id(instr)
        if instr.shape.is_tuple:
            slots = self.cts.setdefault(key, [None] * len(instr.shape.tuple_shapes))
            slots[index] = ct if slots[index] is None else self.g.add(slots[index], ct)
        else:
            old = self.cts.get(key)
            self.cts[key] = ct if old is None else self.g.add(old, ct)

    def get(self, instr):
        return self.cts.get(id(instr))


def _topo(outputs):
    order, seen = [], set()
    for out in outputs:
        stack = [(out, False)]
        while stack:
            instr, done = stack.pop()
            if done:
                order.append(instr)
                continue
            if id(instr) in seen:
                continue
            seen.add(id(instr))
            stack.append((instr, True))
            for o in reversed(instr.operands):
                if id(o) not in seen:
                    stack.append((o, False))
    return order


def backward_pass(b, inputs, outputs, cotangents):
    """Cotangents (XlaOps or None) of ``inputs`` (HloInstructions) given
    ``cotangents`` of ``outputs`` (HloInstructions), all in builder ``b``."""
    g = _G(b)
    order = _topo(outputs)
    input_ids = {id(i) for i in inputs}
    depends = {}
    for instr in order:
        depends[id(instr)] = id(instr) in input_ids or any(depends.get(id(o), False)
                                                           for o in instr.operands)
    acc = _Cts(g)
    for out, ct in zip(outputs, cotangents):
        if ct is None:
            continue
        if out.shape.is_tuple:
            for i, c in enumerate(ct):
                acc.add(out, c, i)
        else:
            acc.add(out, ct)
    for instr in reversed(order):
        if id(instr) in input_ids or not depends[id(instr)]:
            continue
        ct = acc.get(instr)
        if ct is None:
            continue
        if instr.opcode == "get-tuple-element":
            acc.add(instr.operands[0], ct, instr.attr("index"))
            continue
        if instr.opcode == "tuple":
            for o, c in zip(instr.operands, ct):
                if c is not None and depends[id(o)]:
                    acc.add(o, c)
            continue
        if instr.shape.is_array and not _is_float(instr.shape):
            continue
        rule = VJP_RULES.get(instr.opcode)
        if rule is None:
            rule = _STRUCTURED.get(instr.opcode)
        if rule is None:
            raise tracing_error(f"xla.grad: no differentiation rule for HLO op {instr.opcode} "
                                f"({instr.name}); it is not differentiable here")
        operand_cts = rule(g, instr, ct)
        for o, c in zip(instr.operands, operand_cts):
            if c is None or not depends[id(o)]:
                continue
            if o.shape.is_tuple:
                for i, ci in enumerate(c):
                    if ci is not None:
                        acc.add(o, ci, i)
            elif _is_float(o.shape):
                acc.add(o, c)
    return [acc.get(i) for i in inputs]


# ----- called computations: inlining and their VJPs -----------------------------------

def inline(b, comp, operands):
    """Copies ``comp`` into builder ``b`` with its parameters replaced by
    ``operands`` (XlaOps); returns the XlaOp of its root."""
    mapping = {}
    for instr in comp.instructions:
        if instr.opcode == "parameter":
            mapping[id(instr)] = operands[instr.parameter_number].instr
            continue
        new = HloInstruction(instr.opcode, instr.shape, [mapping[id(o)] for o in instr.operands],
                             name=b._state.unique(f"{instr.opcode}.{next(b._state.counter)}"),
                             attrs={k: v for k, v in instr.attrs.items() if k != "control-predecessors"},
                             literal=instr.literal)
        b._instructions.append(new)
        mapping[id(instr)] = new
    return XlaOp(b, mapping[id(comp.root_instruction)])


def _tuple_elements(b, op):
    return [b.get_tuple_element(op, i) for i in range(len(op.shape.tuple_shapes))]


def _zeros_like_shape(g, shape):
    if shape.is_tuple:
        return g.b.tuple([_zeros_like_shape(g, s) for s in shape.tuple_shapes])
    return g.zeros(shape)


def _vjp_computation(parent, comp, name):
    """A computation (params: comp's params..., the cotangent of its root)
    returning a tuple of the cotangents of comp's params (zeros where none)."""
    sub = parent.sub_builder(name)
    params = [sub.parameter(i, p.shape, f"p{i}") for i, p in enumerate(comp.parameters)]
    ct = sub.parameter(len(params), comp.root_instruction.shape, "ct")
    root = inline(sub, comp, params)
    g = _G(sub)
    ct_value = _tuple_elements(sub, ct) if ct.shape.is_tuple else ct
    # A fresh instruction per parameter, so uses outside the inlined body
    # (there are none) can't be confused with it.
    cts = backward_pass(sub, [p.instr for p in params], [root.instr], [ct_value])
    outs = []
    for p, c in zip(params, cts):
        if c is None:
            outs.append(_zeros_like_shape(g, p.shape))
        elif isinstance(c, list):
            outs.append(sub.tuple([ci if ci is not None else g.zeros(s)
                                   for ci, s in zip(c, p.shape.tuple_shapes)]))
        else:
            outs.append(c)
    return sub.build(sub.tuple(outs))


def _ct_value(g, shape, ct):
    """The cotangent ``ct`` (XlaOp, list or None) as one XlaOp of ``shape``."""
    if shape.is_tuple:
        cts = ct if isinstance(ct, list) else [None] * len(shape.tuple_shapes)
        return g.b.tuple([_ct_value(g, s, c) for s, c in zip(shape.tuple_shapes, cts)])
    return ct if ct is not None else g.zeros(shape)


def _conditional(g, instr, ct):
    """Each branch k becomes a backward branch taking (operand_k, ct) and
    returning the cotangents of every branch operand (zeros but slot k)."""
    b = g.b
    if instr.has_attr("branch_computations"):
        branches = list(instr.attr("branch_computations"))
    else:
        branches = [instr.attr("true_computation"), instr.attr("false_computation")]
    operands = [g.op(o) for o in instr.operands[1:]]
    ct_op = _ct_value(g, instr.shape, ct)
    backward = []
    for k, comp in enumerate(branches):
        sub = b.sub_builder(f"{comp.name}_bwd")
        p = sub.parameter(0, Shape.tuple([operands[k].shape, ct_op.shape]), "arg")
        operand = sub.get_tuple_element(p, 0)
        ct_k = sub.get_tuple_element(p, 1)
        ct_k = _tuple_elements(sub, ct_k) if ct_k.shape.is_tuple else ct_k
        (c,) = backward_through_inlined(_G(sub), comp, [operand], ct_k)
        slots = [_zeros_like_shape(_G(sub), o.shape) for o in operands]
        slots[k] = _ct_value(_G(sub), operands[k].shape, c)
        backward.append(sub.build(sub.tuple(slots)))
    args = [b.tuple([operands[k], ct_op]) for k in range(len(branches))]
    combined = b.conditional(g.op(instr.operands[0]), backward, args)
    return [None] + [_split_ct(b, b.get_tuple_element(combined, j)) for j in range(len(operands))]


def _split_ct(b, op):
    if op.shape.is_tuple:
        return [b.get_tuple_element(op, i) for i in range(len(op.shape.tuple_shapes))]
    return op


def _call(g, instr, ct):
    return backward_through_inlined(g, instr.attr("to_apply"), [g.op(o) for o in instr.operands], ct)


def backward_through_inlined(g, comp, operands, ct):
    """Inlines ``comp`` on stand-ins of ``operands`` (so the walk stops at
    them) and returns the stand-ins' cotangents."""
    stand_ins = [g.b.add_instruction("copy", (o,)) if o.shape.is_array else
                 g.b.tuple(_tuple_elements(g.b, o)) for o in operands]
    root = inline(g.b, comp, stand_ins)
    return backward_pass(g.b, [s.instr for s in stand_ins], [root.instr], [ct])


def _while(g, instr, ct):
    trip = known_trip_count(instr)
    if trip is None:
        raise tracing_error(
            "xla.grad: reverse-mode differentiation of a while loop needs its trip count; use "
            "xla.lax.fori_loop with static bounds or xla.lax.scan")
    b = g.b
    body = instr.attr("body")
    state_shape = instr.shape
    init = g.op(instr.operands[0])
    # Forward again, stacking each iteration's input state.
    leaves = list(state_shape.tuple_shapes) if state_shape.is_tuple else [state_shape]
    stacks = [g.zeros(Shape.array(s.element_type, (trip,) + s.dimensions)) for s in leaves]
    fwd = _stacking_loop(b, body, init, stacks, trip, state_shape)
    stacked = [b.get_tuple_element(fwd, 1 + i) for i in range(len(leaves))]
    vjp_body = _vjp_computation(b, body, f"{body.name}_vjp")
    ct_state = _ct_value(g, state_shape, ct)
    bwd = _reverse_loop(b, vjp_body, stacked, ct_state, trip, state_shape)
    return [_split_ct(b, bwd)]


def known_trip_count(instr):
    value = instr.attrs.get("backend_config")
    text = getattr(value, "text", None) or (value if isinstance(value, str) else None)
    if not text:
        return None
    import re
    m = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"', text)
    return int(m.group(1)) if m else None


def _counter_loop(b, name, carry_shapes, step_fn, trip, init_ops):
    """while i < trip: state = step_fn(sub, i, [state...]); returns the while op
    (a tuple (i, state...))."""
    from xla.hlo.types import PrimitiveType
    s32 = PrimitiveType.S32
    tuple_shape = Shape.tuple([Shape.scalar(s32)] + list(carry_shapes))
    cond = b.sub_builder(f"{name}_cond")
    p = cond.parameter(0, tuple_shape, "state")
    i = cond.get_tuple_element(p, 0)
    cond.build(cond.compare(i, cond.constant(np.int32(trip)), "LT"))
    body = b.sub_builder(f"{name}_body")
    p = body.parameter(0, tuple_shape, "state")
    i = body.get_tuple_element(p, 0)
    state = [body.get_tuple_element(p, k + 1) for k in range(len(carry_shapes))]
    new_state = step_fn(body, i, state)
    nxt = body.binary("add", i, body.constant(np.int32(1)))
    body_comp = body.build(body.tuple([nxt] + new_state))
    init = b.tuple([b.constant(np.int32(0))] + list(init_ops))
    return b.while_loop(cond._built, body_comp, init)


def _stacking_loop(b, body_comp, init, stacks, trip, state_shape):
    is_tuple = state_shape.is_tuple
    carry_shapes = [state_shape] + [s.shape for s in stacks]

    def step(sub, i, carry):
        state, stk = carry[0], carry[1:]
        leaves = _tuple_elements(sub, state) if is_tuple else [state]
        zero = sub.constant(np.int32(0))
        new_stk = []
        for leaf, s in zip(leaves, stk):
            upd = sub.reshape(leaf, (1,) + leaf.dims)
            new_stk.append(sub.dynamic_update_slice(s, upd, [i] + [zero] * len(leaf.dims)))
        nxt = sub.call(body_comp, [state])
        return [nxt] + new_stk

    loop = _counter_loop(b, f"{body_comp.name}_fwd", carry_shapes, step, trip, [init] + stacks)
    state = b.get_tuple_element(loop, 1)
    return b.tuple([state] + [b.get_tuple_element(loop, 2 + k) for k in range(len(stacks))])


def _reverse_loop(b, vjp_body, stacked, ct_state, trip, state_shape):
    is_tuple = state_shape.is_tuple
    carry_shapes = [ct_state.shape] + [s.shape for s in stacked]

    def step(sub, i, carry):
        ct, stk = carry[0], carry[1:]
        k = sub.binary("subtract", sub.constant(np.int32(trip - 1)), i)
        zero = sub.constant(np.int32(0))
        leaves = []
        for s in stk:
            dims = s.dims[1:]
            sl = sub.dynamic_slice(s, [k] + [zero] * len(dims), (1,) + dims)
            leaves.append(sub.reshape(sl, dims))
        state = sub.tuple(leaves) if is_tuple else leaves[0]
        out = sub.call(vjp_body, [state, ct])
        return [sub.get_tuple_element(out, 0)] + list(stk)

    loop = _counter_loop(b, "while_bwd", carry_shapes, step, trip, [ct_state] + list(stacked))
    return b.get_tuple_element(loop, 1)


_STRUCTURED = {"conditional": _conditional, "while": _while, "call": _call}


# ----- the user-facing transformations --------------------------------------------------

def _fresh(t):
    """A new instruction standing for input ``t``, so that only uses through
    it are differentiated (closures over ``t`` itself are constants)."""
    b = current_context().builder
    return Tracer(b.add_instruction("copy", (t.op,)), weak=t.weak)


def _check_float(t, what):
    if t.dtype.kind not in "fc":
        raise tracing_error(f"{what} requires float inputs; got {t.dtype} (integer and boolean "
                            "inputs have no gradient: make them float or pass them as other arguments)")


def _vjp_traced(fn, primals, has_aux):
    """Inside a trace: runs fn on fresh stand-ins of ``primals`` (a list of
    pytrees) and returns (out, vjp_fn, aux)."""
    leaves_list, treedefs, fresh_args = [], [], []
    for p in primals:
        leaves, treedef = pytree.flatten(p)
        fresh = []
        for leaf in leaves:
            t = as_tracer(leaf)
            _check_float(t, "differentiation")
            fresh.append(_fresh(t))
        leaves_list.append(fresh)
        treedefs.append(treedef)
        fresh_args.append(treedef.unflatten(fresh))
    result = fn(*fresh_args)
    if has_aux:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise InvalidArgumentError("has_aux=True needs the function to return (output, aux)")
        out, aux = result
    else:
        out, aux = result, None
    out_leaves, out_treedef = pytree.flatten(out)
    out_tracers = [as_tracer(x) for x in out_leaves]
    builder = current_context().builder

    def vjp_fn(cotangent):
        ct_leaves, ct_treedef = pytree.flatten(cotangent)
        if ct_treedef != out_treedef:
            raise InvalidArgumentError(f"cotangent structure {ct_treedef} does not match the output "
                                       f"structure {out_treedef}")
        cts = []
        for o, c in zip(out_tracers, ct_leaves):
            c = as_tracer(c)
            if c.shape != o.shape:
                raise InvalidArgumentError(f"cotangent shape {c.shape} does not match output shape {o.shape}")
            cts.append(tracing.convert(c, o.dtype).op)
        inputs = [t.op.instr for leaves in leaves_list for t in leaves]
        results = backward_pass(builder, inputs, [o.op.instr for o in out_tracers], cts)
        flat = []
        for t, r in zip((t for leaves in leaves_list for t in leaves), results):
            flat.append(Tracer(r) if r is not None else
                        Tracer(_G(builder).zeros(t.op.shape)))
        out_cts, k = [], 0
        for leaves, treedef in zip(leaves_list, treedefs):
            out_cts.append(treedef.unflatten(flat[k:k + len(leaves)]))
            k += len(leaves)
        return tuple(out_cts)

    return out, vjp_fn, aux


def _in_trace():
    return tracing.current_context(required=False) is not None


def vjp(fn, *primals, has_aux=False):
    """``(out, vjp_fn)`` (and ``aux`` with has_aux): ``vjp_fn(ct)`` returns one
    cotangent per primal. Outside a trace both run compiled."""
    if _in_trace():
        out, vjp_fn, aux = _vjp_traced(fn, list(primals), has_aux)
        return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)
    from xla.frontend.jit import jit

    def forward(*ps):
        out, _, aux = _vjp_traced(fn, list(ps), has_aux)
        return (out, aux) if has_aux else out

    result = jit(forward)(*primals)
    out, aux = result if has_aux else (result, None)
    back = jit(lambda ps, ct: _vjp_traced(fn, list(ps), has_aux)[1](ct))

    def vjp_fn(ct):
        return back(tuple(primals), ct)

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def value_and_grad(fn, argnums=0, has_aux=False):
    """A function returning ``(fn(*args), gradient)`` (``((value, aux), grad)``
    with has_aux); the output must be a real scalar."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def traced(*args, **kwargs):
        for n in nums:
            if n >= len(args):
                raise InvalidArgumentError(f"argnums {n} is out of range for {len(args)} positional "
                                           "arguments")
        diff = [args[n] for n in nums]

        def partial_fn(*dargs):
            full = list(args)
            for n, d in zip(nums, dargs):
                full[n] = d
            return fn(*full, **kwargs)

        out, vjp_fn, aux = _vjp_traced(partial_fn, diff, has_aux)
        t = as_tracer(out) if not isinstance(out, Tracer) else out
        if t.shape != () or t.dtype.kind != "f":
            raise tracing_error(f"grad requires a real scalar output, got {t.dtype}{list(t.shape)} "
                                "(use xla.vjp for other outputs)")
        grads = vjp_fn(tracing.full((), 1, t.dtype))
        grad_value = grads[0] if single else tuple(grads)
        return ((out, aux), grad_value) if has_aux else (out, grad_value)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _in_trace():
            return traced(*args, **kwargs)
        if wrapper.compiled is None:
            from xla.frontend.jit import jit
            wrapper.compiled = jit(traced)
        return wrapper.compiled(*args, **kwargs)

    wrapper.compiled = None   # compiled on first use outside a trace
    return wrapper


def grad(fn, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``fn`` with respect to argument(s) ``argnums``."""
    vg = value_and_grad(fn, argnums, has_aux)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def jvp(fn, primals, tangents):
    """``(fn(*primals), J @ tangents)``: forward mode, derived by
    differentiating the (linear) VJP once more."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise InvalidArgumentError("jvp needs as many tangents as primals")

    def traced(ps, ts):
        out, vjp_fn, _ = _vjp_traced(fn, list(ps), False)
        out_leaves, out_treedef = pytree.flatten(out)
        zeros_ct = out_treedef.unflatten([tracing.full(as_tracer(o).shape, 0, as_tracer(o).dtype)
                                          for o in out_leaves])

        def pullback_dot(ct):
            cts = vjp_fn(ct)
            total = None
            for c, t in zip(pytree.tree_leaves(cts), pytree.tree_leaves(ts)):
                term = np.sum(np.multiply(c, t))
                total = term if total is None else total + term
            return total

        _, inner_vjp, _ = _vjp_traced(pullback_dot, [zeros_ct], False)
        (tangent_out,) = inner_vjp(tracing.full((), 1, _scalar_dtype(out_leaves)))
        return out, tangent_out

    if _in_trace():
        return traced(primals, tangents)
    from xla.frontend.jit import jit
    return jit(traced)(primals, tangents)


def _scalar_dtype(leaves):
    dts = [as_tracer(x).dtype for x in leaves]
    return np.result_type(*dts) if dts else np.float32
