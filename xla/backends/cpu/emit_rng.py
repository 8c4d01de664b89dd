"""Random numbers on the CPU backend: rng-bit-generator, rng and
rng-get-and-update-state.

rng-bit-generator
    Bit-exact with the interpreter (``xla/hlo/evaluator/ops_rng.py``,
    which follows the expansion XLA:CPU compiles): Threefry-2x32 (20 rounds)
    for ``rng_three_fry``, Philox-4x32 (10 rounds) for ``rng_philox`` and
    ``rng_default``. The rounds are straight-line i32 IR in a kernel
    ``void (i8** table, i64 begin, i64 end)`` looping over *counters* (one
    block of 2 or 4 output words each), spread over threads for large
    outputs; each word goes to its output element (row-major element
    number -> logical index -> the output layout's offset), taking the low
    bits for 8/16-bit types and pairing words for 64-bit ones, with the
    interpreter's layouts (Threefry 32-bit: the split-in-halves layout).
    A second, one-iteration kernel then writes the new state (the operand
    is read in full before the state output, which may share its buffer,
    is written).

rng (``rng_uniform``, ``rng_normal``)
    Implementation-defined in XLA (the interpreter draws from NumPy). Here:
    Philox-4x32-10 with the fixed key ``RNG_KEY``, counter ``(c + e, 0)``
    for element ``e`` (row-major) of one execution of the instruction, where
    ``c`` is a 64-bit counter in an internal LLVM global of the module
    (``xla.rng.counter``, 0 when the executable is created) that each
    execution of an rng instruction advances by its element count. So the
    values depend only on the sequence of rng executions of one executable:
    a fresh executable repeats them, and successive calls differ.
    Uniform floats: ``a + (b - a) * u`` with ``u`` in [0, 1) from the top
    24 (53 for f64) bits, rounded to the element type and replaced by ``a``
    where rounding reached ``b`` (when ``b > a``); integers: ``a + r mod
    (b - a)`` (``r`` 64 random bits; ``a`` when ``b <= a``); pred: one
    random bit. Normal: Box-Muller, ``a + b * sqrt(-2 ln u1) cos(2 pi u2)``
    with ``u1`` in (0, 1], computed in f64 for f64 and f32 otherwise.

rng-get-and-update-state
    A 128-bit counter in an internal LLVM global of the module
    (``xla.rng.state``), 0 when the executable is created, as the
    interpreter's per-Evaluator state: returns the old value as u64[2]
    (low word first) and adds ``delta``. Calls of one executable are
    serialized (``CpuExecutable``), so plain loads and stores suffice.
"""
import math

from llvmlite import ir

from xla.backends.cpu import fast_math
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.ir_emitter import (I8, PARALLEL_MIN_CHUNK_ELEMENTS, PARALLEL_MIN_ELEMENTS, PTR,
                                         VOID, Kernel, Slice, register_instruction, unsupported)
from xla.backends.cpu.llvm_types import load_element, round_to_type, store_element
from xla.backends.cpu.loop_emitter import I64, i64
from xla.hlo.types import PrimitiveType

I1 = ir.IntType(1)
I32 = ir.IntType(32)
I128 = ir.IntType(128)
F32 = ir.FloatType()
F64 = ir.DoubleType()

RNG_KEY = (0x243F6A88, 0x85A308D3)  # the rng op's fixed Philox key (digits of pi)

_UNSIGNED = {8: PrimitiveType.U8, 16: PrimitiveType.U16, 32: PrimitiveType.U32, 64: PrimitiveType.U64}


def _c32(v):
    return ir.Constant(I32, v & 0xFFFFFFFF)


# ----- the block functions ------------------------------------------------------
def _rotl(b, x, r):
    return b.or_(b.shl(x, _c32(r)), b.lshr(x, _c32(32 - r)))


def threefry2x32(b, k0, k1, x0, x1):
    """Threefry-2x32-20 of the i32 words (x0, x1) under key (k0, k1)."""
    ks = [k0, k1, b.xor(b.xor(k0, k1), _c32(0x1BD11BDA))]
    x0 = b.add(x0, ks[0])
    x1 = b.add(x1, ks[1])
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    for i in range(5):
        for r in rotations[i % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(x0, _rotl(b, x1, r))
        x0 = b.add(x0, ks[(i + 1) % 3])
        x1 = b.add(b.add(x1, ks[(i + 2) % 3]), _c32(i + 1))
    return x0, x1


def _mulhilo(b, x, m):
    p = b.mul(b.zext(x, I64), i64(m))
    return b.trunc(b.lshr(p, i64(32)), I32), b.trunc(p, I32)


def philox4x32(b, k0, k1, x, rounds=10):
    """Philox-4x32-10 of four i32 words under key (k0, k1)."""
    x0, x1, x2, x3 = x
    for r in range(rounds):
        if r:
            k0 = b.add(k0, _c32(0x9E3779B9))
            k1 = b.add(k1, _c32(0xBB67AE85))
        hi0, lo0 = _mulhilo(b, x0, 0xD2511F53)
        hi1, lo1 = _mulhilo(b, x2, 0xCD9E8D57)
        x0, x1, x2, x3 = b.xor(b.xor(hi1, x1), k0), lo1, b.xor(b.xor(hi0, x3), k1), lo0
    return [x0, x1, x2, x3]


def _split64(b, v):
    return b.trunc(v, I32), b.trunc(b.lshr(v, i64(32)), I32)


def _join64(b, lo, hi):
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), i64(32)))


def _words128(b, v):
    return [b.trunc(b.lshr(v, ir.Constant(I128, 32 * k)), I32) if k else b.trunc(v, I32)
            for k in range(4)]


# ----- helpers ------------------------------------------------------------------------
def _run_kernel(me, fn, n, words_per_iteration):
    """Calls kernel ``fn`` over [0, n), through the thread pool when large."""
    b = me.builder
    if (n * words_per_iteration >= PARALLEL_MIN_ELEMENTS and n >= 2
            and "__xla_cpu_parallel_for" in me.runtime_symbols):
        pf = me.declare("__xla_cpu_parallel_for", ir.FunctionType(VOID, [PTR, PTR, I64, I64]))
        min_chunk = max(1, -(-PARALLEL_MIN_CHUNK_ELEMENTS // words_per_iteration))
        b.call(pf, [fn, me.table, i64(n), i64(min_chunk)])
    else:
        b.call(fn, [me.table, i64(0), i64(n)])


def _element_pointer(b, base, shape, index):
    linear = le.linear_index(b, shape, index) if shape.rank else i64(0)
    size = shape.element_type.byte_size
    offset = linear if size == 1 else b.mul(linear, i64(size), flags=("nsw", "nuw"))
    return b.gep(base, [offset], inbounds=True, source_etype=I8)


def _store_bits(b, base, shape, index, bits):
    """Stores the low bits of integer ``bits`` as the element at ``index``."""
    width = shape.element_type.byte_size * 8
    if bits.type.width != width:
        bits = b.trunc(bits, ir.IntType(width))
    store_element(b, bits, _element_pointer(b, base, shape, index), _UNSIGNED[width])


def _store_linear(b, base, shape, e, bits, guard=None):
    """Stores ``bits`` as row-major element number ``e`` (skipped unless ``guard``)."""
    def store():
        index = le.delinearize(b, e, shape.dimensions) if shape.rank else []
        _store_bits(b, base, shape, index, bits)
    if guard is None:
        store()
    else:
        with b.if_then(guard):
            store()


def _load_u64(b, ptr, k):
    return b.load(b.gep(ptr, [i64(8 * k)], inbounds=True, source_etype=I8), typ=I64) if k else \
        b.load(ptr, typ=I64)


def _store_u64(b, value, ptr, k):
    b.store(value, b.gep(ptr, [i64(8 * k)], inbounds=True, source_etype=I8) if k else ptr)


def _module_global(me, name, typ):
    gv = me.llmod.globals.get(name)
    if gv is None:
        gv = ir.GlobalVariable(me.llmod, typ, name=name)
        gv.initializer = ir.Constant(typ, 0)
        gv.linkage = "internal"
        gv.align = 16
    return gv


# ----- rng-bit-generator ------------------------------------------------------------
class BitGeneratorPlan:
    """What an rng-bit-generator computes (shared by the CPU and GPU
    backends): the algorithm, the output's shape, and how many counters
    (blocks of 2 or 4 words) cover it. Raises naming what is unsupported."""

    def __init__(self, h, unsupported_error):
        algorithm = h.attr("algorithm", "rng_default") or "rng_default"
        algorithm = getattr(algorithm, "text", algorithm)
        if algorithm == "rng_default":
            algorithm = "rng_philox"
        if algorithm not in ("rng_three_fry", "rng_philox"):
            raise unsupported_error(h, f"algorithm {algorithm}")
        (state_op,) = h.operands
        state_shape, out_shape = h.shape.tuple_shapes
        st = state_shape.element_type
        if (state_shape.rank != 1 or st.kind not in "su" or st.bits != 64
                or state_shape.dimensions[0] < 2
                or state_op.shape.dimensions != state_shape.dimensions):
            raise unsupported_error(h, f"state {state_shape}")
        et = out_shape.element_type
        if et.kind in ("pred", "c") or et.byte_size * 8 not in _UNSIGNED:
            raise unsupported_error(h, f"output type {et}")
        self.out_shape = out_shape
        self.n = n = out_shape.num_elements()
        self.wide = wide = et.byte_size == 8
        self.philox = philox = algorithm == "rng_philox"
        self.size = state_shape.dimensions[0]
        self.dims = dims = tuple(out_shape.dimensions) or (1,)
        self.split, self.half = None, None
        if philox:
            self.counters = (n + 1) // 2 if wide else (n + 3) // 4
        elif wide:
            self.counters = n
        else:
            split = next((i for i, d in enumerate(dims) if d % 2 == 0), None)
            if split is None:
                split = max(range(len(dims)), key=lambda i: (dims[i], -i))
            half = list(dims)
            half[split] = (dims[split] + 1) // 2
            self.split, self.half = split, half
            self.counters = math.prod(half) if n else 0
        self.words = 2 if (wide and philox) else (4 if philox else (1 if wide else 2))

    def emit_prologue(self, b, sp):
        """The key and base counter from the state at ``sp`` (before the loop)."""
        s0, s1 = _load_u64(b, sp, 0), _load_u64(b, sp, 1)
        k0, k1 = _split64(b, s0)
        base = s1
        if self.philox:
            hi = _load_u64(b, sp, 2) if self.size > 2 else s0
            base = b.or_(b.zext(s1, I128), b.shl(b.zext(hi, I128), ir.Constant(I128, 64)))
        return k0, k1, base

    def emit_counter(self, b, prologue, op, i):
        """The output words of counter ``i`` stored at ``op``."""
        k0, k1, base = prologue
        n, out_shape = self.n, self.out_shape
        if self.philox:
            w = philox4x32(b, k0, k1, _words128(b, b.add(base, b.zext(i, I128))))
            vals = [_join64(b, w[0], w[1]), _join64(b, w[2], w[3])] if self.wide else w
            per = len(vals)
            first = b.mul(i, i64(per), flags=("nsw", "nuw"))
            for j, v in enumerate(vals):
                e = b.add(first, i64(j), flags=("nsw", "nuw")) if j else first
                partial = n % per and j >= n % per
                guard = b.icmp_signed("<", e, i64(n)) if partial else None
                _store_linear(b, op, out_shape, e, v, guard)
        elif self.wide:
            y0, y1 = threefry2x32(b, k0, k1, *_split64(b, b.add(base, i)))
            _store_linear(b, op, out_shape, i, _join64(b, y0, y1))
        else:
            split, dims = self.split, self.dims
            y = threefry2x32(b, k0, k1, *_split64(b, b.add(base, i)))
            hidx = le.delinearize(b, i, self.half)
            c0 = b.mul(hidx[split], i64(2), flags=("nsw", "nuw"))
            for word in (0, 1):
                idx = list(hidx)
                idx[split] = b.add(c0, i64(word), flags=("nsw", "nuw")) if word else c0
                real = idx if out_shape.rank else []
                if word and dims[split] % 2:
                    with b.if_then(b.icmp_signed("<", idx[split], i64(dims[split]))):
                        _store_bits(b, op, out_shape, real, y[word])
                else:
                    _store_bits(b, op, out_shape, real, y[word])

    def emit_new_state(self, b, sp, dp):
        """The new state at ``dp`` from the old at ``sp``, all of the old read
        first (the new may share its buffer)."""
        old = [_load_u64(b, sp, k) for k in range(self.size)]
        new = list(old)
        new[1] = b.add(old[1], i64(self.counters))
        if self.philox and self.size > 2:
            carry = b.zext(b.icmp_unsigned("<", new[1], old[1]), I64)
            new[2] = b.add(old[2], carry)
        for k, v in enumerate(new):
            _store_u64(b, v, dp, k)


@register_instruction("rng-bit-generator")
def emit_rng_bit_generator(me, h):
    a = me.assignment
    plan = BitGeneratorPlan(h, unsupported)
    (state_op,) = h.operands
    in_slice = Slice(a.buffer(state_op, ()))
    state_slice = Slice(a.buffer(h, (0,)))
    out_slice = Slice(a.buffer(h, (1,)))
    if out_slice.key == in_slice.key:
        raise unsupported(h, "output sharing the state's buffer")
    if plan.counters:
        kernel = Kernel(me, me.unique(f"kernel.{h.name}"), [in_slice, out_slice])
        b = kernel.b
        sp, op = kernel.pointer(in_slice), kernel.pointer(out_slice)
        prologue = plan.emit_prologue(b, sp)
        with le.for_loop(b, kernel.begin, kernel.end, name="ctr") as i:
            plan.emit_counter(b, prologue, op, i)
        kernel.finish()
        _run_kernel(me, kernel.function, plan.counters, plan.words)

    # The new state: read all of the old first (the output may share its buffer).
    kernel = Kernel(me, me.unique(f"kernel.{h.name}.state"), [in_slice, state_slice])
    plan.emit_new_state(kernel.b, kernel.pointer(in_slice), kernel.pointer(state_slice))
    kernel.finish()
    kernel.call_in_driver(me.builder, me.table, i64(0), i64(1))


# ----- rng ----------------------------------------------------------------------------
def _uniform01(b, bits, typ):
    """A float in [0, 1) of type ``typ`` from an i64 of random bits."""
    if isinstance(typ, ir.DoubleType):
        return b.fmul(b.uitofp(b.lshr(bits, i64(11)), F64), ir.Constant(F64, 2.0 ** -53))
    top = b.trunc(b.lshr(bits, i64(40)), I32)
    return b.fmul(b.uitofp(top, F32), ir.Constant(F32, 2.0 ** -24))


def _uniform01_open_low(b, bits, typ):
    """A float in (0, 1] of type ``typ``."""
    if isinstance(typ, ir.DoubleType):
        k = b.add(b.lshr(bits, i64(11)), i64(1))
        return b.fmul(b.uitofp(k, F64), ir.Constant(F64, 2.0 ** -53))
    k = b.add(b.trunc(b.lshr(bits, i64(40)), I32), _c32(1))
    return b.fmul(b.uitofp(k, F32), ir.Constant(F32, 2.0 ** -24))


def _rng_value(b, h, lo, hi, w):
    """One element of rng ``h`` from operand values ``lo``, ``hi`` and four random words ``w``."""
    et = h.shape.element_type
    dist = h.attr("distribution", "rng_uniform")
    dist = getattr(dist, "text", dist)
    r0 = _join64(b, w[0], w[1])
    if dist == "rng_uniform":
        if et.kind == "pred":
            return b.trunc(w[0], I1)
        if et.kind in "su":
            signed = et.kind == "s"
            ext = b.sext if signed else b.zext
            lo64 = lo if lo.type.width == 64 else ext(lo, I64)
            hi64 = hi if hi.type.width == 64 else ext(hi, I64)
            cmp = b.icmp_signed if signed else b.icmp_unsigned
            valid = cmp(">", hi64, lo64)
            span = b.select(valid, b.sub(hi64, lo64), i64(1))
            v = b.add(lo64, b.urem(r0, span))
            v = b.select(valid, v, lo64)
            return v if lo.type.width == 64 else b.trunc(v, lo.type)
        if et.kind == "f":
            typ = lo.type
            u = _uniform01(b, r0, typ)
            v = b.fadd(lo, b.fmul(b.fsub(hi, lo), u))
            v = round_to_type(b, v, et)
            reached = b.and_(b.fcmp_ordered(">=", v, hi), b.fcmp_ordered(">", hi, lo))
            return b.select(reached, lo, v)
    elif dist == "rng_normal" and et.kind == "f":
        typ = lo.type
        u1 = _uniform01_open_low(b, r0, typ)
        u2 = _uniform01(b, _join64(b, w[2], w[3]), typ)
        radius = fast_math._intrinsic(b, "sqrt", [b.fmul(ir.Constant(typ, -2.0), fast_math.log(b, u1))])
        z = b.fmul(radius, fast_math._intrinsic(b, "cos", [b.fmul(ir.Constant(typ, 2 * math.pi), u2)]))
        return round_to_type(b, b.fadd(lo, b.fmul(hi, z)), et)
    raise unsupported(h, f"{dist} of {et}")


def check_rng(h, unsupported_error):
    """Raises naming what of rng ``h`` is unsupported (shared with the GPU backend)."""
    shape = h.shape
    if not shape.is_array or len(h.operands) != 2 or any(o.shape.rank for o in h.operands):
        raise unsupported_error(h, "non-scalar operands or result")
    et = shape.element_type
    if et.kind == "c" or any(o.shape.element_type is not et for o in h.operands):
        raise unsupported_error(h, f"element type {et}")


def rng_element(b, h, lo, hi, base, index, out):
    """Stores element ``index`` of rng ``h`` at ``out``: Philox-4x32-10 of
    counter ``base + e`` (``e`` its row-major number) under ``RNG_KEY``
    (shared with the GPU backend)."""
    shape = h.shape
    e = le.row_major_linear(b, shape.dimensions, index) if shape.rank else i64(0)
    lo_w, hi_w = _split64(b, b.add(base, e))
    w = philox4x32(b, _c32(RNG_KEY[0]), _c32(RNG_KEY[1]), [lo_w, hi_w, _c32(0), _c32(0)])
    store_element(b, _rng_value(b, h, lo, hi, w), _element_pointer(b, out, shape, index),
                  shape.element_type)


@register_instruction("rng")
def emit_rng(me, h):
    a = me.assignment
    check_rng(h, unsupported)
    shape = h.shape
    et = shape.element_type
    n = shape.num_elements()
    if n == 0:
        return
    counter = _module_global(me, "xla.rng.counter", I64)
    in_slices = [Slice(a.buffer(o, ())) for o in h.operands]
    out_slice = Slice(a.buffer(h, ()))
    # In the driver module: the kernel reads the module's counter.
    kernel = Kernel(me, me.unique(f"kernel.{h.name}"), in_slices + [out_slice], in_driver=True)
    b = kernel.b
    lo = load_element(b, kernel.pointer(in_slices[0]), et)
    hi = load_element(b, kernel.pointer(in_slices[1]), et)
    base = b.load(counter, typ=I64)
    out = kernel.pointer(out_slice)
    le.loop_nest(b, shape, lambda index: rng_element(b, h, lo, hi, base, index, out),
                 kernel.begin, kernel.end)
    kernel.finish()
    me.call_kernel(kernel, shape)
    eb = me.builder
    eb.store(eb.add(eb.load(counter, typ=I64), i64(n)), counter)


# ----- rng-get-and-update-state ------------------------------------------------------------
def state_update_delta(h, unsupported_error):
    """rng-get-and-update-state's ``delta`` (mod 2^128), its shape checked."""
    shape = h.shape
    if not shape.is_array or shape.num_elements() != 2 or shape.element_type.bits != 64:
        raise unsupported_error(h, f"shape {shape}")
    delta = h.attr("delta", 0)
    return int(getattr(delta, "text", delta)) % (1 << 128)


def emit_state_update(b, h, delta, state, out):
    """The old 128-bit ``state`` stored at ``out`` as u64[2] (low word first),
    the state advanced by ``delta`` (shared with the GPU backend)."""
    old = b.load(state, typ=I128)
    b.store(b.add(old, ir.Constant(I128, delta)), state)
    lo = b.trunc(old, I64)
    hi = b.trunc(b.lshr(old, ir.Constant(I128, 64)), I64)
    # Element k of the logical u64[2] (any layout of a rank-1 or [1,2]/[2,1] shape).
    for k, v in enumerate((lo, hi)):
        index = le.delinearize(b, i64(k), h.shape.dimensions)
        b.store(v, _element_pointer(b, out, h.shape, index))


@register_instruction("rng-get-and-update-state")
def emit_rng_get_and_update_state(me, h):
    delta = state_update_delta(h, unsupported)
    state = _module_global(me, "xla.rng.state", I128)
    b = me.builder
    out = me.slice_pointer(b, me.table, Slice(me.assignment.buffer(h, ())).key)
    emit_state_update(b, h, delta, state, out)
