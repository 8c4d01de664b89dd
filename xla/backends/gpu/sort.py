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
it mirrors as two integer arguments; ``log2(P) * (log2(P) + 1) / 2``
launches in all, none of them needing a barrier, so the emulator runs them
exactly.
"""
from llvmlite import ir

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
    d = h.attr("dimensions", (0,))[0]
    leaves = _leaves(h)
    shape = leaves[0][1]
    dims = list(shape.dimensions)
    length = dims[d]
    n = shape.num_elements()
    if n == 0 or length <= 1:
        return []
    rows = n // length
    network, p = steps(length)
    out_slices = [Slice(assignment.buffer(h, index)) for index, _ in leaves]
    scratch = ("scratch", name)
    keys = list(dict.fromkeys([s.key for s in out_slices] + [(scratch, 0)]))
    thunks = []

    # positions[row * length + e] = e
    kernel = Kernel(f"{name}_positions", [(scratch, 0)], h)

    def positions(b, i):
        ptr = b.gep(kernel.ptrs[(scratch, 0)], [i], inbounds=True, source_etype=POSITION)
        b.store(b.urem(i, i64(length)), ptr)
    thunks.append(KernelThunk(kernel.module.name, finish_kernel(kernel, h, n, positions),
                              [(scratch, 0)], n, h.name, scratch={scratch: 8 * n}))

    # One compare-exchange per thread: i and its partner in a row.
    scalar_keys = [("scalar", "j"), ("scalar", "mirrors")]
    kernel = Kernel(f"{name}_step", keys + scalar_keys, h)
    g = ElementGenerator(emitter, kernel)
    comparator = h.attr("to_apply")

    def step(b, t):
        j = b.ptrtoint(kernel.ptrs[("scalar", "j")], I64)
        mirrors = b.ptrtoint(kernel.ptrs[("scalar", "mirrors")], I64)
        half = i64(p // 2)
        row, q = b.udiv(t, half), b.urem(t, half)
        lo = b.add(b.mul(b.udiv(q, j), b.mul(j, i64(2))), b.urem(q, j))
        partner = b.select(b.icmp_unsigned("!=", mirrors, i64(0)),
                           b.xor(lo, b.sub(b.mul(j, i64(2)), i64(1))), b.add(lo, j))
        with b.if_then(b.icmp_unsigned("<", partner, i64(length))):
            at = [_index(b, row, dims, d, x) for x in (lo, partner)]
            ptrs = [[g.element_pointer(kernel.pointer(s), leaf, ix) for s, (_, leaf)
                     in zip(out_slices, leaves)] for ix in at]
            values = [[load_element(b, ptr, leaf.element_type) for ptr, (_, leaf)
                       in zip(row_ptrs, leaves)] for row_ptrs in ptrs]
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
                for (_, leaf), p_lo, p_hi, v_lo, v_hi in zip(leaves, ptrs[0], ptrs[1], values[0],
                                                             values[1]):
                    store_element(b, v_hi, p_lo, leaf.element_type)
                    store_element(b, v_lo, p_hi, leaf.element_type)
                b.store(pos[1], pos_ptrs[0])
                b.store(pos[0], pos_ptrs[1])
    text = finish_kernel(kernel, h, rows * (p // 2), step)
    for j, mirrors in network:
        thunks.append(KernelThunk(kernel.module.name, text, keys, rows * (p // 2), h.name,
                                  scalars=(j, mirrors)))
    return thunks
