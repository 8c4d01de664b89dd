"""Warp-level primitives for the kernel emitters: values exchanged between
the 32 lanes of a warp with ``shfl.sync`` (``llvm.nvvm.shfl.sync.*``),
without shared memory or barriers.

``shuffle_xor(kernel, b, v, mask)`` gives each lane the value ``v`` of lane
``lane ^ mask``; ``warp_reduce(kernel, b, v, combine)`` folds the 32 lanes'
values with ``combine`` as a butterfly (masks 16, 8, 4, 2, 1), after which
every lane holds the result. Every lane of the warp must execute the same
shuffles (the member mask is the full warp): the callers run them at
points every lane of a warp reaches together.

NVVM's shuffles move 32 bits: narrower values are widened, 64-bit ones go
as two halves, floats as their bits. The emulator (``emulator.py``) runs
these intrinsics with a warp's semantics.
"""
from llvmlite import ir

from xla.backends.gpu.kernels import I32

WARP = 32
FULL_MASK = 0xFFFFFFFF


def _shfl(kernel, mode):
    name = f"llvm.nvvm.shfl.sync.{mode}.i32"
    fn = kernel.module.globals.get(name)
    if fn is None:
        fn = ir.Function(kernel.module, ir.FunctionType(I32, [I32] * 4), name)
    return fn


def _as_int(b, v):
    t = v.type
    if isinstance(t, ir.IntType):
        return v
    width = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}.get(type(t))
    if width is None:   # bfloat16 and others: by their bit width
        width = {"bfloat": 16}.get(str(t))
    if width is None:
        raise TypeError(f"no warp shuffle for {t}")
    return b.bitcast(v, ir.IntType(width))


def shuffle_xor(kernel, b, value, lane_mask):
    """``value`` of lane ``lane ^ lane_mask`` of this warp (any scalar type
    of at most 64 bits)."""
    bits = _as_int(b, value)
    width = bits.type.width
    fn = _shfl(kernel, "bfly")
    args = [ir.Constant(I32, FULL_MASK), None, ir.Constant(I32, lane_mask), ir.Constant(I32, 0x1F)]

    def one(word):
        args[1] = word
        return b.call(fn, list(args))
    if width <= 32:
        word = bits if width == 32 else b.zext(bits, I32)
        out = one(word)
        out = out if width == 32 else b.trunc(out, bits.type)
    elif width == 64:
        lo = one(b.trunc(bits, I32))
        hi = one(b.trunc(b.lshr(bits, ir.Constant(bits.type, 32)), I32))
        out = b.or_(b.zext(lo, bits.type), b.shl(b.zext(hi, bits.type), ir.Constant(bits.type, 32)))
    else:
        raise TypeError(f"no warp shuffle for {value.type}")
    return out if out.type == value.type else b.bitcast(out, value.type)


def warp_reduce(kernel, b, value, combine):
    """The fold of the 32 lanes' ``value`` with ``combine(b, x, y)``, in
    every lane (a butterfly: lane ``l`` combines with lane ``l ^ m`` for
    m = 16, 8, 4, 2, 1; the lower lane's value goes first)."""
    lane = b.urem(kernel.sreg("tid.x"), ir.Constant(kernel.sreg("tid.x").type, WARP))
    for m in (16, 8, 4, 2, 1):
        other = shuffle_xor(kernel, b, value, m)
        upper = b.icmp_unsigned("!=", b.and_(lane, ir.Constant(lane.type, m)),
                                ir.Constant(lane.type, 0))
        first = b.select(upper, other, value)
        second = b.select(upper, value, other)
        value = combine(b, first, second)
    return value
