"""cholesky, triangular-solve and the LAPACK custom calls jaxlib emits for
them (``lapack_{s,d,c,z}potrf_ffi``, ``lapack_{s,d,c,z}trsm_ffi``).

f32/f64/c64/c128 matrices, row- or column-major (jaxlib's lowering asks
for column-major ones: the runtime takes them as their transposes), go to
the runtime (``xla/backends/cpu/runtime/linalg.cc``): Cholesky through Eigen's blocked
LLT (``__xla_cpu_cholesky_*``; 1000x1000 f32: 129 -> 8 ms), triangular
solves through its blocked TRSM (``__xla_cpu_trsm_*``; 1000 x 1000
right-hand sides f32: 412 -> 13 ms), with the semantics below (complex
matrices Hermitian). Other layouts and f16/bf16 run as plain loops:

Each instruction becomes one internal function looping over the batch
(the leading dimensions), called once from the entry function; elements
are read and written through their shapes' layouts and computed in the
register type (f32 for f16/bf16/f32, f64 for f64), as the interpreter
computes. The loops do not take complex element types (named as
unsupported).

* cholesky: reads the ``lower`` (or upper) triangle, left-looking
  (column by column) factorization; the other triangle of the result is
  zero; a matrix that is not positive definite (a pivot that is not > 0,
  NaN included) gives an all-NaN matrix, as the interpreter does.
* triangular-solve: substitution, one right-hand side at a time
  (``left_side``, ``lower``, ``unit_diagonal``, ``transpose_a``
  NO_TRANSPOSE / TRANSPOSE / ADJOINT, which is TRANSPOSE for reals).
* potrf (uplo from the backend_config, default 'L'): the factor in its
  triangle, the other triangle left as the input; a matrix that is not
  positive definite is left unchanged and info (the optional s32 second
  result) is the order of the first leading minor that is not.
* trsm (side/uplo/trans_x/diag from the backend_config; an optional
  scalar third operand is alpha, multiplying the result).
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.emit_sort import CUSTOM_CALL_TARGETS
from xla.backends.cpu.ir_emitter import (I8, KERNEL_TYPE, PTR, VOID, Slice, register_instruction,
                                         unsupported)
from xla.backends.cpu.llvm_types import I32, load_element, register_type, store_element
from xla.backends.cpu.loop_emitter import I64, i64


class _Fn:
    """One internal kernel function ``(table, begin, end)`` over batch indices."""

    def __init__(self, me, h, name, slices):
        self.me = me
        self.fn, self.decl = me.library_function(KERNEL_TYPE, f"{name}.{h.name}")
        table, self.begin, self.end = self.fn.args
        ab_block = self.fn.append_basic_block("allocas")
        start = self.fn.append_basic_block("start")
        self.ab = ir.IRBuilder(ab_block)
        self.b = ir.IRBuilder(start)
        self.ptrs = {s.key: me.slice_pointer(self.b, table, s.key) for s in slices}
        self.mallocs = []

    def key_of(self, instr):
        return Slice(self.me.assignment.buffer(instr, ())).key

    def scratch(self, typ, count):
        malloc = self.me.declare_in(self.fn.module, "malloc", ir.FunctionType(PTR, [I64]))
        size = 8 if typ == ir.DoubleType() else 4
        p = self.b.call(malloc, [i64(max(1, count) * size)])
        self.mallocs.append(p)
        return p

    def var(self, typ, init):
        slot = self.ab.alloca(typ)
        self.b.store(init, slot)
        return slot

    def finish(self, batch):
        b = self.b
        free = self.me.declare_in(self.fn.module, "free", ir.FunctionType(VOID, [PTR]))
        for p in self.mallocs:
            b.call(free, [p])
        b.ret_void()
        self.ab.branch(self.fn.blocks[1])
        if batch:
            self.me.builder.call(self.decl, [self.me.table, i64(0), i64(batch)])


def _batch(shape):
    n = 1
    for d in shape.dimensions[:-2]:
        n *= d
    return n


def _elem_ptr(b, base, shape, bidx, i, j):
    index = list(bidx) + [i, j]
    off = le.linear_index(b, shape, index)
    size = shape.element_type.byte_size
    if size != 1:
        off = b.mul(off, i64(size))
    return b.gep(base, [off], inbounds=True, source_etype=I8)


def _check_real(h, *shapes):
    for s in shapes:
        if s.element_type.kind != "f":
            raise unsupported(h, f"element type {s.element_type}")


def _rt(shape):
    return register_type(shape.element_type)


def _batch_loop(k, shape, body):
    """Runs body(bidx) for each batch index in [begin, end)."""
    b = k.b
    with le.for_loop(b, k.begin, k.end, name="batch") as r:
        dims = shape.dimensions[:-2]
        bidx = le.delinearize(b, r, list(dims)) if dims else []
        body(bidx)


def _cholesky_into(k, a_ptr, a_shape, lower, bidx, w, n, rt):
    """Loads the hermitian-ized lower triangle into w (row-major), factors it
    in place; returns the i1 'failed' flag and the i32 info (1-based order)."""
    b = k.b
    with le.for_loop(b, 0, n, name="li") as i:
        with le.for_loop(b, 0, n, name="lj") as j:
            src_i, src_j = (i, j) if lower else (j, i)
            v = load_element(b, _elem_ptr(b, a_ptr, a_shape, bidx, src_i, src_j), a_shape.element_type)
            b.store(v, b.gep(w, [b.add(b.mul(i, i64(n)), j)], source_etype=rt))
    info = k.var(I32, ir.Constant(I32, 0))

    def W(i, j):
        return b.gep(w, [b.add(b.mul(i, i64(n)), j)], source_etype=rt)

    acc = k.var(rt, ir.Constant(rt, 0.0))
    sqrt = k.fn.module.declare_intrinsic("llvm.sqrt", [rt])
    with le.for_loop(b, 0, n, name="cj") as j:
        b.store(b.load(W(j, j), typ=rt), acc)
        with le.for_loop(b, 0, j, name="ck") as q:
            x = b.load(W(j, q), typ=rt)
            b.store(b.fsub(b.load(acc, typ=rt), b.fmul(x, x)), acc)
        s = b.load(acc, typ=rt)
        bad = b.fcmp_unordered("ule", s, ir.Constant(rt, 0.0))
        first = b.and_(bad, b.icmp_signed("==", b.load(info, typ=I32), ir.Constant(I32, 0)))
        b.store(b.select(first, b.add(b.trunc(j, I32), ir.Constant(I32, 1)), b.load(info, typ=I32)),
                info)
        d = b.call(sqrt, [s])
        b.store(d, W(j, j))
        with le.for_loop(b, b.add(j, i64(1)), n, name="ci") as i:
            b.store(b.load(W(i, j), typ=rt), acc)
            with le.for_loop(b, 0, j, name="ck2") as q:
                b.store(b.fsub(b.load(acc, typ=rt),
                               b.fmul(b.load(W(i, q), typ=rt), b.load(W(j, q), typ=rt))), acc)
            b.store(b.fdiv(b.load(acc, typ=rt), d), W(i, j))
    info_v = b.load(info, typ=I32)
    return b.icmp_signed("!=", info_v, ir.Constant(I32, 0)), info_v, W


def cholesky_body(k, h, a_key, out_key):
    """body(bidx) computing cholesky ``h`` for one batch index, in kernel
    ``k`` (a ``_Fn``, or the GPU backend's equivalent)."""
    a = h.operands[0]
    _check_real(h, a.shape)
    lower = bool(h.attr("lower", False))
    n = a.shape.dimensions[-1]
    rt = _rt(h.shape)
    w = k.scratch(rt, n * n)
    b = k.b

    def body(bidx):
        failed, _, W = _cholesky_into(k, k.ptrs[a_key], a.shape, lower, bidx, w, n, rt)
        with le.for_loop(b, 0, n, name="oi") as i:
            with le.for_loop(b, 0, n, name="oj") as j:
                # lower: L[i][j] for i >= j; upper: U[i][j] = L[j][i] for i <= j.
                r, c = (i, j) if lower else (j, i)
                in_tri = b.icmp_signed(">=", r, c)
                v = b.load(W(r, b.select(in_tri, c, r)), typ=rt)
                v = b.select(in_tri, v, ir.Constant(rt, 0.0))
                v = b.select(failed, ir.Constant(rt, float("nan")), v)
                store_element(b, v, _elem_ptr(b, k.ptrs[out_key], h.shape, bidx, i, j), h.shape.element_type)
    return body


# Element types the runtime's Cholesky and triangular solve take.
RUNTIME_TYPES = ("f32", "f64", "c64", "c128")


def _matrix_order(shape):
    """How the matrices (the last two dimensions) of ``shape`` lie: "row"
    (row-major), "col" (column-major, the batch dimensions outermost in
    order: the layout jaxlib's LAPACK calls ask for) or None (another
    layout). A column-major matrix read row-major is its transpose, which
    is how the runtime (row-major Eigen maps) takes it."""
    if le.is_column_major_matrices(shape):
        return "col"
    return "row" if le.is_row_major(shape) else None


def _runtime_cholesky(me, h, out_shape, slices, lower, potrf):
    """The factorization as a call to ``__xla_cpu_cholesky_<type>``
    (slices: operand, factor, optional s32 info); False where it does not
    apply (other types, no runtime, operand and factor not both row-major
    or both column-major). Column-major matrices are their transposes to
    the runtime: the triangle read and written is the other one (for a
    Hermitian matrix the transpose is the conjugate, and the factor of the
    conjugate is the conjugate factor, which the opposite triangle of the
    transpose holds: the same numbers)."""
    a = h.operands[0]
    et = a.shape.element_type.text
    name = f"__xla_cpu_cholesky_{et}"
    if len(slices) > 2 and h.shape.tuple_shapes[1].element_type.text != "s32":
        return False
    order = _matrix_order(a.shape)
    if (et not in RUNTIME_TYPES or out_shape.element_type.text != et
            or name not in me.runtime_symbols or order is None or _matrix_order(out_shape) != order
            or (len(slices) > 2 and not le.is_row_major(h.shape.tuple_shapes[1]))):
        return False
    n = a.shape.dimensions[-1]
    lower = lower != (order == "col")
    _call_runtime(me, name, slices, 3, [i64(_batch(out_shape) if n else 0), i64(n),
                                        ir.Constant(I32, int(lower)), ir.Constant(I32, int(potrf))])
    return True


def _call_runtime(me, name, slices, num_pointers, scalars):
    """A call to runtime function ``name`` from the driver: the slices'
    addresses (null pointers for the optional ones missing, up to
    ``num_pointers``), then the ``scalars`` (LLVM constants)."""
    b = me.builder
    ptrs = [me.slice_pointer(b, me.table, s.key) for s in slices]
    ptrs += [ir.Constant(PTR, None)] * (num_pointers - len(ptrs))
    fn = me.declare(name, ir.FunctionType(VOID, [PTR] * num_pointers + [v.type for v in scalars]))
    b.call(fn, ptrs + scalars)


@register_instruction("cholesky")
def emit_cholesky(me, h):
    a = h.operands[0]
    n = a.shape.dimensions[-1]
    sa, so = Slice(me.assignment.buffer(a, ())), Slice(me.assignment.buffer(h, ()))
    if _runtime_cholesky(me, h, h.shape, [sa, so], bool(h.attr("lower", False)), potrf=False):
        return
    k = _Fn(me, h, "cholesky", [sa, so])
    body = cholesky_body(k, h, sa.key, so.key)
    if n:
        _batch_loop(k, h.shape, body)
    k.finish(_batch(h.shape) if n else 0)


def trsm_body(k, h, out_shape, out_key, left, lower, unit, trans, alpha=None, alpha_key=None):
    """body(bidx) solving triangular system ``h`` for one batch index into
    ``out_key``, in kernel ``k`` (see ``cholesky_body``)."""
    a, bop = h.operands[0], h.operands[1]
    _check_real(h, a.shape, bop.shape, out_shape)
    m = a.shape.dimensions[-1]
    rows, cols = bop.shape.dimensions[-2:]
    nrhs = cols if left else rows
    a_key, b_key = (k.key_of(o) for o in (a, bop))
    rt = _rt(out_shape)
    b = k.b
    transposed = trans in ("TRANSPOSE", "ADJOINT")
    # op(A)[i][j] is A[i][j], or A[j][i] when transposed; the system solved
    # is M y = rhs with M = op(A) (left) or op(A)^T (right).
    m_is_a_t = transposed == left  # M[i][j] = A[j][i]
    a_lower_in_m = lower != m_is_a_t  # whether M is lower triangular
    y = k.scratch(rt, m)
    acc = k.var(rt, ir.Constant(rt, 0.0))
    one = ir.Constant(rt, 1.0)

    def M(bidx, i, j):
        r, c = (j, i) if m_is_a_t else (i, j)
        v = load_element(b, _elem_ptr(b, k.ptrs[a_key], a.shape, bidx, r, c), a.shape.element_type)
        if unit:
            v = b.select(b.icmp_signed("==", i, j), one, v)
        return v

    def body(bidx):
        alpha_v = None
        if alpha is not None:
            alpha_v = load_element(b, k.ptrs[alpha_key], alpha.shape.element_type)
        with le.for_loop(b, 0, nrhs, name="rhs") as c:
            def at(slice_key, shape, i):
                r, cc = (i, c) if left else (c, i)
                return _elem_ptr(b, k.ptrs[slice_key], shape, bidx, r, cc)
            with le.for_loop(b, 0, m, name="step") as step:
                i = step if a_lower_in_m else b.sub(i64(m - 1), step)
                b.store(load_element(b, at(b_key, bop.shape, i), bop.shape.element_type), acc)
                lo = i64(0) if a_lower_in_m else b.add(i, i64(1))
                hi = i if a_lower_in_m else i64(m)
                with le.for_loop(b, lo, hi, name="sub") as j:
                    yj = b.load(b.gep(y, [j], source_etype=rt), typ=rt)
                    b.store(b.fsub(b.load(acc, typ=rt), b.fmul(M(bidx, i, j), yj)), acc)
                b.store(b.fdiv(b.load(acc, typ=rt), M(bidx, i, i)), b.gep(y, [i], source_etype=rt))
            with le.for_loop(b, 0, m, name="out") as i:
                v = b.load(b.gep(y, [i], source_etype=rt), typ=rt)
                if alpha_v is not None:
                    v = b.fmul(v, alpha_v)
                store_element(b, v, at(out_key, out_shape, i), out_shape.element_type)
    return body, bool(m and nrhs)


def _runtime_trsm(me, h, out_shape, slices, left, lower, unit, trans):
    """The solve as a call to ``__xla_cpu_trsm_<type>`` (slices: a, b,
    out, optional alpha); False where it does not apply: other types, no
    runtime, a or the right-hand sides neither row- nor column-major, b and
    the result in different orders. Flags: 1 left, 2 lower (the triangle
    of the matrix as stored), 4 unit diagonal, 8 transposed, 16 conjugated
    (complex; without 8 the conjugate of a, which the orders can ask for).

    The runtime reads row-major matrices: a column-major result (and b)
    is X^T, which solves X^T op(a)^T = B^T (the other side, op transposed);
    a column-major a is S = a^T (op transposed again, the other
    triangle)."""
    a, bop = h.operands[0], h.operands[1]
    et = out_shape.element_type.text
    name = f"__xla_cpu_trsm_{et}"
    operands = [a, bop] + ([h.operands[2]] if len(slices) > 3 else [])
    shapes = [o.shape for o in operands] + [out_shape]
    order, a_order = _matrix_order(out_shape), _matrix_order(a.shape)
    if (et not in RUNTIME_TYPES or name not in me.runtime_symbols
            or any(s.element_type.text != et for s in shapes)
            or order is None or a_order is None or _matrix_order(bop.shape) != order
            or a.shape.dimensions[:-2] != out_shape.dimensions[:-2]):
        return False
    rows, cols = out_shape.dimensions[-2:]
    transposed, conjugate = trans in ("TRANSPOSE", "ADJOINT"), trans == "ADJOINT"
    if order == "col":
        left, transposed, (rows, cols) = not left, not transposed, (cols, rows)
    if a_order == "col":
        lower, transposed = not lower, not transposed
    conjugate = conjugate and et in ("c64", "c128")
    flags = (left * 1) | (lower * 2) | (unit * 4) | (transposed * 8) | (conjugate * 16)
    _call_runtime(me, name, slices, 4, [i64(_batch(out_shape)), i64(rows), i64(cols),
                                        ir.Constant(I32, flags)])
    return True


def _emit_trsm(me, h, out_shape, out_slice, left, lower, unit, trans, alpha=None):
    a, bop = h.operands[0], h.operands[1]
    sa, sb = Slice(me.assignment.buffer(a, ())), Slice(me.assignment.buffer(bop, ()))
    slices = [sa, sb, out_slice]
    salpha = None
    if alpha is not None:
        salpha = Slice(me.assignment.buffer(alpha, ()))
        slices.append(salpha)
    if _runtime_trsm(me, h, out_shape, slices, left, lower, unit, trans):
        return
    k = _Fn(me, h, "trsm", slices)
    body, any_work = trsm_body(k, h, out_shape, out_slice.key, left, lower, unit, trans, alpha,
                               salpha.key if salpha is not None else None)
    if any_work:
        _batch_loop(k, out_shape, body)
    k.finish(_batch(out_shape) if any_work else 0)


@register_instruction("triangular-solve")
def emit_triangular_solve(me, h):
    trans = h.attr("transpose_a", "NO_TRANSPOSE") or "NO_TRANSPOSE"
    trans = getattr(trans, "text", trans)  # the builder's RawAttr, the parser's str
    _emit_trsm(me, h, h.shape, Slice(me.assignment.buffer(h, ())), bool(h.attr("left_side", False)),
               bool(h.attr("lower", False)), bool(h.attr("unit_diagonal", False)), str(trans))


def lapack_attrs(h):
    from xla.hlo.custom_call_signatures import backend_config_attrs
    attrs = backend_config_attrs(h)
    return lambda name, default: chr(attrs[name]) if name in attrs else default


def _lapack_trsm(me, h):
    char = lapack_attrs(h)
    trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[char("trans_x", "N")]
    out_shape = h.shape.tuple_shapes[0] if h.shape.is_tuple else h.shape
    index = (0,) if h.shape.is_tuple else ()
    alpha = h.operands[2] if len(h.operands) > 2 and h.operands[2].shape.rank == 0 else None
    _emit_trsm(me, h, out_shape, Slice(me.assignment.buffer(h, index)), char("side", "L") == "L",
               char("uplo", "L") == "L", char("diag", "N") == "U", trans, alpha)


def potrf_body(k, h, a_key, out_key, info_key):
    """body(bidx) of LAPACK's potrf ``h`` for one batch index (see
    ``cholesky_body``); ``info_key`` None when there is no info result."""
    char = lapack_attrs(h)
    lower = char("uplo", "L") == "L"
    a = h.operands[0]
    _check_real(h, a.shape)
    n = a.shape.dimensions[-1]
    shapes = list(h.shape.tuple_shapes) if h.shape.is_tuple else [h.shape]
    rt = _rt(shapes[0])
    w = k.scratch(rt, n * n)
    orig = k.scratch(rt, n * n)
    b = k.b
    out_shape = shapes[0]

    def body(bidx):
        with le.for_loop(b, 0, n, name="pi") as i:
            with le.for_loop(b, 0, n, name="pj") as j:
                v = load_element(b, _elem_ptr(b, k.ptrs[a_key], a.shape, bidx, i, j), a.shape.element_type)
                b.store(v, b.gep(orig, [b.add(b.mul(i, i64(n)), j)], source_etype=rt))
        failed, info, W = _cholesky_into(k, k.ptrs[a_key], a.shape, lower, bidx, w, n, rt)
        with le.for_loop(b, 0, n, name="oi") as i:
            with le.for_loop(b, 0, n, name="oj") as j:
                r, c = (i, j) if lower else (j, i)
                in_tri = b.icmp_signed(">=", r, c)
                f = b.load(W(r, b.select(in_tri, c, r)), typ=rt)
                o = b.load(b.gep(orig, [b.add(b.mul(i, i64(n)), j)], source_etype=rt), typ=rt)
                v = b.select(b.and_(in_tri, b.not_(failed)), f, o)
                store_element(b, v, _elem_ptr(b, k.ptrs[out_key], out_shape, bidx, i, j),
                              out_shape.element_type)
        if info_key is not None:
            ishape = shapes[1]
            off = le.linear_index(b, ishape, list(bidx)) if ishape.rank else i64(0)
            size = ishape.element_type.byte_size
            ptr = b.gep(k.ptrs[info_key], [b.mul(off, i64(size))], source_etype=I8)
            itype = register_type(ishape.element_type)
            v = info if itype == I32 else (b.sext(info, itype) if itype.width > 32 else b.trunc(info, itype))
            store_element(b, v, ptr, ishape.element_type)
    return body


def _lapack_potrf(me, h):
    a = h.operands[0]
    n = a.shape.dimensions[-1]
    out_shape = h.shape.tuple_shapes[0] if h.shape.is_tuple else h.shape
    sa = Slice(me.assignment.buffer(a, ()))
    so = Slice(me.assignment.buffer(h, (0,) if h.shape.is_tuple else ()))
    slices = [sa, so]
    sinfo = None
    if h.shape.is_tuple and len(h.shape.tuple_shapes) > 1:
        sinfo = Slice(me.assignment.buffer(h, (1,)))
        slices.append(sinfo)
    if n and _runtime_cholesky(me, h, out_shape, slices, lapack_attrs(h)("uplo", "L") == "L",
                               potrf=True):
        return
    k = _Fn(me, h, "potrf", slices)
    body = potrf_body(k, h, sa.key, so.key, sinfo.key if sinfo is not None else None)
    if n:
        _batch_loop(k, out_shape, body)
    elif sinfo is not None:
        raise unsupported(h, "empty matrices")
    k.finish(_batch(out_shape) if n else 0)


for _t in "sdcz":
    for _suffix in ("_ffi", ""):
        CUSTOM_CALL_TARGETS[f"lapack_{_t}potrf{_suffix}"] = _lapack_potrf
        CUSTOM_CALL_TARGETS[f"lapack_{_t}trsm{_suffix}"] = _lapack_trsm
