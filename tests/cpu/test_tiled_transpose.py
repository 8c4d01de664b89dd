"""Tiled loops for kernels that read an operand transposed
(xla/backends/cpu/tiling.py, loop_emitter.tiled_loop_nest): every element
exactly once, whatever the sizes (tiles cut at the edges), and only where
the operand's minor dimension lands on another output dimension."""
import numpy as np
import pytest

import xla


def transpose_module(dims, perm, layout="", fused=False):
    in_shape = f"f32[{','.join(map(str, dims))}]{layout}"
    out_dims = [dims[p] for p in perm]
    out_shape = f"f32[{','.join(map(str, out_dims))}]"
    lines = [f"  %x = {in_shape} parameter(0)",
             f"  %t = {out_shape} transpose(%x), dimensions={{{','.join(map(str, perm))}}}"]
    params = f"x: {in_shape}"
    root = "%t"
    if fused:
        params += f", y: {out_shape}"
        lines += [f"  %y = {out_shape} parameter(1)", f"  %s = {out_shape} add(%t, %y)"]
        root = "%s"
    lines[-1] = lines[-1].replace(f"  {root} =", f"  ROOT {root} =")
    return f"HloModule tr\nENTRY %main ({params}) -> {out_shape} {{\n" + "\n".join(lines) + "\n}\n"


@pytest.mark.parametrize("dims,perm,fused", [
    ([4096, 1024], [1, 0], False),     # parallel, exact tiles
    ([37, 1001], [1, 0], False),       # edges: partial tiles both ways
    ([300, 50], [1, 0], True),         # fused with an add
    ([6, 65, 130], [0, 2, 1], False),  # batched
    ([33, 17, 70], [2, 1, 0], True),
    ([20, 30, 40, 50], [3, 1, 2, 0], False),
])
def test_transposes_are_tiled_and_exact(dims, perm, fused):
    text = transpose_module(dims, perm, fused=fused)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(dims).astype(np.float32)
    args = [x]
    want = np.transpose(x, perm)
    if fused:
        y = rng.standard_normal(want.shape).astype(np.float32)
        args.append(y)
        want = want + y
    exe = xla.compile(text, backend="cpu")
    assert ".tile.header" in exe.ir_text
    np.testing.assert_array_equal(exe.execute(*args), want)


def test_layout_changing_copy_is_tiled():
    text = """HloModule relayout
ENTRY %main (x: f32[200,300]) -> f32[200,300] {
  %x = f32[200,300]{1,0} parameter(0)
  ROOT %c = f32[200,300]{0,1} copy(%x)
}
"""
    x = np.random.default_rng(1).standard_normal((200, 300)).astype(np.float32)
    exe = xla.compile(text, backend="cpu")
    assert ".tile.header" in exe.ir_text
    np.testing.assert_array_equal(exe.execute(x), x)


@pytest.mark.parametrize("text", [
    # Same order: nothing to tile.
    transpose_module([64, 64], [0, 1]),
    # Batch dimensions swapped, minor dimension in place.
    transpose_module([40, 30, 64], [1, 0, 2]),
    # Too thin to tile.
    transpose_module([8, 500], [1, 0]),
])
def test_other_kernels_are_not_tiled(text):
    exe = xla.compile(text, backend="cpu")
    assert ".tile.header" not in exe.ir_text
    module = xla.parse_hlo_module(text)
    dims = module.entry.parameters[0].shape.dimensions
    perm = list(module.entry.root_instruction.attr("dimensions"))
    x = np.random.default_rng(2).standard_normal(dims).astype(np.float32)
    np.testing.assert_array_equal(exe.execute(x), np.transpose(x, perm))


def test_a_transpose_reshaped_at_the_root_is_tiled():
    # An elementwise kernel whose result is transposed and reshaped (a
    # bitcast in the fused kernel; the backward pass of a dense layer over
    # [batch, seq, features] writes such a [features, batch * seq]): the
    # tiles follow the transpose through the bitcast.
    text = """HloModule tr
ENTRY %main (x: f32[4,64,96], y: f32[4,64,96]) -> f32[96,256] {
  %x = f32[4,64,96] parameter(0)
  %y = f32[4,64,96] parameter(1)
  %m = f32[4,64,96] multiply(%x, %y)
  %t = f32[96,4,64] transpose(%m), dimensions={2,0,1}
  ROOT %r = f32[96,256] reshape(%t)
}
"""
    rng = np.random.default_rng(2)
    x, y = (rng.standard_normal((4, 64, 96)).astype(np.float32) for _ in range(2))
    exe = xla.compile(text, backend="cpu")
    assert ".tile.header" in exe.ir_text
    np.testing.assert_array_equal(exe.execute(x, y), (x * y).transpose(2, 0, 1).reshape(96, 256))


def test_a_broadcast_along_the_minor_dimension_is_not_tiled():
    # Softmax's quotients over [batch, heads, rows, cols]: the row sums
    # [batch, heads, rows] broadcast along cols. Their minor dimension lands
    # on output dimension 2, but consecutive output elements read one sum:
    # a tiled walk would only break the rows apart.
    text = """HloModule quotients
ENTRY %main (s: f32[2,4,64], e: f32[2,4,64,128]) -> f32[2,4,64,128] {
  %s = f32[2,4,64] parameter(0)
  %e = f32[2,4,64,128] parameter(1)
  %sb = f32[2,4,64,128] broadcast(%s), dimensions={0,1,2}
  ROOT %q = f32[2,4,64,128] divide(%e, %sb)
}
"""
    rng = np.random.default_rng(3)
    s = rng.uniform(1, 2, (2, 4, 64)).astype(np.float32)
    e = rng.standard_normal((2, 4, 64, 128)).astype(np.float32)
    exe = xla.compile(text, backend="cpu")
    assert ".tile.header" not in exe.ir_text
    np.testing.assert_array_equal(exe.execute(s, e), e / s[..., None])
