"""dynamic-index-splitter: start indices as one vector become scalars."""
import numpy as np

import xla
from pass_test_util import assert_same_results, opcodes, run_pass
from xla.service.dynamic_index_splitter import DynamicIndexSplitter

SLICE = """HloModule m
ENTRY e {
  x = f32[4,5] parameter(0)
  i = s32[2] parameter(1)
  ROOT d = f32[2,2] dynamic-slice(x, i), dynamic_slice_sizes={2,2}
}"""

UPDATE = """HloModule m
ENTRY e {
  x = f32[4,5] parameter(0)
  v = f32[2,2] parameter(1)
  i = s32[2] parameter(2)
  ROOT d = f32[4,5] dynamic-update-slice(x, v, i)
}"""


def test_vector_start_indices_become_scalars():
    for text, first in ((SLICE, 1), (UPDATE, 2)):
        module, changed = run_pass(DynamicIndexSplitter(), text)
        assert changed
        root = module.entry.root_instruction
        assert [o.shape.rank for o in root.operands[first:]] == [0, 0]
        assert opcodes(module).count("slice") == 2 and opcodes(module).count("reshape") == 2
        for starts in ([1, 2], [9, -3], [0, 0]):
            args = [np.arange(20, dtype=np.float32).reshape(4, 5)]
            if first == 2:
                args.append(np.full((2, 2), -1, np.float32))
            args.append(np.array(starts, np.int32))
            assert_same_results(text, module, args=args)


def test_scalar_start_indices_are_left_alone():
    text = SLICE.replace("i = s32[2] parameter(1)", "i = s32[] parameter(1)\n  j = s32[] parameter(2)") \
                .replace("dynamic-slice(x, i)", "dynamic-slice(x, i, j)")
    _, changed = run_pass(DynamicIndexSplitter(), text)
    assert not changed


def test_the_cpu_backend_runs_the_vector_form():
    # Was: "the cpu backend does not support dynamic-slice (start indices as one vector)"
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    got = xla.compile(SLICE, "cpu").execute(x, np.array([9, -3], np.int32))
    np.testing.assert_array_equal(got, x[2:4, 0:2])   # clamped to fit, as XLA does
    got = xla.compile(UPDATE, "cpu").execute(np.zeros((4, 5), np.float32),
                                              np.ones((2, 2), np.float32), np.array([3, 4], np.int32))
    want = np.zeros((4, 5), np.float32)
    want[2:4, 3:5] = 1
    np.testing.assert_array_equal(got, want)
