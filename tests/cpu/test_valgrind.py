"""The CPU backend's generated code on adversarial but valid modules, run
under valgrind's memcheck (issue 13): indices far out of range for gather,
scatter, dynamic-slice and dynamic-update-slice (every index type, u64
starts of 2^63 and more, s64's minimum), TopK with k equal to the row,
batched LAPACK potrf/trsm, negative padding, padded and dilated windows,
pads written as rows, empty arrays. Each module is compiled ahead of time (xla.backends.cpu.aot),
linked into a C program that gives every buffer exactly its size (so a
read or write one element past a buffer is an error valgrind reports) and
run under memcheck; it must report no error and compute what the
interpreter computes.

Intra-arena overflows (between temporaries sharing the preallocated
arena) are out of valgrind's sight; buffers, arguments and results are not.

valgrind comes with `make setup` (Debian's package); without it these
tests skip, saying so.
"""
import pathlib
import platform
import shutil
import subprocess

import numpy as np
import pytest

from xla.backends.cpu import aot
from xla.backends.cpu.executable import from_physical, to_physical
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from xla.tools import arrays

VALGRIND = shutil.which("valgrind")
pytestmark = [
    pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed (it comes with "
                       "`make setup`: Debian's valgrind package); the memcheck tests are skipped"),
    pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                       reason="links x86-64 objects natively"),
]

# Every buffer gets exactly its size, so memcheck sees one byte past it.
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "m.h"
#ifndef SHRINK
#define SHRINK 0   /* bytes taken off every buffer but the arguments (the test of the test) */
#endif

int main(int argc, char** argv) {
  void* table[m_NUM_BUFFERS];
  void* owned[m_NUM_BUFFERS];   /* the entry point fills in the constants' entries */
  if (argc != 3) return 2;
  for (int i = 0; i < m_NUM_BUFFERS; ++i) {
    table[i] = owned[i] = NULL;
    if (!m_BUFFER_IS_CONSTANT[i] && m_BUFFER_SIZES[i] > 0) {
      int arg = 0;
      for (int k = 0; k < m_NUM_ARG_ARRAYS; ++k) arg |= m_ARG_INDICES[k] == i;
      size_t size = (size_t)m_BUFFER_SIZES[i] - (arg || m_BUFFER_SIZES[i] <= SHRINK ? 0 : SHRINK);
      table[i] = owned[i] = aligned_alloc(m_BUFFER_ALIGNMENT, size);
      memset(table[i], 0xA5, size);
    }
  }
  FILE* in = fopen(argv[1], "rb");
  for (int k = 0; k < m_NUM_ARG_ARRAYS; ++k)
    if ((int64_t)fread(table[m_ARG_INDICES[k]], 1, m_ARG_SIZES[k], in) != m_ARG_SIZES[k]) return 3;
  fclose(in);
  m(table);
  FILE* out = fopen(argv[2], "wb");
  for (int k = 0; k < m_NUM_RESULTS; ++k) {
    const char* p = (const char*)table[m_RESULT_INDICES[k]] + m_RESULT_OFFSETS[k];
    if ((int64_t)fwrite(p, 1, m_RESULT_SIZES[k], out) != m_RESULT_SIZES[k]) return 4;
  }
  fclose(out);
  for (int i = 0; i < m_NUM_BUFFERS; ++i) free(owned[i]);
  return 0;
}
"""

INDEXING = """HloModule indexing
ENTRY e {
  x = f32[5,4] parameter(0)
  i64 = s64[3,1] parameter(1)
  u64 = u64[] parameter(2)
  s64 = s64[] parameter(3)
  s8 = s8[] parameter(4)
  upd = f32[3,4] parameter(5)
  g = f32[3,4] gather(x, i64), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  s = f32[5,4] scatter(x, i64, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ds1 = f32[2,4] dynamic-slice(x, u64, u64), dynamic_slice_sizes={2,4}
  ds2 = f32[2,4] dynamic-slice(x, s64, s64), dynamic_slice_sizes={2,4}
  ds3 = f32[2,3] dynamic-slice(x, s8, s8), dynamic_slice_sizes={2,3}
  small = f32[2,2] constant({{1,2},{3,4}})
  dus1 = f32[5,4] dynamic-update-slice(x, small, u64, u64)
  dus2 = f32[5,4] dynamic-update-slice(x, small, s64, s64)
  ROOT t = (f32[3,4], f32[5,4], f32[2,4], f32[2,4], f32[2,3], f32[5,4], f32[5,4]) tuple(g, s, ds1, ds2, ds3, dus1, dus2)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""
INDEXING_ARGS = [
    np.arange(20, dtype=np.float32).reshape(5, 4),
    np.array([[-9223372036854775808], [5], [9223372036854775807]], np.int64),
    np.uint64(2**63 + 7),
    np.int64(-2**63),
    np.int8(-128),
    np.full((3, 4), 100, np.float32),
]

WINDOWS = """HloModule windows
ENTRY e {
  x = f32[6,5] parameter(0)
  z = f32[] constant(0)
  p = f32[3,9] pad(x, z), padding=-2_-1x3_1_0
  rw = f32[4,2] reduce-window(x, z), window={size=3x3 stride=2x2 pad=1_2x1_1 lhs_dilate=1x1 rhs_dilate=1x2}, to_apply=add
  src = f32[3,2] parameter(1)
  sas = f32[6,5] select-and-scatter(x, src, z), window={size=3x3 stride=2x3 pad=1_1x1_1}, select=ge, scatter=add
  e = f32[0,5] slice(x), slice={[3:3], [0:5]}
  r = f32[6,5] reverse(x), dimensions={0,1}
  ROOT t = (f32[3,9], f32[4,2], f32[6,5], f32[0,5], f32[6,5]) tuple(p, rw, sas, e, r)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
"""
WINDOWS_ARGS = [np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32),
                np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)]

LIBRARY = """HloModule library
ENTRY e {
  x = f32[8,4] parameter(0)
  a = f32[2,4,4] parameter(1)
  b = f32[2,4,3] parameter(2)
  k = (f32[8,4], s32[8,4]) custom-call(x), custom_call_target="TopK"
  k1 = (f32[8,1], s32[8,1]) custom-call(x), custom_call_target="TopK"
  c = (f32[2,4,4], s32[2]) custom-call(a), custom_call_target="lapack_spotrf_ffi", backend_config={uplo = 76 : ui8}
  f = f32[2,4,4] get-tuple-element(c), index=0
  s = f32[2,4,3] custom-call(f, b), custom_call_target="lapack_strsm_ffi", backend_config={side = 76 : ui8, uplo = 76 : ui8, trans_x = 78 : ui8, diag = 78 : ui8}
  ROOT t = ((f32[8,4], s32[8,4]), (f32[8,1], s32[8,1]), (f32[2,4,4], s32[2]), f32[2,4,3]) tuple(k, k1, c, s)
}
"""
_m = np.random.default_rng(2).standard_normal((2, 4, 4)).astype(np.float32)
LIBRARY_ARGS = [np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32),
                (_m @ np.swapaxes(_m, 1, 2) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32),
                np.random.default_rng(4).standard_normal((2, 4, 3)).astype(np.float32)]

# Pads of the minor dimension written as rows (emit_pad.py): the operand's
# run must read exactly its row, from the first and the last row too.
PADS = """HloModule pads
ENTRY e {
  x = f32[37,113] parameter(0)
  z = f32[] constant(0)
  e = f32[37,113] exponential(x)
  p = f32[40,120] pad(e, z), padding=1_2x3_4
  y = s8[61,70] parameter(1)
  c = s8[] constant(-3)
  q = s8[61,77] pad(y, c), padding=0_0x0_7
  ROOT t = (f32[40,120], s8[61,77]) tuple(p, q)
}
"""
PADS_ARGS = [np.random.default_rng(5).standard_normal((37, 113)).astype(np.float32),
             np.random.default_rng(6).integers(-100, 100, (61, 70)).astype(np.int8)]

CASES = {"indexing": (INDEXING, INDEXING_ARGS), "windows": (WINDOWS, WINDOWS_ARGS),
         "library": (LIBRARY, LIBRARY_ARGS), "pads": (PADS, PADS_ARGS)}


def memcheck(tmp_path, case, shrink=0):
    """Compiles CASES[case], runs it under memcheck; (CompletedProcess, module text, args)."""
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed: run `make setup`"
    text, args = CASES[case]
    module = parse_hlo_module(text)
    params = [p.shape for p in module.entry.parameters]
    result = aot.aot_compile(module, "x86_64", "m", runtime_c=True)
    (tmp_path / "m.o").write_bytes(result.object_bytes)
    (tmp_path / "m.h").write_text(result.header_text)
    (tmp_path / "main.c").write_text(HARNESS)
    sources = [tmp_path / "main.c", tmp_path / "m.o"]
    if result.runtime_source is not None:
        (tmp_path / aot.RUNTIME_C_FILE).write_text(result.runtime_source)
        sources.append(tmp_path / aot.RUNTIME_C_FILE)
    link = subprocess.run([gcc, "-O1", "-g", "-std=c11", f"-DSHRINK={shrink}", f"-I{tmp_path}",
                           *map(str, sources), "-lm", "-o", str(tmp_path / "m")],
                          capture_output=True, text=True, timeout=120)
    assert link.returncode == 0, link.stderr
    (tmp_path / "in.bin").write_bytes(b"".join(
        to_physical(np.asarray(a, s.dtype), s).tobytes() for a, s in zip(args, params)))
    run = subprocess.run([VALGRIND, "--error-exitcode=99", "--leak-check=no", "-q",
                          str(tmp_path / "m"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                         capture_output=True, text=True, timeout=300)
    return run, text, args


@pytest.mark.parametrize("case", sorted(CASES))
def test_generated_code_is_memcheck_clean(tmp_path, case):
    run, text, args = memcheck(tmp_path, case)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "Invalid" not in run.stderr and "uninitialised" not in run.stderr, run.stderr[-4000:]
    expected = arrays.flatten_result(Evaluator().evaluate(parse_hlo_module(text), list(args)))
    leaves = [s for _, s in parse_hlo_module(text).entry.root_instruction.shape.leaves() if s.is_array]
    data, offset = (tmp_path / "out.bin").read_bytes(), 0
    for i, (shape, want) in enumerate(zip(leaves, expected)):
        n = shape.byte_size()
        got = from_physical(np.frombuffer(data[offset:offset + n], dtype=shape.dtype), shape)
        offset += n
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{case} result {i}")
    assert offset == len(data)


def test_memcheck_sees_one_element_past_a_buffer(tmp_path):
    """The same program with every buffer but the arguments 4 bytes short:
    memcheck reports the generated code's writes to the last element (so a
    clean run means something)."""
    run, _, _ = memcheck(tmp_path, "indexing", shrink=4)
    assert run.returncode == 99, run.stderr[-2000:]
    lines = run.stderr.splitlines()
    in_kernels = [lines[i + 1] for i, line in enumerate(lines[:-1])
                  if "Invalid write" in line and "main.c" not in lines[i + 1]]
    assert in_kernels, run.stderr[-2000:]
