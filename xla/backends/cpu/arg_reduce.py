"""argmax and argmin rows (``jnp.argmax``/``jnp.argmin`` as JAX lowers them)
in two vectorized-or-early-exit passes instead of a sequential fold.

JAX reduces the values and an iota along the row together, with the
reducer (parameters acc value, acc index, x value, x index)::

    pick   = acc CMP x  or  acc != acc                    (CMP: > or <)
    value  = select(pick, acc, x)
    index  = select(pick or (acc == x and acc_index < x_index), acc_index, x_index)

folded in order from (init, 0), init -inf for argmax (+inf for argmin).
As a fold it is a chain of a dozen dependent scalar instructions per
element: argmax of f32[4096, 4096] took 38 ms (XLA:CPU 38 ms). With the
index an iota along the row (so a later element has a larger index), the
fold's result is, for a row of n >= 1 elements:

* the first NaN and its index, where the row has a NaN (a NaN accumulator
  is never replaced, and the first NaN replaces any number);
* else, with M the row's maximum (minimum; -0 and +0 are equal here): the
  index of the first element equal to M (a later equal one keeps the
  lower index), and the value of the *last* element equal to M (an equal
  element replaces the value): M itself unless M is a zero, whose sign is
  then that last zero's.

So: M and an any-NaN flag in one vectorized pass (the exact row maximum of
``reduction_emitter._fast_min_max_row``), then a second vectorized pass
for the first and the last position of an element equal to M (of a NaN).
The same value and index as the fold, bit for bit (and as the
interpreter's pairwise fold: for this reducer the grouping does not
matter).
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.loop_emitter import i64


def _param(h):
    return h.parameter_number if h.opcode == "parameter" else None


def _compare(h, direction, a, b):
    """Whether ``h`` is compare(a, b) of ``direction`` (default comparison
    type: no TOTALORDER)."""
    return (h.opcode == "compare" and str(h.attr("direction")) == direction
            and h.attr("type") in (None, "FLOAT", "SIGNED", "UNSIGNED")
            and [_param(o) for o in h.operands] == [a, b])


def _pair(h, opcode, first, second):
    """Whether ``h`` is ``opcode`` of two operands satisfying ``first`` and
    ``second`` in either order."""
    if h.opcode != opcode or len(h.operands) != 2:
        return False
    x, y = h.operands
    return (first(x) and second(y)) or (first(y) and second(x))


def arg_reducer(comp):
    """"max" or "min" where ``comp`` is JAX's argmax/argmin reducer (module
    docstring), else None."""
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    root = comp.root_instruction
    if len(params) != 4 or root.opcode != "tuple" or len(root.operands) != 2:
        return None
    value, index = root.operands
    if value.opcode != "select" or index.opcode != "select":
        return None
    pick, a, x = value.operands
    if _param(a) != 0 or _param(x) != 2:
        return None
    if [_param(o) for o in index.operands[1:]] != [1, 3]:
        return None
    for kind, direction in (("max", "GT"), ("min", "LT")):
        def is_pick(h, direction=direction):
            return _pair(h, "or", lambda u: _compare(u, direction, 0, 2),
                         lambda u: _compare(u, "NE", 0, 0))
        if not is_pick(pick):
            continue
        tie = lambda u: _pair(u, "and", lambda v: _compare(v, "EQ", 0, 2),  # noqa: E731
                              lambda v: _compare(v, "LT", 1, 3))
        if _pair(index.operands[0], "or", lambda u: u is pick or is_pick(u), tie):
            return kind
    return None


def _iota_along(g, h, dim):
    """Whether the element generator computes ``h`` (an operand of the
    reduce, fused or not) as an iota along ``dim`` of its shape."""
    def computed_iota(h):   # an iota's code, not a buffer's contents (unknown)
        return h.opcode == "iota" and not g.materialized(h)

    h = g.outside(h)
    if computed_iota(h):
        return h.attr("iota_dimension") == dim
    if h.opcode == "broadcast" and not g.materialized(h):
        (src,) = h.operands
        mapped = list(h.attr("dimensions", ()))
        return dim in mapped and computed_iota(src) and \
            src.attr("iota_dimension") == mapped.index(dim)
    return False


# Value types: f32 and f64, and bf16 and f16 in f32 registers (exact
# there; the logits of a bf16 model's greedy decoding).
_TYPES = ("f32", "f64", "bf16", "f16")


def applies(g, h, inputs, inits, reduced):
    """"max"/"min" where reduce ``h`` is an argmax/argmin row this module
    emits: one reduced dimension of at least one element, float values
    (``_TYPES``), JAX's reducer, an iota along the row as the index, init
    (-inf or +inf, 0) as constants."""
    if len(inputs) != 2 or len(reduced) != 1:
        return None
    (d,) = reduced
    values, index = inputs
    if values.shape.element_type.text not in _TYPES or values.shape.dimensions[d] < 1:
        return None
    if not index.shape.element_type.is_integer:
        return None
    kind = arg_reducer(h.attr("to_apply"))
    if kind is None or not _iota_along(g, index, d):
        return None
    init_value, init_index = (_constant(g, i) for i in inits)
    if init_value != (float("-inf") if kind == "max" else float("inf")) or init_index != 0:
        return None
    return kind


def _constant(g, h):
    h = g.outside(h)
    if h.opcode != "constant" or not h.shape.is_array or h.shape.rank != 0 or h.literal is None:
        return None
    return float(h.literal.item())


def emit(g, h, inputs, inits, base_index, d, extreme_row, lanes):
    """The (value, index) registers of argmax/argmin row ``base_index``
    (module docstring). ``extreme_row(init)``: the row's exact maximum
    (minimum) as ``reduction_emitter._fast_min_max_row`` computes it,
    storing the fusion's side outputs; ``lanes``: the vector width of the
    second pass, which finds the first and the last element equal to it
    (or the first NaN) as a minimum and a maximum of positions: no early
    exit, which the loop vectorizer would leave scalar (that form took
    ~5 cycles an element)."""
    b = g.b
    values, index = inputs
    n = values.shape.dimensions[d]
    m = extreme_row(g.value(inits[0], []))
    is_nan = b.fcmp_unordered("uno", m, m)
    first = g.kernel.alloca(le.I64, name="arg.first")
    last = g.kernel.alloca(le.I64, name="arg.last")
    b.store(i64(n), first)
    b.store(i64(-1), last)

    def element(j):
        idx = list(base_index)
        idx[d] = j
        scope = g.push_scope()
        v = g.value(values, idx)
        g.pop_scope(scope)
        return v

    with le.for_loop(b, 0, n, name="arg.find", vectorize=lanes) as j:
        v = element(j)
        hit = b.select(is_nan, b.fcmp_unordered("uno", v, v), b.fcmp_ordered("==", v, m))
        # min/max reductions of positions (the forms the vectorizer knows)
        for slot, miss, op in ((first, n, "smin"), (last, -1, "smax")):
            cand = b.select(hit, j, i64(miss))
            fn = b.module.declare_intrinsic(f"llvm.{op}", [le.I64],
                                            ir.FunctionType(le.I64, [le.I64, le.I64]))
            b.store(b.call(fn, [b.load(slot, typ=le.I64), cand]), slot)
    # M is one of the row's elements, or the first NaN is: both found. The
    # clamps only keep every read inside the row whatever happens.
    at_first = b.select(b.icmp_signed("<", b.load(first, typ=le.I64), i64(n)),
                        b.load(first, typ=le.I64), i64(n - 1))
    at_last = b.select(b.icmp_signed(">=", b.load(last, typ=le.I64), i64(0)),
                       b.load(last, typ=le.I64), i64(0))
    result_index = g.value(index, [at_first if k == d else base_index[k]
                                   for k in range(values.shape.rank)])
    zero = b.fcmp_ordered("==", m, ir.Constant(m.type, 0.0))
    value = b.select(is_nan, element(at_first), b.select(zero, element(at_last), m))
    return [value, result_index]
