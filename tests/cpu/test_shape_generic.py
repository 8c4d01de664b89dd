"""Shape-generic kernels (xla/backends/cpu/shape_generic.py): small kernels
that differ only in their dimension sizes share one compiled kernel, read
their sizes from an argument, and compute exactly what kernels with
constant sizes compute. References: the interpreter, and NumPy on values
whose sums and products are exact (small integers), so results can be
compared bit for bit."""
import re

import numpy as np
import pytest

import xla
from hlo_texts import entry_module
from xla.backends.cpu import kernel_compiler, shape_generic

WIDTHS = (25, 31, 43)
BATCH = 8


@pytest.fixture(autouse=True)
def _check_size_free_reuse(monkeypatch):
    # Every kernel reused for other sizes is emitted as well and compared.
    monkeypatch.setattr(shape_generic, "CHECK_SIZE_FREE_REUSE", True)


def _compile(text):
    kernel_compiler.memory_cache.clear()
    return xla.compile(xla.parse_hlo_module(text), "cpu")


def _bias_relu(widths, batch=BATCH):
    params, body, roots = [], ["zero = f32[] constant(0)"], []
    for w in widths:
        s = f"f32[{batch},{w}]"
        params += [(f"x{w}", s), (f"b{w}", f"f32[{w}]")]
        body += [f"bb{w} = {s} broadcast(b{w}), dimensions={{1}}",
                 f"s{w} = {s} add(x{w}, bb{w})",
                 f"z{w} = {s} broadcast(zero), dimensions={{}}",
                 f"r{w} = {s} maximum(s{w}, z{w})"]
        roots.append((f"r{w}", s))
    return entry_module("bias_relu", params, body, roots)


def _random_args(exe_text, seed=0, integers=False):
    module = xla.parse_hlo_module(exe_text)
    params = sorted((h for h in module.entry.instructions if h.opcode == "parameter"),
                    key=lambda h: h.parameter_number)
    rng = np.random.default_rng(seed)
    if integers:
        return [rng.integers(-4, 5, p.shape.dimensions).astype(np.float32) for p in params]
    return [rng.standard_normal(p.shape.dimensions).astype(np.float32) for p in params]


def _assert_bit_identical(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.array_equal(g.view(np.uint32), w.view(np.uint32))


def _kernel_texts(exe):
    """{symbol: text} of the executable's kernel modules (``ir_text``)."""
    parts = re.split(r"^; ----- kernel (\S+)\n", exe.ir_text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_bias_relu_at_three_widths_share_one_kernel():
    text = _bias_relu(WIDTHS)
    args = _random_args(text)
    exe = _compile(text)
    t = exe.compile_timings
    assert t["kernels"] == 3, t
    assert t["kernels_distinct"] == 1, t
    (kernel,) = _kernel_texts(exe).values()
    assert "%\"dim0\" = load i64" in kernel
    # No width (nor the row stride) is a constant of the code.
    for w in WIDTHS:
        assert not re.search(rf"\b{w}\b", kernel.split("@\"const\"")[0])
    want = xla.compile(xla.parse_hlo_module(text), "interpreter").execute(*args)
    _assert_bit_identical(exe.execute(*args), want)
    _assert_bit_identical(want, [np.maximum(x + b, np.float32(0)) for x, b in
                                 zip(args[0::2], args[1::2])])


def test_generic_and_constant_sizes_compute_the_same(monkeypatch):
    text = _bias_relu(WIDTHS)
    args = _random_args(text, seed=3)
    generic = _compile(text)
    monkeypatch.setattr(shape_generic, "ENABLED", False)
    constant = _compile(text)
    assert constant.compile_timings["kernels_distinct"] == 3
    assert "dim0" not in constant.ir_text
    _assert_bit_identical(generic.execute(*args), constant.execute(*args))


def test_equal_sizes_make_another_kernel():
    # f32[2,8,8] has one inner size twice, the others two distinct ones:
    # one slot against two, so another text; all three are right. (The
    # most major size is never a slot: the loop over it runs from the
    # kernel's begin to end.)
    shapes = [(2, 8, 8), (2, 8, 25), (3, 9, 26)]
    params, body, roots = [], [], []
    for i, dims in enumerate(shapes):
        s = f"f32[{','.join(map(str, dims))}]"
        params += [(f"x{i}", s), (f"y{i}", s)]
        body += [f"m{i} = {s} multiply(x{i}, y{i})", f"a{i} = {s} add(m{i}, x{i})"]
        roots.append((f"a{i}", s))
    text = entry_module("equal_sizes", params, body, roots)
    args = _random_args(text, integers=True)   # exact whether or not the add fuses into an fma
    exe = _compile(text)
    assert exe.compile_timings["kernels_distinct"] == 2, exe.compile_timings
    _assert_bit_identical(exe.execute(*args), [x * y + x for x, y in zip(args[0::2], args[1::2])])


def test_column_sums_at_three_widths_share_one_kernel():
    params, body, roots = [], ["zero = f32[] constant(0)"], []
    for w in WIDTHS:
        params.append((f"x{w}", f"f32[{BATCH},{w}]"))
        body.append(f"r{w} = f32[{w}] reduce(x{w}, zero), dimensions={{0}}, to_apply=add")
        roots.append((f"r{w}", f"f32[{w}]"))
    text = entry_module("columns", params, body, roots)
    text = text.replace("ENTRY main {", "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\n\nENTRY main {")
    args = _random_args(text, seed=1)
    exe = _compile(text)
    assert "%\"col.header\"" in exe.ir_text   # the column-reduction kernel
    assert exe.compile_timings["kernels_distinct"] == 1, exe.compile_timings
    # The column reduction's order: the init value, then the rows in order.
    want = []
    for x in args:
        acc = np.zeros(x.shape[1], np.float32)
        for row in x:
            acc = acc + row
        want.append(acc)
    _assert_bit_identical(exe.execute(*args), want)


@pytest.mark.parametrize("sizes", [((8, 30, 25), (8, 40, 33), (12, 20, 47))])
def test_small_gemms_of_three_sizes_share_one_kernel(sizes, llvm_tiled_gemm):
    params, body, roots = [], [], []
    for i, (m, k, n) in enumerate(sizes):
        params += [(f"a{i}", f"f32[{m},{k}]"), (f"b{i}", f"f32[{k},{n}]")]
        body.append(f"d{i} = f32[{m},{n}] dot(a{i}, b{i}), lhs_contracting_dims={{1}}, "
                    "rhs_contracting_dims={0}")
        roots.append((f"d{i}", f"f32[{m},{n}]"))
    text = entry_module("gemms", params, body, roots)
    args = _random_args(text, integers=True)
    exe = _compile(text)
    assert "@\"llvm.fmuladd.v8f32\"" in exe.ir_text   # the tiled GEMM kernel
    assert exe.compile_timings["kernels_distinct"] == 1, exe.compile_timings
    # Small integers: every product and partial sum is exact.
    _assert_bit_identical(exe.execute(*args), [a @ b for a, b in zip(args[0::2], args[1::2])])


def test_tiled_transposes_of_two_sizes_share_one_kernel():
    params, body, roots = [], ["half = f32[] constant(0.5)"], []
    for w in (37, 50):
        params.append((f"x{w}", f"f32[24,{w}]"))
        body += [f"t{w} = f32[{w},24] transpose(x{w}), dimensions={{1,0}}",
                 f"h{w} = f32[{w},24] broadcast(half), dimensions={{}}",
                 f"m{w} = f32[{w},24] multiply(t{w}, h{w})"]
        roots.append((f"m{w}", f"f32[{w},24]"))
    text = entry_module("transposes", params, body, roots)
    args = _random_args(text)
    exe = _compile(text)
    assert ".tile" in exe.ir_text
    assert exe.compile_timings["kernels_distinct"] == 1, exe.compile_timings
    _assert_bit_identical(exe.execute(*args), [x.T * np.float32(0.5) for x in args])


def test_loop_kernels_up_to_max_bytes_share_one_kernel():
    # About 200 KB of buffers each: over SMALL_KERNEL_BYTES (the short
    # LLVM pipeline's line), under shape_generic.MAX_BYTES.
    text = _bias_relu((96, 97), batch=256)
    args = _random_args(text)
    exe = _compile(text)
    assert exe.compile_timings["kernels_distinct"] == 1, exe.compile_timings
    _assert_bit_identical(exe.execute(*args),
                          [np.maximum(args[0] + args[1], np.float32(0)),
                           np.maximum(args[2] + args[3], np.float32(0))])


def test_large_kernels_keep_constant_sizes():
    # Two widths (size variants), each kernel's buffers over MAX_BYTES.
    batch = shape_generic.MAX_BYTES // (2 * 4 * 96) + 1
    text = _bias_relu((96, 97), batch=batch)
    args = _random_args(text)
    exe = _compile(text)
    kernels = list(_kernel_texts(exe).values())
    assert len(kernels) == 2
    assert not any("dim0" in kernel for kernel in kernels)
    for width in (96, 97):
        assert any(re.search(rf"\b{width}\b", kernel) for kernel in kernels), width
    _assert_bit_identical(exe.execute(*args),
                          [np.maximum(args[0] + args[1], np.float32(0)),
                           np.maximum(args[2] + args[3], np.float32(0))])


def test_parallel_transposes_share_one_kernel():
    # Over 64K elements: split across threads through the table wrapper,
    # which passes the sizes too. Over SMALL_KERNEL_BYTES, under
    # RUNTIME_BOUNDS_MAX_BYTES: tiled kernels stay generic.
    params, body, roots = [], ["lr = f32[] constant(0.25)"], []
    for n in (300, 310):
        params += [(f"g{n}", f"f32[{n + 1},{n}]"), (f"w{n}", f"f32[{n},{n + 1}]")]
        body += [f"t{n} = f32[{n},{n + 1}] transpose(g{n}), dimensions={{1,0}}",
                 f"l{n} = f32[{n},{n + 1}] broadcast(lr), dimensions={{}}",
                 f"u{n} = f32[{n},{n + 1}] multiply(t{n}, l{n})",
                 f"r{n} = f32[{n},{n + 1}] subtract(w{n}, u{n})"]
        roots.append((f"r{n}", f"f32[{n},{n + 1}]"))
    text = entry_module("sgd", params, body, roots)
    args = _random_args(text)
    exe = _compile(text)
    assert "__xla_cpu_parallel_for" in exe.ir_text
    assert exe.compile_timings["kernels_distinct"] == 1, exe.compile_timings
    _assert_bit_identical(exe.execute(*args),
                          [w - g.T * np.float32(0.25) for g, w in zip(args[0::2], args[1::2])])


def test_large_untiled_loops_keep_constant_sizes_and_tiled_ones_too_past_the_bound(monkeypatch):
    monkeypatch.setattr(shape_generic, "RUNTIME_BOUNDS_MAX_BYTES", 1 << 16)
    text = entry_module("t", [("g", "f32[301,300]")],
                        ["t = f32[300,301] transpose(g), dimensions={1,0}",
                         "n = f32[300,301] negate(t)"],
                        [("n", "f32[300,301]")])
    exe = _compile(text)
    assert "dim0" not in exe.ir_text and ".tile" in exe.ir_text


def test_kernels_without_size_variants_keep_constant_sizes():
    # One width only (twice: the same kernel): nothing to share with
    # another size, so the kernel keeps its constant sizes (LLVM compiles
    # loops of constant trip counts faster).
    text = _bias_relu((25,))
    exe = _compile(text)
    assert "dim0" not in exe.ir_text
    text = _bias_relu((25, 31))
    assert "dim0" in _compile(text).ir_text
