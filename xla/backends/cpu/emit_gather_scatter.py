"""Gather (a generator, fusible) and scatter (an instruction emitter), with
full dimension numbers (batching dimensions included) and XLA's
out-of-bounds rules, as the interpreter implements them
(``ops_gather_scatter.py``).

Start indices are read as i64 (unsigned values beyond the i64 range count
as the largest i64, so they stay out of bounds).

gather: an output index splits into batch positions (the output dimensions
not in offset_dims, in order: an index into the start indices without
their index-vector dimension) and offsets. Each start index is clamped to
``[0, operand_dim - slice_size]`` so the whole slice fits; operand batching
dimensions take the batch position of their indices batching dimension.
The operand index is ``start + offset`` on the offset dimensions and
``start`` elsewhere, always inside the operand.

scatter: the outputs start as copies of the inputs (a parallel copy
kernel; skipped when an output shares its input's buffer). Then one
sequential kernel walks the scatter indices in row-major order; a window
whose start would put any part of it outside the operand
(``start < 0 or start > dim - window_size`` on some dimension, checked on
the start itself, so huge indices cannot overflow) is skipped entirely;
otherwise every window element, in row-major order, becomes
``to_apply(output..., update...)`` (variadic scatters combine all outputs
at once). Repeated indices therefore see their updates in order.
Inside a fusion (XLA's "wrapped" scatters in optimized modules) scatter is
a generator instead: one output element is its input element combined, in
the same order, with every in-bounds update that lands on it (a loop over
all scatter indices per element: fine for the small wrapped cases).
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.emit_window import all_valid, finish_sequential, sequential_kernel, window_loops
from xla.backends.cpu.ir_emitter import (ElementGenerator, Kernel, Slice, convert_register, register_generator,
                                         register_instruction, unsupported)
from xla.backends.cpu.llvm_types import load_element, register_type, store_element
from xla.backends.cpu.loop_emitter import I64, i64

INT64_MAX = (1 << 63) - 1


def index_to_i64(b, v, element_type):
    """A start index register value as i64 (see the module docstring)."""
    if element_type.kind not in "su":
        raise ValueError(f"start indices of type {element_type}")
    width = v.type.width
    if width < 64:
        return b.sext(v, I64) if element_type.kind == "s" else b.zext(v, I64)
    if element_type.kind == "u":
        return b.select(b.icmp_signed("<", v, i64(0)), i64(INT64_MAX), v)
    return v


def _batch_position(indices_dim, index_vector_dim):
    return indices_dim - 1 if indices_dim > index_vector_dim else indices_dim


def _index_vector_dim(h, indices):
    ivd = h.attr("index_vector_dim")
    return indices.shape.rank if ivd is None else int(ivd)


def _indices_index(batch, k, ivd, indices_rank):
    """Index into the start indices of batch position ``batch``, component ``k``."""
    idx = list(batch)
    if ivd < indices_rank:
        idx.insert(ivd, i64(k))
    return idx


@register_generator("gather")
def generate_gather(g, h, index):
    operand, indices = h.operands
    if indices.shape.element_type.kind not in "su":
        raise unsupported(h, f"start indices of type {indices.shape.element_type}")
    b = g.b
    offset_dims = tuple(h.attr("offset_dims", ()))
    collapsed = tuple(h.attr("collapsed_slice_dims", ()))
    start_index_map = tuple(h.attr("start_index_map", ()))
    slice_sizes = tuple(h.attr("slice_sizes", ()))
    operand_batching = tuple(h.attr("operand_batching_dims", ()))
    indices_batching = tuple(h.attr("start_indices_batching_dims", ()))
    ivd = _index_vector_dim(h, indices)
    dims = operand.shape.dimensions
    if operand.shape.num_elements() == 0:
        et = h.shape.element_type
        return ir.Constant(register_type(et), None)
    batch = [v for p, v in enumerate(index) if p not in offset_dims]
    starts = [i64(0)] * operand.shape.rank
    for k, d in enumerate(start_index_map):
        v = index_to_i64(b, g.value(indices, _indices_index(batch, k, ivd, indices.shape.rank)),
                         indices.shape.element_type)
        starts[d] = le.clamp(b, v, 0, max(dims[d] - slice_sizes[d], 0))
    for od, idim in zip(operand_batching, indices_batching):
        starts[od] = batch[_batch_position(idim, ivd)]
    offset_operand_dims = [d for d in range(operand.shape.rank)
                           if d not in collapsed and d not in operand_batching]
    operand_index = list(starts)
    for j, d in enumerate(offset_operand_dims):
        off = index[offset_dims[j]]
        operand_index[d] = off if (isinstance(starts[d], ir.Constant) and starts[d].constant == 0) \
            else b.add(starts[d], off, flags=("nsw",))
    return g.value(operand, operand_index)


def _emit_copy(me, h, src, k_index):
    """Copies array ``src`` into ``h``'s buffer at ``k_index`` (a parallel
    loop kernel), unless they share it."""
    dst_buffer = me.assignment.buffer(h, k_index)
    src_slice, dst_slice = Slice(me.assignment.buffer(src)), Slice(dst_buffer)
    shape = h.shape.subshape(k_index)
    if src_slice.key == dst_slice.key or shape.num_elements() == 0:
        return
    kernel = Kernel(me, me.unique(f"kernel.{h.name}.copy"), [src_slice, dst_slice])
    kernel.root = h
    g = ElementGenerator(me, kernel)
    src_et, et = src.shape.element_type, shape.element_type

    def body(idx):
        v = convert_register(kernel.b, g.load(src, idx), src_et, et)
        store_element(kernel.b, v, g.element_pointer(kernel.pointer(dst_slice), shape, idx), et)

    le.loop_nest(kernel.b, shape, body, kernel.begin, kernel.end)
    kernel.finish()
    me.call_kernel(kernel, shape)


class _ScatterDims:
    """Scatter's dimension numbers, resolved against its shapes."""

    def __init__(self, h):
        n = (len(h.operands) - 1) // 2
        self.n = n
        self.inputs, self.indices, self.updates = h.operands[:n], h.operands[n], h.operands[n + 1:]
        if self.indices.shape.element_type.kind not in "su":
            raise unsupported(h, f"start indices of type {self.indices.shape.element_type}")
        self.out_indices = [(k,) for k in range(n)] if h.shape.is_tuple else [()]
        self.shapes = [h.shape.subshape(si) for si in self.out_indices]
        for s in self.shapes:
            if not s.is_array:
                raise unsupported(h, "nested tuple output")
        self.upd_shape = upd_shape = self.updates[0].shape
        self.uwd = uwd = tuple(h.attr("update_window_dims", ()))
        inserted = tuple(h.attr("inserted_window_dims", ()))
        self.sd2od = tuple(h.attr("scatter_dims_to_operand_dims", ()))
        self.input_batching = tuple(h.attr("input_batching_dims", ()))
        self.indices_batching = tuple(h.attr("scatter_indices_batching_dims", ()))
        self.ivd = _index_vector_dim(h, self.indices)
        self.rank = rank = self.shapes[0].rank
        self.dims = self.shapes[0].dimensions
        self.update_scatter_dims = [d for d in range(upd_shape.rank) if d not in uwd]
        self.window_operand_dims = [d for d in range(rank)
                                    if d not in inserted and d not in self.input_batching]
        self.wshape = [upd_shape.dimensions[d] for d in uwd]
        self.bshape = [upd_shape.dimensions[d] for d in self.update_scatter_dims]

    def starts(self, b, batch, load_index):
        """The (unclamped) start of the window of batch position ``batch`` per
        operand dimension, and whether the whole window is inside (i1 or None)."""
        starts = [i64(0)] * self.rank
        irank = self.indices.shape.rank
        for k, d in enumerate(self.sd2od):
            starts[d] = index_to_i64(b, load_index(_indices_index(batch, k, self.ivd, irank)),
                                     self.indices.shape.element_type)
        for od, idim in zip(self.input_batching, self.indices_batching):
            starts[od] = batch[_batch_position(idim, self.ivd)]
        conds = []
        for d in range(self.rank):
            size = self.window_size(d)
            if self.dims[d] - size < 0:
                conds.append(ir.Constant(ir.IntType(1), 0))
                continue
            conds.append(b.and_(b.icmp_signed(">=", starts[d], i64(0)),
                                b.icmp_signed("<=", starts[d], i64(self.dims[d] - size))))
        return starts, all_valid(b, conds)

    def window_size(self, d):
        if d in self.window_operand_dims:
            return self.wshape[self.window_operand_dims.index(d)]
        return 1

    def update_index(self, batch, offsets):
        uidx = [None] * self.upd_shape.rank
        for i, d in enumerate(self.update_scatter_dims):
            uidx[d] = batch[i]
        for j, d in enumerate(self.uwd):
            uidx[d] = offsets[j]
        return uidx


@register_generator("scatter")
def generate_scatter(g, h, index):
    """One output element of a scatter (used inside fusions, e.g. XLA's
    wrapped scatters): the input element, combined in order with every
    update whose in-bounds window covers it. Costs a loop over all scatter
    indices per element; standalone scatters use ``emit_scatter``."""
    sd = _ScatterDims(h)
    cur = [g.value(x, index) for x in sd.inputs]
    if sd.upd_shape.num_elements() == 0:
        return cur[0] if not h.shape.is_tuple else cur
    accs = [g.kernel.alloca(v.type, name="acc") for v in cur]
    for a, v in zip(accs, cur):
        g.b.store(v, a)
    saved = g.push_scope()

    def per_index(batch):
        b = g.b
        starts, in_bounds = sd.starts(b, batch, lambda idx: g.value(sd.indices, idx))
        conds = [in_bounds]
        offsets = []
        for d in range(sd.rank):
            if d in sd.window_operand_dims:
                off = b.sub(index[d], starts[d])
                conds.append(b.and_(b.icmp_signed(">=", off, i64(0)),
                                    b.icmp_signed("<", off, i64(sd.window_size(d)))))
                offsets.append(off)
            else:
                conds.append(b.icmp_signed("==", starts[d], index[d]))
        hit = all_valid(b, conds)

        def apply():
            scope = g.push_scope()
            uidx = sd.update_index(batch, offsets)
            upd = [convert_register(g.b, g.value(u, list(uidx)), u.shape.element_type, s.element_type)
                   for u, s in zip(sd.updates, sd.shapes)]
            old = [g.b.load(a, typ=v.type) for a, v in zip(accs, cur)]
            new = g.emitter.emit_scalar_computation(g.b, h.attr("to_apply"), old + upd)
            new = new if isinstance(new, (list, tuple)) else [new]
            for a, v in zip(accs, new):
                g.b.store(v, a)
            g.pop_scope(scope)

        if hit is None:
            apply()
        else:
            with b.if_then(hit):
                apply()

    window_loops(g.b, sd.bshape, per_index, name="s")
    g.pop_scope(saved)
    result = [g.b.load(a, typ=v.type) for a, v in zip(accs, cur)]
    return result[0] if not h.shape.is_tuple else result


@register_instruction("scatter")
def emit_scatter(me, h):
    sd = _ScatterDims(h)
    for x, si in zip(sd.inputs, sd.out_indices):
        _emit_copy(me, h, x, si)
    if sd.upd_shape.num_elements() == 0 or sd.shapes[0].num_elements() == 0:
        return
    comp = h.attr("to_apply")
    out_slices = [Slice(me.assignment.buffer(h, si)) for si in sd.out_indices]
    kernel, g = sequential_kernel(me, h)
    b = kernel.b

    def per_index(batch):
        starts, in_bounds = sd.starts(b, batch, lambda idx: g.load(sd.indices, idx))

        def window(offsets):
            target = list(starts)
            for j, d in enumerate(sd.window_operand_dims):
                target[d] = b.add(starts[d], offsets[j], flags=("nsw", "nuw"))
            uidx = sd.update_index(batch, offsets)
            ptrs = [g.element_pointer(kernel.pointer(s), shape, target)
                    for s, shape in zip(out_slices, sd.shapes)]
            cur = [load_element(b, p, shape.element_type) for p, shape in zip(ptrs, sd.shapes)]
            upd = [convert_register(b, g.load(u, uidx), u.shape.element_type, shape.element_type)
                   for u, shape in zip(sd.updates, sd.shapes)]
            new = me.emit_scalar_computation(b, comp, cur + upd)
            new = new if isinstance(new, (list, tuple)) else [new]
            for v, p, shape in zip(new, ptrs, sd.shapes):
                store_element(b, v, p, shape.element_type)

        if in_bounds is None:
            window_loops(b, sd.wshape, window, name="w")
        else:
            with b.if_then(in_bounds):
                window_loops(b, sd.wshape, window, name="w")

    window_loops(b, sd.bshape, per_index, name="s")
    finish_sequential(me, kernel)
