"""Column reductions: reduces that keep the input's minor-most dimension.

``reduce(f32[4096,1024] x, dimensions={0})`` (a column sum) computed one
output element at a time walks a column of ``x``: 4096 loads 4 KB apart,
each from another cache line, for every one of the 1024 outputs. This
emitter turns the loops around, as XLA:CPU's column-reduction codegen does:
the kernel keeps a contiguous run of output elements and, for each input
row in order, folds that row's matching run into them,

    out[c] = init                      for c in [begin, end)
    for each reduced index r (input layout order):
        out[c] = reducer(out[c], x[r, c])   for c in [begin, end)

so every load is contiguous and the inner loop vectorizes (loads, reducer,
stores; the output run stays in L1). Each output element still folds its
inputs in the same order, starting from the init value, so results are the
ones the element-at-a-time loop gives, bit for bit. Threads split the
output's minor dimension (``begin``/``end``); any other kept dimensions are
loops inside the kernel.

Applies to variadic reduces whose outputs are all of those in-place types
(``jnp.argmin(x, axis=0)``: the values and an iota folded together, the
reducer's selects vectorized across the run; argmin of f32[4096, 1024]
along its columns, element by element down each column with the
two-pass ``arg_reduce`` of each, took 23 ms, XLA:CPU 13: 0.8 ms folded by
rows), and to single-input reduces (a standalone reduce or a kInput fusion's
root) whose output is stored in the type the reducer computes in (f32, f64
and the integer types) or is bf16 or f16 (computed in f32 registers: the
kernel then walks the output run in tiles of ``NARROW_TILE`` columns whose
accumulators live in an f32 scratch between rows and are stored, rounded
once, after the last row: the values the element-at-a-time loop keeps in a
register, sums and products in f32 as ``reduction_emitter.
narrow_float_accumulation`` says; a bf16 bias gradient of [256, 4096] ran
at 4 ms element by element), whose kept minor input dimension is also the
output's minor dimension, and which reduce at least one dimension; and to
multi-output fusions of such a reduce and arrays shaped like its input
(``ModuleEmitter.reduce_riders``: a gradient beside its bias gradient),
whose elements the kernel stores as it reads them, each once, by the thread
that owns its column; and to multi-output fusions of several such reduces
of one input shape over the same dimensions (a layernorm's two parameter
gradients), each folding its own input into its own output in the same
row loop.
"""
from xla.backends.cpu import loop_emitter as le

# Element types whose register and memory forms agree (the output buffer
# holds the accumulators between rows).
_ACCUMULATE_IN_PLACE = frozenset("f32 f64 s8 s16 s32 s64 u8 u16 u32 u64".split())
# Element types accumulated in an f32 scratch of NARROW_TILE columns.
_ACCUMULATE_IN_SCRATCH = frozenset(("bf16", "f16"))
NARROW_TILE = 512
# Output elements per parallel chunk at least (a few vectors' worth).
MIN_CHUNK_COLUMNS = 64


def column_dimensions(out_shape, root):
    """(output minor dimension, reduced input dimensions in layout order) when
    ``root`` (a reduce computing a buffer of ``out_shape``, or a variadic
    reduce computing a tuple of them) is a column reduction, else None."""
    if root.opcode != "reduce" or len(root.operands) % 2:
        return None
    n = len(root.operands) // 2
    outs = out_shape.tuple_shapes if out_shape.is_tuple else [out_shape]
    if len(outs) != n or not all(o.is_array for o in outs):
        return None
    allowed = _ACCUMULATE_IN_PLACE | (_ACCUMULATE_IN_SCRATCH if n == 1 else frozenset())
    if any(o.element_type.text not in allowed for o in outs) or outs[0].rank == 0:
        return None
    if any(o.dimensions != outs[0].dimensions or
           o.physical_minor_to_major() != outs[0].physical_minor_to_major() for o in outs):
        return None
    out_shape = outs[0]
    in_shape = root.operands[0].shape
    reduced = set(root.attr("dimensions", ()))
    if not reduced or any(op.shape.element_type is not o.element_type
                          for op, o in zip(root.operands[:n], outs)):
        return None
    if any(in_shape.dimensions[d] == 0 for d in reduced):
        return None
    order = le.major_to_minor(in_shape)
    minor = order[-1]
    if minor in reduced:
        return None
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    out_minor = kept.index(minor)
    if le.major_to_minor(out_shape)[-1] != out_minor:
        return None
    return out_minor, [d for d in order if d in reduced]


def _reduces_and_riders(emitter, h, root, fusion):
    """([(a reduce, its output's shape index in ``h``)], {shape index:
    rider leaf}) for a fusion whose root tuple is reduces of one input
    shape over the same dimensions to the same output shape (a layernorm's
    two parameter gradients) and arrays they carry as riders (and nothing
    else); the reduce alone, index ``()`` and no riders for a reduce root;
    None otherwise."""
    if root.opcode == "reduce":
        return [(root, ())], {}
    if root.opcode != "tuple" or not h.shape.is_tuple:
        return None
    riders = emitter.reduce_riders(h, root, fusion)
    reduces = [(leaf, (k,)) for k, leaf in enumerate(root.operands) if leaf.opcode == "reduce"]
    if not reduces or len(riders) + len(reduces) != len(root.operands):
        return None
    first = reduces[0][0]
    for r, _ in reduces[1:]:
        if (len(r.operands) != 2 or r.operands[0].shape != first.operands[0].shape
                or r.shape != first.shape
                or set(r.attr("dimensions", ())) != set(first.attr("dimensions", ()))):
            return None
    return reduces, {index: root.operands[index[0]] for index in riders}


def emit_column_reduce(emitter, h, root, fusion, in_slices):
    """Emits ``h`` (a reduce, or a fusion whose root ``root`` is one, or a
    reduce and its riders) as a column reduction and calls it; False when it
    does not apply."""
    from xla.backends.cpu.kernels import Slice, slice_pattern
    parts = _reduces_and_riders(emitter, h, root, fusion)
    if parts is None:
        return False
    reduces, riders = parts
    reduce, out_index = reduces[0]
    out_shape = h.shape if out_index == () else h.shape.tuple_shapes[out_index[0]]
    dims = column_dimensions(out_shape, reduce)
    # The other reduces have the same input and output shapes and
    # dimensions (_reduces_and_riders): the same column dimensions.
    if dims is None:
        return False
    if out_shape.is_tuple:   # a variadic reduce (argmin along columns): one fold of them all
        out_shape = out_shape.tuple_shapes[0]
    if out_shape.num_elements() == 0:
        return False
    out_minor = dims[0]
    in_shape = reduce.operands[0].shape
    kept = [d for d in range(in_shape.rank) if d not in set(reduce.attr("dimensions", ()))]
    out_slices = [([Slice(emitter.assignment.buffer(h, index + ((j,) if r.shape.is_tuple else ())))
                    for j in range(len(r.operands) // 2)], r) for r, index in reduces]
    rider_slices = [(Slice(emitter.assignment.buffer(h, index)), leaf)
                    for index, leaf in sorted(riders.items())]
    name = emitter.unique(f"kernel.{h.name}.columns")
    slices = in_slices + [sl for sls, _ in out_slices for sl in sls] + \
        [sl for sl, _ in rider_slices]
    memo_key = (emitter.fingerprints.key(h), "columns", slice_pattern(slices))

    def emit():
        from xla.backends.cpu.shape_generic import is_generic
        generic = is_generic(emitter, h, slices, runtime_bounds=True)

        def code():
            return _emit_kernel(emitter, h, fusion, name, slices, out_slices, out_shape,
                                rider_slices, dims, kept, generic)
        return emitter.size_free_kernels.emit(
            h, name, slices, ("columns", slice_pattern(slices)), code) if generic else code()

    kernel = emitter.memoized_kernel(h, memo_key, name, slices, emit)
    emitter.call_kernel(kernel, out_shape, work=in_shape.num_elements(),
                        extent=out_shape.dimensions[out_minor], min_chunk=MIN_CHUNK_COLUMNS)
    return True


def _emit_kernel(emitter, h, fusion, name, slices, out_slices, out_shape, rider_slices, dims,
                 kept, generic):
    """The column-reduction kernel of ``h`` (``out_slices``: each reduce's
    output slices (several for a variadic reduce) and the reduce, all of
    one input shape, dimensions and output shape; the riders' values stored
    at each input index), emitted and finished."""
    from llvmlite import ir
    from xla.backends.cpu.element_generator import ElementGenerator
    from xla.backends.cpu.kernels import Kernel
    from xla.backends.cpu.llvm_types import load_element, store_element
    from xla.backends.cpu.reduction_emitter import narrow_float_accumulation
    out_minor, reduced_order = dims
    in_shape = out_slices[0][1].operands[0].shape
    kernel = Kernel(emitter, name, slices, generic=generic)
    kernel.root = h
    g = ElementGenerator(emitter, kernel, fusion)
    kb = kernel.b
    et = out_shape.element_type
    # Per reduce: (its output pointers, the reduce, its reducer, its inits).
    outs = [([kernel.pointer(sl) for sl in sls], r, r.attr("to_apply"),
             [g.value(i, []) for i in r.operands[len(sls):]]) for sls, r in out_slices]
    riders = [(kernel.pointer(sl), leaf) for sl, leaf in rider_slices]
    index = [None] * out_shape.rank
    in_index = [None] * in_shape.rank

    def out_index(c):
        idx = list(index)
        idx[out_minor] = c
        return idx

    # The accumulators: the output elements themselves, or for bf16/f16 an
    # f32 scratch per output holding the current tile [lo, hi) of columns.
    narrow = et.text in _ACCUMULATE_IN_SCRATCH
    f32 = ir.FloatType()
    # bf16/f16 sums and products accumulate in f32 whatever the reducer's
    # rounding, as the element-at-a-time reduce does
    # (reduction_emitter.narrow_float_accumulation).
    wide = [narrow_float_accumulation(comp, et) if narrow else None for _, _, comp, _ in outs]
    tile_type = ir.ArrayType(f32, NARROW_TILE)
    scratch = [kernel.alloca(tile_type, name="acc") for _ in outs] if narrow else []

    def accumulator(k, c, lo, j=0):
        """(load, store) of reduce k's accumulator j of column c."""
        if narrow:
            ptr = kb.gep(scratch[k], [le.i64(0), kb.sub(c, lo)], inbounds=True)
            return (lambda: kb.load(ptr, typ=f32)), (lambda v: kb.store(v, ptr))
        r = outs[k][1]
        # A variadic reduce is the kernel's root: h's outputs are its own.
        shape = h.shape.tuple_shapes[j] if r.shape.is_tuple else out_shape
        t = shape.element_type
        ptr = g.element_pointer(outs[k][0][j], shape, out_index(c))
        return (lambda: load_element(kb, ptr, t)), (lambda v: store_element(kb, v, ptr, t))

    def rows(level, lo, hi):
        if level == len(reduced_order):
            with le.for_loop(kb, lo, hi, name="col") as c:
                idx = out_index(c)
                for i, d in enumerate(kept):
                    in_index[d] = idx[i]
                saved = g.push_scope()
                xs = [[g.value(x, list(in_index)) for x in r.operands[:len(ptrs)]]
                      for ptrs, r, _, _ in outs]
                for rider_ptr, leaf in riders:   # stored as read: each element once
                    store_element(kb, g.value(leaf, list(in_index)),
                                  g.element_pointer(rider_ptr, leaf.shape, list(in_index)),
                                  leaf.shape.element_type)
                for k, ((ptrs, _, comp, _), x) in enumerate(zip(outs, xs)):
                    if wide[k] is not None:
                        load, store = accumulator(k, c, lo)
                        store((kb.fadd if wide[k] == "add" else kb.fmul)(load(), x[0]))
                        continue
                    accs = [accumulator(k, c, lo, j) for j in range(len(ptrs))]
                    v = emitter.emit_scalar_computation(kb, comp, [a[0]() for a in accs] + x)
                    for (_, store), vj in zip(accs, v if isinstance(v, list) else [v]):
                        store(vj)
                g.pop_scope(saved)
            return
        d = reduced_order[level]
        with le.for_loop(kb, 0, kernel.dim(in_shape.dimensions[d]), name=f"r{d}") as iv:
            in_index[d] = iv
            rows(level + 1, lo, hi)

    def columns(lo, hi):
        with le.for_loop(kb, lo, hi, name="init") as c:
            for k, (_, _, _, inits) in enumerate(outs):
                for j, init in enumerate(inits):
                    accumulator(k, c, lo, j)[1](init)
        rows(0, lo, hi)
        if narrow:
            with le.for_loop(kb, lo, hi, name="store") as c:
                ptrs = [g.element_pointer(out_ptrs[0], out_shape, out_index(c))
                        for out_ptrs, *_ in outs]
                for k, ptr in enumerate(ptrs):
                    store_element(kb, accumulator(k, c, lo)[0](), ptr, et)

    outer = [d for d in le.major_to_minor(out_shape) if d != out_minor]

    def outputs(level):
        if level == len(outer):
            if not narrow:
                columns(kernel.begin, kernel.end)
                return
            with le.for_loop(kb, kernel.begin, kernel.end, name="tile", step=NARROW_TILE) as lo:
                hi = kb.add(lo, le.i64(NARROW_TILE))
                columns(lo, kb.select(kb.icmp_signed("<", hi, kernel.end), hi, kernel.end))
            return
        d = outer[level]
        with le.for_loop(kb, 0, kernel.dim(out_shape.dimensions[d]), name=f"o{d}") as iv:
            index[d] = iv
            outputs(level + 1)

    outputs(0)
    kernel.finish()
    return kernel
