"""cholesky, triangular-solve and jaxlib's LAPACK custom calls (potrf,
trsm) on the GPU: the CPU backend's loops (``xla/backends/cpu/
emit_linalg.py``, which documents the semantics), one thread per matrix of
the batch. Correct, not fast: each matrix is factored or solved by one
thread (a blocked, cooperative version would use cuSOLVER or shared
memory).

The loops ask their kernel for a few things (``_LinalgKernel``): the
builder, pointers by slice, stack variables, and scratch arrays. Scratch is
per thread here: array ``k`` of the kernel is a region holding one copy per
thread the launch may start (``max_threads``), the thread's copy at
``region + thread * size``.
"""
from types import SimpleNamespace

from llvmlite import ir

from xla.backends.cpu import emit_linalg as cpu
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.loop_emitter import i64
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, max_threads, unsupported

LAPACK_TARGETS = {f"lapack_{t}{op}{suffix}": op for t in "sd" for op in ("potrf", "trsm")
                  for suffix in ("_ffi", "")}


class _LinalgKernel:
    def __init__(self, emitter, h, name, keys, batch):
        self.assignment = emitter.assignment
        self.scratch_key = (("scratch", name), 0)
        self.kernel = Kernel(name, list(keys) + [self.scratch_key], h)
        self.b = self.kernel.b
        self.ptrs = self.kernel.ptrs
        self.fn = SimpleNamespace(module=self.kernel.module)
        self.threads = max_threads(batch)
        k = self.kernel
        self.thread = self.b.add(self.b.mul(k.sreg("ctaid.x"), k.sreg("ntid.x")), k.sreg("tid.x"))
        self.scratch_bytes = 0

    def key_of(self, instr):
        return Slice(self.assignment.buffer(instr, ())).key

    def var(self, typ, init):
        slot = self.kernel.alloca(typ)
        self.b.store(init, slot)
        return slot

    def scratch(self, typ, count):
        size = -(-max(1, count) * (8 if typ == ir.DoubleType() else 4) // 8) * 8
        base = self.b.gep(self.ptrs[self.scratch_key], [i64(self.scratch_bytes)],
                          source_etype=ir.IntType(8))
        self.scratch_bytes += size * self.threads
        return self.b.gep(base, [self.b.mul(self.thread, i64(size))], source_etype=ir.IntType(8))

    def thunk(self, h, batch, body, keys):
        """The KernelThunk running ``body(batch index)`` for each matrix of
        ``batch`` (count, dimensions)."""
        count, dims = batch

        def loop(b, r):
            body(le.delinearize(b, r, list(dims)) if dims else [])
        text = finish_kernel(self.kernel, h, count, loop)
        return KernelThunk(self.kernel.module.name, text, list(keys) + [self.scratch_key],
                           count, h.name, scratch={self.scratch_key[0]: max(8, self.scratch_bytes)})


def _batch(shape):
    dims = list(shape.dimensions[:-2])
    n = 1
    for d in dims:
        n *= d
    return n, dims


def emit_linalg(emitter, h, name):
    """The kernel thunks of cholesky, triangular-solve, or a LAPACK potrf/trsm
    custom call ``h``."""
    a = emitter.assignment
    op = h.opcode if h.opcode != "custom-call" else LAPACK_TARGETS[h.attr("custom_call_target")]
    key = lambda instr, index=(): Slice(a.buffer(instr, index)).key  # noqa: E731
    if op == "cholesky":
        keys = [key(h.operands[0]), key(h)]
        batch = _batch(h.shape)
        k = _LinalgKernel(emitter, h, name, keys, batch[0])
        body = cpu.cholesky_body(k, h, keys[0], keys[1])
        any_work = h.operands[0].shape.dimensions[-1] > 0
    elif op in ("triangular-solve", "trsm"):
        if op == "trsm":
            char = cpu.lapack_attrs(h)
            trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[char("trans_x", "N")]
            out_index = (0,) if h.shape.is_tuple else ()
            alpha = h.operands[2] if len(h.operands) > 2 and h.operands[2].shape.rank == 0 else None
            left, lower = char("side", "L") == "L", char("uplo", "L") == "L"
            unit = char("diag", "N") == "U"
        else:
            trans = h.attr("transpose_a", "NO_TRANSPOSE") or "NO_TRANSPOSE"
            trans = str(getattr(trans, "text", trans))  # a builder's RawAttr, the parser's str
            out_index, alpha = (), None
            left, lower = bool(h.attr("left_side", False)), bool(h.attr("lower", False))
            unit = bool(h.attr("unit_diagonal", False))
        out_shape = h.shape.subshape(out_index)
        keys = [key(h.operands[0]), key(h.operands[1]), key(h, out_index)]
        if alpha is not None:
            keys.append(key(alpha))
        batch = _batch(out_shape)
        k = _LinalgKernel(emitter, h, name, dict.fromkeys(keys), batch[0])
        body, any_work = cpu.trsm_body(k, h, out_shape, keys[2], left, lower, unit, trans, alpha,
                                       keys[3] if alpha is not None else None)
    else:   # potrf
        out_shape = h.shape.tuple_shapes[0] if h.shape.is_tuple else h.shape
        keys = [key(h.operands[0]), key(h, (0,) if h.shape.is_tuple else ())]
        info = key(h, (1,)) if h.shape.is_tuple and len(h.shape.tuple_shapes) > 1 else None
        if info is not None:
            keys.append(info)
        batch = _batch(out_shape)
        if out_shape.dimensions[-1] == 0 and info is not None:
            raise unsupported(h, "empty matrices")
        k = _LinalgKernel(emitter, h, name, dict.fromkeys(keys), batch[0])
        body = cpu.potrf_body(k, h, keys[0], keys[1], info)
        any_work = out_shape.dimensions[-1] > 0
    if not any_work or batch[0] == 0:
        return []
    return [k.thunk(h, batch, body, list(dict.fromkeys(keys)))]
