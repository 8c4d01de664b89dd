"""Dynamic dimensions: set-dimension-size, get-dimension-size and
dynamic-reshape on the interpreter (arrays held at their dynamic sizes,
as XLA's dynamic padder makes reductions and elementwise ops see only the
valid elements), and get-dimension-size of static dimensions folded to a
constant for every backend."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError
from xla.hlo.parser import parse_hlo_module

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def run(text, backend, *args):
    return np.asarray(xla.compile(parse_hlo_module(text), backend).execute(*args))


def test_reduce_over_a_dynamic_dimension_sees_the_valid_elements():
    text = "HloModule m\n" + ADD + """
ENTRY e {
  p = f32[3,5] parameter(0)
  n = s32[] parameter(1)
  d = f32[3,<=5] set-dimension-size(p, n), dimensions={1}
  e = f32[3,<=5] exponential(d)
  zero = f32[] constant(0)
  s = f32[3] reduce(e, zero), dimensions={1}, to_apply=add
  size = s32[] get-dimension-size(d), dimensions={1}
  ROOT t = (f32[3], s32[]) tuple(s, size)
}
"""
    x = np.arange(15, dtype=np.float32).reshape(3, 5) / 10
    for n in (0, 2, 5):
        out = xla.compile(parse_hlo_module(text), "interpreter").execute(x, np.int32(n))
        np.testing.assert_allclose(np.asarray(out[0]), np.exp(x[:, :n]).sum(axis=1), rtol=1e-6)
        assert int(np.asarray(out[1])) == n


def test_set_dimension_size_beyond_the_bound_is_an_error():
    text = """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  n = s32[] parameter(1)
  ROOT d = f32[<=4] set-dimension-size(p, n), dimensions={0}
}
"""
    for n in (-1, 5):
        with pytest.raises(InvalidArgumentError, match="set-dimension-size d: size"):
            run(text, "interpreter", np.ones(4, np.float32), np.int32(n))


def test_dynamic_reshape_sizes_are_visible_to_get_dimension_size():
    text = """HloModule m
ENTRY e {
  p = f32[6] parameter(0)
  a = s32[] parameter(1)
  b = s32[] parameter(2)
  r = f32[<=6,<=6] dynamic-reshape(p, a, b)
  ROOT s = s32[] get-dimension-size(r), dimensions={0}
}
"""
    assert int(run(text, "interpreter", np.ones(6, np.float32), np.int32(2), np.int32(3))) == 2


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_get_dimension_size_of_a_static_dimension(backend):
    text = """HloModule m
ENTRY e {
  p = f32[4,7] parameter(0)
  s = s32[] get-dimension-size(p), dimensions={1}
  ROOT t = s32[] multiply(s, s)
}
"""
    assert int(run(text, backend, np.ones((4, 7), np.float32))) == 49
    if backend == "cpu":
        module = xla.compile(parse_hlo_module(text), "cpu").module
        assert not any(i.opcode == "get-dimension-size" for i in module.all_instructions())


def test_cpu_runs_dynamic_dimensions_padded():
    """The cpu pads dynamic dimensions (dynamic-padder) and returns the
    result at its dynamic size, as the interpreter does
    (tests/test_dynamic_shapes_cpu.py has the ops)."""
    text = """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  n = s32[] parameter(1)
  ROOT d = f32[<=4] set-dimension-size(p, n), dimensions={0}
}
"""
    x = np.arange(4, dtype=np.float32)
    for backend in ("interpreter", "cpu"):
        np.testing.assert_array_equal(run(text, backend, x, np.int32(3)), x[:3])
