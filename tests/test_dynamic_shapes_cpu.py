"""Dynamic shapes on the CPU (dynamic-padder, dynamic_entry): each module
runs on the cpu and the interpreter, and both must give NumPy's answer on
the valid elements, at the dynamic sizes (a dynamic result comes back
sliced to its sizes, as from the interpreter). Sizes range over 0, inner
values and the bound, so padding that leaks into a result shows."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo.parser import parse_hlo_module

COMPUTATIONS = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
"""


def run(text, backend, *args):
    module = parse_hlo_module("HloModule m\n" + COMPUTATIONS + text)
    return xla.compile(module, backend).execute(*args)


def check(text, args, expected):
    for backend in ("interpreter", "cpu"):
        out = run(text, backend, *args)
        out = out if isinstance(out, tuple) else (out,)
        assert len(out) == len(expected)
        for got, want in zip(out, expected):
            got, want = np.asarray(got), np.asarray(want)
            assert got.shape == want.shape, (backend, got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=backend)


def arange(*dims, start=0.0):
    return (np.arange(int(np.prod(dims)), dtype=np.float32) + start).reshape(dims)


@pytest.mark.parametrize("n", [0, 3, 8])
def test_elementwise_on_bounded_parameters(n):
    text = """ENTRY e {
  p = f32[<=8] parameter(0)
  q = f32[<=8] parameter(1)
  a = f32[<=8] add(p, q)
  ROOT e = f32[<=8] exponential(a)
}"""
    x, y = np.linspace(-1, 1, n).astype(np.float32), np.ones(n, np.float32)
    check(text, [x, y], [np.exp(x + y)])


@pytest.mark.parametrize("rows,cols", [(0, 2), (2, 3), (4, 6)])
def test_reduce_does_not_see_the_padding(rows, cols):
    # Negative values: zeros leaking from the padding would win the max.
    text = """ENTRY e {
  p = f32[<=4,<=6] parameter(0)
  init = f32[] constant(-inf)
  r = f32[] reduce(p, init), dimensions={0,1}, to_apply=max
  r1 = f32[<=4] reduce(p, init), dimensions={1}, to_apply=max
  zero = f32[] constant(0)
  s = f32[<=6] reduce(p, zero), dimensions={0}, to_apply=add
  s0 = s32[] get-dimension-size(p), dimensions={0}
  s1 = s32[] get-dimension-size(p), dimensions={1}
  ROOT t = (f32[], f32[<=4], f32[<=6], s32[], s32[]) tuple(r, r1, s, s0, s1)
}"""
    x = -arange(rows, cols, start=1)
    total = x.max() if x.size else -np.inf
    check(text, [x], [total, x.max(axis=1, initial=-np.inf), x.sum(axis=0), rows, cols])


@pytest.mark.parametrize("n", [0, 2, 5])
def test_set_dimension_size_then_reduce(n):
    text = """ENTRY e {
  p = f32[3,5] parameter(0)
  n = s32[] parameter(1)
  d = f32[3,<=5] set-dimension-size(p, n), dimensions={1}
  e = f32[3,<=5] exponential(d)
  zero = f32[] constant(0)
  s = f32[3] reduce(e, zero), dimensions={1}, to_apply=add
  size = s32[] get-dimension-size(d), dimensions={1}
  ROOT t = (f32[3], s32[], f32[3,<=5]) tuple(s, size, e)
}"""
    x = arange(3, 5) / 10
    check(text, [x, np.int32(n)], [np.exp(x[:, :n]).sum(axis=1), n, np.exp(x[:, :n])])


@pytest.mark.parametrize("first,second", [(2, 4), (4, 1), (0, 3)])
def test_set_dimension_size_growing_shows_zeros(first, second):
    text = """ENTRY e {
  p = f32[6] parameter(0)
  n = s32[] parameter(1)
  m = s32[] parameter(2)
  a = f32[<=6] set-dimension-size(p, n), dimensions={0}
  b = f32[<=6] set-dimension-size(a, m), dimensions={0}
  ROOT o = f32[<=6] add(b, b)
}"""
    x = arange(6, start=1)
    want = np.zeros(second, np.float32)
    k = min(first, second)
    want[:k] = 2 * x[:k]
    check(text, [x, np.int32(first), np.int32(second)], [want])


@pytest.mark.parametrize("a,b", [(1, 12), (3, 4), (6, 2), (12, 1)])
def test_dynamic_reshape_of_a_static_operand(a, b):
    text = """ENTRY e {
  p = f32[12] parameter(0)
  a = s32[] parameter(1)
  b = s32[] parameter(2)
  r = f32[<=12,<=12] dynamic-reshape(p, a, b)
  zero = f32[] constant(0)
  s = f32[<=12] reduce(r, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[<=12,<=12], f32[<=12]) tuple(r, s)
}"""
    x = arange(12)
    check(text, [x, np.int32(a), np.int32(b)], [x.reshape(a, b), x.reshape(a, b).sum(axis=0)])


@pytest.mark.parametrize("rows", [0, 1, 4, 6])
def test_dynamic_reshape_of_a_dynamic_operand(rows):
    text = """ENTRY e {
  p = f32[<=12] parameter(0)
  a = s32[] parameter(1)
  two = s32[] constant(2)
  r = f32[<=6,2] dynamic-reshape(p, a, two)
  ROOT t = f32[<=6,2] negate(r)
}"""
    x = arange(2 * rows)
    check(text, [x, np.int32(rows)], [-x.reshape(rows, 2)])


@pytest.mark.parametrize("n", [0, 1, 3, 4])
def test_reshape_of_dynamic_dimensions(n):
    # [<=4,3] -> [<=12] keeps the padding at the end (a plain reshape);
    # [3,<=4] -> [<=12] interleaves it (the padder gathers).
    text = """ENTRY e {
  p = f32[<=4,3] parameter(0)
  q = f32[3,<=4] parameter(1)
  r = f32[<=12] reshape(p)
  back = f32[<=4,3] reshape(r)
  s = f32[<=12] reshape(q)
  ROOT t = (f32[<=12], f32[<=4,3], f32[<=12]) tuple(r, back, s)
}"""
    x, y = arange(n, 3), arange(3, n, start=100)
    check(text, [x, y], [x.reshape(-1), x, y.reshape(-1)])


@pytest.mark.parametrize("n", [0, 2, 5, 8])
def test_slices_of_a_dynamic_dimension(n):
    text = """ENTRY e {
  p = f32[<=8,3] parameter(0)
  s = f32[<=3,3] slice(p), slice={[1:6:2], [0:3:1]}
  f = f32[<=8,2] slice(p), slice={[0:8], [1:3]}
  ROOT t = (f32[<=3,3], f32[<=8,2]) tuple(s, f)
}"""
    x = arange(n, 3)
    check(text, [x], [x[1:6:2], x[:, 1:3]])


@pytest.mark.parametrize("n", [0, 2, 5])
def test_broadcast_and_transpose(n):
    text = """ENTRY e {
  p = f32[<=5] parameter(0)
  b = f32[3,<=5] broadcast(p), dimensions={1}
  t = f32[<=5,3] transpose(b), dimensions={1,0}
  zero = f32[] constant(0)
  r = f32[3] reduce(t, zero), dimensions={0}, to_apply=add
  ROOT o = (f32[<=5,3], f32[3]) tuple(t, r)
}"""
    x = arange(n, start=1)
    b = np.broadcast_to(x, (3, n))
    check(text, [x], [b.T, b.sum(axis=1)])


@pytest.mark.parametrize("m,k", [(0, 0), (2, 3), (4, 0), (1, 2)])
def test_concatenate(m, k):
    text = """ENTRY e {
  p = f32[<=4,2] parameter(0)
  q = f32[<=3,2] parameter(1)
  c = f32[<=7,2] concatenate(p, q), dimensions={0}
  d = f32[<=4,4] concatenate(p, p), dimensions={1}
  ROOT t = (f32[<=7,2], f32[<=4,4]) tuple(c, d)
}"""
    x, y = arange(m, 2, start=1), -arange(k, 2, start=1)
    check(text, [x, y], [np.concatenate([x, y]), np.concatenate([x, x], axis=1)])


@pytest.mark.parametrize("n", [0, 3, 6])
def test_dot_over_a_dynamic_contracting_dimension(n):
    text = """ENTRY e {
  a = f32[2,<=6] parameter(0)
  b = f32[<=6,3] parameter(1)
  c = f32[<=5,4] parameter(2)
  w = f32[4,3] parameter(3)
  d = f32[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  f = f32[<=5,3] dot(c, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[2,3], f32[<=5,3]) tuple(d, f)
}"""
    a, b = arange(2, n), arange(n, 3, start=1)
    c, w = arange(min(n, 5), 4), arange(4, 3) - 5
    check(text, [a, b, c, w], [a @ b, c @ w])


@pytest.mark.parametrize("n", [0, 2, 5])
def test_reverse_of_a_dynamic_dimension(n):
    text = """ENTRY e {
  p = f32[<=5,3] parameter(0)
  r = f32[<=5,3] reverse(p), dimensions={0,1}
  ROOT o = f32[<=5,3] add(r, r)
}"""
    x = arange(n, 3)
    check(text, [x], [2 * x[::-1, ::-1]])


def test_sizes_beyond_the_bound_are_errors_on_both_backends():
    text = """ENTRY e {
  p = f32[4] parameter(0)
  n = s32[] parameter(1)
  ROOT d = f32[<=4] set-dimension-size(p, n), dimensions={0}
}"""
    for backend in ("interpreter", "cpu"):
        with pytest.raises(InvalidArgumentError, match="set-dimension-size d: size 5 is not within"):
            run(text, backend, np.ones(4, np.float32), np.int32(5))
        with pytest.raises(InvalidArgumentError, match="expected shape"):
            run("ENTRY e {\n  ROOT p = f32[<=4] parameter(0)\n}", backend,
                np.ones(5, np.float32))


def test_dynamic_reshape_sizes_must_hold_the_operand():
    text = """ENTRY e {
  p = f32[6] parameter(0)
  a = s32[] parameter(1)
  b = s32[] parameter(2)
  ROOT r = f32[<=6,<=6] dynamic-reshape(p, a, b)
}"""
    for backend in ("interpreter", "cpu"):
        with pytest.raises(InvalidArgumentError, match="hold 4 elements, the operand 6"):
            run(text, backend, np.ones(6, np.float32), np.int32(2), np.int32(2))


def test_reshape_whose_elements_do_not_fill_rows_is_an_error():
    text = """ENTRY e {
  p = f32[<=4,3] parameter(0)
  ROOT r = f32[<=6,2] reshape(p)
}"""
    x = arange(2, 3)
    for backend in ("interpreter", "cpu"):
        np.testing.assert_array_equal(run(text, backend, x), x.reshape(3, 2))
        with pytest.raises(InvalidArgumentError, match="reshape r: the operand's dynamic sizes"):
            run(text, backend, arange(1, 3))


@pytest.mark.parametrize("op", [
    "s = f32[<=4] sort(p), dimensions={0}, to_apply=lt",
    "s = f32[<=6] pad(p, z), padding=1_1",
    "s = f32[<=2] reduce-window(p, z), window={size=2 stride=2}, to_apply=add",
])
def test_ops_the_padder_does_not_handle_are_refused_by_name(op):
    text = """lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
  p = f32[<=4] parameter(0)
  z = f32[] constant(0)
  %s
  ROOT r = f32[] reduce(s, z), dimensions={0}, to_apply=add
}""" % op
    opcode = op.split("]")[1].split("(")[0].strip()
    with pytest.raises(UnimplementedError, match=f"dynamic-padder: {opcode} s:"):
        run(text, "cpu", np.ones(3, np.float32))


def test_executable_reports_the_callers_shapes():
    text = """ENTRY e {
  p = f32[<=4,3] parameter(0)
  ROOT n = f32[<=4,3] negate(p)
}"""
    exe = xla.compile(parse_hlo_module("HloModule m\n" + text), "cpu")
    assert [s.to_text(False) for s in exe.parameter_shapes] == ["f32[<=4,3]"]
    assert exe.result_shape.to_text(False) == "f32[<=4,3]"
    assert not any(i.shape.is_dynamic for i in exe.module.all_instructions())


def test_static_get_dimension_size_inside_a_loop_still_runs():
    text = """cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3] get-tuple-element(s), index=1
  n = s32[] get-dimension-size(x), dimensions={0}
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[3] add(x, x)
  ROOT t = (s32[], f32[3]) tuple(j, y)
}
ENTRY e {
  p = f32[3] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[3]) tuple(zero, p)
  w = (s32[], f32[3]) while(t), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(w), index=1
}"""
    x = arange(3)
    check(text, [x], [8 * x])


def test_ahead_of_time_compilation_refuses_a_dynamic_entry():
    from xla.backends.cpu.compiler import CpuCompiler
    module = parse_hlo_module("HloModule m\nENTRY e {\n  p = f32[<=4] parameter(0)\n"
                              "  ROOT n = f32[<=4] negate(p)\n}\n")
    with pytest.raises(UnimplementedError, match="ahead-of-time compilation of an entry with "
                                                 "dynamic shapes"):
        CpuCompiler().emit(module, {})
