"""Control flow on the CPU backend: while, conditional and call.

The called computations are emitted inline, as blocks of the entry
function, one ``ModuleEmitter.emit_instruction`` per instruction of their
schedule: their instructions have buffers of their own in the same
assignment (see ``xla/service/buffer_assignment.py``), so the kernels they
become read and write those buffers like the entry's.

while
    Buffer assignment puts the while's result, the body parameter and the
    condition parameter in one slot per shape index (the loop state), and
    the init operand's and the body root's buffers in that slot too when it
    is safe; where it did not, this emitter copies: the init buffers into
    the state once before the loop (an init that is an entry parameter or a
    constant is never written: it always has its own slot), and the body
    root's buffers into the state at the end of each iteration. Those copies
    are a parallel assignment (a body root may swap two state elements), so
    they run in an order where no copy overwrites the source of a later one;
    a cycle goes through a scratch copy ``malloc``'d for the moment (only
    swaps make one). Then: evaluate the condition, branch on its root, run
    the body, copy, repeat.

conditional / call
    Copy in, copy out: the operand of the branch taken (all operands for a
    call) is copied into the called computation's parameter buffers, the
    computation runs, and its root's buffers are copied into the
    instruction's own; a copy between buffers that share a slot (a
    conditional's operand the branches update in place or only read, see
    buffer_assignment.py) is left out. A pred selector runs branch 0 (true) or 1 (false); an
    integer selector out of range runs the last branch, as the interpreter
    does.

Tuple index tables inside loops and branches are never written: tuples are
resolved statically through the assignment (only the entry's root table is
filled, by ``ModuleEmitter.emit``).
"""
from llvmlite import ir

from xla.backends.cpu.ir_emitter import I8, PTR, VOID, Slice, register_instruction, unsupported
from xla.backends.cpu.llvm_types import load_element
from xla.backends.cpu.loop_emitter import I64, i64


def _array_leaves(assignment, instr):
    """[(shape index, LogicalBuffer)] of the array leaves of ``instr``."""
    return [(index, b) for index, b in sorted(assignment.buffers_of(instr).items())
            if b.shape.is_array]


def _same_memory(x, y):
    return x.allocation is y.allocation and x.offset == y.offset


def _overlaps(x, y):
    return (x.allocation is y.allocation and x.offset < y.offset + y.size
            and y.offset < x.offset + x.size)


def _pointer(me, buffer):
    return me.slice_pointer(me.builder, me.table, Slice(buffer).key)


def _memcpy(me, dst_ptr, src_ptr, nbytes):
    if nbytes == 0:
        return
    fn = me.declare("llvm.memcpy.p0.p0.i64",
                    ir.FunctionType(VOID, [PTR, PTR, I64, ir.IntType(1)]))
    me.builder.call(fn, [dst_ptr, src_ptr, i64(nbytes), ir.Constant(ir.IntType(1), 0)])


def _copy(me, dst, src):
    """Copies buffer ``src`` into ``dst`` (same byte size) unless they are one slot."""
    if _same_memory(dst, src):
        return
    _memcpy(me, _pointer(me, dst), _pointer(me, src), min(dst.size, src.size))


def _parallel_copy(me, copies):
    """Performs ``dst := src`` for every (dst, src) pair as if all at once."""
    pending = [(d, s) for d, s in copies if not _same_memory(d, s)]
    while pending:
        for k, (d, s) in enumerate(pending):
            # d may be written once no other pending copy still reads it.
            if not any(_overlaps(d, s2) for j, (_, s2) in enumerate(pending) if j != k):
                _copy(me, d, s)
                del pending[k]
                break
        else:
            # A cycle (a swap): park one source in scratch memory.
            d, s = pending.pop(0)
            b = me.builder
            malloc = me.declare("malloc", ir.FunctionType(PTR, [I64]))
            free = me.declare("free", ir.FunctionType(VOID, [PTR]))
            scratch = b.call(malloc, [i64(max(s.size, 1))])
            _memcpy(me, scratch, _pointer(me, s), s.size)
            rest = pending
            pending = []
            _parallel_copy(me, rest)
            _memcpy(me, _pointer(me, d), scratch, d.size)
            b.call(free, [scratch])


def _emit_computation(me, comp):
    for h in comp.instructions:
        me.emit_instruction(h)


def _copy_in(me, computation, operands):
    a = me.assignment
    for param, operand in zip(computation.parameters, operands):
        for index, pb in _array_leaves(a, param):
            _copy(me, pb, a.buffer(operand, index))


def _copy_out(me, instr, computation):
    a = me.assignment
    root = computation.root_instruction
    for index, out in _array_leaves(a, instr):
        _copy(me, out, a.buffer(root, index))


@register_instruction("while")
def emit_while(me, w):
    a = me.assignment
    body, cond = w.attr("body"), w.attr("condition")
    init = w.operands[0]
    state = _array_leaves(a, w)
    for index, wb in state:
        _copy(me, wb, a.buffer(init, index))

    b = me.builder
    fn = b.function
    name = me.unique(w.name)
    header = fn.append_basic_block(f"{name}.cond")
    loop = fn.append_basic_block(f"{name}.body")
    exit_ = fn.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    _emit_computation(me, cond)
    root = cond.root_instruction
    if not (root.shape.is_array and root.shape.rank == 0 and root.shape.element_type.kind == "pred"):
        raise unsupported(w, "condition root is not a pred scalar")
    pred = load_element(me.builder, _pointer(me, a.buffer(root, ())), root.shape.element_type)
    if me.cancel_slot is not None:
        # The executable's cancel flag (Ctrl-C, a timeout: executable.py) ends
        # every loop at its next test; the execution then raises.
        bb = me.builder
        flag_ptr = bb.load(bb.gep(me.table, [i64(me.cancel_slot)], inbounds=True, source_etype=PTR),
                           typ=PTR)
        # Atomic: the load is redone every iteration, never hoisted out of the loop.
        flag = bb.load_atomic(flag_ptr, "monotonic", 4, typ=ir.IntType(32))
        go_on = bb.icmp_unsigned("==", flag, ir.Constant(ir.IntType(32), 0))
        pred = bb.and_(pred, go_on)
    me.builder.cbranch(pred, loop, exit_)
    me.builder.position_at_end(loop)
    _emit_computation(me, body)
    _parallel_copy(me, [(wb, a.buffer(body.root_instruction, index)) for index, wb in state])
    me.builder.branch(header)
    me.builder.position_at_end(exit_)


@register_instruction("conditional")
def emit_conditional(me, c):
    a = me.assignment
    branches = c.attr("branch_computations")
    if branches is None:
        branches = [c.attr("true_computation"), c.attr("false_computation")]
    branches = list(branches)
    selector = c.operands[0]
    et = selector.shape.element_type
    b = me.builder
    value = load_element(b, _pointer(me, a.buffer(selector, ())), et)
    n = len(branches)
    if et.kind == "pred":
        index = b.select(value, i64(0), i64(1))
    else:
        index = b.sext(value, I64) if value.type.width < 64 and et.kind == "s" else (
            b.zext(value, I64) if value.type.width < 64 else value)
        in_range = b.and_(b.icmp_signed(">=", index, i64(0)), b.icmp_signed("<", index, i64(n)))
        if et.kind == "u":
            in_range = b.icmp_unsigned("<", index, i64(n))
        index = b.select(in_range, index, i64(n - 1))
    fn = b.function
    name = me.unique(c.name)
    blocks = [fn.append_basic_block(f"{name}.branch{k}") for k in range(n)]
    merge = fn.append_basic_block(f"{name}.merge")
    switch = b.switch(index, blocks[-1])
    for k in range(n - 1):
        switch.add_case(i64(k), blocks[k])
    for k, comp in enumerate(branches):
        me.builder.position_at_end(blocks[k])
        _copy_in(me, comp, [c.operands[1 + k]])
        _emit_computation(me, comp)
        _copy_out(me, c, comp)
        me.builder.branch(merge)
    me.builder.position_at_end(merge)


@register_instruction("call")
def emit_call(me, c):
    comp = c.attr("to_apply")
    _copy_in(me, comp, c.operands)
    _emit_computation(me, comp)
    _copy_out(me, c, comp)
