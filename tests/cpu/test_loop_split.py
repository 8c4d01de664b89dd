"""Loop kernels whose most major dimension is short split the linear index
of their leading dimensions across threads (loop_emitter.split_dimensions,
ModuleEmitter.loop_split): every element exactly once, whatever the sizes
and layouts, and never the vectorized innermost loop."""
import re

import numpy as np
import pytest

import xla
from xla.backends.cpu import loop_emitter as le
from xla.hlo.parser import parse_hlo_module


def shape(text):
    return parse_hlo_module(f"HloModule m\nENTRY %e (p: {text}) -> {text} {{\n"
                            f"  ROOT %p = {text} parameter(0)\n}}\n").entry.root_instruction.shape


@pytest.mark.parametrize("text,limit,split,extent", [
    ("f32[4096,1024]", 1, 1, 4096),            # long enough already
    ("f32[2,8,512,512]", 3, 3, 8192),          # attention scores: 2 -> 16 -> 8192
    ("f32[2,8,512]", 3, 3, 8192),              # their row maxima (a row reduction's loop)
    ("f32[2,8,4,512]", 3, 3, 64),              # at most the limit, even if short
    ("f32[2,8,512,512]{3,2,0,1}", 2, 2, 16),   # layout order: 8, then 2
    ("f32[]", 0, 0, 1),
])
def test_split_dimensions(text, limit, split, extent):
    s = shape(text)
    assert le.split_dimensions(s, limit) == split
    assert le.outer_extent(s, split) == extent


def parallel_extents(exe):
    return [int(n) for n in re.findall(
        r"call void @__xla_cpu_parallel_for\(ptr (?:nonnull )?@[\w.]+, ptr [^,]+, i64 (\d+)",
        exe.optimized_ir_text)]


def test_elementwise_kernel_splits_leading_dimensions():
    # [3, 5, 37, 130]{3,1,2,0}: layout order 3, 37, 5 (555 rows), then 130.
    text = """HloModule ew
ENTRY %main (x: f32[3,5,37,130], y: f32[3,5,37,130]) -> f32[3,5,37,130] {
  %x = f32[3,5,37,130]{3,1,2,0} parameter(0)
  %y = f32[3,5,37,130]{3,1,2,0} parameter(1)
  %e = f32[3,5,37,130]{3,1,2,0} exponential(%x)
  ROOT %s = f32[3,5,37,130]{3,1,2,0} multiply(%e, %y)
}
"""
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((3, 5, 37, 130)).astype(np.float32) for _ in range(2))
    exe = xla.compile(text, backend="cpu")
    assert parallel_extents(exe) == [3 * 37 * 5]
    np.testing.assert_allclose(exe.execute(x, y), np.exp(x.astype(np.float64)) * y,
                               rtol=3e-7, atol=1e-30)


@pytest.mark.parametrize("dims,reduced", [((3, 5, 37, 200), (3,)), ((2, 6, 40, 300), (1, 3))])
def test_row_reduction_splits_all_its_output_dimensions(dims, reduced):
    out = [n for d, n in enumerate(dims) if d not in reduced]
    text = f"""HloModule rr
%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}}
ENTRY %main (x: f32[{','.join(map(str, dims))}]) -> f32[{','.join(map(str, out))}] {{
  %x = f32[{','.join(map(str, dims))}] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[{','.join(map(str, out))}] reduce(%x, %z), dimensions={{{','.join(map(str, reduced))}}}, to_apply=%add
}}
"""
    x = np.random.default_rng(1).standard_normal(dims).astype(np.float32)
    exe = xla.compile(text, backend="cpu")
    assert parallel_extents(exe) == [int(np.prod(out))]
    np.testing.assert_allclose(exe.execute(x), x.astype(np.float64).sum(axis=reduced),
                               rtol=1e-5, atol=1e-5)


def test_elementwise_kernel_keeps_its_inner_loop():
    # [2, 4, 8, 2000]: 64 rows stay short of MIN_SPLIT_ROWS, but the
    # minor dimension (the loop the vectorizer runs) is never split.
    text = """HloModule ew
ENTRY %main (x: f32[2,4,8,2000]) -> f32[2,4,8,2000] {
  %x = f32[2,4,8,2000] parameter(0)
  ROOT %e = f32[2,4,8,2000] exponential(%x)
}
"""
    x = np.random.default_rng(2).standard_normal((2, 4, 8, 2000)).astype(np.float32)
    exe = xla.compile(text, backend="cpu")
    assert parallel_extents(exe) == [64]
    assert "<16 x float>" in exe.optimized_ir_text
    np.testing.assert_allclose(exe.execute(x), np.exp(x.astype(np.float64)), rtol=3e-7)
