"""f32 -> bf16 conversion in a vectorized store loop, three ways, on the host:
``software`` (``llvm_types.f32_to_bf16_bits``: round to nearest even on the
bits, NaN -> quiet NaN with its sign, what the CPU backend emits), ``hardware``
(LLVM's ``fptrunc float to bfloat``: VCVTNEPS2BF16 where the host has
AVX512_BF16), and ``hardware + fixups`` (the instruction, with the lanes
whose input is a NaN or below 2^-126 in magnitude taken from the software
rounding: the instruction flushes denormal inputs to zero and keeps a NaN's
payload, so alone it differs from ml_dtypes and the interpreter). Each
way's results are checked against ml_dtypes on NaNs, infinities, ties and
denormals; times are the best per element over --repeats rounds of
32K-element (L2-resident) conversions."""
import argparse
import ctypes
import re
import time

import ml_dtypes
import numpy as np
from llvmlite import ir

from xla.backends.cpu import jit
from xla.backends.cpu import llvm_types as lt

SPECIALS = np.uint32([0x7F800001, 0x7FA00000, 0xFFA12345, 0x7FC00000, 0xFF800000, 0x00000001,
                      0x00018000, 0x00400000, 0x807FFFFF, 0x007FFFFF, 0x3F808000, 0x3F818000,
                      0x3F808001, 0x7F7FFFFF, 0x00800000])


def _module(kind):
    m = ir.Module(name=kind)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [lt.F32.as_pointer(), lt.I16.as_pointer(),
                                                         lt.I64]), name="conv")
    src, dst, n = fn.args
    for a in (src, dst):
        a.add_attribute("noalias")
    entry, loop, done = (fn.append_basic_block(x) for x in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(lt.I64)
    i.add_incoming(ir.Constant(lt.I64, 0), entry)
    x = b.load(b.gep(src, [i]))
    if kind == "software":
        out = lt.f32_to_bf16_bits(b, x)
    else:
        # llvmlite has no bfloat type: a placeholder call, replaced below.
        out = b.call(ir.Function(m, ir.FunctionType(lt.I16, [lt.F32]), name="HW"), [x], name="hw")
        if kind == "hardware + fixups":
            ax = b.call(m.declare_intrinsic("llvm.fabs", [lt.F32]), [x])
            special = b.fcmp_unordered("<", ax, ir.Constant(lt.F32, 2.0 ** -126))
            out = b.select(special, lt.f32_to_bf16_bits(b, x), out)
    b.store(out, b.gep(dst, [i]))
    nxt = b.add(i, ir.Constant(lt.I64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", nxt, n), loop, done)
    ir.IRBuilder(done).ret_void()
    text = str(m).replace('declare i16 @"HW"(float %".1")', "")
    return re.sub(r'%"hw" = call i16 @"HW"\(float (%"?[\w.]+"?)\)',
                  r'%hwb = fptrunc float \1 to bfloat\n  %"hw" = bitcast bfloat %hwb to i16', text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    n = 32768
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x[:SPECIALS.size] = SPECIALS.view(np.float32)
    with np.errstate(invalid="ignore"):
        want = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    ways = {}
    for kind in ("software", "hardware", "hardware + fixups"):
        module = jit.JitModule(_module(kind), opt_level=3)
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
            module.address("conv"))
        y = np.zeros(n, np.uint16)
        fn(x.ctypes.data, y.ctypes.data, n)
        uses = "vcvtneps2bf16" in module.assembly()
        ways[kind] = (module, fn, np.count_nonzero(y != want), uses)
    best = dict.fromkeys(ways, float("inf"))
    y = np.zeros(n, np.uint16)
    for _ in range(args.repeats):
        for kind, (_, fn, _, _) in ways.items():
            start = time.perf_counter()
            for _ in range(100):
                fn(x.ctypes.data, y.ctypes.data, n)
            best[kind] = min(best[kind], (time.perf_counter() - start) / 100 / n * 1e9)
    print(f"host: {jit.host_cpu().split(':')[0]}, avx512bf16: "
          f"{'+avx512bf16' in jit.host_cpu()}")
    for kind, (_, _, bad, uses) in ways.items():
        print(f"{kind:18} {best[kind]:.3f} ns/element  vcvtneps2bf16: {uses!s:5}  "
              f"elements unlike ml_dtypes: {bad}")


if __name__ == "__main__":
    main()
