"""Kernels as separate LLVM modules, named by their fingerprint.

The IR emitter writes each kernel's code (``Kernel``: its module,
arguments and builder, over buffer ``Slice``s) into an LLVM module of its
own in which every name is local and canonical: the
kernel function is ``@"xla.kernel"`` until it is named, its constants are
``@const``, ``@const.1``, ..., and nothing in the text depends on the HLO
instruction it came from or on the buffers it will run on (the driver's
wrapper loads those from the buffer table and passes them in). Two kernels
that compute the same function of their arguments, with the same shapes,
layouts and argument alignments, therefore print to the same text (and
shape-generic kernels, whose sizes are an argument, with any sizes:
``shape_generic.py``). The
fingerprint is the SHA-256 of that text, and the kernel's symbol is
``xla_k_<first 24 hex digits>``: an unrolled 100-layer network has the
kernels of one layer, not 100 copies, and the fingerprint is the key of the
compiled-kernel caches (``kernel_compiler``).

An ``EmittedModule`` is what the IR emitter produces for one HloModule: the
*driver* module (the entry function, the kernels' table wrappers, row
groups, control flow, library calls: the executable's sequence of steps)
which declares the kernels by symbol, and the distinct kernel modules.
"""
import math

import numpy as np
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.loop_emitter import I64, i64
from xla.hlo.attributes import kind_of
from xla.hlo.printer import attr_to_text, shape_to_text

try:
    from _sha256 import sha256 as _small_sha256
except ImportError:   # Python 3.12 and later name it _sha2; other interpreters
    try:
        from _sha2 import sha256 as _small_sha256
    except ImportError:
        _small_sha256 = None

# Inputs at least this long are hashed by OpenSSL's SHA-256 (hashlib).
_HASHLIB_MIN_BYTES = 64 << 10


def sha256_hex(data):
    """The SHA-256 hex digest of ``data`` (bytes). Short inputs (kernel
    texts) use CPython's own implementation: importing hashlib loads
    OpenSSL's library, 3 ms of a fresh process's first compile; long ones
    (large constants, a large module's buffer assignment) hashlib's,
    about 7x faster per byte. The digests are the same."""
    if _small_sha256 is not None and len(data) < _HASHLIB_MIN_BYTES:
        return _small_sha256(data).hexdigest()
    import hashlib
    return hashlib.sha256(data).hexdigest()


KERNEL_PREFIX = "xla_k_"
PTR = ir.PointerType()
I8 = ir.IntType(8)
I32 = ir.IntType(32)
VOID = ir.VoidType()
KERNEL_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
# The name a kernel's function has in its own module until it is named by
# its fingerprint (KernelSet.add).
KERNEL_PLACEHOLDER = "xla.kernel"
# A kernel whose buffer arguments hold at most this many bytes together is
# a small kernel: its text starts with SMALL_KERNEL_LINE and it compiles
# with a shorter LLVM pipeline (``kernel_compiler.SMALL_KERNEL_SKIP``: O1's
# simplification, the same vectorizers, no loop strength reduction), a
# third less LLVM time for the same run time of its short loops
# (docs/compile_time.md, "LLVM's pipeline"). Kernels over larger arrays, where
# loops run long, keep the whole O3 pipeline. The line is part of the text,
# so of the fingerprint: the same text always compiles the same way.
SMALL_KERNEL_BYTES = 64 << 10
SMALL_KERNEL_LINE = "; xla-cpu: small kernel (short LLVM pipeline)\n"


def is_small_kernel(text):
    """Whether a kernel's text (``KernelSet.texts``) is a small kernel's."""
    return text.startswith(SMALL_KERNEL_LINE)


class Slice:
    """A buffer slice: allocation index and offset."""

    __slots__ = ("allocation", "offset", "align", "size")

    def __init__(self, buffer):
        self.allocation = buffer.allocation.index
        self.offset = buffer.offset
        self.size = buffer.size
        # Parameters and results are the caller's NumPy arrays, which NumPy
        # aligns to 16 bytes; constants and the temp arena are ours, at 64.
        base = 16 if buffer.allocation.kind in ("parameter", "maybe-live-out") else 64
        self.align = math.gcd(base, buffer.offset) if buffer.offset else base

    @property
    def key(self):
        return (self.allocation, self.offset)


def _buffer_arguments(fn, alignments):
    """A kernel function's attributes: nounwind, and its leading pointer
    arguments (one per distinct buffer slice) noalias, nonnull and aligned."""
    fn.attributes.add("nounwind")
    for arg, align in zip(fn.args, alignments):
        arg.add_attribute("noalias")
        arg.add_attribute("nonnull")
        arg.attributes.align = align


def _distinct_keys(slices):
    keys = []
    for s in slices:
        if s.key not in keys:
            keys.append(s.key)
    return keys


def footprint(slices):
    """Bytes of the distinct buffer slices a kernel reads and writes."""
    sizes = {}
    for s in slices:
        sizes[s.key] = max(sizes.get(s.key, 0), s.size)
    return sum(sizes.values())


def slice_pattern(slices):
    """What a kernel's code depends on in its buffer slices: which of them
    are the same buffer, and each one's alignment."""
    first = {}
    return tuple((first.setdefault(s.key, len(first)), s.align) for s in slices)


class Kernel:
    """One kernel being emitted: its builder, buffer arguments, alloca block
    and the memo table of the generators.

    The kernel's code is a function ``void (ptr noalias align(A) x N, [ptr
    scratch,] [ptr sizes,] i64 begin, i64 end)`` in an LLVM module of its own
    (``module``), where every name is local to the kernel, so two kernels
    that compute the same thing over buffers of the same alignment print to
    the same text (``KernelSet``: they compile once). At ``finish`` the
    driver module gets a declaration of it (``impl``); the driver calls it
    directly (``call_in_driver``) or through a wrapper ``void name(i8**
    table, i64 begin, i64 end)`` (``function``, made on first use) that
    loads the buffer pointers from the table, which is what the thread pool
    runs.

    ``generic=True`` makes a shape-generic kernel (``shape_generic.py``):
    its code reads the dimension sizes it asks for (``dim``, ``dims``,
    ``strides``) from the ``sizes`` array, which the driver passes.

    ``in_driver=True`` emits the code into the driver module instead (an
    internal, always-inline function): for kernels that use driver-module
    state such as the rng counter."""

    def __init__(self, emitter, name, slices, scratch=False, in_driver=False, generic=False):
        self.emitter = emitter
        self.root = None   # the instruction whose buffer it defines, set by the caller
        # Whether its row loops prefetch rows ahead (prefetch.py), set by the caller.
        self.prefetch = False
        self.name = name
        keys = self.keys = _distinct_keys(slices)
        aligns = {}
        for s in slices:
            aligns[s.key] = min(aligns.get(s.key, 64), s.align)
        # Bytes of the buffers it reads and writes (SMALL_KERNEL_BYTES).
        self.footprint = footprint(slices)
        self.has_scratch = scratch
        # A shape-generic kernel (shape_generic.py) reads its dimension
        # sizes from an argument array, the last pointer argument.
        self.generic = generic and not in_driver
        self.dim_sizes = []        # the size each slot of that array holds, in slot order
        self._dim_values = {}      # size -> its loaded value
        self._strides = {}
        self.dims_global = None    # the driver's array of dim_sizes, after finish()
        # Whether the code depends on sizes other than through ``dim``: a
        # kernel of constant sizes does, and a shape-generic one where an
        # emitter held a size as a constant or chose its code by one
        # (``ElementGenerator.constant_sizes``). Such a kernel serves no
        # other sizes (``shape_generic.SizeFreeKernels``).
        self.sizes_in_code = not self.generic
        n_ptrs = len(keys) + (1 if scratch else 0) + (1 if self.generic else 0)
        self.impl_type = ir.FunctionType(VOID, [PTR] * n_ptrs + [I64, I64])
        self.in_driver = in_driver
        if in_driver:
            self.module = emitter.llmod
            impl = ir.Function(self.module, self.impl_type, emitter.unique(f"{name}.impl"))
            impl.linkage = "internal"
            impl.attributes.add("alwaysinline")
        else:
            self.module = ir.Module(name="kernel")
            impl = ir.Function(self.module, self.impl_type, KERNEL_PLACEHOLDER)
            # Two objects that both define a kernel (compiled in two batches,
            # kernel_compiler.py) may be loaded into one engine.
            impl.linkage = "weak_odr"
        self.arg_alignments = [aligns[key] for key in keys]
        _buffer_arguments(impl, self.arg_alignments)
        self.impl = impl if in_driver else None   # the driver's declaration, after finish()
        self._function = None                      # the driver's wrapper, made on first use
        self.ptrs = dict(zip(keys, impl.args[:len(keys)]))
        self.scratch = impl.args[len(keys)] if scratch else None
        if scratch:
            self.scratch.add_attribute("noalias")
        self.dims_arg = impl.args[n_ptrs - 1] if self.generic else None
        if self.generic:
            for attr in ("noalias", "nonnull"):
                self.dims_arg.add_attribute(attr)
            self.dims_arg.attributes.align = 8
        self.begin, self.end = impl.args[n_ptrs], impl.args[n_ptrs + 1]
        self.alloca_block = impl.append_basic_block("allocas")
        self.alloca_builder = ir.IRBuilder(self.alloca_block)
        self.start_block = impl.append_basic_block("start")
        self.b = ir.IRBuilder(self.start_block)

    @classmethod
    def reuse(cls, emitter, name, slices, impl, root, dims_global=None):
        """A finished kernel for instruction ``root`` running the already
        emitted kernel ``impl`` (its driver declaration) over ``slices``
        (and, for a shape-generic kernel, the sizes in ``dims_global``):
        only the driver's call (and table wrapper) is new."""
        self = cls.__new__(cls)
        self.emitter = emitter
        self.root = root
        self.name = name
        self.keys = _distinct_keys(slices)
        self.has_scratch = False
        self.in_driver = False
        self.generic = dims_global is not None
        self.dims_global = dims_global
        self.sizes_in_code = not self.generic
        self.impl = impl
        self._function = None
        emitter.kernels.emitted += 1
        return self

    # ----- dimension sizes ------------------------------------------------------
    def dim(self, n):
        """Dimension size ``n`` as an i64 value of the kernel's code: the
        constant, or in a shape-generic kernel the slot of the sizes array
        that holds ``n`` (one slot per distinct size, numbered in the
        order the code first asks for them; loaded once, in the first
        block). A size of 1 stays a constant: the emitters drop size-1
        dimensions from loops and index arithmetic, so the code already
        differs where a size is 1."""
        if not self.generic or n == 1:
            return i64(n)
        v = self._dim_values.get(n)
        if v is None:
            slot = len(self.dim_sizes)
            self.dim_sizes.append(n)
            ab = self.alloca_builder
            v = self._dim_values[n] = ab.load(
                ab.gep(self.dims_arg, [i64(slot)], inbounds=True, source_etype=I64), typ=I64,
                name=f"dim{slot}")
        return v

    def dims(self, shape, outer=True):
        """``shape``'s dimension sizes: Python ints, or in a shape-generic
        kernel i64 values (``dim``). ``outer=False``: the most major
        dimension's stays an int (a loop nest over ``begin``-``end`` never
        reads it)."""
        if not self.generic:
            return list(shape.dimensions)
        order = le.major_to_minor(shape)
        return [n if n == 1 or (not outer and d == order[0]) else self.dim(n)
                for d, n in enumerate(shape.dimensions)]

    def strides(self, shape):
        """Element stride of each logical dimension of ``shape`` in its
        layout (``loop_emitter.physical_strides``): ints, or in a
        shape-generic kernel products of ``dim`` values computed in the
        first block (a stride of 1 stays the int 1)."""
        if not self.generic:
            return le.physical_strides(shape)
        strides = [1] * shape.rank
        acc, sizes = 1, ()
        order = le.major_to_minor(shape)
        for d in reversed(order):
            strides[d] = acc
            n = shape.dimensions[d]
            if n != 1 and d != order[0]:   # the most major size is no stride
                sizes += (n,)
                prod = self._strides.get(sizes)
                if prod is None:
                    prod = self.dim(n) if acc == 1 else self.alloca_builder.mul(
                        acc, self.dim(n), flags=("nsw", "nuw"))
                    self._strides[sizes] = prod
                acc = prod
        return strides

    def alloca(self, typ, name=""):
        return self.alloca_builder.alloca(typ, name=name)

    def pointer(self, slice_):
        return self.ptrs[slice_.key]

    def finish(self):
        self.alloca_builder.branch(self.start_block)
        self.b.ret_void()
        if self.generic:
            self.dims_global = self.emitter.dims_global(self.dim_sizes)
        if not self.in_driver:
            self.impl = self.emitter.kernels.add(self)

    def extra_arguments(self):
        """What a call passes after the buffer (and scratch) pointers and
        before ``begin, end``: a shape-generic kernel's sizes array."""
        return [self.dims_global] if self.generic else []

    @property
    def function(self):
        """The driver's ``void name(i8** table, i64 begin, i64 end)`` wrapper
        (what the thread pool runs), made on first use: a kernel called
        serially is called directly from the entry function instead
        (``call_in_driver``), which keeps a driver of thousands of steps
        small."""
        if self._function is None:
            self._emit_wrapper()
        return self._function

    def call_in_driver(self, b, table, begin, end):
        """Calls the kernel from the driver function being built with ``b``."""
        args = [self.emitter.slice_pointer(b, table, key) for key in self.keys]
        return b.call(self.impl, args + self.extra_arguments() + [begin, end])

    def _emit_wrapper(self):
        emitter = self.emitter
        wrapper = ir.Function(emitter.llmod, KERNEL_TYPE, self.name)
        wrapper.linkage = "internal"
        wb = ir.IRBuilder(wrapper.append_basic_block("entry"))
        table, begin, end = wrapper.args
        extra = []
        if self.has_scratch:  # the argument is a ChunkContext: {buffer table, scratch}
            ctx = table
            table = wb.load(ctx, typ=PTR)
            extra = [wb.load(wb.gep(ctx, [i64(1)], inbounds=True, source_etype=PTR), typ=PTR)]
        args = [emitter.slice_pointer(wb, table, key) for key in self.keys] + extra
        wb.call(self.impl, args + self.extra_arguments() + [begin, end])
        wb.ret_void()
        self._function = wrapper


class KernelSet:
    """The distinct kernels of one module, by symbol, and their declarations
    in the driver module."""

    def __init__(self, driver):
        self.driver = driver
        self.texts = {}          # symbol -> LLVM IR text of the kernel's module
        self.declarations = {}   # symbol -> ir.Function declared in the driver
        self.emitted = 0         # kernels emitted, before deduplication
        self.on_new = None       # called with (symbol, text) for each new kernel

    def add(self, kernel):
        """Fingerprints a finished ``ir_emitter.Kernel`` and returns the
        driver's declaration of it."""
        text = str(kernel.module)
        if kernel.footprint <= SMALL_KERNEL_BYTES:
            text = SMALL_KERNEL_LINE + text
        symbol = KERNEL_PREFIX + sha256_hex(text.encode())[:24]
        self.emitted += 1
        if symbol not in self.texts:
            text = self.texts[symbol] = text.replace(f'@"{KERNEL_PLACEHOLDER}"', f'@"{symbol}"')
            if self.on_new is not None:
                self.on_new(symbol, text)
        decl = self.declarations.get(symbol)
        if decl is None:
            decl = ir.Function(self.driver, kernel.impl_type, symbol)
            _buffer_arguments(decl, kernel.arg_alignments)
            self.declarations[symbol] = decl
        return decl


class EmittedModule:
    """The driver module (an llvmlite ``ir.Module``) and the kernel modules'
    texts (``{symbol: text}``) of one HloModule, and the library module's
    text (sort, linear algebra; None when there is none)."""

    def __init__(self, driver, kernels, library=None):
        self.driver = driver
        self.library_text = str(library) if library is not None else None
        self.library_functions = ([f.name for f in library.functions if not f.is_declaration]
                                  if library is not None else [])
        self.kernels = kernels.texts
        self.kernels_emitted = kernels.emitted
        self._driver_text = None

    @property
    def driver_text(self):
        if self._driver_text is None:
            self._driver_text = str(self.driver)
        return self._driver_text

    def text(self):
        """Every module's IR, the driver's first (``ir-no-opt.ll``)."""
        parts = [self.driver_text]
        if self.library_text is not None:
            parts.append("; ----- library\n" + self.library_text)
        for symbol in sorted(self.kernels):
            parts.append(f"; ----- kernel {symbol}\n" + self.kernels[symbol])
        return "\n".join(parts)

    def link(self, driver_text=None, transform=None, context=None):
        """One ``llvmlite.binding`` module with the driver and every kernel,
        the kernels made internal (so LLVM may inline them, as in an
        ahead-of-time object, which exports the entry point only).
        ``transform`` rewrites each text first (e.g. fast math)."""
        import llvmlite.binding as llvm
        transform = transform or (lambda t: t)
        text = transform(driver_text if driver_text is not None else self.driver_text)
        mod = llvm.parse_assembly(text, context=context) if context else llvm.parse_assembly(text)
        others = [self.kernels[s] for s in sorted(self.kernels)]
        if self.library_text is not None:
            others.append(self.library_text)
        for kernel_text in others:
            kernel_text = transform(kernel_text)
            other = (llvm.parse_assembly(kernel_text, context=context) if context
                     else llvm.parse_assembly(kernel_text))
            mod.link_in(other)
        for symbol in list(self.kernels) + self.library_functions:
            fn = mod.get_function(symbol)
            fn.linkage = llvm.Linkage.internal
        return mod


# Attributes that never change the code a kernel computes.
_IGNORED_ATTRIBUTES = frozenset(["metadata", "frontend_attributes", "statistics_viz",
                                 "origin", "sharding"])


class HloFingerprints:
    """Structural fingerprints of HLO instructions, for emitting identical
    kernels once: two instructions have the same fingerprint when they have
    the same opcode, shapes with layouts, operand shapes, attributes
    (metadata aside), constant values and, for called computations (fused
    computations, reducers), the same fingerprint of every instruction in
    the same order. Names never matter."""

    def __init__(self, shape_text=shape_to_text):
        self._computations = {}
        self._shape_text = shape_text   # how shapes enter the fingerprint

    def instruction(self, h):
        """The fingerprint of ``h`` and what it calls, with its operands'
        shapes (not their values)."""
        shape_to_text = self._shape_text
        ops = "|".join(shape_to_text(o.shape) for o in h.operands)
        return self._line(h, ops) + "#" + ops

    def computation(self, comp):
        entry = self._computations.get(id(comp))
        if entry is None:
            position = {id(x): i for i, x in enumerate(comp.instructions)}
            lines = [self._line(x, ",".join(str(position[id(o)]) for o in x.operands))
                     for x in comp.instructions]
            lines.append(f"root={position[id(comp.root_instruction)]}")
            digest = sha256_hex("\n".join(lines).encode())
            # comp is kept alive with its fingerprint, so its id is not reused.
            entry = self._computations[id(comp)] = (digest, comp)
        return entry[0]

    def _line(self, x, operands):
        parts = [x.opcode, self._shape_text(x.shape), operands]
        if x.opcode == "parameter":
            parts.append(str(x.parameter_number))
        elif x.opcode == "constant":
            value = np.ascontiguousarray(np.asarray(x.literal)) if x.literal is not None else None
            parts.append("none" if value is None else
                         f"{value.dtype}{value.shape}" + sha256_hex(value.tobytes()))
        for name, value in x.attrs.items():
            if name in _IGNORED_ATTRIBUTES:
                continue
            kind = kind_of(name)
            if kind == "computation":
                text = self.computation(value)
            elif kind == "computations":
                text = ",".join(self.computation(c) for c in value)
            else:
                text = attr_to_text(name, value)
            parts.append(f"{name}={text}")
        return ";".join(parts)
