"""Generators with an inner loop: reduce and dot.

Both are emitted where their element is needed (a standalone reduce, the
root of a kInput fusion, or inside any fused expression): the generator is
called inside the output loop nest with the output index, emits a loop nest
over the reduced (contracting) dimensions at the builder's position, and
returns the accumulated value(s). Accumulators live in allocas of the
kernel's entry block (SROA turns them into phis).

Reduce: the reduced dimensions are walked from the most major to the most
minor in the input's layout, so the innermost loop reads contiguous memory
when the minor-most dimension is reduced (a row reduction). Variadic
reduces (argmax: a value and an index reduced together) keep one
accumulator per input and apply the reducer computation, emitted as scalar
code, to all of them at once; the result is a list.

Row reductions of f32/f64 and f16/bf16 (in f32 lanes, ``_NARROW_VECTOR_TYPES``)
with a plain ``add``, ``maximum`` or ``minimum`` reducer
(``_VECTOR_REDUCERS``) run in ``LANES``-wide vector accumulators:
the innermost loop computes one element per iteration and carries loop
metadata that has LLVM's loop vectorizer run it ``LANES`` wide, which also
permits it to reassociate the sum (``_vector_row_reduce``). An earlier form
unrolled the loop by hand into the lanes of a vector for the SLP vectorizer
to fuse: the same machine code, but LLVM then optimized eight copies of the
element's code (an exp polynomial in softmax), 30-40% of the compile time of
softmax and attention. That form remains for elements the loop vectorizer
cannot vectorize (a libm call such as erf, an inner loop:
``_loop_vectorizable``), where it keeps the lanes' independent chains. Like XLA:CPU's vectorized reductions this
reassociates the sum (results differ from a sequential sum in the last
bits, and are usually more accurate); max and min are exact in any order;
other reducers and types accumulate sequentially. Maximum and minimum run
the intrinsics with ``nnan nsz`` flags (one vmaxpd per vector instead of
the five dependent instructions of NaN-propagating ``llvm.maximum`` on
x86) beside an "any NaN" flag, and walk a row again exactly only where its
result is a zero, whose sign those flags leave open
(``_fast_min_max_row``): the same results, about 3x faster on long rows.

Multi-output fusions whose outputs include a reduce and arrays shaped like
its input (``ModuleEmitter.reduce_riders``) set
``g.reduce_side_outputs[id(reduce)]``: the reduce's loops store those
outputs at each input index they visit, so each element is computed once.

Parallel reductions to small outputs (``chunk_identity`` says which
reducers qualify): the module emitter splits the most major reduced
dimension into a fixed number of chunks, independent of the thread count,
and sets ``g.reduce_chunks[id(h)] = (lo, hi, identities)``; the reduce then
walks only ``[lo, hi)`` of that dimension, starting from the reducer's
identity instead of the init value. The partial results are combined in
chunk order afterwards (``ir_emitter.ModuleEmitter.emit_chunked_reduce``),
so results do not depend on the number of threads.

Lane-strided reductions (the GPU's row reductions, ``xla/backends/gpu/
split_reduction.py``): ``g.reduce_lanes[id(h)] = (lane, step, identities)``
makes the reduce walk its minor-most reduced dimension from ``lane`` in
steps of ``step``, starting from the reducer's identity; adjacent threads
then read adjacent elements, and a second kernel combines the partials.

Dot (the naive form, for integer, complex and other types, fused dots, and
f32/f64 dots when the runtime has no matmul): for each output element, a
loop over the contracting dimensions multiplying and accumulating in the
result's register type (operands converted to it first; integers wrap
around; complex: real and imaginary parts in two accumulators).
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu import arg_reduce, prefetch
from xla.backends.cpu.loop_emitter import i64
from xla.backends.cpu.element_generator import convert_register, register_generator
from xla.backends.cpu.llvm_types import NARROW_FLOATS, register_type, round_result, vector_lanes
from xla.errors import UnimplementedError
from xla.hlo.types import PrimitiveType as PT

# Lanes of the unrolled form and the floor of the vectorized one (a 256-bit
# vector); rows long enough run as wide as the target's vectors
# (``_row_lanes``).
LANES = {"f32": 8, "f64": 4}
# f16 and bf16 values are f32 in registers (exactly: every f16 and bf16
# value is an f32 value). A row maximum or minimum of them runs in f32
# vector accumulators as an f32 one does (``row_identity``): its result is
# one of the elements or the init value (or NaN), so it is exactly
# representable and needs no rounding, and the NaN and signed-zero rules
# are those of the f32 row. A row sum of them accumulates in f32 lanes,
# reassociated as an f32 row sum is, and rounds once at the end (as the
# sequential form, ``narrow_float_accumulation``, rounds its f32 sum once;
# XLA:CPU computes a bf16 reduce as an f32 one and rounds its result): a
# softmax gradient's bf16 row sum of [4, 8, 256, 256] took 1.3 ms
# sequentially on two threads.
_NARROW_VECTOR_TYPES = (PT.F16, PT.BF16)
_NARROW_LANES = 8


def _unsupported(h, what):
    return UnimplementedError(
        f"the cpu backend does not support {h.opcode} ({what}) (instruction {h.name})")


# Plain binary reducers whose identity is known; they are associative (add
# and multiply of floats only up to rounding, which reductions already
# reassociate, see above).
_CHUNKABLE = ("add", "multiply", "maximum", "minimum", "and", "or")


def _plain_reducer(comp, et):
    """The opcode of reducer ``comp`` when it is one of ``_CHUNKABLE``
    applied to its two ``et`` parameters and nothing else; None otherwise."""
    root = comp.root_instruction
    if (root.opcode not in _CHUNKABLE or len(comp.instructions) != 3
            or sorted(o.parameter_number for o in root.operands
                      if o.opcode == "parameter") != [0, 1]
            or any(o.shape.element_type is not et for o in root.operands)):
        return None
    return root.opcode


def chunk_identity(comp, et):
    """The identity (an ir.Constant) of reducer ``comp`` on element type
    ``et`` when a reduction with it may be split into chunks whose partial
    results are combined with it; None otherwise."""
    op = _plain_reducer(comp, et)
    if op is None:
        return None
    if et.text in ("f32", "f64"):
        t = ir.FloatType() if et.text == "f32" else ir.DoubleType()
        value = {"add": -0.0, "multiply": 1.0, "maximum": float("-inf"),
                 "minimum": float("inf")}.get(op)
        return None if value is None else ir.Constant(t, value)
    if et.kind in "su" and et.bits in (8, 16, 32, 64):
        bits = et.bits
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if et.kind == "s" else (0, (1 << bits) - 1)
        value = {"add": 0, "multiply": 1, "maximum": lo, "minimum": hi, "and": -1, "or": 0}[op]
        return ir.Constant(ir.IntType(bits), value & ((1 << bits) - 1))
    return None


def row_identity(comp, et):
    """The identity (a register-type ir.Constant) a vectorized row
    reduction with reducer ``comp`` on ``et`` elements starts its lanes
    from: ``chunk_identity``'s for f32 and f64, -0/-inf/+inf for an f16 or
    bf16 sum/maximum/minimum (see ``_NARROW_VECTOR_TYPES``); None where the
    row is not vectorized."""
    if et in _NARROW_VECTOR_TYPES:
        op = _plain_reducer(comp, et)
        value = {"add": -0.0, "maximum": float("-inf"), "minimum": float("inf")}.get(op)
        return None if value is None else ir.Constant(ir.FloatType(), value)
    return chunk_identity(comp, et) if et.text in LANES else None


def _reduced_order(h):
    in_shape = h.operands[0].shape
    reduced = set(h.attr("dimensions", ()))
    return [d for d in le.major_to_minor(in_shape) if d in reduced]


def chunked_dimension(h):
    """The input dimension a chunked reduce splits: the most major reduced one."""
    order = _reduced_order(h)
    return order[0] if order else None


def _store_side_outputs(g, h, idx):
    """Stores the fusion outputs that ride along this reduce's loop (see
    ``ModuleEmitter.reduce_side_outputs``) at input index ``idx``."""
    from xla.backends.cpu.llvm_types import store_element
    for ptr, shape, leaf in getattr(g, "reduce_side_outputs", {}).get(id(h), ()):
        store_element(g.b, g.value(leaf, list(idx)), g.element_pointer(ptr, shape, list(idx)),
                      shape.element_type)


def narrow_float_accumulation(comp, element_type):
    """'add' or 'multiply' when a reducer of ``element_type`` values is that
    op of its two parameters and the type is f16, bf16 or an f8: such sums
    and products accumulate in f32 (the register type) and round once at
    the end, as XLA accumulates them (reduce and reduce-window alike).
    None otherwise."""
    if element_type not in NARROW_FLOATS:
        return None
    root = comp.root_instruction
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    if root.opcode in ("add", "multiply") and len(params) == 2 and \
            {id(o) for o in root.operands} == {id(p) for p in params}:
        return root.opcode
    return None


@register_generator("reduce")
def generate_reduce(g, h, index):
    b = g.b
    n = len(h.operands) // 2
    inputs, inits = h.operands[:n], h.operands[n:]
    in_shape = inputs[0].shape
    reduced = sorted(h.attr("dimensions", ()))
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    comp = h.attr("to_apply")
    chunk = getattr(g, "reduce_chunks", {}).get(id(h))
    lanes_of = getattr(g, "reduce_lanes", {}).get(id(h))
    if chunk is not None:
        lo, hi, identities = chunk
        init_values = list(identities)
        ranges = {chunked_dimension(h): (lo, hi)}
    elif lanes_of is not None:
        lane, step, identities = lanes_of
        init_values = list(identities)
        minor = _reduced_order(h)[-1]
        ranges = {minor: (lane, in_shape.dimensions[minor], step)}
    else:
        init_values = [g.value(i, []) for i in inits]
        ranges = {}
    if any(in_shape.dimensions[d] == 0 for d in reduced):
        return init_values[0] if n == 1 else list(init_values)
    base_index = [None] * in_shape.rank
    for i, d in enumerate(kept):
        base_index[d] = index[i]
    order = [d for d in le.major_to_minor(in_shape) if d in reduced]
    et = inputs[0].shape.element_type
    arg = arg_reduce.applies(g, h, inputs, inits, reduced) if not ranges else None
    if arg is not None:
        lanes = _row_lanes(_NARROW_LANES if et in _NARROW_VECTOR_TYPES else LANES[et.text],
                           64 if et is PT.F64 else 32, in_shape.dimensions[order[-1]])
        op = "maximum" if arg == "max" else "minimum"
        return arg_reduce.emit(
            g, h, inputs, inits, base_index, order[-1],
            lambda init: _fast_min_max_row(g, h, inputs[0], init, base_index, order, lanes, {}, op),
            lanes)
    narrow = et in _NARROW_VECTOR_TYPES
    lanes = _NARROW_LANES if narrow else LANES.get(et.text)
    identity = row_identity(comp, et) if n == 1 and lanes else None
    if (identity is not None and lanes_of is None and comp.root_instruction.opcode in _VECTOR_REDUCERS
            and order and order[-1] == le.major_to_minor(in_shape)[-1]
            and in_shape.dimensions[order[-1]] >= 2 * lanes):
        code = _element_code(g, inputs[0])
        if _loop_vectorizable(code):
            # (f16 and bf16 rows run in f32 registers.)
            wide = _row_lanes(lanes, 64 if et is PT.F64 else 32, in_shape.dimensions[order[-1]])
            return _vector_row_reduce(g, h, inputs[0], init_values[0], base_index, order, wide,
                                      ranges, comp, code)
        # (An f16/bf16 row whose element the loop vectorizer cannot
        # vectorize, erf say, stays sequential: the hand-unrolled form is
        # not used for narrow types.)
        if not narrow:
            return _unrolled_row_reduce(g, h, inputs[0], init_values[0], base_index, order, lanes,
                                        ranges, comp, identity)

    accs = [g.kernel.alloca(v.type, name="acc") for v in init_values]
    for a, v in zip(accs, init_values):
        b.store(v, a)
    saved = g.push_scope()
    idx = list(base_index)
    # f16, bf16 and f8 sums and products accumulate in f32 (their register
    # type) and round once at the end, as XLA does; rounding every step
    # loses the sum (a bf16 sum of 17,765 values came out -512 for -31,366).
    wide = narrow_float_accumulation(comp, et) if n == 1 else None

    def emit(level):
        if level == len(order):
            xs = [g.value(x, list(idx)) for x in inputs]
            _store_side_outputs(g, h, idx)
            cur = [g.b.load(a, typ=v.type) for a, v in zip(accs, init_values)]
            if wide is not None:
                op = g.b.fadd if wide == "add" else g.b.fmul
                g.b.store(op(cur[0], xs[0]), accs[0])
                return
            out = g.emitter.emit_scalar_computation(g.b, comp, cur + xs)
            out = out if isinstance(out, (list, tuple)) else [out]
            for a, v in zip(accs, out):
                g.b.store(v, a)
            return
        d = order[level]
        lo, hi, *step = ranges.get(d, (0, in_shape.dimensions[d]))
        with le.for_loop(g.b, lo, hi, name=f"r{d}", step=step[0] if step else 1) as iv:
            idx[d] = iv
            emit(level + 1)

    emit(0)
    g.pop_scope(saved)
    result = [g.b.load(a, typ=v.type) for a, v in zip(accs, init_values)]
    if wide is not None:
        result = [round_result(g.b, result[0], et)]
    return result[0] if n == 1 else result


# Float reducers that row reductions run in LANES accumulators: add
# (reassociated, see above), maximum and minimum (exact in any order; NaN
# propagates through every lane and the final combination).
_VECTOR_REDUCERS = ("add", "maximum", "minimum")


def _row_lanes(lanes, register_bits, n):
    """How wide the loop vectorizer runs a row of ``n`` elements held in
    ``register_bits``-wide registers: one of the target's vector registers
    (16 f32 lanes with AVX-512: 1.25x the speed of 8 on a softmax row,
    whose exp is compute-bound), where the row has two of them (the
    interleaved accumulators), else ``lanes``."""
    wide = max(lanes, vector_lanes(register_bits))
    return wide if n >= 2 * wide else lanes


# Vector accumulators of a row reduction: two (16 f32 lanes) hide the
# latency of a vector add; LLVM's cost model picks four for cheap bodies,
# which doubles the code LLVM generates for an exp-heavy softmax row for no
# measurable gain (benchmarks/cpu_workloads.py softmax and layernorm).
# Eight where the row's element computes a long-chain op at bf16/f16 (a
# bf16 softmax's exp: le.long_chain_interleave).
ROW_REDUCE_INTERLEAVE = 2


def _outer_reduced_loops(g, x, order, ranges, idx, row):
    """Loops over the reduced dimensions ``order[:-1]`` (within ``ranges``
    where given), setting ``idx``, and ``row()`` inside the innermost."""
    def emit(level):
        if level == len(order) - 1:
            row()
            return
        d = order[level]
        lo, hi = ranges.get(d, (0, x.shape.dimensions[d]))
        with le.for_loop(g.b, lo, hi, name=f"r{d}") as iv:
            idx[d] = iv
            emit(level + 1)
    emit(0)


def _element(g, h, x, idx, side_outputs=True):
    """``x[idx]``, computed in a scope of its own (its values are not
    reused outside), with the fusion's side outputs at ``idx`` stored."""
    scope = g.push_scope()
    v = g.value(x, list(idx))
    if side_outputs:
        _store_side_outputs(g, h, idx)
    g.pop_scope(scope)
    return v


def _fold_element(g, h, x, idx, acc, typ, combine):
    """``*acc = combine(*acc, x[idx])``, the fusion's side outputs at
    ``idx`` stored."""
    v = _element(g, h, x, idx)
    g.b.store(combine(g.b, g.b.load(acc, typ=typ), v), acc)


def _vector_row_reduce(g, h, x, init, base_index, order, lanes, ranges, comp, code):
    """The row reduction as one scalar loop over the minor-most reduced
    dimension that LLVM's loop vectorizer runs ``lanes`` wide in
    ``ROW_REDUCE_INTERLEAVE`` vector accumulators (``loop_emitter.
    loop_hints``; the explicit width is what allows it to reassociate
    the sum; more where ``code``, the instructions of ``x``'s element,
    computes a long-chain op at bf16/f16). The reducer is ``fadd`` or, for
    maximum and minimum, ``_fast_min_max_row``."""
    b = g.b
    scalar_t = init.type
    op = comp.root_instruction.opcode
    if op != "add":
        return _fast_min_max_row(g, h, x, init, base_index, order, lanes, ranges, op)
    combine = lambda bb, u, v: bb.fadd(u, v)  # noqa: E731
    acc = g.kernel.alloca(scalar_t, name="acc")
    b.store(init, acc)
    saved = g.push_scope()
    idx = list(base_index)
    inner = order[-1]
    interleave = le.long_chain_interleave(code, ROW_REDUCE_INTERLEAVE) or ROW_REDUCE_INTERLEAVE

    # Whole rows (not a chunk's or a lane's part): the rows of large
    # parameters ahead prefetched first (prefetch.py).
    rows = prefetch.row_buffers(g, x, x.shape) if inner not in ranges else []

    def row():
        lo, hi = ranges.get(inner, (0, x.shape.dimensions[inner]))
        if rows:
            prefetch.prefetch_rows(g, rows, idx, inner)
        with le.for_loop(g.b, lo, hi, name="rv", vectorize=lanes,
                         interleave=interleave) as k:
            idx[inner] = k
            _fold_element(g, h, x, idx, acc, scalar_t, combine)

    _outer_reduced_loops(g, x, order, ranges, idx, row)
    g.pop_scope(saved)
    # An f16/bf16 sum, kept in f32, rounds once (see _NARROW_VECTOR_TYPES).
    return round_result(b, b.load(acc, typ=scalar_t), x.shape.element_type)


# XLA's maximum and minimum propagate NaN and order -0 below +0
# (``llvm.maximum``/``llvm.minimum``); on x86 each of those is five
# dependent instructions around a vmaxpd, which makes a row reduction
# latency-bound (a 1200x1000 f64 row max: 460 us against NumPy's 195).
_FAST_MIN_MAX_FLAGS = ("nnan", "nsz")
MIN_MAX_INTERLEAVE = 2


def _fast_min_max_row(g, h, x, init, base_index, order, lanes, ranges, op):
    """A row maximum or minimum in two vectorized reductions over one loop:
    the intrinsic with ``nnan nsz`` flags (one vmaxpd/vminpd per vector,
    exact for every input but NaN and the sign of a zero result) and an
    "any NaN" flag; then NaN if the flag is set (the init value counts),
    and where the result is zero, whose sign the flags leave open, the row
    walked again with the exact intrinsic (rare: only rows whose extreme
    is a zero). The same result as folding with ``llvm.maximum``/
    ``llvm.minimum`` in any order."""
    b = g.b
    scalar_t = init.type
    fn = b.module.declare_intrinsic("llvm." + op, [scalar_t],
                                    ir.FunctionType(scalar_t, [scalar_t, scalar_t]))
    acc = g.kernel.alloca(scalar_t, name="acc")
    nan = g.kernel.alloca(ir.IntType(1), name="any_nan")
    b.store(init, acc)
    b.store(b.fcmp_unordered("uno", init, init), nan)
    saved = g.push_scope()
    idx = list(base_index)
    inner = order[-1]

    def fast_row():
        lo, hi = ranges.get(inner, (0, x.shape.dimensions[inner]))
        with le.for_loop(g.b, lo, hi, name="rv", vectorize=lanes,
                         interleave=MIN_MAX_INTERLEAVE) as k:
            idx[inner] = k
            v = _element(g, h, x, idx)
            bb = g.b
            bb.store(bb.call(fn, [bb.load(acc, typ=scalar_t), v], fastmath=_FAST_MIN_MAX_FLAGS),
                     acc)
            bb.store(bb.or_(bb.load(nan, typ=ir.IntType(1)), bb.fcmp_unordered("uno", v, v)), nan)

    _outer_reduced_loops(g, x, order, ranges, idx, fast_row)
    g.pop_scope(saved)
    any_nan = b.load(nan, typ=ir.IntType(1))
    fast = b.load(acc, typ=scalar_t)
    b.store(b.select(any_nan, ir.Constant(scalar_t, float("nan")), fast), acc)
    zero = b.and_(b.fcmp_ordered("==", fast, ir.Constant(scalar_t, 0.0)), b.not_(any_nan))
    with b.if_then(zero, likely=False):
        b.store(init, acc)
        saved = g.push_scope()
        idx = list(base_index)

        def exact_row():
            lo, hi = ranges.get(inner, (0, x.shape.dimensions[inner]))
            # Width 1: the rare exact walk is left scalar (no vectorized
            # copy for LLVM to generate).
            with le.for_loop(g.b, lo, hi, name="rz", vectorize=1) as k:
                idx[inner] = k
                v = _element(g, h, x, idx, side_outputs=False)   # stored by the first walk
                g.b.store(g.b.call(fn, [g.b.load(acc, typ=scalar_t), v]), acc)

        _outer_reduced_loops(g, x, order, ranges, idx, exact_row)
        g.pop_scope(saved)
    return b.load(acc, typ=scalar_t)


# Ops whose element code LLVM's loop vectorizer can vectorize: arithmetic,
# comparisons, selects, index arithmetic and loads, the polynomial math of
# fast_math.py and LLVM intrinsics. Not libm calls (erf, tan, cbrt),
# inner loops (a fused reduce or dot), complex numbers or control flow.
_LOOP_VECTORIZABLE_OPS = frozenset([
    "parameter", "constant", "iota", "broadcast", "reshape", "bitcast", "transpose", "copy",
    "convert", "add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs",
    "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "sqrt",
    "rsqrt", "sine", "cosine", "atan2", "compare", "select", "clamp", "and", "or", "not",
    "is-finite"])


def _element_code(g, x):
    """The instructions whose code computes ``x``'s element in this kernel
    (up to the buffers it loads)."""
    stack, seen, code = [x], set(), []
    while stack:
        h = stack.pop()
        if id(h) in seen:
            continue
        seen.add(id(h))
        if h is not g.kernel.root and g.emitter.assignment.has_buffers(h):
            continue   # loaded from its buffer
        if h.opcode == "parameter" and g.fusion is not None:
            stack.append(g.fusion.operands[h.parameter_number])
            continue
        code.append(h)
        stack.extend(h.operands)
    return code


def _loop_vectorizable(code):
    """Whether every instruction of an element's ``code`` (``_element_code``)
    is in ``_LOOP_VECTORIZABLE_OPS`` with real element types. Where the
    vectorizer cannot vectorize a loop whose width is set, it prints a
    remark on stderr and runs it sequentially."""
    return all(h.opcode in _LOOP_VECTORIZABLE_OPS and h.shape.is_array
               and h.shape.element_type.kind != "c" for h in code)


def _unrolled_row_reduce(g, h, x, init, base_index, order, lanes, ranges, comp, identity):
    """The row reduction for elements LLVM's loop vectorizer cannot
    vectorize (a libm call, an inner loop): the loop unrolled by hand into
    the lanes of a vector accumulator, which keeps ``lanes`` independent
    chains whether or not the SLP vectorizer fuses the lanes' code."""
    b = g.b
    scalar_t = init.type
    vec_t = ir.VectorType(scalar_t, lanes)
    neg_zero = identity  # -0.0 for fadd (the identity, -0.0 included), -inf for max, ...
    if comp.root_instruction.opcode == "add":
        combine = lambda bb, u, v: bb.fadd(u, v)  # noqa: E731
    else:  # the reducer itself, applied lane-wise to vectors
        combine = lambda bb, u, v: g.emitter.emit_scalar_computation(bb, comp, [u, v])  # noqa: E731
    vacc = g.kernel.alloca(vec_t, name="vacc")
    sacc = g.kernel.alloca(scalar_t, name="sacc")
    start = ir.Constant(vec_t, [neg_zero] * lanes)
    b.store(b.insert_element(start, init, ir.Constant(ir.IntType(32), 0)), vacc)
    b.store(neg_zero, sacc)
    saved = g.push_scope()
    idx = list(base_index)
    inner = order[-1]
    n_inner = x.shape.dimensions[inner]
    full = n_inner // lanes

    def row():
        if inner in ranges:  # a chunk [lo, hi) of the only reduced dimension
            lo, hi = ranges[inner]
            count = g.b.udiv(g.b.sub(hi, lo, flags=("nsw", "nuw")), i64(lanes))
            tail = g.b.add(lo, g.b.mul(count, i64(lanes), flags=("nsw", "nuw")), flags=("nsw", "nuw"))
        else:
            lo, count, tail, hi = None, full, full * lanes, n_inner
        with le.for_loop(g.b, 0, count, name="rv") as j:
            scope = g.push_scope()
            base = g.b.mul(j, i64(lanes), flags=("nsw", "nuw"))
            if lo is not None:
                base = g.b.add(lo, base, flags=("nsw", "nuw"))
            vec = ir.Constant(vec_t, ir.Undefined)
            for lane in range(lanes):
                idx[inner] = g.b.add(base, i64(lane), flags=("nsw", "nuw")) if lane else base
                vec = g.b.insert_element(vec, g.value(x, list(idx)), ir.Constant(ir.IntType(32), lane))
                _store_side_outputs(g, h, idx)
            g.pop_scope(scope)
            g.b.store(combine(g.b, g.b.load(vacc, typ=vec_t), vec), vacc)
        if lo is not None or n_inner % lanes:
            with le.for_loop(g.b, tail, hi, name="rs") as k:
                idx[inner] = k
                _fold_element(g, h, x, idx, sacc, scalar_t, combine)

    _outer_reduced_loops(g, x, order, ranges, idx, row)
    g.pop_scope(saved)
    v = b.load(vacc, typ=vec_t)
    parts = [b.extract_element(v, ir.Constant(ir.IntType(32), i)) for i in range(lanes)]
    while len(parts) > 1:
        parts = [combine(b, parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
    return combine(b, parts[0], b.load(sacc, typ=scalar_t))


@register_generator("dot")
def generate_dot(g, h, index):
    b = g.b
    lhs, rhs = h.operands
    lb, rb = list(h.attr("lhs_batch_dims", ())), list(h.attr("rhs_batch_dims", ()))
    lc, rc = list(h.attr("lhs_contracting_dims", ())), list(h.attr("rhs_contracting_dims", ()))
    et = h.shape.element_type
    if et.kind == "c":
        if lhs.shape.element_type is not et or rhs.shape.element_type is not et:
            raise _unsupported(h, f"element types {lhs.shape.element_type}, "
                                  f"{rhs.shape.element_type} -> {et}")
    elif et.kind not in "suf" or lhs.shape.element_type.kind == "c" or \
            rhs.shape.element_type.kind == "c":
        raise _unsupported(h, f"element type {et}")
    rt = register_type(et)
    lf = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.shape.rank) if d not in rb and d not in rc]
    li, ri = [None] * lhs.shape.rank, [None] * rhs.shape.rank
    pos = 0
    for dl, dr in zip(lb, rb):
        li[dl] = ri[dr] = index[pos]
        pos += 1
    for d in lf:
        li[d] = index[pos]
        pos += 1
    for d in rf:
        ri[d] = index[pos]
        pos += 1
    # Complex: two float accumulators, (re, im) += x * y.
    ft = rt.elements[0] if et.kind == "c" else rt
    accs = [g.kernel.alloca(ft, name=n) for n in (("acc.re", "acc.im") if et.kind == "c"
                                                   else ("acc",))]
    for a in accs:
        b.store(ir.Constant(ft, 0 if et.kind in "su" else 0.0), a)
    acc = accs[0]
    saved = g.push_scope()

    def emit(level):
        if level == len(lc):
            if et.kind == "c":
                x, y = g.value(lhs, list(li)), g.value(rhs, list(ri))
                xr, xi = g.b.extract_value(x, 0), g.b.extract_value(x, 1)
                yr, yi = g.b.extract_value(y, 0), g.b.extract_value(y, 1)
                re, im = (g.b.load(a, typ=ft) for a in accs)
                g.b.store(g.b.fadd(re, g.b.fsub(g.b.fmul(xr, yr), g.b.fmul(xi, yi))), accs[0])
                g.b.store(g.b.fadd(im, g.b.fadd(g.b.fmul(xr, yi), g.b.fmul(xi, yr))), accs[1])
                return
            x = convert_register(g.b, g.value(lhs, list(li)), lhs.shape.element_type, et)
            y = convert_register(g.b, g.value(rhs, list(ri)), rhs.shape.element_type, et)
            cur = g.b.load(acc, typ=rt)
            if et.kind == "f":
                g.b.store(g.b.fadd(cur, g.b.fmul(x, y)), acc)
            else:
                g.b.store(g.b.add(cur, g.b.mul(x, y)), acc)
            return
        n = lhs.shape.dimensions[lc[level]]
        with le.for_loop(g.b, 0, n, name=f"k{level}") as k:
            li[lc[level]] = k
            ri[rc[level]] = k
            emit(level + 1)

    emit(0)
    g.pop_scope(saved)
    if et.kind == "c":
        z = b.insert_value(ir.Constant(rt, ir.Undefined), b.load(accs[0], typ=ft), 0)
        return b.insert_value(z, b.load(accs[1], typ=ft), 1)
    return round_result(b, b.load(acc, typ=rt), et)
