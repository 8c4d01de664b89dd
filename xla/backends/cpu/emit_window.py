"""Windowed ops: reduce-window (a generator, or as an inclusive scan a
kernel of its own: ``emit_scan``) and select-and-scatter (an instruction
emitter).

Window semantics per dimension, as the interpreter defines them
(``ops_window.py``): output position ``o`` and window offset ``k`` cover
position ``o*stride + k*window_dilation - padding_low`` of the input
dilated by ``base_dilation``; positions in the padding or in a hole of the
dilation are skipped (not combined with anything). ``window_position``
computes that input index and its validity; every read is guarded by the
validity, so no index outside the operand is ever dereferenced.

reduce-window: for each output element, the accumulators start at the init
values and the reducer is applied to every valid window element in
row-major order of the window offsets (the interpreter's order, so float
results are bit-identical); f16, bf16 and f8 sums and products accumulate
in f32 and round once, as reduces do. Variadic reduce-windows return a list, like
variadic reduces.

select-and-scatter: one sequential kernel. The output is filled with the
init value; then for each source element in row-major order, the window's
valid operand elements are visited in row-major order: the first is
selected, and a later element ``e`` replaces the selected ``s`` when
``select(s, e)`` is false; the source value is combined into the output at
the selected position with ``scatter(output, source)``. A window with no
valid element selects nothing.
"""
import itertools
import math

from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import (ElementGenerator, Kernel, Slice, convert_register,
                                         register_generator, register_instruction,
                                         register_root_kernel, unsupported)
from xla.backends.cpu.llvm_types import constant, load_element, register_type, round_result, store_element
from xla.backends.cpu.element_generator import _cheap
from xla.backends.cpu.reduction_emitter import narrow_float_accumulation
from xla.backends.cpu.loop_emitter import i64
from xla.hlo.attributes import WindowDimension
from xla.hlo.shape import Shape

I1 = ir.IntType(1)


def window_dimensions(h, rank):
    """The window's dimensions, padded with size-1 dimensions to ``rank``."""
    window = h.attr("window")
    dims = list(window.dimensions) if window is not None else []
    if len(dims) < rank:
        dims += [WindowDimension(size=1)] * (rank - len(dims))
    return dims


def window_position(b, o, k, wd, in_size, out_size):
    """(valid, index) of window offset ``k`` at output position ``o`` (i64
    values) in an input dimension of ``in_size`` elements. ``valid`` is an
    i1, or None when every (o, k) of this dimension is valid; ``index`` is
    only meaningful where valid."""
    bd = wd.base_dilation or 1
    dilated = (in_size - 1) * bd + 1 if in_size > 0 else 0
    lo = -wd.padding_low
    hi = (out_size - 1) * wd.stride + (wd.size - 1) * wd.window_dilation - wd.padding_low
    pos = o if wd.stride == 1 else b.mul(o, i64(wd.stride), flags=("nsw",))
    term = k if wd.window_dilation == 1 else b.mul(k, i64(wd.window_dilation), flags=("nsw",))
    pos = b.add(pos, term, flags=("nsw",))
    if wd.padding_low:
        pos = b.sub(pos, i64(wd.padding_low), flags=("nsw",))
    if bd == 1 and lo >= 0 and hi < in_size:
        return None, pos
    valid = b.and_(b.icmp_signed(">=", pos, i64(0)), b.icmp_signed("<", pos, i64(dilated)))
    if bd == 1:
        return valid, pos
    valid = b.and_(valid, b.icmp_unsigned("==", b.urem(pos, i64(bd)), i64(0)))
    return valid, b.udiv(pos, i64(bd))


def all_valid(b, conditions):
    conditions = [c for c in conditions if c is not None]
    if not conditions:
        return None
    acc = conditions[0]
    for c in conditions[1:]:
        acc = b.and_(acc, c)
    return acc


# Windows of at most this many elements are unrolled (their offsets
# constants): the code of one output element is then straight-line and the
# loop over the output can vectorize.
UNROLL_WINDOW_ELEMENTS = 32


def window_loops(b, shape_sizes, body, name="w", unroll=False):
    """Loops over every offset of a window of ``shape_sizes`` in row-major
    order; ``body(offsets)`` gets i64 values (constant 0 for size-1 dims;
    constants for every dimension with ``unroll``: no loops)."""
    if unroll:
        for offsets in itertools.product(*(range(n) for n in shape_sizes)):
            body([i64(k) for k in offsets])
        return
    offsets = [None] * len(shape_sizes)

    def emit(level):
        if level == len(shape_sizes):
            body(list(offsets))
            return
        if shape_sizes[level] == 1:
            offsets[level] = i64(0)
            emit(level + 1)
            return
        with le.for_loop(b, 0, shape_sizes[level], name=f"{name}{level}") as k:
            offsets[level] = k
            emit(level + 1)

    emit(0)


# ----- reduce-window ------------------------------------------------------------------
@register_generator("reduce-window")
def generate_reduce_window(g, h, index):
    n = len(h.operands) // 2
    inputs, inits = h.operands[:n], h.operands[n:]
    in_shape = inputs[0].shape
    rank = in_shape.rank
    out_shape = h.shape if n == 1 and not h.shape.is_tuple else h.shape.tuple_shapes[0]
    wdims = window_dimensions(h, rank)
    comp = h.attr("to_apply")
    init_values = [g.value(i, []) for i in inits]
    if in_shape.num_elements() == 0 or any(wd.size == 0 for wd in wdims):
        return init_values[0] if n == 1 else list(init_values)
    wide = narrow_float_accumulation(comp, out_shape.element_type) if n == 1 else None
    accs = [g.kernel.alloca(v.type, name="acc") for v in init_values]
    b = g.b
    for a, v in zip(accs, init_values):
        b.store(v, a)
    saved = g.push_scope()

    # Inputs read from memory (or constants) are read at the clamped
    # position and the padding's elements dropped by a select instead of a
    # branch, which keeps the loop over the output vectorizable (a 3x3
    # stride-2 max pool of f32[16, 64, 112, 112] with one row and column of
    # padding ran one element at a time: 7.9 ms, XLA:CPU 6.3).
    branch_free = (all(wd.base_dilation in (None, 1) for wd in wdims)
                   and all(_cheap(g, x) for x in inputs))

    def body(offsets):
        b = g.b
        idx, conds = [], []
        for d, wd in enumerate(wdims):
            valid, pos = window_position(b, index[d], offsets[d], wd, in_shape.dimensions[d],
                                         out_shape.dimensions[d])
            if valid is not None and branch_free:
                pos = le.clamp(b, pos, 0, in_shape.dimensions[d] - 1)
            idx.append(pos)
            conds.append(valid)
        valid = all_valid(b, conds)

        def combine(keep=None):
            xs = [g.value(x, list(idx)) for x in inputs]
            cur = [g.b.load(a, typ=v.type) for a, v in zip(accs, init_values)]
            if wide is not None:   # f32 accumulation, rounded once below
                out = [(g.b.fadd if wide == "add" else g.b.fmul)(cur[0], xs[0])]
            else:
                out = g.emitter.emit_scalar_computation(g.b, comp, cur + xs)
                out = out if isinstance(out, (list, tuple)) else [out]
            for a, v, c in zip(accs, out, cur):
                g.b.store(v if keep is None else g.b.select(keep, v, c), a)

        if valid is None:
            combine()
        elif branch_free:
            combine(valid)
        else:
            with b.if_then(valid):
                combine()

    sizes = [wd.size for wd in wdims]
    window_loops(b, sizes, body, unroll=branch_free and math.prod(sizes) <= UNROLL_WINDOW_ELEMENTS)
    g.pop_scope(saved)
    result = [g.b.load(a, typ=v.type) for a, v in zip(accs, init_values)]
    if wide is not None:
        result = [round_result(g.b, result[0], out_shape.element_type)]
    return result[0] if n == 1 else result


# ----- reduce-window as a running fold (cumsum) ----------------------------------------
# Reducers a reverse scan may fold from the end: associative and
# commutative, exactly on integers and pred; on floats up to the rounding
# of a regrouped sum or product (XLA leaves reduce-window's order
# unspecified; its own CPU result differs from the in-order fold too).
_ORDER_FREE = frozenset(["add", "multiply", "maximum", "minimum", "and", "or", "xor"])
_FLOAT_ORDER_FREE = frozenset(["add", "multiply", "maximum", "minimum"])


def _order_free(comp, element_type):
    root = comp.root_instruction
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    if not (len(params) == 2 and {id(o) for o in root.operands} == {id(p) for p in params}):
        return False
    if element_type.is_integer or element_type.is_pred:
        return root.opcode in _ORDER_FREE
    return element_type.is_float and root.opcode in _FLOAT_ORDER_FREE


def prefix_scan(root):
    """(dimension, reverse) where reduce-window ``root`` is an inclusive scan
    along ``dimension``: output ``i`` folds the whole prefix ``x[0..i]``
    (window at least the dimension's size, ``size - 1`` low padding, stride
    1, no dilation; every other dimension a window of 1), or with
    ``reverse`` the suffix ``x[i..]`` (the padding high) where the fold is
    order-free (``_order_free``). Else None.

    As a generator each output folds its whole window: jnp.cumsum of
    f64[1024, 4096] as JAX lowers it took 4.3 s here (XLA:CPU 24 ms). The
    forward scan is out[i] = f(out[i - 1], x[i]) with out[-1] = the init
    value, the very fold the window computes (padding is skipped, not
    combined), so the bits are the generator's. The reverse scan is
    out[i] = f(x[i], out[i + 1]): the same bits on integers and pred, a
    regrouped fold on floats (``_ORDER_FREE``; as a generator, jax.lax.cumsum
    with reverse=True of f32[512, 2048] took 540 ms, XLA:CPU 2.2 ms)."""
    if root.opcode != "reduce-window":
        return None
    n = len(root.operands) // 2
    in_shape = root.operands[0].shape
    found = None
    for d, wd in enumerate(window_dimensions(root, in_shape.rank)):
        if wd.stride != 1 or wd.window_dilation != 1 or wd.base_dilation != 1 or wd.window_reversal:
            return None
        if wd.size == 1 and wd.padding_low == 0 and wd.padding_high == 0:
            continue
        size = in_shape.dimensions[d]
        if found is not None or size < 2 or wd.size < size:
            return None
        if wd.padding_low == wd.size - 1 and wd.padding_high == 0:
            found = (d, False)
        elif (wd.padding_high == wd.size - 1 and wd.padding_low == 0 and n == 1
              and _order_free(root.attr("to_apply"), in_shape.element_type)):
            found = (d, True)
        else:
            return None
    return found


def _exact_in_memory(element_type):
    """Whether a stored element reads back as the register value that was
    stored (no rounding of an excess-precision value, no packing)."""
    return element_type.bits >= 8 and not element_type.is_narrow_float and \
        not element_type.is_pred and not element_type.is_complex


# Rows a row-by-row scan folds at once (where the rows divide by it).
ROW_INTERLEAVE = 4


def emit_scan(me, h, root, fusion=None):
    """Reduce-window ``root`` (``h`` itself or the root of fusion ``h``) as a
    running fold along its scan dimension (``prefix_scan``). Where the
    dimension is the layout's minor one (or everything minor to it has size
    1), each row is one loop with the accumulators in registers, rows split
    across threads. Otherwise the loop over the scan dimension runs outside
    the dimensions minor to it, each step reading the previous step's
    outputs back (a vectorizable, streaming inner loop), where a stored
    element is the accumulator exactly (``_exact_in_memory``); narrow
    floats keep the first form (their sums accumulate in f32)."""
    d, reverse = prefix_scan(root)
    n = len(root.operands) // 2
    inputs, inits = root.operands[:n], root.operands[n:]
    outs = [(si, leaf) for si, leaf in h.shape.leaves() if leaf.is_array]
    out_slices = [Slice(me.assignment.buffer(h, si)) for si, _ in outs]
    slices = me.operand_slices(h) + out_slices
    shape = outs[0][1]
    size = shape.dimensions[d]
    order = le.major_to_minor(shape)
    pos = order.index(d)
    comp = root.attr("to_apply")
    wide = narrow_float_accumulation(comp, shape.element_type) if n == 1 else None
    streaming = (any(shape.dimensions[e] > 1 for e in order[pos + 1:])
                 and all(_exact_in_memory(leaf.element_type) for _, leaf in outs))
    kernel = Kernel(me, me.unique(f"kernel.{h.name}"), slices)
    kernel.root = h
    g = ElementGenerator(me, kernel, fusion)
    b = kernel.b
    init_values = [g.value(i, []) for i in inits]
    out_ptrs = [kernel.pointer(s) for s in out_slices]

    def step(index, cur):
        """The outputs at ``index`` from the accumulators ``cur``, stored."""
        xs = [g.value(x, index) for x in inputs]
        if wide is not None:
            new = [(g.b.fadd if wide == "add" else g.b.fmul)(cur[0], xs[0])]
            stored = [round_result(g.b, new[0], shape.element_type)]
        elif reverse:
            new = stored = [g.emitter.emit_scalar_computation(g.b, comp, xs + cur)]
        else:
            out = g.emitter.emit_scalar_computation(g.b, comp, cur + xs)
            new = stored = list(out) if isinstance(out, (list, tuple)) else [out]
        for v, ptr, (_, leaf) in zip(stored, out_ptrs, outs):
            store_element(g.b, v, g.element_pointer(ptr, leaf, index), leaf.element_type)
        return new

    def position(i):
        return b.sub(i64(size - 1), i, flags=("nsw",)) if reverse else i

    if not streaming:
        # ROW_INTERLEAVE rows at a time where the next dimension divides
        # by it: each row's fold is a chain of dependent operations (one
        # add's latency per element), several rows' chains overlap.
        others = [e for e in order if e != d and shape.dimensions[e] > 1]
        e = others[-1] if others else None
        ways = next((r for r in (ROW_INTERLEAVE, 2) if e is not None
                     and shape.dimensions[e] % r == 0), 1)
        rows = Shape(shape.element_type,
                     [1 if k == d else x // ways if k == e else x
                      for k, x in enumerate(shape.dimensions)], shape.layout)
        accs = [[kernel.alloca(v.type, name="acc") for v in init_values] for _ in range(ways)]

        def row(index):
            indices = []
            for r in range(ways):
                idx = list(index)
                if ways > 1:
                    idx[e] = g.b.add(g.b.mul(index[e], i64(ways), flags=("nsw", "nuw")), i64(r),
                                     flags=("nsw", "nuw"))
                indices.append(idx)
                for a, v in zip(accs[r], init_values):
                    g.b.store(v, a)
            saved = g.push_scope()
            with le.for_loop(g.b, 0, size, name="scan") as i:
                k = position(i)
                for idx, row_accs in zip(indices, accs):
                    idx = list(idx)
                    idx[d] = k
                    cur = [g.b.load(a, typ=v.type) for a, v in zip(row_accs, init_values)]
                    for a, v in zip(row_accs, step(idx, cur)):
                        g.b.store(v, a)
            g.pop_scope(saved)

        split = shape.rank
        le.loop_nest(b, rows, row, kernel.begin, kernel.end, name="row", split=split)
        kernel.finish()
        me.call_kernel(kernel, rows, work=shape.num_elements(), extent=le.outer_extent(rows, split))
        return
    major = Shape(shape.element_type, [x if e in order[:pos] else 1
                                       for e, x in enumerate(shape.dimensions)], shape.layout)
    minor = Shape(shape.element_type, [x if e in order[pos + 1:] else 1
                                       for e, x in enumerate(shape.dimensions)], shape.layout)

    def block(outer):
        saved = g.push_scope()
        with le.for_loop(g.b, 0, size, name="scan") as i:
            k = position(i)
            first = g.b.icmp_signed("==", i, i64(0))
            previous = g.b.select(first, k, g.b.add(k, i64(1), flags=("nsw",)) if reverse
                                  else g.b.sub(k, i64(1), flags=("nsw",)))

            def element(inner):
                idx = [inner[e] if e in order[pos + 1:] else outer[e] for e in range(shape.rank)]
                idx[d] = k
                prev = list(idx)
                prev[d] = previous
                loaded = [load_element(g.b, g.element_pointer(ptr, leaf, prev), leaf.element_type)
                          for ptr, (_, leaf) in zip(out_ptrs, outs)]
                cur = [g.b.select(first, v, x) for v, x in zip(init_values, loaded)]
                step(idx, cur)

            le.loop_nest(g.b, minor, element, name="col")
        g.pop_scope(saved)

    split = max(1, pos)
    le.loop_nest(b, major, block, kernel.begin, kernel.end, name="row", split=split)
    kernel.finish()
    me.call_kernel(kernel, major, work=shape.num_elements(), extent=le.outer_extent(major, split))


# A loop over the output (variadic results included) unless it is a scan.
register_root_kernel("reduce-window", lambda me, h, root: prefix_scan(root) is not None, emit_scan)


# ----- select-and-scatter -------------------------------------------------------------
def sequential_kernel(me, h, extra_slices=()):
    """A kernel over the buffers of ``h``'s operands and result, with its
    generator; the caller emits its body and calls ``finish_sequential``."""
    out_slices = [Slice(me.assignment.buffer(h, si)) for si, leaf in h.shape.leaves() if leaf.is_array]
    kernel = Kernel(me, me.unique(f"kernel.{h.name}"),
                    me.operand_slices(h) + list(extra_slices) + out_slices)
    kernel.root = h
    return kernel, ElementGenerator(me, kernel)


def finish_sequential(me, kernel):
    kernel.finish()
    kernel.call_in_driver(me.builder, me.table, i64(0), i64(1))


def select_and_scatter_loops(b, h, g, alloca, scalar_computation, out_ptr):
    """The whole of select-and-scatter ``h`` as sequential loops at ``b``
    (shared with the GPU backend): the output at ``out_ptr`` filled with the
    init value, then every source element scattered into its window's
    selected position. ``g``: the element generator (loads of the operands);
    ``alloca(typ, name)``: a stack slot; ``scalar_computation(b, comp,
    args)``: the select and scatter computations' values."""
    operand, source, init = h.operands
    shape = h.shape
    et = shape.element_type
    init_value = g.load(init, [])

    def fill(idx):
        store_element(b, init_value, g.element_pointer(out_ptr, shape, idx), et)

    le.loop_nest(b, shape, fill, name="fill")
    rank = operand.shape.rank
    wdims = window_dimensions(h, rank)
    if (source.shape.num_elements() == 0 or operand.shape.num_elements() == 0
            or any(wd.size == 0 for wd in wdims)):
        return
    select, scatter = h.attr("select"), h.attr("scatter")
    ot = operand.shape.element_type
    sel_val = alloca(register_type(ot), "sel.val")
    have = alloca(I1, "sel.have")
    sel_idx = [alloca(le.I64, f"sel.i{d}") for d in range(rank)]
    zero_value = constant(ot, 0)

    def per_source(sidx):
        b.store(ir.Constant(I1, 0), have)
        b.store(zero_value, sel_val)  # a defined value for the first select call

        def visit(offsets):
            idx, conds = [], []
            for d, wd in enumerate(wdims):
                valid, pos = window_position(b, sidx[d], offsets[d], wd, operand.shape.dimensions[d],
                                             source.shape.dimensions[d])
                idx.append(pos)
                conds.append(valid)
            valid = all_valid(b, conds)

            def consider():
                v = g.load(operand, idx)
                cur = b.load(sel_val, typ=v.type)
                keep = scalar_computation(b, select, [cur, v])
                take = b.or_(b.not_(b.load(have, typ=I1)), b.not_(keep))
                with b.if_then(take):
                    b.store(v, sel_val)
                    for a, x in zip(sel_idx, idx):
                        b.store(x, a)
                    b.store(ir.Constant(I1, 1), have)

            if valid is None:
                consider()
            else:
                with b.if_then(valid):
                    consider()

        window_loops(b, [wd.size for wd in wdims], visit)
        with b.if_then(b.load(have, typ=I1)):
            target = [b.load(a, typ=le.I64) for a in sel_idx]
            ptr = g.element_pointer(out_ptr, shape, target)
            cur = load_element(b, ptr, et)
            s = convert_register(b, g.load(source, sidx), source.shape.element_type, et)
            new = scalar_computation(b, scatter, [cur, s])
            store_element(b, new, ptr, et)

    # Row-major over the source (logical order, d=0 outermost): the order the
    # scatter combines repeated positions in.
    window_loops(b, list(source.shape.dimensions), per_source, name="s")


@register_instruction("select-and-scatter")
def emit_select_and_scatter(me, h):
    if not h.shape.is_array:
        raise unsupported(h, "tuple-shaped")
    if h.shape.num_elements() == 0:
        return
    out_slice = Slice(me.assignment.buffer(h))
    kernel, g = sequential_kernel(me, h)
    select_and_scatter_loops(kernel.b, h, g, lambda typ, name: kernel.alloca(typ, name=name),
                             me.emit_scalar_computation, kernel.pointer(out_slice))
    finish_sequential(me, kernel)
