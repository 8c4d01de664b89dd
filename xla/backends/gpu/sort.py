"""sort on the GPU: a bitonic sorting network, one launch per step.

The sort's operands are first copied into its outputs (the caller's copy
thunk), which are then sorted in place along the sort dimension, every row
at once. A scratch array holds each element's original position along the
sort dimension (``<name>_positions``), and every comparison that the
comparator calls a tie is decided by it, so the order is a total one and
the sort is stable whatever ``is_stable`` says (XLA allows that).

The network is the variant whose comparisons all put the smaller element
at the lower position (each merge starts by comparing ``i`` with its mirror
in the block, then halves the distance), so a row whose length ``L`` is not
a power of two sorts as if padded with elements larger than any: a
comparison with a partner at ``L`` or beyond does nothing. A step is one
launch of ``<name>_step`` over ``rows x P / 2`` element pairs (``P``: ``L``
rounded up to a power of two), given the step's half distance and whether
it mirrors as two integer arguments (log2 of the distance); ``log2(P) * (log2(P) + 1) / 2``
launches in all, none of them needing a barrier, so the emulator runs them
exactly.
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.element_generator import ElementGenerator
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import load_element, store_element
from xla.backends.cpu.loop_emitter import I64, i64
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel

POSITION = ir.IntType(64)


def _leaves(h):
    """[(shape index, shape)] of the sort's outputs (one per operand)."""
    if h.shape.is_tuple:
        return [((k,), s) for k, s in enumerate(h.shape.tuple_shapes)]
    return [((), h.shape)]


def steps(length):
    """[(half distance j, mirrors)] of the network for rows of ``length``."""
    p = 1
    while p < length:
        p *= 2
    out, size = [], 2
    while size <= p:
        out.append((size // 2, 1))
        j = size // 4
        while j >= 1:
            out.append((j, 0))
            j //= 2
        size *= 2
    return out, p


def _index(b, row, dims, d, position):
    """Logical index of element ``position`` along ``d`` of row ``row``
    (the other dimensions row-major)."""
    index = [None] * len(dims)
    for k in reversed([k for k in range(len(dims)) if k != d]):
        if dims[k] == 1:
            index[k] = i64(0)
            continue
        index[k] = b.urem(row, i64(dims[k]))
        row = b.udiv(row, i64(dims[k]))
    index[d] = position
    return index


def emit_sort(emitter, h, name):
    """The sort's kernel thunks (after its operands were copied into its
    outputs): the positions' initialization, then the network's steps."""
    assignment = emitter.assignment
    leaves = _leaves(h)
    targets = [(Slice(assignment.buffer(h, index)).key, shape) for index, shape in leaves]
    d = h.attr("dimensions", (0,))[0]
    return emit_network(emitter, h, name, targets, d, h.attr("to_apply"))[0]


def emit_network(emitter, h, name, targets, d, comparator):
    """Kernel thunks sorting the arrays ``targets`` ([(slice key, shape)],
    all of one shape) in place along ``d`` with ``comparator`` (a less-than
    computation over pairs of their elements), and the key of the scratch
    array of original positions (i64, row-major ``[rows, length]``) that
    ends up permuted with them."""
    shape = targets[0][1]
    dims = list(shape.dimensions)
    length = dims[d]
    n = shape.num_elements()
    scratch = ("scratch", f"{name}_positions")
    if n == 0:
        return [], scratch
    rows = n // length
    network, p = steps(length)
    keys = list(dict.fromkeys([key for key, _ in targets] + [(scratch, 0)]))

    # positions[row * length + e] = e
    kernel = Kernel(f"{name}_positions", [(scratch, 0)], h)

    def positions(b, i):
        ptr = b.gep(kernel.ptrs[(scratch, 0)], [i], inbounds=True, source_etype=POSITION)
        b.store(b.urem(i, i64(length)), ptr)
    thunks = [KernelThunk(kernel.module.name, finish_kernel(kernel, h, n, positions),
                          [(scratch, 0)], n, h.name, scratch={scratch: 8 * n})]
    if length <= 1:
        return thunks, scratch

    # One compare-exchange per thread: i and its partner in a row.
    scalar_keys = [("scalar", "log2 j"), ("scalar", "mirrors")]
    kernel = Kernel(f"{name}_step", keys + scalar_keys, h)
    g = ElementGenerator(emitter, kernel)

    def step(b, t):
        # j is a power of two: shifts and masks (a 64-bit division by a
        # value known only at run time is a long instruction sequence on a GPU).
        shift = b.ptrtoint(kernel.ptrs[("scalar", "log2 j")], I64)
        j = b.shl(i64(1), shift)
        mirrors = b.ptrtoint(kernel.ptrs[("scalar", "mirrors")], I64)
        half = i64(p // 2)
        row, q = b.udiv(t, half), b.urem(t, half)
        lo = b.or_(b.shl(b.lshr(q, shift), b.add(shift, i64(1))), b.and_(q, b.sub(j, i64(1))))
        partner = b.select(b.icmp_unsigned("!=", mirrors, i64(0)),
                           b.xor(lo, b.sub(b.mul(j, i64(2)), i64(1))), b.add(lo, j))
        with b.if_then(b.icmp_unsigned("<", partner, i64(length))):
            at = [_index(b, row, dims, d, x) for x in (lo, partner)]
            ptrs = [[g.element_pointer(kernel.ptrs[key], leaf, ix) for key, leaf in targets]
                    for ix in at]
            values = [[load_element(b, ptr, leaf.element_type) for ptr, (_, leaf)
                       in zip(row_ptrs, targets)] for row_ptrs in ptrs]
            pos_ptrs = [b.gep(kernel.ptrs[(scratch, 0)], [b.add(b.mul(row, i64(length)), x)],
                              inbounds=True, source_etype=POSITION) for x in (lo, partner)]
            pos = [b.load(ptr, typ=POSITION) for ptr in pos_ptrs]

            def less(x, y):
                args = [v for pair in zip(values[x], values[y]) for v in pair]
                return emitter.emit_scalar_computation(b, comparator, args)
            hi_first = less(1, 0)
            tie = b.and_(b.not_(hi_first), b.not_(less(0, 1)))
            swap = b.or_(hi_first, b.and_(tie, b.icmp_unsigned("<", pos[1], pos[0])))
            with b.if_then(swap):
                for (_, leaf), p_lo, p_hi, v_lo, v_hi in zip(targets, ptrs[0], ptrs[1], values[0],
                                                             values[1]):
                    store_element(b, v_hi, p_lo, leaf.element_type)
                    store_element(b, v_lo, p_hi, leaf.element_type)
                b.store(pos[1], pos_ptrs[0])
                b.store(pos[0], pos_ptrs[1])
    text = finish_kernel(kernel, h, rows * (p // 2), step)
    for j, mirrors in network:
        thunks.append(KernelThunk(kernel.module.name, text, keys, rows * (p // 2), h.name,
                                  scalars=(j.bit_length() - 1, mirrors)))
    return thunks, scratch


def _total_order(element_type, largest):
    """A comparator putting the larger (or smaller) first by TOTALORDER."""
    from xla.hlo.parser import parse_hlo_module
    t = element_type.text
    module = parse_hlo_module(f"""HloModule topk_order
ENTRY order {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = pred[] compare(a, b), direction={"GT" if largest else "LT"}, type=TOTALORDER
}}""")
    return module.entry


def emit_topk(emitter, h, name, k, largest):
    """topk (or the TopK custom-call): the input copied to scratch, sorted
    along its last dimension by TOTALORDER (the larger first for
    ``largest``; ties: the lower index first) with its positions, then the
    first ``k`` of each row taken into (values, indices)."""
    from xla.errors import InvalidArgumentError
    assignment = emitter.assignment
    (x,) = h.operands
    shape = x.shape
    if not h.shape.is_tuple or len(h.shape.tuple_shapes) != 2 or shape.rank == 0:
        raise InvalidArgumentError(f"{h.name}: top-k takes an array of rank >= 1 and returns "
                                   f"(values, indices), not {h.shape}")
    values_shape, indices_shape = h.shape.tuple_shapes
    dims = list(shape.dimensions)
    expected = dims[:-1] + [k]
    if k > dims[-1] or list(values_shape.dimensions) != expected or \
            list(indices_shape.dimensions) != expected or values_shape.dtype != shape.dtype or \
            indices_shape.element_type.kind not in "su":
        raise InvalidArgumentError(
            f"{h.name}: top-{k} of {shape} returns ({shape.element_type.text}{expected}, "
            f"s32{expected}), not {h.shape}")
    values = (("scratch", f"{name}_values"), 0)
    thunks = []

    # values[...] = x[...]
    kernel = Kernel(f"{name}_input", [values, Slice(assignment.buffer(x)).key], h)
    g = ElementGenerator(emitter, kernel)

    def copy_in(b, i):
        index = le.delinearize(b, i, dims)
        v = g.load(x, index)
        store_element(b, v, g.element_pointer(kernel.ptrs[values], shape, index),
                      shape.element_type)
    n = shape.num_elements()
    thunks.append(KernelThunk(kernel.module.name, finish_kernel(kernel, h, n, copy_in),
                              kernel.keys, n, h.name,
                              scratch={values[0]: n * shape.element_type.byte_size}))
    network, positions = emit_network(emitter, h, name, [(values, shape)], shape.rank - 1,
                                      _total_order(shape.element_type, largest))
    thunks += network

    # (out_values, out_indices)[row, c] = (values, positions)[row, c] for c < k
    outs = [Slice(assignment.buffer(h, (i,))).key for i in range(2)]
    kernel = Kernel(f"{name}_take", outs + [values, (positions, 0)], h)
    g = ElementGenerator(emitter, kernel)

    def take(b, i):
        row, c = b.udiv(i, i64(k)), b.urem(i, i64(k))
        index = le.delinearize(b, i, expected)
        source = list(index[:-1]) + [c]
        v = load_element(b, g.element_pointer(kernel.ptrs[values], shape, source),
                         shape.element_type)
        store_element(b, v, g.element_pointer(kernel.ptrs[outs[0]], values_shape, index),
                      values_shape.element_type)
        at = b.add(b.mul(row, i64(dims[-1])), c)
        pos = b.load(b.gep(kernel.ptrs[(positions, 0)], [at], inbounds=True,
                           source_etype=POSITION), typ=POSITION)
        out_t = ir.IntType(indices_shape.element_type.bits)
        store_element(b, b.trunc(pos, out_t) if out_t.width < 64 else pos,
                      g.element_pointer(kernel.ptrs[outs[1]], indices_shape, index),
                      indices_shape.element_type)
    m = values_shape.num_elements()
    thunks.append(KernelThunk(kernel.module.name, finish_kernel(kernel, h, m, take),
                              kernel.keys, m, h.name))
    return thunks
