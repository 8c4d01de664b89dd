"""concatenate on the CPU backend, operand by operand (emit_concatenate.py):
results against NumPy's concatenate of the same inputs, and which kernels
the driver calls (one per operand, one kernel of rows for narrow pieces
along the minor dimension, or one generator loop); RoPE as jax lowers it
(fixtures/concat_rows_jax.npz, from gen_concat_rows_jax.py) against
XLA:CPU's results."""
import re

import ml_dtypes
import numpy as np
import pytest

import xla
from xla.backends.cpu.emit_concatenate import ROW_PIECE_MAX

from lapack_fixtures import load, program, run


def _kernel_calls(exe):
    """Kernel calls in the driver's entry function."""
    driver = exe.ir_text.split("; ----- kernel")[0]
    return len(re.findall(r'call void @"xla_k_', driver))


def _module(shapes, axis, type_text="f32", layout="", producer=None):
    params = "\n".join(f"  p{k} = {type_text}[{','.join(map(str, s))}]{layout} parameter({k})"
                       for k, s in enumerate(shapes))
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    names = [f"p{k}" for k in range(len(shapes))]
    body = ""
    if producer is not None:   # each operand through an elementwise op first
        for k, s in enumerate(shapes):
            body += (f"  q{k} = {type_text}[{','.join(map(str, s))}]{layout} "
                     f"{producer}(p{k})\n")
        names = [f"q{k}" for k in range(len(shapes))]
    return (f"HloModule concat\n\nENTRY main {{\n{params}\n{body}"
            f"  ROOT c = {type_text}[{','.join(map(str, out))}]{layout} "
            f"concatenate({', '.join(names)}), dimensions={{{axis}}}\n}}\n")


def _random(shape, dtype, rng):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-100 if np.dtype(dtype).kind == "i" else 0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shapes,axis", [
    ([(64, 100), (64, 28)], 1),                       # minor axis, uneven pieces
    ([(33, 7), (33, 129), (33, 1), (33, 64)], 1),     # odd sizes, a 1-wide piece
    ([(8, 40, 30), (8, 25, 30)], 1),                  # middle axis
    ([(8, 40, 30), (8, 40, 3), (8, 40, 0), (8, 40, 17)], 2),   # an empty piece
])
def test_minor_concatenate_runs_a_kernel_per_operand(shapes, axis):
    rng = np.random.default_rng(0)
    args = [_random(s, np.float32, rng) for s in shapes]
    exe = xla.compile(xla.parse_hlo_module(_module(shapes, axis)), "cpu")
    np.testing.assert_array_equal(exe.execute(*args), np.concatenate(args, axis=axis))
    rows = axis == len(shapes[0]) - 1 and max(s[axis] for s in shapes) <= ROW_PIECE_MAX
    assert _kernel_calls(exe) == (1 if rows else sum(1 for s in shapes if 0 not in s))
    assert ("piece0.header" in exe.ir_text) == rows


@pytest.mark.parametrize("shapes,axis", [
    ([(300, 64), (200, 64)], 0),       # contiguous blocks
    ([(1, 300, 64), (1, 200, 64)], 1),  # only a size-1 dimension above the axis
    ([(2, 3), (2, 5)], 1),             # a few elements
])
def test_block_and_small_concatenates_stay_one_loop(shapes, axis):
    rng = np.random.default_rng(1)
    args = [_random(s, np.float32, rng) for s in shapes]
    exe = xla.compile(xla.parse_hlo_module(_module(shapes, axis)), "cpu")
    np.testing.assert_array_equal(exe.execute(*args), np.concatenate(args, axis=axis))
    assert _kernel_calls(exe) == 1


@pytest.mark.parametrize("type_text,dtype", [
    ("f64", np.float64), ("bf16", ml_dtypes.bfloat16), ("s8", np.int8), ("u16", np.uint16),
    ("pred", np.bool_), ("s4", ml_dtypes.int4), ("c64", np.complex64),
])
def test_element_types(type_text, dtype):
    shapes = [(48, 70), (48, 50), (48, 9)]
    rng = np.random.default_rng(2)
    if dtype is np.complex64:
        args = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype)
                for s in shapes]
    elif dtype is ml_dtypes.int4:
        args = [rng.integers(-8, 8, s).astype(dtype) for s in shapes]
    else:
        args = [_random(s, dtype, rng) for s in shapes]
    exe = xla.compile(xla.parse_hlo_module(_module(shapes, 1, type_text)), "cpu")
    got = exe.execute(*args)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.concatenate(args, axis=1))


def test_fused_producers_each_computed_in_their_piece():
    shapes = [(40, 100), (40, 60)]
    rng = np.random.default_rng(3)
    args = [_random(s, np.float32, rng) for s in shapes]
    exe = xla.compile(xla.parse_hlo_module(_module(shapes, 1, producer="exponential")), "cpu")
    # One fusion (exp of each piece fused into the concatenate), pieces of
    # at most ROW_PIECE_MAX along the minor dimension: one kernel of rows,
    # each row's pieces in turn.
    assert _kernel_calls(exe) == 1 and "piece0.header" in exe.ir_text
    np.testing.assert_allclose(exe.execute(*args), np.exp(np.concatenate(args, axis=1)),
                               rtol=2e-6)


def test_column_major_layout():
    # {0,1}: dimension 0 is minor, so a concatenate along 0 interleaves.
    shapes = [(100, 64), (60, 64)]
    rng = np.random.default_rng(4)
    args = [_random(s, np.float32, rng) for s in shapes]
    text = _module(shapes, 0, layout="{0,1}")
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    np.testing.assert_array_equal(exe.execute(*args), np.concatenate(args, axis=0))
    assert _kernel_calls(exe) == 1 and "piece0.header" in exe.ir_text   # minor: rows of pieces


def test_a_parameter_twice_and_a_large_parallel_concatenate():
    # Large enough to run on the thread pool; the same buffer read by two pieces.
    text = """HloModule concat_twice

ENTRY main {
  a = f32[512,300] parameter(0)
  b = f32[512,200] parameter(1)
  ROOT c = f32[512,800] concatenate(a, b, a), dimensions={1}
}
"""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((512, 300), np.float32), rng.standard_normal((512, 200), np.float32)
    exe = xla.compile(xla.parse_hlo_module(text), "cpu")
    np.testing.assert_array_equal(exe.execute(a, b), np.concatenate([a, b, a], axis=1))
    driver = exe.ir_text.split("; ----- kernel")[0]
    assert len(re.findall(r'call void @"__xla_cpu_parallel_for"', driver)) == 3


ROPE = load("concat_rows_jax.npz")


@pytest.mark.parametrize("name", ROPE[1])
def test_rope_as_jax_lowers_it(name):
    # Both halves of each row computed from the same row of x: one kernel
    # of rows (a kernel per half read x twice, in short loops: RoPE of
    # f32[8, 512, 16, 64] 1.9-2.1 -> 0.96-1.1 ms).
    text, args, want = program(ROPE[0], name)
    got = run(text, args, "cpu")
    for g, w in zip(got, want):
        tol = 1e-2 if g.dtype.itemsize == 2 else 1e-5   # bf16: an ulp of rounding
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=tol, atol=tol)
    assert "piece0.header" in xla.compile(text, "cpu").ir_text


def test_rope_fixture_has_every_program():
    assert ROPE[1] == sorted(["rope_rotate_half", "rope_bf16", "concat_narrow_pieces"])
