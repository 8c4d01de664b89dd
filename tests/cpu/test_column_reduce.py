"""Column reductions (xla/backends/cpu/column_reduce.py): reduces that keep
the input's minor dimension run row by row over contiguous runs of outputs.
They must give bit for bit what the element-at-a-time loop gives, and the
interpreter's values."""
import numpy as np
import pytest

import xla
from xla.backends.cpu import column_reduce
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module


def reducer(name, ty, op):
    return f"""%{name} (a: {ty}[], b: {ty}[]) -> {ty}[] {{
  %a = {ty}[] parameter(0)
  %b = {ty}[] parameter(1)
  ROOT %r = {ty}[] {op}(%a, %b)
}}
"""


def module(ty, in_dims, dims, op="add", layout="", fused=False, init="0"):
    out_dims = [n for i, n in enumerate(in_dims) if i not in dims]
    in_shape = f"{ty}[{','.join(map(str, in_dims))}]{layout}"
    out_shape = f"{ty}[{','.join(map(str, out_dims))}]"
    body = f"  %x = {in_shape} parameter(0)\n"
    src = "%x"
    if fused:
        body += f"  %sq = {in_shape} multiply(%x, %x)\n"
        src = "%sq"
    body += f"  %z = {ty}[] constant({init})\n"
    body += (f"  ROOT %out = {out_shape} reduce({src}, %z), "
             f"dimensions={{{','.join(map(str, dims))}}}, to_apply=%red\n")
    return (f"HloModule colred\n{reducer('red', ty, op)}\n"
            f"ENTRY %main (x: {in_shape}) -> {out_shape} {{\n{body}}}\n")


CASES = [
    # (type, input dims, reduced dims, reducer, layout, fused, init)
    ("f32", [300, 700], [0], "add", "", False, "0"),
    ("f32", [300, 700], [0], "add", "", True, "0"),
    ("f32", [8, 64, 300], [1], "add", "", False, "0"),
    ("f32", [8, 64, 300], [0, 1], "maximum", "", False, "-inf"),
    ("f64", [513, 129], [0], "add", "", False, "1.5"),
    ("s32", [1000, 96], [0], "add", "", False, "7"),
    ("u8", [1000, 96], [0], "maximum", "", False, "0"),
    ("f32", [64, 70, 100], [0, 1], "minimum", "", False, "inf"),
    # bf16/f16: f32 accumulators in a scratch of NARROW_TILE (512) columns;
    # 1037 columns are two whole tiles and a part of one (per thread chunk).
    ("bf16", [300, 1037], [0], "add", "", False, "0"),
    ("f16", [64, 700], [0], "add", "", True, "0"),
    ("bf16", [8, 40, 600], [0, 1], "maximum", "", False, "-inf"),
]


def args_for(text, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for p in parse_hlo_module(text).entry.parameters:
        dtype = p.shape.dtype
        dims = p.shape.dimensions
        if dtype.kind in "iu":
            out.append(rng.integers(0, 100, size=dims).astype(dtype))
        else:
            out.append((rng.standard_normal(dims) * 3).astype(dtype))
    return out


def compile_counting(text, monkeypatch, **options):
    """(executable, how many column kernels its compile emitted)."""
    emitted = []
    real = column_reduce.emit_column_reduce

    def spy(*a, **k):
        done = real(*a, **k)
        emitted.append(done)
        return done
    with monkeypatch.context() as m:
        m.setattr(column_reduce, "emit_column_reduce", spy)
        exe = xla.compile(text, backend="cpu", **options)
    return exe, sum(emitted)


def element_at_a_time(text, args, monkeypatch, strict=False):
    options = {"debug_options": {"xla_allow_excess_precision": False}} if strict else {}
    with monkeypatch.context() as m:
        m.setattr(column_reduce, "column_dimensions", lambda h, root: None)
        exe, columns = compile_counting(text, m, **options)
    assert columns == 0
    return exe.execute(*args)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}{c[1]}-{c[2]}-{c[3]}{'-fused' if c[5] else ''}")
def test_column_reduce_matches_loop_and_interpreter(case, monkeypatch):
    ty, in_dims, dims, op, layout, fused, init = case
    text = module(ty, in_dims, dims, op, layout, fused, init)
    args = args_for(text)
    exe, columns = compile_counting(text, monkeypatch)
    assert columns == 1
    got = exe.execute(*args)
    np.testing.assert_array_equal(got, element_at_a_time(text, args, monkeypatch))
    want = Evaluator().evaluate(parse_hlo_module(text), args)
    assert got.dtype == want.dtype and got.shape == want.shape
    if ty in ("f32", "f64"):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    elif ty in ("bf16", "f16"):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=0.05, atol=0.5)
        strict, columns = compile_counting(
            text, monkeypatch, debug_options={"xla_allow_excess_precision": False})
        assert columns == 1
        np.testing.assert_array_equal(strict.execute(*args),
                                      element_at_a_time(text, args, monkeypatch, strict=True))
        if op == "add":
            # Rows folded in order, the sum in f32, rounded once (as XLA
            # accumulates bf16/f16 sums); the squares rounded to the type
            # only without excess precision.
            x = args[0].astype(np.float32)
            rows = (x * x if fused else x).reshape(-1, x.shape[-1])
            strict_rows = rows.astype(args[0].dtype).astype(np.float32)
            acc, acc_strict = np.zeros_like(rows[0]), np.zeros_like(rows[0])
            for r, rs in zip(rows, strict_rows):
                acc, acc_strict = acc + r, acc_strict + rs
            np.testing.assert_array_equal(got, acc.astype(args[0].dtype))
            np.testing.assert_array_equal(strict.execute(*args), acc_strict.astype(args[0].dtype))
        np.testing.assert_array_equal(strict.execute(*args), want)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("text", [
    # The minor dimension is reduced (a row reduction).
    module("f32", [300, 700], [1]),
    # Column-major input: reducing dimension 0 reduces the minor one.
    module("f32", [300, 700], [0], layout="{0,1}"),
])
def test_other_reduces_keep_their_emitters(text, monkeypatch):
    args = args_for(text)
    exe, columns = compile_counting(text, monkeypatch)
    assert columns == 0
    got = exe.execute(*args)
    want = Evaluator().evaluate(parse_hlo_module(text), args)
    # Row sums are reassociated (vector lanes).
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=3e-4)


# A gradient g and its column sum (a bias gradient) as one multi-output
# fusion, as the fusion pass makes it when dots read g too: the column
# kernel stores g as it reads it.
GRADIENT_AND_SUM = """HloModule gradsum
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%fused (z: f32[300,700], dy: f32[300,700]) -> (f32[300,700], f32[700]) {
  %z = f32[300,700]{1,0} parameter(0)
  %dy = f32[300,700]{1,0} parameter(1)
  %zero = f32[] constant(0)
  %zeros = f32[300,700]{1,0} broadcast(%zero), dimensions={}
  %gt = pred[300,700]{1,0} compare(%z, %zeros), direction=GT
  %g = f32[300,700]{1,0} select(%gt, %dy, %zeros)
  %db = f32[700]{0} reduce(%g, %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f32[300,700]{1,0}, f32[700]{0}) tuple(%g, %db)
}
ENTRY %main (z: f32[300,700], dy: f32[300,700]) -> (f32[300,700], f32[700]) {
  %z = f32[300,700]{1,0} parameter(0)
  %dy = f32[300,700]{1,0} parameter(1)
  ROOT %f = (f32[300,700]{1,0}, f32[700]{0}) fusion(%z, %dy), kind=kInput, calls=%fused
}
"""


@pytest.mark.parametrize("ty", ["f32", "bf16"])
def test_a_column_reduce_stores_the_array_it_reduces_as_it_reads_it(ty, monkeypatch):
    # (bf16: a bias gradient as a bf16 MLP's step has it.)
    text = GRADIENT_AND_SUM.replace("f32", ty)
    args = args_for(text)
    exe, columns = compile_counting(text, monkeypatch)
    assert columns == 1
    assert exe.compile_timings["kernels"] == 1
    g, db = exe.execute(*args)
    np.testing.assert_array_equal(g, np.where(args[0] > 0, args[1], 0).astype(args[1].dtype))
    g_loop, db_loop = element_at_a_time(text, args, monkeypatch)
    np.testing.assert_array_equal(g, g_loop)
    np.testing.assert_array_equal(db, db_loop)
    want = Evaluator().evaluate(parse_hlo_module(text), args)
    tol = 1e-5 if ty == "f32" else 0.5
    np.testing.assert_allclose(np.asarray(db, np.float64), np.asarray(want[1], np.float64),
                               rtol=tol, atol=tol)


# A layernorm's two parameter gradients as the fusion pass makes them: two
# column reduces of [8,40,700] over {0,1} (one of a product), a max beside
# them, as one multi-output fusion; all three folded in one row loop.
TWO_GRADIENTS = """HloModule lngrads
""" + reducer("add", "f32", "add") + reducer("max", "f32", "maximum") + """%fused (dy: f32[8,40,700], xh: f32[8,40,700]) -> (f32[700], f32[700], f32[700]) {
  %dy = f32[8,40,700]{2,1,0} parameter(0)
  %xh = f32[8,40,700]{2,1,0} parameter(1)
  %zero = f32[] constant(0)
  %lowest = f32[] constant(-inf)
  %db = f32[700]{0} reduce(%dy, %zero), dimensions={0,1}, to_apply=%add
  %p = f32[8,40,700]{2,1,0} multiply(%dy, %xh)
  %dg = f32[700]{0} reduce(%p, %zero), dimensions={0,1}, to_apply=%add
  %mx = f32[700]{0} reduce(%xh, %lowest), dimensions={0,1}, to_apply=%max
  ROOT %t = (f32[700]{0}, f32[700]{0}, f32[700]{0}) tuple(%db, %dg, %mx)
}
ENTRY %main (dy: f32[8,40,700], xh: f32[8,40,700]) -> (f32[700], f32[700], f32[700]) {
  %dy = f32[8,40,700]{2,1,0} parameter(0)
  %xh = f32[8,40,700]{2,1,0} parameter(1)
  ROOT %f = (f32[700]{0}, f32[700]{0}, f32[700]{0}) fusion(%dy, %xh), kind=kInput, calls=%fused
}
"""


def test_sibling_column_reduces_run_in_one_kernel(monkeypatch):
    args = args_for(TWO_GRADIENTS)
    exe, columns = compile_counting(TWO_GRADIENTS, monkeypatch)
    assert columns == 1
    got = exe.execute(*args)
    loop = element_at_a_time(TWO_GRADIENTS, args, monkeypatch)
    for a, b in zip(got, loop):
        np.testing.assert_array_equal(a, b)
    dy, xh = args
    np.testing.assert_allclose(got[0], dy.astype(np.float64).sum(axis=(0, 1)), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[1], (dy.astype(np.float64) * xh).sum(axis=(0, 1)),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got[2], xh.max(axis=(0, 1)))


def test_sibling_reduces_over_other_dimensions_keep_their_emitters(monkeypatch):
    # A row sum beside a column sum: not one column kernel.
    text = TWO_GRADIENTS.replace(
        "%mx = f32[700]{0} reduce(%xh, %lowest), dimensions={0,1}, to_apply=%max",
        "%mx = f32[8,40]{1,0} reduce(%xh, %lowest), dimensions={2}, to_apply=%max").replace(
        "(f32[700], f32[700], f32[700])", "(f32[700], f32[700], f32[8,40])").replace(
        "(f32[700]{0}, f32[700]{0}, f32[700]{0})", "(f32[700]{0}, f32[700]{0}, f32[8,40]{1,0})")
    args = args_for(text)
    exe, columns = compile_counting(text, monkeypatch)
    assert columns == 0
    got = exe.execute(*args)
    dy, xh = args
    np.testing.assert_allclose(got[1], (dy.astype(np.float64) * xh).sum(axis=(0, 1)),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got[2], xh.max(axis=2))
