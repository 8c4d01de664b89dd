"""Shape-generic kernels: kernels whose dimension sizes are an argument.

Kernels are deduplicated by their IR text (``kernels.KernelSet``), and a
kernel's loop bounds and strides are constants, so the same fused
computation over f32[8,25] and f32[8,31] compiles twice. A network whose
layers all differ in width (the varied MLP of benchmarks/compile_time.py)
then compiles every layer's kernels, and LLVM is most of its compile time.

A shape-generic kernel takes one more pointer argument, after its buffers
(and scratch): an array of i64 dimension sizes. Its code asks the kernel
for each size it uses (``Kernel.dim``, ``Kernel.dims``, ``Kernel.strides``)
and gets a value loaded from that array, one slot per distinct size in the
order the code first asks for it; the driver passes a constant array of
the sizes, in slot order, for that call (``ModuleEmitter.dims_global``).
So the text, and with it the fingerprint, holds no size, and kernels that
differ only in sizes compile once. What stays in the text, so in the key:

- a size of 1 (emitters drop such dimensions from loops and indexing),
  and which slots are equal (two dimensions of the same size share one);
- every decision the emitter makes from sizes: a transposed kernel's
  tiling, a reshape or bitcast's index arithmetic (a bitcast that keeps
  the sizes in storage order maps the index directly; any other still
  divides by constant sizes), pad and slice offsets, constants' values;
- anything an emitter still computes from ``shape.dimensions`` directly.

None of these can make a wrong kernel: the code is a function of its text
and its arguments only, and each call passes the sizes its own emission
asked for, so two calls sharing a text compute what each one's constant
version would (a size that stays a constant only keeps kernels apart).

Which kernels (``is_generic``): only kernels with size variants in the
module (``SizeVariants``), and of those, loop kernels (elementwise, broadcast,
reduce inside the loop) whose buffers hold at most ``MAX_BYTES`` together
(1 MB), and kernels whose inner loops already run
to bounds computed at run time, up to ``RUNTIME_BOUNDS_MAX_BYTES``:
transposes walked in tiles, column reductions, the small GEMM. Kernels
inlined into the driver never are, and a loop kernel whose code asked for
no size (a 1-D loop runs from begin to end) is emitted again with constant
sizes, exactly as before. Larger loop kernels keep constant sizes: their
loops run long, where constant trip counts and strides let LLVM drop
remainder loops and checks, and their code stays byte for byte what it
was (every kernel of benchmarks/cpu_workloads.py is unchanged;
docs/compile_time.md, "Shape-generic kernels").

Emitted once per size-free key (``SizeFreeKernels``): kernels with the
same text would still each be emitted and printed, then found to be the
same by their fingerprint, which was most of the varied MLP's compile time
once LLVM compiled each text once. So a kernel is emitted once per
size-free key: the instruction's fingerprint without sizes, which of its
sizes are equal (and which are 1), and each emitter's own choices (output
group, slice pattern, tiling, vector width, small-kernel line); an
instruction with the same key reuses the emitted kernel with its own
sizes in the slots. That is exact only where the emitted text depends on
sizes through ``Kernel.dim`` alone: a generator that holds a size as a
constant or chooses its code by one marks the kernel
(``Kernel.sizes_in_code``; every generator not in
``element_generator.SIZE_FREE_GENERATORS`` does), and a marked kernel is
never reused for other sizes (identical texts still compile once).
``CHECK_SIZE_FREE_REUSE`` emits each reused kernel anyway and raises if its
symbol or sizes differ (the tests run with it).

Not generic yet: row reductions inside loop kernels (``reduction_emitter``
loops to constant bounds; correct, just not shared), reshapes and bitcasts
that move elements between dimensions, and the other emitters (sort,
convolution, gather, scatter, windows, in-place updates), which keep
constant sizes, as do the kernels of unfused elementwise ops
(``SizeVariants`` looks at fusions, dots and reduces only).
"""
import re

from xla.backends.cpu.kernels import SMALL_KERNEL_BYTES, HloFingerprints, Kernel, footprint
from xla.hlo.attributes import kind_of
from xla.hlo.printer import shape_to_text

# Off switch, for measuring (docs/compile_time.md) and for bisecting.
ENABLED = True
# Loop kernels whose buffers hold more bytes together keep constant sizes:
# their innermost loop's trip count would become a value. Up to 1 MB the
# run time was measured the same both ways (max(x - 0.01 z, 0) over
# f32[8,1000] and f32[8,999], and over 64 rows: 4.6 and 21-25 us either
# way, the latter 768 KB of buffers per kernel); the bound
# was SMALL_KERNEL_BYTES (64 KB), which left every elementwise kernel of
# the 40,000-instruction varied MLP (f32[8,w], w up to 1,096) a kernel of
# its own: 1,012 distinct kernels where 20 would do.
MAX_BYTES = 1 << 20
# Kernels whose inner loops already run to bounds computed at run time (a
# transpose's tiles, clipped to the array; a column reduction's run of
# columns, from begin to end; the small GEMM's blocks, clamped to the
# matrix) trade only constant strides for values: generic up to this many
# bytes (None: any size). Measured the same run time both ways up to the
# 20,000-instruction varied MLP's largest weight update (f32[556,557]
# transposed, 3.7 MB), and no slower generic at the 40,000-instruction
# one's (f32[1096,1097] and f32[1095,1096] transposed and scaled, 9.6 MB
# each: 1.3-1.9 against 2.4-2.7 ms on one thread, alternated five times).
RUNTIME_BOUNDS_MAX_BYTES = 16 << 20
# Emit every kernel that SizeFreeKernels reuses as well, and raise if it
# is not the kernel reused with the same sizes (for tests; costs what the
# memo saves).
CHECK_SIZE_FREE_REUSE = False


_DIMENSIONS = re.compile(r"\[([0-9,]*)\]")


def _size_free(text):
    """A shape's text with every dimension size other than 1 left out."""
    return _DIMENSIONS.sub(lambda m: "[" + ",".join(
        "1" if d == "1" else "n" for d in m.group(1).split(",") if d) + "]", text)


def _dimensions(shape):
    if shape.is_tuple:
        return tuple(_dimensions(s) for s in shape.tuple_shapes)
    return tuple(shape.dimensions) if shape.is_array else ()


class SizeFreeFingerprints:
    """Instructions' fingerprints (``kernels.HloFingerprints``) with every
    dimension size other than 1 left out, and their sizes: every dimension
    size of the shapes such a fingerprint holds, in one fixed order (the
    instruction's shape, its operands', then those of the instructions of
    the computations it calls). ``key`` (both) tells instructions apart
    exactly as their full fingerprints do, without computing those."""

    def __init__(self):
        self._texts = {}          # shape (by value: equal shapes print alike) -> size-free text
        self._free = HloFingerprints(self._shape_text)
        self._instructions = {}   # id(h) -> (h, size-free fingerprint, sizes)
        self._computations = {}   # id(comp) -> (comp, sizes of its instructions)

    def _shape_text(self, shape):
        text = self._texts.get(shape)
        if text is None:
            text = self._texts[shape] = _size_free(shape_to_text(shape))
        return text

    def _entry(self, h):
        entry = self._instructions.get(id(h))
        if entry is None:   # h is kept alive with its entry, so its id is not reused
            sizes = []
            self._instruction_sizes(h, sizes)
            entry = self._instructions[id(h)] = (h, self._free.instruction(h), tuple(sizes))
        return entry

    def fingerprint(self, h):
        """``h``'s fingerprint with every dimension size other than 1 left out."""
        return self._entry(h)[1]

    def key(self, h):
        """(size-free fingerprint, sizes): equal for two instructions
        exactly when their full fingerprints are."""
        entry = self._entry(h)
        return entry[1], entry[2]

    def _computation_sizes(self, comp):
        entry = self._computations.get(id(comp))
        if entry is None:   # comp is kept alive with its sizes, so its id is not reused
            sizes = []
            for x in comp.instructions:
                self._instruction_sizes(x, sizes, operands=False)
            entry = self._computations[id(comp)] = (comp, tuple(sizes))
        return entry[1]

    def _instruction_sizes(self, h, out, operands=True):
        _shape_sizes(h.shape, out)
        if operands:
            for o in h.operands:
                _shape_sizes(o.shape, out)
        for name, value in h.attrs.items():
            kind = kind_of(name)
            if kind == "computation":
                out.extend(self._computation_sizes(value))
            elif kind == "computations":
                for c in value:
                    out.extend(self._computation_sizes(c))


def _shape_sizes(shape, out):
    if shape.is_tuple:
        for s in shape.tuple_shapes:
            _shape_sizes(s, out)
    elif shape.is_array:
        out.extend(shape.dimensions)


class SizeVariants:
    """Which instructions of a module have size variants: other
    instructions with the same fingerprint once dimension sizes (other than
    1) are left out, but other sizes (of the instruction or its operands).
    Only their kernels are emitted shape-generic: a kernel without variants
    has nothing to share its code with, and LLVM takes longer over loops
    whose trip counts are values (measured: 5-30% more compile CPU time on
    the uniform MLP's and the transformer's kernels), so it keeps its
    constant sizes and its code. A heuristic: either answer makes correct
    kernels."""

    def __init__(self, module, assignment, fingerprints):
        self._fingerprints = fingerprints   # SizeFreeFingerprints
        self._variants = {}      # size-free fingerprint -> sizes seen
        for comp in module.computations:
            for h in comp.instructions:
                if h.opcode not in _CANDIDATES or not assignment.has_buffers(h):
                    continue
                self._variants.setdefault(fingerprints.fingerprint(h), set()).add(self._sizes(h))

    @staticmethod
    def _sizes(h):
        return (_dimensions(h.shape),) + tuple(_dimensions(o.shape) for o in h.operands)

    def has_variants(self, h):
        return len(self._variants.get(self._fingerprints.fingerprint(h), ())) > 1


class SizeFreeKernels:
    """Kernels emitted once per size-free key (module docstring): for one
    module's ``ModuleEmitter``, the emitted kernel of each key and the
    positions of its sizes slots among the instruction's sizes
    (``SizeFreeFingerprints.key``)."""

    def __init__(self, emitter):
        self._emitter = emitter
        self._kernels = {}        # key -> (impl, slot positions or None)
        self.reused = 0

    def emit(self, h, name, slices, choices, emit):
        """The kernel of ``h`` over ``slices``: one already emitted for the
        same size-free key, reused with ``h``'s sizes, or ``emit()``'s (a
        finished ``Kernel``). ``choices``: whatever else the emitter's text
        depends on (hashable)."""
        emitter = self._emitter
        fingerprint, sizes = emitter.fingerprints.key(h)
        first = {}
        pattern = tuple(first.setdefault(n, len(first)) if n != 1 else -1 for n in sizes)
        key = (fingerprint, pattern, footprint(slices) <= SMALL_KERNEL_BYTES, choices)
        entry = self._kernels.get(key)
        if entry is not None:
            impl, slots = entry
            dims = None if slots is None else emitter.dims_global([sizes[p] for p in slots])
            kernel = Kernel.reuse(emitter, name, slices, impl, h, dims)
            self.reused += 1
            if CHECK_SIZE_FREE_REUSE:
                emitted = emit()
                emitter.kernels.emitted -= 1
                if emitted.impl is not impl or emitted.dims_global is not dims:
                    raise AssertionError(
                        f"size-free reuse of a kernel for {h.name}: emitted "
                        f"{emitted.impl.name} {emitted.dim_sizes}, reused {impl.name} "
                        f"{[sizes[p] for p in slots or ()]}")
            return kernel
        kernel = emit()
        if not kernel.sizes_in_code and not kernel.in_driver:
            if not kernel.generic:      # a text that holds no size at all
                self._kernels[key] = (kernel.impl, None)
            else:
                position = {}
                for i, n in enumerate(sizes):
                    position.setdefault(n, i)
                if all(n in position for n in kernel.dim_sizes):
                    self._kernels[key] = (kernel.impl, [position[n] for n in kernel.dim_sizes])
        return kernel


# The instructions whose kernels may be generic: after fusion, loop kernels
# are fusions (a standalone op's kernel keeps constant sizes), the small
# GEMM is a dot, a column reduction a fusion or a reduce.
_CANDIDATES = frozenset(["fusion", "dot", "reduce"])


def is_generic(emitter, h, slices, runtime_bounds=False):
    """Whether the kernel of instruction ``h`` over buffer ``slices`` is
    emitted shape-generic; ``runtime_bounds``: its inner loops' bounds are
    already values (see ``RUNTIME_BOUNDS_MAX_BYTES``)."""
    if not ENABLED:
        return False
    bound = RUNTIME_BOUNDS_MAX_BYTES if runtime_bounds else MAX_BYTES
    if bound is not None and footprint(slices) > bound:
        return False
    return emitter.size_variants().has_variants(h)
