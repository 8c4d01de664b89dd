"""Gather and scatter on the CPU backend, checked against the interpreter
(emit_gather_scatter.py): full dimension numbers, clamped gather starts,
dropped out-of-bounds scatter windows, repeated scatter indices applied in
order, and indices far out of range (they must never reach memory outside
the buffers)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cpu_backend import check  # noqa: E402

HUGE_S32 = [0, 1, -1, 2**30, -2**30, 2**31 - 1, -2**31, 3, 2, 5, 4, 6]


def gather_module(ity, operand, indices, out, attrs, ty="f32"):
    return f"""
HloModule g
ENTRY %e (x: {ty}[{operand}], i: {ity}[{indices}]) -> {ty}[{out}] {{
  %x = {ty}[{operand}] parameter(0)
  %i = {ity}[{indices}] parameter(1)
  ROOT %g = {ty}[{out}] gather(%x, %i), {attrs}
}}
"""


ROWS = "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}"
BLOCKS = ("offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, "
          "slice_sizes={2,3}")


def test_gather_rows_clamps_out_of_range_starts():
    idx = np.array([0, 4, -3, 2**30, -2**30, 3, 2**31 - 1, -2**31], np.int32)
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    check(gather_module("s32", "5,4", "8", "8,4", ROWS), args=[x, idx])


@pytest.mark.parametrize("ity,dtype", [("s32", np.int32), ("s64", np.int64), ("u64", np.uint64),
                                       ("s8", np.int8)])
def test_gather_blocks_huge_indices(ity, dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    idx = rng.integers(info.min, info.max, size=(16, 2), dtype=dtype, endpoint=True)
    idx[:6] = np.array([[0, 0], [4, 5], [1, 2], [3, 1], [2, 9], [5, 0]], dtype)
    x = rng.standard_normal((6, 7)).astype(np.float32)
    check(gather_module(ity, "6,7", "16,2", "16,2,3", BLOCKS), args=[x, idx])


def test_gather_index_vector_dim_first_and_offset_dims_first():
    attrs = ("offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=0, "
             "slice_sizes={5,1}")
    idx = np.array([[3, -1, 40, 0, 6, 2]], np.int32)
    x = np.arange(35, dtype=np.float32).reshape(5, 7)
    check(gather_module("s32", "5,7", "1,6", "5,6", attrs), args=[x, idx])


def test_gather_batching_dims():
    attrs = ("offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, "
             "start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}")
    idx = np.array([[[0], [2]], [[-5], [1]], [[2], [99]], [[1], [1]], [[0], [2**30]]], np.int32)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    check(gather_module("s32", "5,3", "5,2,1", "5,2", attrs), args=[x, idx])


def test_gather_s32_operand_and_fused_consumer():
    check("""
HloModule fused_gather
ENTRY %e (x: s32[7,4], i: s32[5], y: s32[5,4]) -> s32[5,4] {
  %x = s32[7,4] parameter(0)
  %i = s32[5] parameter(1)
  %y = s32[5,4] parameter(2)
  %one = s32[] constant(1)
  %ones = s32[5] broadcast(%one), dimensions={}
  %j = s32[5] add(%i, %ones)
  %g = s32[5,4] gather(%x, %j), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  ROOT %r = s32[5,4] multiply(%g, %y)
}
""", args=[np.arange(28, dtype=np.int32).reshape(7, 4), np.array([0, 6, -2, 3, 2**31 - 1], np.int32),
           np.full((5, 4), 3, np.int32)])


# ----- scatter -------------------------------------------------------------------------
def combiner(ty, body):
    if body is None:  # "replace": the root is parameter 1
        return f"""
%comb (a: {ty}[], b: {ty}[]) -> {ty}[] {{
  %a = {ty}[] parameter(0)
  ROOT %b = {ty}[] parameter(1)
}}
"""
    return f"""
%comb (a: {ty}[], b: {ty}[]) -> {ty}[] {{
  %a = {ty}[] parameter(0)
  %b = {ty}[] parameter(1)
  {body}
}}
"""


COMBINERS = {
    "add": "ROOT %r = {ty}[] add(%a, %b)",
    "assign": None,
    "sub": "ROOT %r = {ty}[] subtract(%a, %b)",  # order-dependent
    "max": "ROOT %r = {ty}[] maximum(%a, %b)",
}


def scatter_module(ty, comb, operand, indices, updates, attrs, ity="s32"):
    return f"""
HloModule s
{combiner(ty, COMBINERS[comb] and COMBINERS[comb].format(ty=ty))}
ENTRY %e (x: {ty}[{operand}], i: {ity}[{indices}], u: {ty}[{updates}]) -> {ty}[{operand}] {{
  %x = {ty}[{operand}] parameter(0)
  %i = {ity}[{indices}] parameter(1)
  %u = {ty}[{updates}] parameter(2)
  ROOT %s = {ty}[{operand}] scatter(%x, %i, %u), {attrs}, to_apply=%comb
}}
"""


SCATTER_ROWS = "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"


@pytest.mark.parametrize("ty", ["f32", "s32", "f64"])
@pytest.mark.parametrize("comb", sorted(COMBINERS))
def test_scatter_rows_duplicates_in_order_and_dropped(ty, comb):
    idx = np.array([1, 1, 7, -1, 1, 5, 2**30, -2**31, 0, 1], np.int32)
    rng = np.random.default_rng(2)
    dtype = {"f32": np.float32, "s32": np.int32, "f64": np.float64}[ty]
    x = (rng.standard_normal((6, 3)) * 10).astype(dtype)
    u = (rng.standard_normal((10, 3)) * 10).astype(dtype)
    check(scatter_module(ty, comb, "6,3", "10", "10,3", SCATTER_ROWS), args=[x, idx, u])


def test_scatter_windows_partly_out_of_bounds_are_skipped():
    attrs = ("update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, "
             "index_vector_dim=1")
    idx = np.array([[0, 0], [5, 1], [4, 1], [2**30, 0], [-1, 0], [4, 2], [3, -2**31], [2, 1]], np.int32)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    u = rng.standard_normal((8, 2, 3)).astype(np.float32)
    check(scatter_module("f32", "add", "6,4", "8,2", "8,2,3", attrs), args=[x, idx, u])


@pytest.mark.parametrize("ity,dtype", [("s32", np.int32), ("s64", np.int64), ("u64", np.uint64),
                                       ("s16", np.int16)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scatter_random_huge_indices_stay_in_bounds(ity, dtype, seed):
    attrs = ("update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={1,0}, "
             "index_vector_dim=1")
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    idx = rng.integers(info.min, info.max, size=(64, 2), dtype=dtype, endpoint=True)
    idx[::3] = rng.integers(0, 5, size=idx[::3].shape).astype(dtype)  # some in range, with repeats
    idx[1] = np.array([info.max, 0], dtype)
    idx[2] = np.array([0, info.min], dtype)
    x = rng.integers(-50, 50, (5, 5)).astype(np.int32)
    u = rng.integers(-50, 50, (64,)).astype(np.int32)
    check(scatter_module("s32", "sub", "5,5", "64,2", "64", attrs, ity=ity), args=[x, idx, u])


def test_scatter_batching_dims():
    attrs = ("update_window_dims={}, inserted_window_dims={1}, input_batching_dims={0}, "
             "scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1}, index_vector_dim=2")
    idx = np.array([[[0], [2]], [[4], [4]], [[-1], [1]]], np.int32)
    x = np.zeros((3, 5), np.float32)
    u = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    check(scatter_module("f32", "add", "3,5", "3,2,1", "3,2", attrs), args=[x, idx, u])


def test_variadic_scatter():
    check("""
HloModule vs
%comb (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %sum = f32[] add(%a, %b)
  %t = s32[] subtract(%ai, %bi)
  ROOT %r = (f32[], s32[]) tuple(%sum, %t)
}
ENTRY %e (x: f32[6,3], xi: s32[6,3], i: s32[7], u: f32[7,3], ui: s32[7,3]) -> (f32[6,3], s32[6,3]) {
  %x = f32[6,3] parameter(0)
  %xi = s32[6,3] parameter(1)
  %i = s32[7] parameter(2)
  %u = f32[7,3] parameter(3)
  %ui = s32[7,3] parameter(4)
  ROOT %s = (f32[6,3], s32[6,3]) scatter(%x, %xi, %i, %u, %ui), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%comb
}
""", args=[np.ones((6, 3), np.float32), np.zeros((6, 3), np.int32), np.array([2, 2, -1, 9, 0, 2, 5], np.int32),
           np.arange(21, dtype=np.float32).reshape(7, 3), np.arange(21, dtype=np.int32).reshape(7, 3)])


def test_scatter_inside_a_loop_fusion():
    """XLA's wrapped scatter: a kLoop fusion whose root is a scatter (the
    element generator, not the sequential kernel)."""
    check("""
HloModule wrapped
%comb (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] subtract(%a, %b)
}
%wrapped_scatter_computation (p0: f32[6,4], p1: s32[5,2], p2: f32[5,2,2]) -> f32[6,4] {
  %p0 = f32[6,4] parameter(0)
  %p1 = s32[5,2] parameter(1)
  %p2 = f32[5,2,2] parameter(2)
  ROOT %s = f32[6,4] scatter(%p0, %p1, %p2), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=%comb
}
ENTRY %e (x: f32[6,4], i: s32[5,2], u: f32[5,2,2]) -> f32[6,4] {
  %x = f32[6,4] parameter(0)
  %i = s32[5,2] parameter(1)
  %u = f32[5,2,2] parameter(2)
  ROOT %f = f32[6,4] fusion(%x, %i, %u), kind=kLoop, calls=%wrapped_scatter_computation
}
""", args=[np.arange(24, dtype=np.float32).reshape(6, 4),
           np.array([[1, 1], [1, 2], [5, 0], [-2**31, 1], [4, 2]], np.int32),
           np.arange(20, dtype=np.float32).reshape(5, 2, 2)])


def test_scatter_empty_updates_copies_operand():
    check(scatter_module("f32", "add", "6,3", "0", "0,3", SCATTER_ROWS),
          args=[np.arange(18, dtype=np.float32).reshape(6, 3), np.zeros(0, np.int32), np.zeros((0, 3), np.float32)])
