"""Sort and top-k on the CPU backend.

sort (variadic, along ``dimensions={d}``) becomes one function
``void sort.N(i8** table, i64 begin, i64 end)`` over rows ``[begin, end)``
(a row: every index of the other dimensions, in row-major order), called
once, or through ``__xla_cpu_parallel_for`` when there are several rows and
enough elements. Each row is sorted as a *permutation*: an i64 array
``perm`` starts as ``0..n-1`` and is stably merge-sorted with the comparator
(runs of ``RUN`` elements by insertion sort, then bottom-up merge passes
ping-ponging between two scratch arrays; the number of passes is known at
compile time since ``n`` is), each operand's elements copied beside the
permutation and moved with it, so that the comparisons read them in order
(through the permutation from the operands, every comparison of a long
row missed the cache: a sort of 2^20 (key, value) pairs took 287 ms);
then every result is gathered, ``result_k[.., i, ..] = operand_k[..,
perm[i], ..]``. So operands
of any number and element types, and any layouts of operands and results,
are handled alike, and nothing is written before the row is sorted.

The comparator (``to_apply``: parameters lhs0, rhs0, lhs1, rhs1, ...) is an
internal LLVM function ``i1 (lhs0, rhs0, ...)`` on register values, emitted
with ``ModuleEmitter.emit_scalar_computation``. Stability: an element moves
before an earlier one only if the comparator says it is strictly less
(insertion shifts while ``less(x, prev)``; a merge takes from the right run
only if ``less(right, left)``), which is the stable order for any strict
weak order, and the interpreter's order for sort with is_stable true or
false. Every comparator call reads valid indices: conditions are evaluated
without branches on indices clamped into the row, then selected.

Scratch memory: ``2 * n`` i64s and two copies of each operand's row per
call of the function, an ``alloca`` of
the function's entry block when that is at most ``STACK_SCRATCH_BYTES``,
otherwise ``malloc``'d at the start of the call and ``free``'d at its end
(one allocation per thread chunk, never per row).

topk (``k``, ``largest``) and the ``TopK`` custom call (XLA's TopkRewriter
form: k from the result shape, largest) sort each last-dimension row by the
interpreter's key: descending (ascending for largest=false) in TOTALORDER
for floats (+NaN largest, -NaN smallest, -0 before +0 descending), ties by
the lower index; the first ``k`` of the permutation give the values and
the s32 indices. For k up to ``MAX_SELECT_K`` (below the row's length) no
row is sorted: one pass keeps the first k positions of that order
(``_select_first``), the same positions.
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import (I8, PARALLEL_MIN_CHUNK_ELEMENTS, PARALLEL_MIN_ELEMENTS,
                                         KERNEL_TYPE, PTR, VOID, Slice, register_instruction,
                                         unsupported)
from xla.backends.cpu.llvm_types import (from_memory, load_element,
                                         memory_type, register_type, store_element,
                                         typed_pointer)
from xla.backends.cpu.loop_emitter import I64, i64

RUN = 16
STACK_SCRATCH_BYTES = 64 * 1024
# top-k of at most this many elements per row: one selecting pass
# (_select_first, up to k shifts for an element that enters: k x n moves at
# worst, an ascending row for largest=true) instead of sorting the row.
MAX_SELECT_K = 32
I1 = ir.IntType(1)


class _Loops:
    """Loops whose variables live in allocas (mem2reg makes them phis)."""

    def __init__(self, b, alloca_builder):
        self.b = b
        self.ab = alloca_builder

    def var(self, init, name):
        slot = self.ab.alloca(I64, name=name)
        self.b.store(init if isinstance(init, ir.Value) else i64(init), slot)
        return slot

    def get(self, slot):
        return self.b.load(slot, typ=I64)

    def while_(self, cond, body, name):
        b = self.b
        fn = b.function
        header = fn.append_basic_block(f"{name}.header")
        loop = fn.append_basic_block(f"{name}.body")
        exit_ = fn.append_basic_block(f"{name}.exit")
        b.branch(header)
        b.position_at_end(header)
        b.cbranch(cond(), loop, exit_)
        b.position_at_end(loop)
        body()
        b.branch(header)
        b.position_at_end(exit_)


def _smin(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _select_first(b, loops, lt, buf, n, k):
    """The first ``k`` row positions in the stable order of ``lt`` into
    ``buf`` (k i64s), in order: one pass over the row keeping them sorted,
    a position entering where it sorts strictly before the k-th so far and
    moving past those it sorts strictly before (insertion: equal elements
    keep the earlier position first, as the stable sort does). For k much
    smaller than the row, most elements cost one comparison with the k-th:
    lax.top_k(x, 16) of f32[1024, 4096] took 128 ms as a merge sort of
    every row (XLA:CPU 8.4 ms)."""
    count = loops.var(0, "count")

    def at(p):
        return b.gep(buf, [p], inbounds=True, source_etype=I64)

    # Every slot a valid position from the start: the comparisons below read
    # the element a slot names before knowing whether they need it.
    with le.for_loop(b, 0, k, name="clear") as q:
        b.store(i64(0), at(q))

    with le.for_loop(b, 0, n, name="select") as p:
        c = loops.get(count)
        full = b.icmp_signed("==", c, i64(k))
        last = b.load(at(i64(k - 1)), typ=I64)
        enter = b.or_(b.not_(full), lt(p, last))
        with b.if_then(enter):
            j = loops.var(b.select(full, i64(k - 1), c), "j")

            def moves():
                jv = loops.get(j)
                above = b.load(at(b.select(b.icmp_signed(">", jv, i64(0)),
                                          b.sub(jv, i64(1)), i64(0))), typ=I64)
                return b.and_(b.icmp_signed(">", jv, i64(0)), lt(p, above))

            def shift():
                jv = loops.get(j)
                jm1 = b.sub(jv, i64(1))
                b.store(b.load(at(jm1), typ=I64), at(jv))
                b.store(jm1, j)

            loops.while_(moves, shift, "place")
            b.store(p, at(loops.get(j)))
            b.store(b.select(full, c, b.add(c, i64(1))), count)


def _emit_row_sort(me, h, name, inputs, outputs, dim, less, write_row, select=None):
    """Emits and calls the row-sorting function.

    inputs: [(Slice, shape)] read by ``less``; outputs: [(Slice, shape)]
    written by ``write_row``. ``less(b, load, i, j)`` -> i1 says whether
    element ``i`` of the row sorts strictly before element ``j`` (``load(k,
    p)`` is input k's register value at row position p). ``write_row(b,
    load, store, perm_at)`` writes the outputs (``store(k, p, v)``;
    ``perm_at(p)`` the i64 row position that sorts p-th). With ``select``
    (k), only the first k positions are found, by ``_select_first``.
    """
    shape = inputs[0][1]
    n = shape.dimensions[dim]
    row_dims = [d for d in range(shape.rank) if d != dim]
    rows = 1
    for d in row_dims:
        rows *= shape.dimensions[d]
    if rows == 0 or n == 0:
        return
    slices = [s for s, _ in inputs] + [s for s, _ in outputs]
    fn, decl = me.library_function(KERNEL_TYPE, name)
    table, begin, end = fn.args
    alloca_block = fn.append_basic_block("allocas")
    start = fn.append_basic_block("start")
    ab = ir.IRBuilder(alloca_block)
    b = ir.IRBuilder(start)
    loops = _Loops(b, ab)
    ptrs = {}
    for s in slices:
        if s.key not in ptrs:
            ptrs[s.key] = me.slice_pointer(b, table, s.key)

    # The sort's scratch: two permutations (i64) and, per input, two arrays
    # of its elements in the permutations' order (memory form, 8-byte
    # aligned): [perm0][perm1][input 0: copy0][copy1][input 1: ...].
    sizes = [sh.element_type.byte_size for _, sh in inputs]
    copy_bytes = [-(-n * sz // 8) * 8 for sz in sizes]
    scratch_bytes = select * 8 if select is not None else 2 * n * 8 + 2 * sum(copy_bytes)
    heap = scratch_bytes > STACK_SCRATCH_BYTES
    if heap:
        malloc = me.declare_in(fn.module, "malloc", ir.FunctionType(PTR, [I64]))
        scratch = b.call(malloc, [i64(scratch_bytes)])
    else:
        scratch = ab.alloca(I64, size=i64(scratch_bytes // 8), name="perm")
        scratch.align = 16
    # (a selection's scratch holds k positions only)
    bufs = [scratch, b.gep(scratch, [i64(n)], inbounds=True, source_etype=I64)] \
        if select is None else None

    def perm_ptr(buf, p):
        return b.gep(buf, [p], inbounds=True, source_etype=I64)

    row = loops.var(begin, "row")

    def row_body():
        r = loops.get(row)
        sub = le.delinearize(b, r, [shape.dimensions[d] for d in row_dims]) if row_dims else []
        index = [i64(0)] * shape.rank
        for d, v in zip(row_dims, sub):
            index[d] = v

        def addressing(s, sh):
            base = le.linear_index(b, sh, index)
            stride = le.physical_strides(sh)[dim]
            return ptrs[s.key], base, stride

        in_addr = [addressing(s, sh) for s, sh in inputs]
        out_addr = [addressing(s, sh) for s, sh in outputs]

        def element_ptr(addr, et, p):
            base_ptr, base, stride = addr
            off = b.add(base, b.mul(p, i64(stride)) if stride != 1 else p)
            size = et.byte_size
            off = off if size == 1 else b.mul(off, i64(size))
            return b.gep(base_ptr, [off], inbounds=True, source_etype=I8)

        def load(k, p):
            et = inputs[k][1].element_type
            return load_element(b, element_ptr(in_addr[k], et, p), et)

        def store(k, p, v):
            et = outputs[k][1].element_type
            store_element(b, v, element_ptr(out_addr[k], et, p), et)

        def lt(i, j):
            return less(b, load, i, j)

        if select is not None:
            _select_first(b, loops, lt, scratch, n, select)
            write_row(b, load, store, lambda p: b.load(perm_ptr(scratch, p), typ=I64))
            b.store(b.add(r, i64(1)), row)
            return
        a0, a1 = bufs
        # Comparisons read the copies (module docstring).
        copy_base = 2 * n * 8

        def copy_ptr(buf, k, p):
            base = copy_base + sum(copy_bytes[:k]) * 2 + (copy_bytes[k] if buf is a1 else 0)
            sz = sizes[k]
            off = b.add(i64(base), p if sz == 1 else b.mul(p, i64(sz)))
            return b.gep(scratch, [off], inbounds=True, source_etype=I8)

        mems = [memory_type(sh.element_type) for _, sh in inputs]

        def raw(buf, k, p):
            return b.load(typed_pointer(b, copy_ptr(buf, k, p), mems[k]), typ=mems[k])

        def put(buf, k, p, v):
            b.store(v, typed_pointer(b, copy_ptr(buf, k, p), mems[k]))

        def lt_at(x, y):
            """lt of two elements, each the raw values of its inputs."""
            return less(b, lambda k, e: from_memory(b, e[k], inputs[k][1].element_type), x, y)

        with le.for_loop(b, 0, n, name="init") as i:
            b.store(i, perm_ptr(a0, i))
            for k, (_, sh) in enumerate(inputs):
                src = typed_pointer(b, element_ptr(in_addr[k], sh.element_type, i), mems[k])
                put(a0, k, i, b.load(src, typ=mems[k]))
        # Insertion sort of each run of RUN elements, in a0.
        with le.for_loop(b, 0, (n + RUN - 1) // RUN, name="run") as q:
            s = b.mul(q, i64(RUN))
            e = _smin(b, b.add(s, i64(RUN)), i64(n))
            with le.for_loop(b, b.add(s, i64(1)), e, name="ins") as i:
                x = b.load(perm_ptr(a0, i), typ=I64)
                xv = [raw(a0, k, i) for k in range(len(inputs))]
                j = loops.var(i, "j")

                # Keep every read in bounds: read a0[max(j-1, s)].
                def cond_safe():
                    jv = loops.get(j)
                    jm1 = b.sub(jv, i64(1))
                    jm1c = b.select(b.icmp_signed(">", jv, s), jm1, s)
                    prev = [raw(a0, k, jm1c) for k in range(len(inputs))]
                    return b.and_(b.icmp_signed(">", jv, s), lt_at(xv, prev))

                def shift():
                    jv = loops.get(j)
                    jm1 = b.sub(jv, i64(1))
                    b.store(b.load(perm_ptr(a0, jm1), typ=I64), perm_ptr(a0, jv))
                    for k in range(len(inputs)):
                        put(a0, k, jv, raw(a0, k, jm1))
                    b.store(jm1, j)

                loops.while_(cond_safe, shift, "shift")
                b.store(x, perm_ptr(a0, loops.get(j)))
                for k in range(len(inputs)):
                    put(a0, k, loops.get(j), xv[k])
        # Bottom-up merge passes.
        src, dst = a0, a1
        width = RUN
        while width < n:
            with le.for_loop(b, 0, (n + 2 * width - 1) // (2 * width), name=f"m{width}") as q:
                lo = b.mul(q, i64(2 * width))
                mid = _smin(b, b.add(lo, i64(width)), i64(n))
                hi = _smin(b, b.add(lo, i64(2 * width)), i64(n))
                iv = loops.var(lo, "i")
                jv = loops.var(mid, "j")
                with le.for_loop(b, lo, hi, name="k") as k:
                    ii, jj = loops.get(iv), loops.get(jv)
                    ic = _smin(b, ii, i64(n - 1))
                    jc = _smin(b, jj, i64(n - 1))
                    left = b.load(perm_ptr(src, ic), typ=I64)
                    right = b.load(perm_ptr(src, jc), typ=I64)
                    lv = [raw(src, t, ic) for t in range(len(inputs))]
                    rv = [raw(src, t, jc) for t in range(len(inputs))]
                    right_ok = b.icmp_signed("<", jj, hi)
                    left_done = b.icmp_signed(">=", ii, mid)
                    take_right = b.and_(right_ok, b.or_(left_done, lt_at(rv, lv)))
                    b.store(b.select(take_right, right, left), perm_ptr(dst, k))
                    for t in range(len(inputs)):
                        put(dst, t, k, b.select(take_right, rv[t], lv[t]))
                    b.store(b.select(take_right, ii, b.add(ii, i64(1))), iv)
                    b.store(b.select(take_right, b.add(jj, i64(1)), jj), jv)
            src, dst = dst, src
            width *= 2
        final = src
        write_row(b, load, store, lambda p: b.load(perm_ptr(final, p), typ=I64))
        b.store(b.add(r, i64(1)), row)

    loops.while_(lambda: b.icmp_signed("<", loops.get(row), end), row_body, "rows")
    if heap:
        free = me.declare_in(fn.module, "free", ir.FunctionType(VOID, [PTR]))
        b.call(free, [scratch])
    b.ret_void()
    ab.branch(start)

    eb = me.builder
    if (rows >= 2 and rows * n >= PARALLEL_MIN_ELEMENTS
            and "__xla_cpu_parallel_for" in me.runtime_symbols):
        pf = me.declare("__xla_cpu_parallel_for", ir.FunctionType(VOID, [PTR, PTR, I64, I64]))
        min_chunk = max(1, -(-PARALLEL_MIN_CHUNK_ELEMENTS // n))
        eb.call(pf, [decl, me.table, i64(rows), i64(min_chunk)])
    else:
        eb.call(decl, [me.table, i64(0), i64(rows)])


def _comparator_function(me, comp, arg_types, name):
    ftype = ir.FunctionType(I1, arg_types)
    fn = ir.Function(me.library_module(), ftype, me.unique(name))
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    v = me.emit_scalar_computation(b, comp, list(fn.args))
    if isinstance(v, (list, tuple)) or v.type != I1:
        raise unsupported(comp.root_instruction, "sort comparator without a pred result")
    b.ret(v)
    return fn


@register_instruction("sort")
def emit_sort(me, h):
    a = me.assignment
    shapes = list(h.shape.tuple_shapes) if h.shape.is_tuple else [h.shape]
    out_index = [(k,) for k in range(len(shapes))] if h.shape.is_tuple else [()]
    inputs = [(Slice(a.buffer(o, ())), o.shape) for o in h.operands]
    outputs = [(Slice(a.buffer(h, si)), s) for si, s in zip(out_index, shapes)]
    (dim,) = h.attr("dimensions", (0,))
    arg_types = []
    for o in h.operands:
        t = register_type(o.shape.element_type)
        arg_types += [t, t]
    cmp = _comparator_function(me, h.attr("to_apply"), arg_types, f"cmp.{h.name}")

    def less(b, load, i, j):
        args = []
        for k in range(len(inputs)):
            args += [load(k, i), load(k, j)]
        return b.call(cmp, args)

    n = shapes[0].dimensions[dim] if shapes[0].rank else 1

    def write_row(b, load, store, perm_at):
        with le.for_loop(b, 0, n, name="gather") as p:
            src = perm_at(p)
            for k in range(len(inputs)):
                store(k, p, load(k, src))

    _emit_row_sort(me, h, f"sort.{h.name}", inputs, outputs, dim, less, write_row)


def _order_key(b, v, et):
    """An integer whose signed order is the element type's total order."""
    if et.kind == "f":
        if isinstance(v.type, ir.DoubleType):
            ityp = I64
        else:
            ityp = ir.IntType(32)
            if not isinstance(v.type, ir.FloatType):
                v = b.fpext(v, ir.FloatType())
        s = b.bitcast(v, ityp)
        flipped = b.xor(s, ir.Constant(ityp, (1 << (ityp.width - 1)) - 1))
        return b.select(b.icmp_signed("<", s, ir.Constant(ityp, 0)), flipped, s), True
    if et.kind == "pred":
        return b.zext(v, I8), False
    return v, et.kind == "s"


def _emit_topk(me, h, k, largest):
    a = me.assignment
    x = h.operands[0]
    if x.shape.rank == 0 or not h.shape.is_tuple:
        raise unsupported(h, "operand of rank 0")
    et = x.shape.element_type
    if et.kind == "c":
        raise unsupported(h, f"element type {et}")
    values_shape, indices_shape = h.shape.tuple_shapes
    inputs = [(Slice(a.buffer(x, ())), x.shape)]
    outputs = [(Slice(a.buffer(h, (0,))), values_shape), (Slice(a.buffer(h, (1,))), indices_shape)]
    dim = x.shape.rank - 1

    def less(b, load, i, j):
        ki, signed = _order_key(b, load(0, i), et)
        kj, _ = _order_key(b, load(0, j), et)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return cmp(">" if largest else "<", ki, kj)

    idx_type = register_type(indices_shape.element_type)

    def write_row(b, load, store, perm_at):
        with le.for_loop(b, 0, k, name="topk") as p:
            src = perm_at(p)
            store(0, p, load(0, src))
            store(1, p, b.trunc(src, idx_type) if idx_type.width < 64 else src)

    if k == 0:
        return
    n = x.shape.dimensions[dim]
    _emit_row_sort(me, h, f"topk.{h.name}", inputs, outputs, dim, less, write_row,
                   select=k if k <= MAX_SELECT_K and k < n else None)


@register_instruction("topk")
def emit_topk(me, h):
    largest = h.attr("largest", True)
    _emit_topk(me, h, int(h.attr("k")), True if largest is None else bool(largest))


# custom_call_target -> fn(module_emitter, instr).
CUSTOM_CALL_TARGETS = {
    "TopK": lambda me, h: _emit_topk(me, h, h.shape.tuple_shapes[0].dimensions[-1], True),
    "__cpu$TopK": lambda me, h: _emit_topk(me, h, h.shape.tuple_shapes[0].dimensions[-1], True),
}


@register_instruction("custom-call")
def emit_custom_call(me, h):
    target = h.attr("custom_call_target")
    fn = CUSTOM_CALL_TARGETS.get(target)
    if fn is None:
        raise unsupported(h, f"custom_call_target={target!r}")
    fn(me, h)
