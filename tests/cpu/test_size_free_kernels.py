"""Shape-generic kernels emitted once per size-free key
(``shape_generic.SizeFreeKernels``): an instruction whose kernel differs
from one already emitted only in the sizes it reads from its sizes array
reuses that kernel, with its own sizes; a kernel whose code holds a size
(a reverse's last index, a reshape's divisions) is emitted for each size.
Every test runs with ``CHECK_SIZE_FREE_REUSE``, which emits each reused
kernel as well and raises unless it is the same kernel with the same
sizes; results are checked against NumPy bit for bit (small integers
where sums are involved)."""
import gzip
import os

import numpy as np
import pytest

import xla
from hlo_texts import entry_module
from xla.backends.cpu import element_generator, ir_emitter, kernel_compiler, shape_generic

WIDTHS = (25, 31, 43)
# benchmarks/modules/mlp_varied_train_L27.hlo.gz (JAX-lowered, gen_compile_modules.py), copied
# here: Bazel's test sandbox has tests/ only.
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


@pytest.fixture(autouse=True)
def _check(monkeypatch):
    monkeypatch.setattr(shape_generic, "CHECK_SIZE_FREE_REUSE", True)


@pytest.fixture
def memos(monkeypatch):
    """The SizeFreeKernels of each module compiled in the test."""
    made = []
    original = shape_generic.SizeFreeKernels.__init__

    def init(self, emitter):
        original(self, emitter)
        made.append(self)
    monkeypatch.setattr(shape_generic.SizeFreeKernels, "__init__", init)
    return made


@pytest.fixture
def emissions(monkeypatch):
    """How many loop kernels' code was emitted (``_loop_kernel_code`` calls)."""
    count = [0]
    original = ir_emitter.ModuleEmitter._loop_kernel_code

    def code(self, *args, **kwargs):
        count[0] += 1
        return original(self, *args, **kwargs)
    monkeypatch.setattr(ir_emitter.ModuleEmitter, "_loop_kernel_code", code)
    return count


def _compile(text):
    kernel_compiler.memory_cache.clear()
    return xla.compile(xla.parse_hlo_module(text), "cpu")


def _per_width(line, widths=WIDTHS, batch=8):
    """One ``x{w} -> r{w}`` kernel per width: ``line`` formatted with w, s
    (the f32[batch,w] shape text) and batch."""
    params, body, roots = [], [], []
    for w in widths:
        s = f"f32[{batch},{w}]"
        params.append((f"x{w}", s))
        body += [x.format(w=w, s=s, batch=batch) for x in line]
        roots.append((f"r{w}", s))
    return entry_module("m", params, body, roots)


def _args(n, widths=WIDTHS, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-8, 9, (batch, w)).astype(np.float32) for w in widths[:n]]


def _bit_identical(got, want):
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and np.array_equal(g.view(np.uint32), w.view(np.uint32))


def test_one_emission_for_three_widths(memos, emissions):
    text = _per_width(["t{w} = {s} multiply(x{w}, x{w})", "r{w} = {s} add(t{w}, x{w})"])
    args = _args(3)
    exe = _compile(text)
    assert exe.compile_timings["kernels"] == 3 and exe.compile_timings["kernels_distinct"] == 1
    (memo,) = memos
    assert memo.reused == 2
    # The checks emit the two reused kernels as well: 1 + 2.
    assert emissions[0] == 3
    _bit_identical(exe.execute(*args), [x * x + x for x in args])


def test_without_the_check_reused_kernels_are_not_emitted(monkeypatch, emissions):
    monkeypatch.setattr(shape_generic, "CHECK_SIZE_FREE_REUSE", False)
    text = _per_width(["t{w} = {s} multiply(x{w}, x{w})", "r{w} = {s} add(t{w}, x{w})"])
    args = _args(3)
    exe = _compile(text)
    assert emissions[0] == 1
    _bit_identical(exe.execute(*args), [x * x + x for x in args])


def test_a_kernel_that_holds_its_sizes_is_emitted_for_each(memos):
    # A reverse's index is n - 1 - i: n is a constant of the code, so the
    # three kernels differ and none is reused.
    text = _per_width(["t{w} = {s} reverse(x{w}), dimensions={{1}}",
                       "r{w} = {s} negate(t{w})"])
    args = _args(3)
    exe = _compile(text)
    assert exe.compile_timings["kernels_distinct"] == 3
    (memo,) = memos
    assert memo.reused == 0
    _bit_identical(exe.execute(*args), [-x[:, ::-1] for x in args])


def test_the_check_catches_a_generator_that_holds_sizes(monkeypatch):
    # Were reverse listed as size-free, the 31-wide kernel would reuse the
    # 25-wide one's text, whose n - 1 is 24: the check raises.
    monkeypatch.setattr(element_generator, "SIZE_FREE_GENERATORS",
                        element_generator.SIZE_FREE_GENERATORS | {"reverse"})
    text = _per_width(["t{w} = {s} reverse(x{w}), dimensions={{1}}",
                       "r{w} = {s} negate(t{w})"])
    with pytest.raises(AssertionError, match="size-free reuse"):
        _compile(text)


def test_a_reshape_that_moves_elements_is_emitted_for_each(memos):
    # f32[8,w] -> f32[4,2w] -> f32[8,w]: divisions by constant sizes.
    params, body, roots = [], [], []
    for w in WIDTHS:
        s = f"f32[8,{w}]"
        params.append((f"x{w}", s))
        body += [f"t{w} = f32[4,{2 * w}] reshape(x{w})", f"n{w} = f32[4,{2 * w}] negate(t{w})",
                 f"r{w} = {s} reshape(n{w})"]
        roots.append((f"r{w}", s))
    text = entry_module("m", params, body, roots)
    args = _args(3)
    exe = _compile(text)
    (memo,) = memos
    assert memo.reused == 0
    _bit_identical(exe.execute(*args), [-x for x in args])


def test_equal_sizes_are_part_of_the_key(memos):
    # f32[8,8] has its two sizes equal (one slot); f32[8,25] and f32[8,31]
    # two slots each: the 8x8 kernel is not the others'.
    text = _per_width(["t{w} = {s} multiply(x{w}, x{w})", "r{w} = {s} add(t{w}, x{w})"],
                      widths=(8, 25, 31))
    args = _args(3, widths=(8, 25, 31))
    exe = _compile(text)
    (memo,) = memos
    assert memo.reused == 1
    _bit_identical(exe.execute(*args), [x * x + x for x in args])


@pytest.mark.parametrize("n", [(40, 45, 60, 70)])
def test_small_gemms_across_vector_widths(memos, n, llvm_tiled_gemm):
    # N from 48 up takes 512-bit vectors on a host with AVX-512, below
    # 256-bit ones: the width is part of the key, and the check holds.
    params, body, roots = [], [], []
    for i, c in enumerate(n):
        params += [(f"a{i}", "f32[8,30]"), (f"b{i}", f"f32[30,{c}]")]
        body.append(f"d{i} = f32[8,{c}] dot(a{i}, b{i}), lhs_contracting_dims={{1}}, "
                    "rhs_contracting_dims={0}")
        roots.append((f"d{i}", f"f32[8,{c}]"))
    text = entry_module("m", params, body, roots)
    rng = np.random.default_rng(2)
    args = [rng.integers(-4, 5, p).astype(np.float32)
            for c in n for p in ((8, 30), (30, c))]
    exe = _compile(text)
    (memo,) = memos
    assert memo.reused >= 2
    _bit_identical(exe.execute(*args), [a @ b for a, b in zip(args[0::2], args[1::2])])


def test_varied_mlp_step_reuses_its_kernels_exactly(memos):
    # The 1,007-instruction training step of benchmarks/compile_time.py
    # whose layers all differ in width: every reuse checked.
    with gzip.open(os.path.join(FIXTURES, "mlp_varied_train_L27.hlo.gz"), "rt") as f:
        text = f.read()
    exe = _compile(text)
    (memo,) = memos
    # 108 kernel calls of 9 distinct kernels (each layer's gradient the
    # bias gradient's second output; 161 calls of 14 before that).
    assert memo.reused >= 90, memo.reused
    assert exe.compile_timings["kernels_distinct"] <= 20, exe.compile_timings
