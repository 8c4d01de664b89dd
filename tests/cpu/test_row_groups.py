"""Row groups (xla/backends/cpu/row_groups.py): consecutive row-parallel
kernels run block by block of rows in one parallel call. Grouped modules
must give exactly the results of the kernels run one after the other, and
kernels that read another row of a group's output, or overwrite what the
group still reads, must stay out of the group."""
import gzip
import os
import re

import numpy as np
import pytest

import xla
from xla.backends.cpu import row_groups
from xla.hlo.evaluator.evaluator import Evaluator
from xla.hlo.parser import parse_hlo_module
from hlo_texts import REDUCERS, softmax

R, C = 512, 1000  # 512K elements: every kernel is parallel

# jax.nn-style layernorm on f32[256, 1024] as JAX lowers it
# (benchmarks/modules/rt_layernorm_f32_256K.hlo.gz, gen_runtime_modules.py):
# its keepdims means go [256] -> [256, 1] -> [256] through reshapes, which
# are bitcasts in the fusions.
JAX_LAYERNORM = os.path.join(os.path.dirname(__file__), "fixtures",
                             "layernorm_f32_256K_jax.hlo.gz")

# Causal self-attention on f32[4, 128, 256] with 8 heads as JAX lowers it
# (a copy of benchmarks/modules/attention.hlo.gz, gen_compile_modules.py):
# the scores are f32[4, 8, 128, 128], 4 batches of 1024 rows.
JAX_ATTENTION = os.path.join(os.path.dirname(__file__), "fixtures", "attention_f32_jax.hlo.gz")

SOFTMAX = softmax(R, C)

LAYERNORM = f"""HloModule layernorm
{REDUCERS}
ENTRY %main (x: f32[{R},{C}], g: f32[{C}]) -> f32[{R},{C}] {{
  %x = f32[{R},{C}] parameter(0)
  %g = f32[{C}] parameter(1)
  %zero = f32[] constant(0)
  %s1 = f32[{R}] reduce(%x, %zero), dimensions={{1}}, to_apply=%add
  %inv = f32[] constant(0.001)
  %invb = f32[{R}] broadcast(%inv), dimensions={{}}
  %mean = f32[{R}] multiply(%s1, %invb)
  %meanb = f32[{R},{C}] broadcast(%mean), dimensions={{0}}
  %xc = f32[{R},{C}] subtract(%x, %meanb)
  %sq = f32[{R},{C}] multiply(%xc, %xc)
  %s2 = f32[{R}] reduce(%sq, %zero), dimensions={{1}}, to_apply=%add
  %var = f32[{R}] multiply(%s2, %invb)
  %rs = f32[{R}] rsqrt(%var)
  %rsb = f32[{R},{C}] broadcast(%rs), dimensions={{0}}
  %xn = f32[{R},{C}] multiply(%xc, %rsb)
  %gb = f32[{R},{C}] broadcast(%g), dimensions={{1}}
  ROOT %y = f32[{R},{C}] multiply(%xn, %gb)
}}
"""

# Row r of the result reads the maximum of row R-1-r: the second kernel
# must not run on a block before the first has finished every row.
REVERSED_ROWS = f"""HloModule reversed_rows
{REDUCERS}
ENTRY %main (x: f32[{R},{C}]) -> f32[{R},{C}] {{
  %x = f32[{R},{C}] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[{R}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %rv = f32[{R}] reverse(%mx), dimensions={{0}}
  %bc = f32[{R},{C}] broadcast(%rv), dimensions={{0}}
  ROOT %out = f32[{R},{C}] subtract(%x, %bc)
}}
"""

# The maxima broadcast along columns (row r reads all of %mx): not row-local.
ALL_ROWS = f"""HloModule all_rows
{REDUCERS}
ENTRY %main (x: f32[{C},{C}]) -> f32[{C},{C}] {{
  %x = f32[{C},{C}] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[{C}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %bc = f32[{C},{C}] broadcast(%mx), dimensions={{1}}
  ROOT %out = f32[{C},{C}] subtract(%x, %bc)
}}
"""


def parallel_calls(exe):
    # The driver as LLVM optimized it: one module with the kernels inlined,
    # or at O0 with the kernels compiled separately.
    return re.findall(r"call void @__xla_cpu_parallel_for\(ptr (?:nonnull )?@([\w.]+)",
                      exe.optimized_ir_text)


def run(text, args):
    exe = xla.compile(text, backend="cpu")
    return exe, exe.execute(*args)


def ungrouped(text, args, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(row_groups.Group, "admits", lambda self, access: False)
        return run(text, args)


def args_for(text, seed=0):
    rng = np.random.default_rng(seed)
    module = parse_hlo_module(text)
    return [(rng.standard_normal(p.shape.dimensions) * 3).astype(np.float32)
            for p in module.entry.parameters]


def softmax_variant(root_lines, root_shape):
    """SOFTMAX whose exponentials are also read outside the group."""
    head, _, _ = SOFTMAX.partition("  ROOT %out")
    head = head.replace(f"-> f32[{R},{C}] {{{{", f"-> {root_shape} {{{{")
    head = head.replace(f"-> f32[{R},{C}] {{", f"-> {root_shape} {{")
    return head + f"  %out = f32[{R},{C}] divide(%e, %sb)\n" + root_lines + "}\n"


# The exponentials are also a result of the module.
E_LIVE_OUT = softmax_variant(f"  ROOT %t = (f32[{R},{C}], f32[{R},{C}]) tuple(%out, %e)\n",
                             f"(f32[{R},{C}], f32[{R},{C}])")
# A kernel outside the group (it reads the rows reversed) reads them later.
E_READ_LATER = softmax_variant(
    f"  %rev = f32[{R},{C}] reverse(%e), dimensions={{0}}\n"
    f"  ROOT %t = (f32[{R},{C}], f32[{R},{C}]) tuple(%out, %rev)\n",
    f"(f32[{R},{C}], f32[{R},{C}])")


def scratch_rows(exe):
    return re.findall(r'%"rows(?:\.\d+)?" = alloca i8, i64 (\d+)', exe.ir_text)


def test_group_temporaries_live_in_scratch_rows():
    # Softmax's exponentials are written and read inside the group only:
    # they go to a few rows of scratch instead of the 2 MB arena slot.
    args = args_for(SOFTMAX)
    exe, got = run(SOFTMAX, args)
    sizes = [int(n) for n in scratch_rows(exe)]
    assert len(sizes) == 1 and 0 < sizes[0] <= row_groups.MAX_SCRATCH_BYTES
    assert (sizes[0] - 64) % (C * 4) == 0
    e = np.exp(args[0] - args[0].max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("text", [E_LIVE_OUT, E_READ_LATER])
def test_temporaries_read_elsewhere_stay_in_memory(text):
    args = args_for(text)
    exe, got = run(text, args)
    assert scratch_rows(exe) == []
    expected = Evaluator().evaluate(parse_hlo_module(text), args)
    for g, w in zip(got, expected):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("text,kernels", [(SOFTMAX, 3), (LAYERNORM, 3)])
def test_row_parallel_chains_run_as_one_group(text, kernels, monkeypatch):
    args = args_for(text)
    exe, got = run(text, args)
    calls = parallel_calls(exe)
    assert len(calls) == 1 and calls[0].startswith("row_group"), calls
    plain, want = ungrouped(text, args, monkeypatch)
    assert len(parallel_calls(plain)) == kernels
    # The same elements computed the same way: bit-identical.
    np.testing.assert_array_equal(got, want)
    expected = Evaluator().evaluate(parse_hlo_module(text), args)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)


def test_jax_keepdims_layernorm_runs_as_one_group(monkeypatch):
    # Its three kernels read the row means and variances through the
    # keepdims bitcasts: row-local, so one group (x read from memory once).
    text = gzip.open(JAX_LAYERNORM, "rt").read()
    x, g, b = args = args_for(text)
    exe, got = run(text, args)
    calls = parallel_calls(exe)
    assert len(calls) == 1 and calls[0].startswith("row_group"), calls
    plain, want = ungrouped(text, args, monkeypatch)
    assert len(parallel_calls(plain)) == 3
    np.testing.assert_array_equal(got, want)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(got, (x64 - mean) / np.sqrt(var + 1e-5) * g + b,
                               rtol=1e-5, atol=1e-5)


def test_attention_softmax_groups_rows_across_batches_and_heads(monkeypatch):
    # The scores' most major dimension has 4 batches: the softmax kernels
    # split the linear index of [batch, head, query] instead (4096 rows), as
    # one group. Buffer assignment gives the exponentials the bytes of the
    # scores the group's first kernel reads: they must stay in the arena
    # (a scratch would hand that kernel the scratch for its input).
    text = gzip.open(JAX_ATTENTION, "rt").read()
    args = [a * np.float32(0.3) for a in args_for(text)]
    exe, got = run(text, args)
    groups = re.findall(r"call void @__xla_cpu_parallel_for\(ptr (?:nonnull )?@(row_group[\w.]*), "
                        r"ptr [^,]+, i64 (\d+)", exe.optimized_ir_text)
    assert [int(n) for _, n in groups] == [4 * 8 * 128], groups
    plain, want = ungrouped(text, args, monkeypatch)
    assert not any(c.startswith("row_group") for c in parallel_calls(plain))
    np.testing.assert_array_equal(got, want)
    expected = Evaluator().evaluate(parse_hlo_module(text), args)
    # (The projections' sums reach ~400: relative to the largest.)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


# The row maxima reshaped to [2, R/2], transposed and reshaped back: row r
# of the result reads another row's maximum.
RESHAPED_ROWS = f"""HloModule reshaped_rows
{REDUCERS}
ENTRY %main (x: f32[{R},{C}]) -> f32[{R},{C}] {{
  %x = f32[{R},{C}] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[{R}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %sp = f32[2,{R // 2}] reshape(%mx)
  %tr = f32[{R // 2},2] transpose(%sp), dimensions={{1,0}}
  %back = f32[{R}] reshape(%tr)
  %bc = f32[{R},{C}] broadcast(%back), dimensions={{0}}
  ROOT %out = f32[{R},{C}] subtract(%x, %bc)
}}
"""


def test_reshaped_dimension():
    module = parse_hlo_module("""HloModule m
ENTRY %main (a: f32[64], c: f32[8,16]{0,1}) -> (f32[64,1], f32[1,64], f32[8,8], f32[16,8]) {
  %a = f32[64] parameter(0)
  %c = f32[8,16]{0,1} parameter(1)
  %keep = f32[64,1] reshape(%a)
  %lead = f32[1,64] reshape(%a)
  %split = f32[8,8] reshape(%a)
  %cm = f32[16,8]{1,0} bitcast(%c)
  ROOT %t = (f32[64,1], f32[1,64], f32[8,8], f32[16,8]) tuple(%keep, %lead, %split, %cm)
}
""")
    by_name = {i.name: i for i in module.entry.instructions}
    dim = row_groups._reshaped_dimension
    assert dim(by_name["keep"], 0) == 0 and dim(by_name["keep"], None) is None
    assert dim(by_name["lead"], 1) == 0
    # [64] -> [8, 8]: neither dimension carries the whole index.
    assert dim(by_name["split"], 0) is None
    # A bitcast of a column-major [8, 16]: its major dimension (16 long)
    # is the row-major [16, 8]'s first.
    assert dim(by_name["cm"], 0) == 1


@pytest.mark.parametrize("text", [REVERSED_ROWS, ALL_ROWS, RESHAPED_ROWS])
def test_reads_of_other_rows_stay_out_of_the_group(text):
    args = args_for(text)
    exe, got = run(text, args)
    calls = parallel_calls(exe)
    assert len(calls) == 2 and not any(c.startswith("row_group") for c in calls), calls
    expected = Evaluator().evaluate(parse_hlo_module(text), args)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def access(rows, reads=(), writes=()):
    a = row_groups.KernelAccess(rows)
    a.reads = list(reads)
    a.writes = list(writes)
    return a


def test_admission_rules():
    x, y, z = (1, 0, 4096), (0, 0, 4096), (0, 4096, 8192)
    first = access(64, reads=[(x, True)], writes=[y])
    group = row_groups.Group(None, None, first, 4)
    # Reads the group's output row-locally: joins.
    assert group.admits(access(64, reads=[(y, True)], writes=[z]))
    # Another row count, or a read of other rows of the group's output: no.
    assert not group.admits(access(32, reads=[(y, True)], writes=[z]))
    assert not group.admits(access(64, reads=[(y, False)], writes=[z]))
    # A read overlapping part of the group's output: no.
    assert not group.admits(access(64, reads=[((0, 2048, 6144), True)], writes=[z]))
    # Overwriting the group's output slice in place (read row-locally): yes;
    # overwriting a buffer the group reads at other rows: no.
    assert group.admits(access(64, reads=[(y, True)], writes=[y]))
    spread = row_groups.Group(None, None, access(64, reads=[(z, False)], writes=[y]), 4)
    assert not spread.admits(access(64, reads=[(y, True)], writes=[z]))
    # Not groupable at all.
    lone = access(64, reads=[(y, True)], writes=[z])
    lone.groupable = False
    assert not group.admits(lone)


def test_block_rows_fit_the_block_budget():
    a = access(1000, reads=[((1, 0, 4000 * 1000), True)], writes=[(0, 0, 4000 * 1000)])
    group = row_groups.Group(None, None, a, 1)
    rows = group.block_rows()
    assert rows >= 1 and rows * 8000 <= max(row_groups.BLOCK_BYTES, 8000)


@pytest.mark.parametrize("text", [SOFTMAX, LAYERNORM])
def test_the_driver_defines_no_function_it_never_uses(text, monkeypatch):
    # A group that grows replaces its function; the functions it replaced,
    # and kernel wrappers the group calls past, are left out of the driver
    # (ir_emitter.drop_unused_functions).
    args = args_for(text)
    exe, got = run(text, args)
    driver = exe.ir_text.split("; ----- ", 1)[0]
    defined = re.findall(r'^define internal void @"?([\w.]+)"?\(', driver, re.M)
    assert defined, "the driver has no internal function: the test no longer sees row groups"
    for name in defined:
        assert len(re.findall(rf'@"?{re.escape(name)}"?\b', driver)) > 1, name
    _, expected = ungrouped(text, args, monkeypatch)
    np.testing.assert_array_equal(got, expected)
