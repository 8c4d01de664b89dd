"""Transposes of the two minor dimensions through shared memory.

A transpose computed one output element per thread reads its input with a
stride (adjacent threads: adjacent output elements, input elements a row
apart). Here a block of 256 threads (32 x 8) moves one 32 x 32 tile at a
time: it reads the tile's rows (adjacent threads: adjacent input
elements), stores them in shared memory, waits at a barrier, and writes the
tile's columns as output rows (adjacent threads: adjacent output
elements), then waits again before the next tile. The shared array is 33
elements wide so that a column's elements fall in different banks. Blocks
take tiles in a block-stride loop, the same number of iterations for every
thread of a block, so the barriers are reached by all of them.

What takes this path: a ``transpose``, or a loop fusion that is only a
transpose of a parameter, swapping the two minor dimensions of a row-major
array (leading batch dimensions kept) whose two minor dimensions are at
least ``MIN_SIDE``, of 1, 2, 4 or 8-byte elements (moved as bits). The
emulator runs it threaded, with the barriers' semantics (``emulator.py``).
"""
from llvmlite import ir

from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.loop_emitter import i64, major_to_minor
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, stride_loop

TILE = 32
ROWS = 8                 # a block is TILE x ROWS threads
BLOCK = TILE * ROWS
MIN_SIDE = 64
I8 = ir.IntType(8)


def transpose_source(h, assignment):
    """The instruction whose buffer ``h`` transposes, when ``h`` takes this
    path (see the module docstring); else None."""
    if h.opcode == "transpose":
        dims, src = list(h.attr("dimensions", ())), h.operands[0]
    elif h.opcode == "fusion" and str(h.attrs.get("kind")) == "kLoop":
        # transposes and copies of one parameter (a JAX-lowered x.T whose
        # result layout was made row-major is copy(transpose{0,1}(x))):
        # values inside a fusion have no memory, so only the composed
        # dimension order counts.
        x = h.attrs["calls"].root_instruction
        dims = list(range(x.shape.rank)) if x.shape.is_array else []
        while x.opcode in ("transpose", "copy"):
            if x.opcode == "transpose":
                dims = [x.attr("dimensions")[d] for d in dims]
            x = x.operands[0]
        if x.opcode != "parameter" or x is h.attrs["calls"].root_instruction:
            return None
        src = h.operands[x.parameter_number]
    else:
        return None
    if not h.shape.is_array or not src.shape.is_array or not assignment.has_buffers(src):
        return None
    rank = src.shape.rank
    if rank < 2 or dims != list(range(rank - 2)) + [rank - 1, rank - 2]:
        return None
    for s in (src.shape, h.shape):
        if major_to_minor(s) != list(range(rank)):
            return None
    rows, cols = src.shape.dimensions[-2:]
    if rows < MIN_SIDE or cols < MIN_SIDE or src.shape.element_type.byte_size not in (1, 2, 4, 8):
        return None
    if src.shape.element_type is not h.shape.element_type:
        return None
    return src


def _block_stride_loop(kernel, n, body):
    """``for (tile = ctaid.x; tile < n; tile += nctaid.x) body(builder, tile)``:
    uniform across a block, so barriers inside are reached by every thread."""
    stride_loop(kernel, n, body, kernel.sreg("ctaid.x"), kernel.sreg("nctaid.x"), name="tile")


def emit_tiled_transpose(emitter, h, name, src):
    a = emitter.assignment
    out_key, in_key = Slice(a.buffer(h)).key, Slice(a.buffer(src)).key
    keys = list(dict.fromkeys([out_key, in_key]))
    kernel = Kernel(name, keys, h)
    rows, cols = src.shape.dimensions[-2:]
    batch = src.shape.num_elements() // (rows * cols)
    tiles_r, tiles_c = -(-rows // TILE), -(-cols // TILE)
    per_batch = tiles_r * tiles_c
    width = src.shape.element_type.byte_size
    bits = ir.IntType(8 * width)
    array = ir.ArrayType(ir.ArrayType(bits, TILE + 1), TILE)
    smem = ir.GlobalVariable(kernel.module, array, name=f"{name}_tile", addrspace=3)
    smem.linkage = "internal"
    smem.initializer = ir.Constant(array, ir.Undefined)
    barrier = ir.Function(kernel.module, ir.FunctionType(ir.VoidType(), []), "llvm.nvvm.barrier0")
    tid = kernel.sreg("tid.x")
    b = kernel.b
    tx, ty = b.urem(tid, i64(TILE)), b.udiv(tid, i64(TILE))

    def element(ptr, linear):
        return b.gep(ptr, [b.mul(linear, i64(width)) if width > 1 else linear], inbounds=True,
                     source_etype=I8)

    def shared(r, c):
        return b.gep(smem, [i64(0), r, c], inbounds=True)

    def body(b, tile):
        bi, rem = b.udiv(tile, i64(per_batch)), b.urem(tile, i64(per_batch))
        r0 = b.mul(b.udiv(rem, i64(tiles_c)), i64(TILE))
        c0 = b.mul(b.urem(rem, i64(tiles_c)), i64(TILE))
        base = b.mul(bi, i64(rows * cols))
        for k in range(TILE // ROWS):
            ty_k = b.add(ty, i64(ROWS * k))
            r, c = b.add(r0, ty_k), b.add(c0, tx)
            inside = b.and_(b.icmp_unsigned("<", r, i64(rows)), b.icmp_unsigned("<", c, i64(cols)))
            with b.if_then(inside):
                v = b.load(element(kernel.ptrs[in_key], b.add(base, b.add(b.mul(r, i64(cols)), c))),
                           typ=bits)
                b.store(v, shared(ty_k, tx))
        b.call(barrier, [])
        for k in range(TILE // ROWS):
            ty_k = b.add(ty, i64(ROWS * k))
            r, c = b.add(c0, ty_k), b.add(r0, tx)     # output row = input column
            inside = b.and_(b.icmp_unsigned("<", r, i64(cols)), b.icmp_unsigned("<", c, i64(rows)))
            with b.if_then(inside):
                v = b.load(shared(tx, ty_k), typ=bits)
                b.store(v, element(kernel.ptrs[out_key], b.add(base, b.add(b.mul(r, i64(rows)), c))))
        b.call(barrier, [])
    n = batch * per_batch
    text = finish_kernel(kernel, h, n, body, loop=_block_stride_loop)
    return KernelThunk(name, text, keys, n * BLOCK, h.name, block=BLOCK)
