"""xla.lax's slice, gather and scatter family (lax/slicing.py) against
values computed with jax.lax (jax 0.10, 64-bit types enabled, written out
below), on cpu and the interpreter: JAX's dimension numbers and the
out-of-bounds modes (clip, fill or drop, promise in bounds), and errors."""
import numpy as np
import pytest

import xla
from xla import lax
from xla.errors import InvalidArgumentError, ShapeError

BACKENDS = ["cpu", "interpreter"]
NAN = np.nan
X = np.arange(20.0).reshape(4, 5)
# Windows of 1x2 at (row, col) starts; (-1, 0) and (2, 4) do not fit.
IDX = np.array([[0, 1], [3, 3], [-1, 0], [2, 4]])
GATHER = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1))
JAX_GATHER = {
    "clip": [[1.0, 2.0], [18.0, 19.0], [0.0, 1.0], [13.0, 14.0]],
    "fill": [[1.0, 2.0], [18.0, 19.0], [NAN, NAN], [NAN, NAN]],
    "promise_in_bounds": [[1.0, 2.0], [18.0, 19.0], [0.0, 1.0], [13.0, 14.0]],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", sorted(JAX_GATHER))
def test_gather_modes_match_jax(backend, mode):
    out = xla.jit(lambda x, i: lax.gather(x, i, GATHER, (1, 2), mode=mode), backend=backend)(X, IDX)
    np.testing.assert_array_equal(out, JAX_GATHER[mode])


def test_gather_fill_values_and_row_gather():
    i32 = lax.gather(X.astype(np.int32), IDX, GATHER, (1, 2), mode="fill")
    np.testing.assert_array_equal(i32, [[1, 2], [18, 19], [-2**31] * 2, [-2**31] * 2])
    seven = lax.gather(X, IDX, GATHER, (1, 2), mode=lax.GatherScatterMode.FILL_OR_DROP, fill_value=-7.0)
    np.testing.assert_array_equal(seven, [[1.0, 2.0], [18.0, 19.0], [-7.0, -7.0], [-7.0, -7.0]])
    rows = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    np.testing.assert_array_equal(lax.gather(X, np.array([[2], [0], [5]]), rows, (1, 5), mode="clip"),
                                  X[[2, 0, 3]])


POINTS = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1),
                                     scatter_dims_to_operand_dims=(0, 1))
# (0, 1) twice (combined), (3, 4) in bounds, (4, 0) and (-1, 2) out of bounds.
SI = np.array([[0, 1], [3, 4], [0, 1], [4, 0], [-1, 2]])
SU = np.array([10.0, 20.0, 30.0, 40.0, 50.0])


def _with(changes):
    out = X.copy()
    for (r, c), v in changes.items():
        out[r, c] = v
    return out


JAX_SCATTER = {
    ("scatter_add", "fill"): _with({(0, 1): 41.0, (3, 4): 39.0}),
    ("scatter_add", "clip"): _with({(0, 1): 41.0, (3, 4): 39.0, (3, 0): 55.0, (0, 2): 52.0}),
    ("scatter_mul", "fill"): _with({(0, 1): 300.0, (3, 4): 380.0}),
    ("scatter_mul", "clip"): _with({(0, 1): 300.0, (3, 4): 380.0, (3, 0): 600.0, (0, 2): 100.0}),
    ("scatter_min", "fill"): X,
    ("scatter_min", "clip"): X,
    ("scatter_max", "fill"): _with({(0, 1): 30.0, (3, 4): 20.0}),
    ("scatter_max", "clip"): _with({(0, 1): 30.0, (3, 4): 20.0, (3, 0): 40.0, (0, 2): 50.0}),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, mode", sorted(JAX_SCATTER))
def test_scatter_combiners_and_modes_match_jax(backend, name, mode):
    fn = getattr(lax, name)
    out = xla.jit(lambda x, i, u: fn(x, i, u, POINTS, mode=mode), backend=backend)(X, SI, SU)
    np.testing.assert_array_equal(out, JAX_SCATTER[(name, mode)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_scatter_replaces_and_drops_or_clips(backend):
    i, u = SI[1:], SU[1:]      # no repeated index: the replaced value is defined
    drop = xla.jit(lambda x, i, u: lax.scatter(x, i, u, POINTS), backend=backend)(X, i, u)
    np.testing.assert_array_equal(drop, _with({(0, 1): 30.0, (3, 4): 20.0}))
    clip = xla.jit(lambda x, i, u: lax.scatter(x, i, u, POINTS, mode="clip"), backend=backend)(X, i, u)
    np.testing.assert_array_equal(clip, _with({(0, 1): 30.0, (3, 4): 20.0, (3, 0): 40.0, (0, 2): 50.0}))


def test_scatter_add_of_row_windows_and_slice():
    rows = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))
    out = lax.scatter_add(X, np.array([[1], [1], [3]]), np.ones((3, 5)), rows)
    want = X.copy()
    want[1] += 2
    want[3] += 1
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(lax.slice(X, (1, 0), (4, 5), (2, 2)), [[5.0, 7.0, 9.0], [15.0, 17.0, 19.0]])
    np.testing.assert_array_equal(lax.slice(X, (0, 2), (4, 4)), X[:, 2:4])


def test_dynamic_slice_keeps_indices_of_one_type_and_narrows_mixed_ones():
    def f(x, i, j):
        return lax.dynamic_slice(x, (i, j), (2, 2))
    wide = xla.jit(f).lower(X, np.int64(3), np.int64(-1)).as_hlo_text()
    mixed = xla.jit(f).lower(X, np.int64(3), np.int8(-1)).as_hlo_text()
    assert "convert" not in wide and "s32[]" not in wide
    assert "s32[]" in mixed
    for args in ((np.int64(3), np.int64(-1)), (np.int64(3), np.int8(-1)), (np.int64(-9), np.int64(9))):
        i, j = (int(a) for a in args)
        i, j = i + 4 if i < 0 else i, j + 5 if j < 0 else j
        i, j = min(max(i, 0), 2), min(max(j, 0), 3)     # XLA clamps the start so the slice fits
        np.testing.assert_array_equal(xla.jit(f)(X, *args), X[i:i + 2, j:j + 2])


@pytest.mark.parametrize("call, error, message", [
    (lambda: lax.slice(X, (0, 0), (5, 5)), ShapeError, r"slice: \[0:5:1\] is not a slice of dimension 0"),
    (lambda: lax.slice(X, (0,), (2,)), ShapeError, "one entry per dimension"),
    (lambda: lax.gather(X, IDX.astype(float), GATHER, (1, 2)), ShapeError, "integer array"),
    (lambda: lax.gather(X, IDX, GATHER, (1, 2, 3)), ShapeError, "one size per dimension"),
    (lambda: lax.gather(X, IDX, GATHER, (1, 2), mode="wrap"), InvalidArgumentError, "unknown gather/scatter mode"),
    (lambda: lax.gather(X, IDX, (1,), (1, 2)), InvalidArgumentError, "GatherDimensionNumbers"),
    (lambda: lax.scatter_add(X, SI, SU.astype(np.float32), POINTS), ShapeError, "operand's dtype"),
    (lambda: lax.scatter(X, SI[:, :1], SU, POINTS), ShapeError, "scatter_dims_to_operand_dims"),
])
def test_errors_name_the_function_and_the_rule(call, error, message):
    with pytest.raises(error, match=message):
        call()
