"""The CPU IR emitter: a scheduled, buffer-assigned module -> LLVM IR.

Entry point ``emit_module(module, assignment, runtime_symbols)``, which
returns a ``kernels.EmittedModule``: the *driver* module, whose one exported
function ``void entry(i8** buffer_table)`` runs the module's steps in
order, and the *kernel* modules. Entry ``i`` of the table is the base
address of buffer allocation ``i`` (see ``BufferAssignment.allocations``).
Parameters are read in place, results written in place, temporaries live at
their offsets in the temp arena, and the entry computation's constants are
allocations too, which the executable fills once when it is created.
Constants inside fused computations become LLVM global constants of the
kernel that reads them (LLVM folds loads of their scalars).

Each instruction that defines a buffer becomes a *kernel*: a loop nest over
its output shape (innermost loop over the minor-most dimension of the
layout, so stores are contiguous), in a function ``void kernel(ptr noalias
align(A) buffer..., i64 begin, i64 end)`` of an LLVM module of its own (one
argument per distinct buffer slice, so an operand updated in place is the
output's own argument and ``noalias`` stays true) that runs the outermost
loop from ``begin`` to ``end``. Kernels are named by a hash of their text,
so identical ones are one (``kernels.py``), and an instruction whose
structural fingerprint matches one already emitted reuses its kernel
without emitting it again. The driver calls a kernel directly with the
pointers it loads from the table, or, when the output has at least
``PARALLEL_MIN_ELEMENTS`` elements and the runtime provides it, hands a
wrapper ``void name(i8** table, i64 begin, i64 end)`` to
``__xla_cpu_parallel_for``, which splits the outermost loop across
threads. A long driver is split into segment functions
(``SEGMENT_INSTRUCTIONS``).

Element values come from *generators* (``ElementGenerator.value``): for
each instruction of a fused computation, a function from a multi-dimensional
index (i64 values, logical dimensions) to the element's register value. An
operand that has a buffer (a fusion operand, the operand of a standalone
op) is loaded at its layout-aware linear index; everything else is computed
from its operands' generators (``GENERATORS``, one row per opcode;
elementwise opcodes go to ``elemental_ir_emitter.emit_elementwise``). Results
are memoized per index inside one loop body, so a value used twice is
computed once. Generators that need a loop (reduce, dot) emit it in place
(``reduction_emitter``) and scope the memo table to it.

Data movement never reads outside a buffer: pad and concatenate clamp the
index they read with and select, dynamic-slice and dynamic-update-slice
clamp their start indices as XLA specifies.
"""

import re

from llvmlite import ir

from xla.hlo.opcodes import OpcodeTable
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu import (column_reduce, prefetch, reduction_emitter, row_groups,
                              runtime_matmul, shape_generic, streaming_stores, tiling)
from xla.backends.cpu.kernels import (I8, I32, KERNEL_PLACEHOLDER, KERNEL_TYPE, PTR, VOID,  # noqa: F401
                                      EmittedModule, Kernel, KernelSet, Slice,
                                      slice_pattern)
from xla.backends.cpu.loop_emitter import I64, i64
from xla.hlo.opcodes import ELEMENTWISE
from xla.hlo.shape import Shape

from xla.backends.cpu.element_generator import (  # noqa: F401  (emit_*.py import these from here)
    GENERATORS, ElementGenerator, check_element_type, convert_register, from_bits, literal_array,
    physical_bytes, register_generator, to_bits, unsupported)
from xla.backends.cpu.elemental_ir_emitter import emit_elementwise
from xla.backends.cpu.llvm_types import load_element, store_element


TINY_KERNEL_ELEMENTS = 4     # kernels this small are inlined into the driver
PARALLEL_MIN_ELEMENTS = 1 << 16
# Entry-computation instructions per driver segment function (see
# ModuleEmitter.emit).
SEGMENT_INSTRUCTIONS = 64
# Elements per parallel chunk at least (keeps tiny chunks from thrashing).
PARALLEL_MIN_CHUNK_ELEMENTS = 1 << 14
# Vector iterations the innermost loop of an elementwise kernel interleaves
# (loop_emitter.loop_hints): 4 independent chains per core, for kernels
# that compute one of loop_emitter.LONG_CHAIN_OPS (8 where it computes at
# bf16/f16 or the kernel loads or stores bf16/f16: le.long_chain_interleave). Other kernels
# leave the count to LLVM's cost model: interleaving a short expression 4
# times bought nothing measurable at run time and took a quarter of LLVM's
# time on the varied-width MLP's elementwise kernels.
LOOP_INTERLEAVE = 4
# Reductions to at most REDUCE_MAX_OUTPUTS elements are split along a reduced
# dimension into at most REDUCE_CHUNKS chunks (a fixed number, so that the
# result does not depend on the thread count); see emit_chunked_reduce.
REDUCE_CHUNKS = 64
REDUCE_MAX_OUTPUTS = 64

# Ops that define no code of their own: their buffers alias their operands'
# (or are parameters/constants filled from outside).
NO_CODE = frozenset(["parameter", "constant", "get-tuple-element", "tuple", "bitcast",
                     "opt-barrier", "add-dependency", "after-all"])


# Instructions whose code is not one element loop (control flow, sort,
# convolution, scatter...): opcode -> fn(module_emitter, instr), emitting
# into module_emitter.builder. Rows live in the emit_*.py files of this
# folder (imported on first use) and register with these decorators, as do
# extra GENERATORS rows.
INSTRUCTION_EMITTERS = OpcodeTable("cpu instruction emitters")


def register_instruction(*opcodes):
    return INSTRUCTION_EMITTERS.register(*opcodes)


# Fusions whose root needs its own kernel shape (a dynamic-update-slice in
# place): root opcode -> fn(emitter, fusion, root) that returns True when
# it emitted the fusion (else the fusion's loops are emitted as usual).
FUSION_ROOT_EMITTERS = {}


def register_fusion_root(opcode):
    def register(fn):
        FUSION_ROOT_EMITTERS[opcode] = fn
        return fn
    return register


def register_root_kernel(opcode, applies, emit):
    """An opcode whose kernel has a shape of its own where ``applies(me, h,
    root)`` holds (``root``: ``h`` itself, or the root of fusion ``h``):
    then ``emit(me, h, root, fusion)`` emits it, for the instruction and for
    fusions rooted at it (``fusion``: None or ``h``); elsewhere it gets the
    usual loops."""
    @register_instruction(opcode)
    def emit_instruction(me, h):
        if applies(me, h, h):
            emit(me, h, h, None)
        else:
            me.emit_loops(h, h)

    @register_fusion_root(opcode)
    def emit_fusion(me, h, root):
        if not applies(me, h, root):
            return False
        emit(me, h, root, h)
        return True


_extensions_loaded = False

# Every opcode for which an emit_*.py file registers a row (an instruction
# emitter, an element generator or a fusion-root emitter): a module with
# none of them is emitted without importing those files (5 ms of a fresh
# process's first compile). tests/cpu/test_ir_emitter_extensions.py checks
# this list against the rows the files register.
EXTENSION_OPCODES = frozenset("""
all-gather all-gather-done all-gather-start all-reduce all-reduce-done all-reduce-start
all-to-all call cholesky concatenate collective-broadcast collective-permute collective-permute-done
collective-permute-start conditional convolution custom-call dot dynamic-update-slice fft
gather pad partition-id reduce-scatter reduce-window replica-id rng rng-bit-generator
rng-get-and-update-state scatter select-and-scatter sort topk triangular-solve tuple while
""".split())


def load_extensions_for(module):
    """Loads the emit_*.py files unless no instruction of ``module`` has an
    opcode in EXTENSION_OPCODES."""
    if not _extensions_loaded and any(i.opcode in EXTENSION_OPCODES
                                      for i in module.all_instructions()):
        load_extensions()


def load_extensions():
    """Imports every emit_*.py file of this folder (once)."""
    global _extensions_loaded
    if _extensions_loaded:
        return
    import importlib
    import pkgutil
    import xla.backends.cpu as package
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("emit_"):
            importlib.import_module(f"xla.backends.cpu.{info.name}")
    _extensions_loaded = True


class ModuleEmitter:
    def __init__(self, module, assignment, runtime_symbols=(), row_groups_enabled=True):
        self.module = module
        self.entry = module.entry
        self.assignment = assignment
        self.runtime_symbols = set(runtime_symbols)
        self.llmod = ir.Module(name=module.name)
        self.entry_function = ir.Function(self.llmod, ir.FunctionType(VOID, [PTR]), "entry")
        self.entry_function.args[0].add_attribute("nonnull")
        self.builder = self.entry_builder = None
        self.segments = 0
        self._start_segment(self.entry_function)
        self._globals = {}
        self._declared = {}
        self._names = set()
        self._name_counts = {}   # base -> the N unique() tries first
        self.kernel_count = 0
        self.row_group = None  # the pending row_groups.Group
        self.row_groups_enabled = row_groups_enabled
        self.groups_grown = False
        self.kernels = KernelSet(self.llmod)
        # Functions compiled at the kernels' opt level but not fingerprinted
        # (sort, linear algebra: they read the buffer table themselves).
        self.library = None
        # Instructions' fingerprints, with sizes apart (``key``: the memos'
        # keys; ``fingerprint``: the size-free one).
        self.fingerprints = shape_generic.SizeFreeFingerprints()
        self._size_variants = None
        # Kernels already emitted: (fingerprint, the emitter's own key parts)
        # -> (impl, dims_global); see memoized_kernel.
        self.loop_kernels = {}
        # Shape-generic kernels by their size-free key.
        self.size_free_kernels = shape_generic.SizeFreeKernels(self)

    # ----- helpers ----------------------------------------------------------
    def slice_pointer(self, b, table, key):
        """The address of buffer slice ``key`` from buffer table ``table``.
        In the driver (``table`` is the current segment's), it is computed
        once per segment, in the segment's first block, which dominates
        all of its code: a driver of thousands of steps loads each
        allocation's base once per segment, not once per kernel call."""
        alloc, offset = key
        if table is not self.table or b.function is not self.segment_function:
            return _address(b, b.load(b.gep(table, [i64(alloc)], inbounds=True, source_etype=PTR),
                                      typ=PTR), offset)
        ptr = self._segment_pointers.get(key)
        if ptr is None:
            ab = self.alloca_builder
            base = self.slice_pointer(ab, table, (alloc, 0)) if offset else \
                ab.load(ab.gep(table, [i64(alloc)], inbounds=True, source_etype=PTR), typ=PTR)
            ptr = self._segment_pointers[key] = _address(ab, base, offset)
        return ptr

    def size_variants(self):
        """The module's ``shape_generic.SizeVariants``, made on first use."""
        if self._size_variants is None:
            self._size_variants = shape_generic.SizeVariants(self.module, self.assignment,
                                                             self.fingerprints)
        return self._size_variants

    def dims_global(self, sizes):
        """The driver's constant ``[n x i64]`` array of ``sizes`` (a
        shape-generic kernel's argument), one per distinct list."""
        key = ("dims",) + tuple(sizes)
        gv = self._globals.get(key)
        if gv is None:
            typ = ir.ArrayType(I64, max(1, len(sizes)))
            gv = ir.GlobalVariable(self.llmod, typ, name=self.unique("dims"))
            gv.initializer = ir.Constant(typ, [int(n) for n in sizes] or [0])
            gv.global_constant = True
            gv.linkage = "internal"
            gv.align = 8
            self._globals[key] = gv
        return gv

    def library_module(self):
        """The library module (code with loops of its own that the driver
        calls with the buffer table: sort, linear algebra), compiled like a
        kernel; made on first use."""
        if self.library is None:
            self.library = ir.Module(name="library")
        return self.library

    def library_function(self, ftype, base_name):
        """A new function of the library module and its declaration in the
        driver: ``(definition, declaration)``."""
        name = self.unique(base_name)
        return ir.Function(self.library_module(), ftype, name), ir.Function(self.llmod, ftype, name)

    @staticmethod
    def declare_in(module, name, ftype):
        """Function ``name`` of ``module``, declared on first use."""
        fn = module.globals.get(name)
        return fn if fn is not None else ir.Function(module, ftype, name)

    def declare(self, name, ftype):
        fn = self._declared.get(name)
        if fn is None:
            fn = ir.Function(self.llmod, ftype, name)
            self._declared[name] = fn
        return fn

    def constant_global(self, h, module):
        """The LLVM global constant holding ``h``'s value in ``module`` (a
        kernel's module or the driver's), made on first use."""
        gv = self._globals.get((id(h), id(module)))
        if gv is None:
            if h.literal is None:
                raise unsupported(h, "elided constant value")
            data = bytearray(physical_bytes(literal_array(h), h.shape)) or bytearray(1)
            typ = ir.ArrayType(I8, len(data))
            name = (self.unique(f"const.{h.name}") if module is self.llmod
                    else module.get_unique_name("const"))
            gv = ir.GlobalVariable(module, typ, name=name)
            gv.initializer = ir.Constant(typ, data)
            gv.global_constant = True
            gv.linkage = "internal"
            gv.align = 64
            self._globals[(id(h), id(module))] = gv
        return gv

    def unique(self, base):
        """``base`` (other characters than letters, digits, '.' and '_' made
        '_'), or the first ``base.N`` not yet taken. Counting on from the
        last N given for ``base`` keeps thousands of names of one base
        (``dims``) linear."""
        base = "".join(c if c.isalnum() or c in "._" else "_" for c in base)
        name, n = base, self._name_counts.get(base, 0)
        if n:
            name = f"{base}.{n}"
        while name in self._names:
            n += 1
            name = f"{base}.{n}"
        self._names.add(name)
        self._name_counts[base] = n + 1
        return name

    def emit_scalar_computation(self, b, comp, args):
        """Emits a scalar computation (a reducer or map function) inline;
        returns its root's value (a list for a tuple root)."""
        values = {}
        for h in comp.post_order():
            op = h.opcode
            if op == "parameter":
                v = args[h.parameter_number]
            elif op == "constant":
                gv = self.constant_global(h, b.module)
                if h.shape.rank:
                    raise unsupported(h, "non-scalar constant in a scalar computation")
                v = load_element(b, gv, h.shape.element_type)
            elif op == "tuple":
                v = [values[id(o)] for o in h.operands]
            elif op == "get-tuple-element":
                v = values[id(h.operands[0])][h.attr("index")]
            elif op in ("reshape", "broadcast", "copy", "bitcast", "transpose") \
                    and h.shape.is_array and h.shape.rank == 0 \
                    and h.operands[0].shape.element_type is h.shape.element_type:
                v = values[id(h.operands[0])]
            elif op == "bitcast" and h.shape.is_array and h.shape.rank == 0 \
                    and h.operands[0].shape.is_array and h.operands[0].shape.rank == 0 \
                    and h.operands[0].shape.element_type.byte_size == h.shape.element_type.byte_size \
                    and "c" not in (h.shape.element_type.kind, h.operands[0].shape.element_type.kind):
                # A scalar bitcast changing the element type reinterprets the bits.
                v = from_bits(b, to_bits(b, values[id(h.operands[0])], h.operands[0].shape.element_type),
                               h.shape.element_type)
            elif op in ELEMENTWISE and op != "map":
                v = emit_elementwise(b, h, [values[id(o)] for o in h.operands])
            else:
                raise unsupported(h, f"in scalar computation {comp.name}")
            values[id(h)] = v
        return values[id(comp.root_instruction)]

    # ----- the entry function --------------------------------------------------
    def _start_segment(self, fn=None):
        """Directs the driver code that follows into ``fn`` (the entry
        function), or by default into a new segment function ``void
        entry.segN(i8** table)`` that the entry function calls next. Its
        allocas (scratch of chunked reductions) go in a first block of their
        own, which falls through to the code."""
        if fn is None:
            self.segments += 1
            fn = ir.Function(self.llmod, ir.FunctionType(VOID, [PTR]), f"entry.seg{self.segments}")
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            fn.args[0].add_attribute("nonnull")
            if self.builder is not self.entry_builder:
                self.builder.ret_void()   # the previous segment ends
            self.entry_builder.call(fn, [self.entry_function.args[0]])
        self.segment_function = fn
        self.alloca_builder = ir.IRBuilder(fn.append_basic_block("allocas"))
        self.builder = ir.IRBuilder(fn.append_basic_block("code"))
        if fn is self.entry_function:
            self.entry_builder = self.builder
        self.alloca_builder.branch(self.builder.block)
        self.alloca_builder.position_at_start(self.alloca_builder.block)
        self.table = fn.args[0]
        self._segment_pointers = {}
        self.row_group = None

    def emit(self):
        """The driver: the entry computation's steps in order. Past
        ``SEGMENT_INSTRUCTIONS`` instructions they go into segment functions
        the entry function calls one after the other: machine code
        generation, even at O0, is far slower on one function of thousands
        of calls than on many small ones (measured 35 s against 2 s on a
        20,000-instruction training step)."""
        instructions = self.entry.instructions
        split = len(instructions) > SEGMENT_INSTRUCTIONS
        for k, h in enumerate(instructions):
            if split and k % SEGMENT_INSTRUCTIONS == 0:
                self._start_segment()
            if self.profile and h.opcode not in NO_CODE:
                self.emit_profiled(h)
            else:
                self.emit_instruction(h)
        root = self.entry.root_instruction
        if root.shape.is_tuple:
            self.write_tuple_table(root)
        self.builder.ret_void()
        if self.builder is not self.entry_builder:
            self.entry_builder.ret_void()
        if self.groups_grown:
            drop_unused_functions(self.llmod)
        return EmittedModule(self.llmod, self.kernels, self.library)

    def write_tuple_table(self, h):
        b = self.builder
        table_ptr = self.slice_pointer(b, self.table, Slice(self.assignment.buffer(h, ())).key)
        for k, s in enumerate(h.shape.tuple_shapes):
            if not (s.is_array or s.is_tuple):
                continue
            elem = self.slice_pointer(b, self.table, Slice(self.assignment.buffer(h, (k,))).key)
            b.store(elem, b.gep(table_ptr, [i64(k)], inbounds=True, source_etype=PTR))

    profile = False
    # Table slot of the executable's cancel flag (a pointer to an i32, checked
    # by while loops: emit_control_flow.py), or None (ahead-of-time code).
    cancel_slot = None

    def emit_profiled(self, h):
        """``h`` between ``__xla_cpu_profile_begin/end(id)`` (xla.profiler)."""
        from xla.runtime import profiler
        op = profiler.register_op(self.module.name, h, *profiler.instruction_cost(h, self.assignment))
        fnty = ir.FunctionType(VOID, [I64])
        self.builder.call(self.declare(profiler.BEGIN_SYMBOL, fnty), [i64(op)])
        self.emit_instruction(h)
        self.builder.call(self.declare(profiler.END_SYMBOL, fnty), [i64(op)])

    def emit_instruction(self, h):
        op = h.opcode
        check_element_type(h.shape, h)
        if op in NO_CODE:
            if op == "bitcast" and self.assignment.buffer(h) is not self.assignment.buffer(h.operands[0]):
                self.emit_loops(h, h)
            return
        if op == "fusion":
            kind = h.attr("kind")
            if kind == "kOutput":
                runtime_matmul.emit_dot_addend(self, h)
                return
            if kind not in ("kLoop", "kInput"):
                raise unsupported(h, f"kind={kind}")
            comp = h.attr("calls")
            for f in comp.instructions:
                check_element_type(f.shape, f)
            special = FUSION_ROOT_EMITTERS.get(comp.root_instruction.opcode)
            if special is not None and special(self, h, comp.root_instruction):
                return
            self.emit_loops(h, comp.root_instruction, fusion=h)
            return
        emitter = INSTRUCTION_EMITTERS.get(op)
        if emitter is not None:
            emitter(self, h)
            return
        if op in GENERATORS or (op in ELEMENTWISE):
            if not h.shape.is_array and op not in ("reduce",):
                raise unsupported(h, "tuple-shaped")
            self.emit_loops(h, h)
            return
        raise unsupported(h)

    def reshape_root_view(self, h, root, fusion):
        """(a shape of the operand's dimensions, the operand) where loop
        fusion ``h``'s root is a reshape into a row-major result (the shape
        row-major) or a bitcast (the operand's own shape and layout) of a
        value computed in the fusion: the kernel walks the operand's index
        space and stores each element at its offset in that shape, the same
        bytes as the root's. The root's own element generator rebuilds the
        operand's index from the output's linear index with a division per
        dimension per element (ViT's image-to-patches reshape-transpose-
        reshape of f32[8, 224, 224, 3]: 2.9 -> 0.06 ms). None otherwise.
        """
        if fusion is None or root.opcode not in ("reshape", "bitcast") or not h.shape.is_array:
            return None
        inner = root.operands[0]
        if inner.opcode == "parameter" or not inner.shape.is_array or \
                inner.shape.element_type is not h.shape.element_type:
            return None   # a load (read by its offset: element_generator._stored)
        if [d for d in inner.shape.dimensions if d != 1] == [d for d in h.shape.dimensions if d != 1]:
            return None   # only size-1 dimensions differ: no index arithmetic to save
        if root.opcode == "bitcast":
            return inner.shape, inner
        if not h.shape.is_row_major():
            return None
        return Shape.array(h.shape.element_type, inner.shape.dimensions), inner

    def output_groups(self, h, root):
        """[(loop shape, [(shape index, value getter)])]: outputs that share
        one loop nest (same dimensions)."""
        if root.opcode == "tuple" and root.shape.is_tuple:
            groups = {}
            for k, leaf in enumerate(root.operands):
                if not leaf.shape.is_array:
                    raise unsupported(h, "nested tuple output")
                out_shape = h.shape.tuple_shapes[k]
                key = out_shape.dimensions
                groups.setdefault(key, (out_shape, []))[1].append(
                    ((k,), lambda g, idx, leaf=leaf: g.value(leaf, idx)))
            return list(groups.values())
        if root.shape.is_tuple:  # variadic reduce: one loop, a list of values
            leaves = []
            for k, s in enumerate(root.shape.tuple_shapes):
                leaves.append(((k,), lambda g, idx, k=k: g.value(root, idx)[k]))
            return [(h.shape.tuple_shapes[0], leaves)]
        return [(h.shape, [((), lambda g, idx: g.value(root, idx))])]

    def operand_slices(self, h):
        slices = []
        for o in h.operands:
            if not o.shape.is_array:
                if o.shape.is_tuple:
                    raise unsupported(h, "tuple-shaped operand")
                continue
            slices.append(Slice(self.assignment.buffer(o, ())))
        return slices

    def emit_loops(self, h, root, fusion=None):
        in_slices = self.operand_slices(h)
        if self.emit_chunked_reduce(h, root, fusion, in_slices):
            return
        if column_reduce.emit_column_reduce(self, h, root, fusion, in_slices):
            return
        riders = self.reduce_riders(h, root, fusion)
        groups = self.output_groups(h, root)
        view = self.reshape_root_view(h, root, fusion)
        if view is not None:
            view_shape, inner = view
            groups = [(view_shape, [((), lambda g, idx: g.value(inner, idx))])]
            root = inner
        for group_number, (loop_shape, outputs) in enumerate(groups):
            outputs = [(si, get) for si, get in outputs if si[:1] not in riders]
            if loop_shape.num_elements() == 0 or not outputs:
                continue
            out = [(Slice(self.assignment.buffer(h, si)),
                    view[0] if view is not None else h.shape.subshape(si), get)
                   for si, get in outputs]
            reduces = [root.operands[si[0]] for si, _ in outputs
                       if root.opcode == "tuple" and root.operands[si[0]].opcode == "reduce"]
            side = [(k, r) for k, r in riders.items() if r in reduces]
            side_slices = [Slice(self.assignment.buffer(h, k)) for k, _ in side]
            name = self.unique(f"kernel.{h.name}")
            slices = in_slices + [s for s, _, _ in out] + side_slices
            elementwise = root.opcode != "reduce" and not reduces
            tile_dim = None
            if elementwise and len(outputs) == 1:
                leaf = root.operands[outputs[0][0][0]] if root.opcode == "tuple" else root
                tile_dim = tiling.transposed_dimension(self.assignment, leaf, fusion, out[0][1])
            split = self.loop_split(h, root, loop_shape, slices, side, reduces, tile_dim)
            tiny = self.tiny_loop(root, loop_shape, side)
            stream = not side and streaming_stores.streams(
                self.assignment, h, out, loop_shape, split, tile_dim, tiny)
            fetch = tile_dim is None and prefetch.wanted(self.assignment, h, fusion, tiny)
            memo_key = (self.fingerprints.key(h), group_number, slice_pattern(slices),
                        tile_dim, split, stream, fetch)
            kernel = self.memoized_kernel(
                h, memo_key, name, slices,
                lambda: self.emit_loop_kernel(h, root, fusion, name, slices, out, side, side_slices,
                                              loop_shape, elementwise, tile_dim, group_number,
                                              split, stream, fetch))
            work = loop_shape.num_elements()
            if root.opcode == "reduce":  # each output element reads this many inputs
                work *= max(1, root.operands[0].shape.num_elements() // max(1, work))
            elif reduces:
                work = max([work] + [r.operands[0].shape.num_elements() for r in reduces])
            access = row_groups.kernel_access(self, h, root, fusion, loop_shape,
                                              [(si, shape) for (si, _), (_, shape, _)
                                               in zip(outputs, out)],
                                              side, split)
            access.kernel = kernel
            self.call_kernel(kernel, loop_shape, work, access,
                             extent=le.outer_extent(loop_shape, split))

    def loop_split(self, h, root, loop_shape, slices, side, reduces, tile_dim):
        """How many leading dimensions of ``loop_shape`` the kernel of
        ``emit_loops`` splits as one (``le.split_dimensions``): never its
        innermost loop (the one vectorized), except in a row reduction, whose
        loop over its output holds no vector loop (each output element is a
        reduction along the input's minor dimension); 1 for tiled, tiny and
        shape-generic kernels, whose loops stay as they were."""
        if tile_dim is not None or self.tiny_loop(root, loop_shape, side) or \
                shape_generic.is_generic(self, h, slices):
            return 1
        rows = reduces or ([root] if root.opcode == "reduce" else [])
        row_reduction = rows and all(
            r.operands[0].shape.rank and
            le.major_to_minor(r.operands[0].shape)[-1] in r.attr("dimensions", ())
            for r in rows)
        return le.split_dimensions(loop_shape, loop_shape.rank if row_reduction
                                   else loop_shape.rank - 1)

    @staticmethod
    def tiny_loop(root, loop_shape, side):
        """Whether a loop kernel is small enough to run in the driver."""
        return loop_shape.num_elements() <= TINY_KERNEL_ELEMENTS and side == [] and \
            root.opcode != "reduce"

    def memoized_kernel(self, h, memo_key, name, slices, emit):
        """The kernel of ``h`` over ``slices``: the one ``loop_kernels`` holds
        under ``memo_key`` (structurally the same instruction, same slice
        pattern), reused with ``h``'s buffers and sizes, or ``emit()``'s (a
        finished ``Kernel``), remembered there."""
        memo = self.loop_kernels.get(memo_key)
        if memo is not None:
            return Kernel.reuse(self, name, slices, memo[0], h, memo[1])
        kernel = emit()
        self.loop_kernels[memo_key] = (kernel.impl, kernel.dims_global)
        return kernel

    def emit_loop_kernel(self, h, root, fusion, name, slices, out, side, side_slices, loop_shape,
                         elementwise, tile_dim, group_number=0, split=1, stream=False,
                         fetch=False):
        """The kernel of output group ``group_number`` of ``emit_loops``,
        emitted and finished (or, shape-generic, reused:
        ``shape_generic.SizeFreeKernels``). A kernel of a few elements (a
        loop counter, an index, a scalar of a while body) is emitted into
        the driver module, where it is inlined into its caller: a call and
        its buffer-table loads cost more than the work."""
        tiny = self.tiny_loop(root, loop_shape, side)
        generic = not tiny and not stream and not fetch and shape_generic.is_generic(
            self, h, slices, runtime_bounds=tile_dim is not None)

        def emit():
            kernel = self._loop_kernel_code(h, root, fusion, name, slices, out, side, side_slices,
                                            loop_shape, elementwise, tile_dim, tiny, generic,
                                            split, stream, fetch)
            if generic and not kernel.dim_sizes:
                # A shape-generic kernel whose code asked for no size (a 1-D
                # loop runs from begin to end) is emitted again as it was
                # before, with no sizes argument; its text holds no size
                # unless the generic one's did.
                sizes_in_code = kernel.sizes_in_code
                kernel = self._loop_kernel_code(h, root, fusion, name, slices, out, side,
                                                side_slices, loop_shape, elementwise, tile_dim,
                                                tiny, False, split)
                kernel.sizes_in_code = sizes_in_code
            kernel.finish()
            return kernel

        if not generic:
            return emit()
        return self.size_free_kernels.emit(h, name, slices,
                                           ("loop", group_number, slice_pattern(slices), tile_dim),
                                           emit)

    def _loop_kernel_code(self, h, root, fusion, name, slices, out, side, side_slices, loop_shape,
                          elementwise, tile_dim, tiny, generic, split=1, stream=False,
                          fetch=False):
        """``emit_loop_kernel``'s kernel with its code, not yet finished;
        ``stream``: its outputs written with streaming stores
        (``streaming_stores``); ``fetch``: its row loops prefetch the rows
        ahead of large parameters they read (``prefetch``)."""
        kernel = Kernel(self, name, slices, in_driver=tiny, generic=generic)
        kernel.root = h
        kernel.prefetch = fetch
        g = ElementGenerator(self, kernel, fusion)
        g.reduce_side_outputs = {}
        for (k, r), s in zip(side, side_slices):
            g.reduce_side_outputs.setdefault(id(r), []).append(
                (kernel.pointer(s), h.shape.subshape(k), root.operands[k[0]]))

        def body(index):
            for s, shape, get in out:
                v = get(g, index)
                ptr = g.element_pointer(kernel.pointer(s), shape, index)
                store_element(kernel.b, v, ptr, shape.element_type)

        dims = kernel.dims(loop_shape, outer=False)
        if tile_dim is not None:
            le.tiled_loop_nest(kernel.b, loop_shape, body, tile_dim, kernel.begin, kernel.end,
                               tile=tiling.TILE, dims=dims)
        else:
            code = fusion.attr("calls").instructions if fusion is not None else [h]
            blocked = None
            if stream:
                blocked = streaming_stores.BlockedStores(kernel, [
                    ((lambda index, get=get: get(g, index)),
                     (lambda index, s=s, shape=shape: g.element_pointer(kernel.pointer(s), shape,
                                                                       index)), shape)
                    for s, shape, get in out])
            innermost = blocked
            rows = prefetch.row_buffers(g, root, loop_shape) if fetch and elementwise else []
            if rows:
                innermost = prefetch.RowPrefetch(g, rows, body, blocked)
            interleave = None
            if elementwise:
                loaded = ([x for x in code if x.opcode == "parameter"] if fusion is not None
                          else h.operands)
                interleave = le.long_chain_interleave(
                    code, LOOP_INTERLEAVE,
                    [x.shape for x in loaded] + [shape for _, shape, _ in out])
            le.loop_nest(kernel.b, loop_shape, body, kernel.begin, kernel.end,
                         interleave=interleave, dims=dims, split=split, innermost=innermost)
            if blocked is not None:
                blocked.finish()
        return kernel

    def reduce_riders(self, h, root, fusion):
        """Multi-output fusions (a reduce and the array it reduces, e.g. the
        exponentials and their row sums in softmax): ``{(k,): reduce}`` for
        each array output ``k`` with the dimensions of a reduce output's
        input. Those outputs get no loop of their own: the reduce's loop,
        which walks every input index once, stores them as it goes, so their
        elements are computed once and in the reduce's (parallel) kernel."""
        if fusion is None or root.opcode != "tuple" or not h.shape.is_tuple:
            return {}
        reduces = [r for r in root.operands
                   if r.opcode == "reduce" and len(r.operands) == 2 and r.shape.is_array]
        riders = {}
        for k, leaf in enumerate(root.operands):
            if leaf.opcode == "reduce" or not leaf.shape.is_array or leaf.shape.num_elements() == 0:
                continue
            for r in reduces:
                if (tuple(r.operands[0].shape.dimensions) == tuple(leaf.shape.dimensions)
                        and tuple(h.shape.tuple_shapes[k].dimensions) == tuple(leaf.shape.dimensions)
                        and r.shape.num_elements() > 0):
                    riders[(k,)] = r
                    break
        return riders

    def emit_chunked_reduce(self, h, root, fusion, in_slices):
        """A reduce (standalone or a fusion's root) to a small output over
        many elements, split into ``REDUCE_CHUNKS`` chunks of its most major
        reduced dimension at most: one kernel computes each chunk's partial
        results into a scratch array on the entry function's stack, spread
        over the thread pool; a second combines them with the reducer in
        chunk order (so the result does not depend on the thread count)
        starting from the init value, and stores the output. False when it
        does not apply."""
        if (root.opcode != "reduce" or len(root.operands) != 2 or not h.shape.is_array
                or "__xla_cpu_parallel_for" not in self.runtime_symbols):
            return False
        et = root.shape.element_type
        identity = reduction_emitter.chunk_identity(root.attr("to_apply"), et)
        dim = reduction_emitter.chunked_dimension(root)
        if identity is None or dim is None or root.operands[0].shape.element_type is not et:
            return False
        outputs = h.shape.num_elements()
        work = root.operands[0].shape.num_elements()
        extent = root.operands[0].shape.dimensions[dim]
        chunks = min(REDUCE_CHUNKS, extent, work // PARALLEL_MIN_CHUNK_ELEMENTS)
        if (outputs == 0 or outputs > REDUCE_MAX_OUTPUTS or work < PARALLEL_MIN_ELEMENTS
                or chunks < 2):
            return False
        out_slice = Slice(self.assignment.buffer(h, ()))
        out_shape = h.shape
        rt = identity.type
        # Scratch and context live in the entry block (allocas elsewhere would
        # grow the stack each time a loop runs this code).
        ab = self.alloca_builder
        scratch = ab.alloca(rt, size=i64(chunks * outputs), name=f"chunks.{h.name}")
        scratch.align = 64
        ctx = ab.alloca(PTR, size=i64(2), name=f"ctx.{h.name}")
        b = self.builder
        b.store(self.table, ctx)
        b.store(b.bitcast(scratch, PTR), b.gep(ctx, [i64(1)], inbounds=True, source_etype=PTR))
        ctx = b.bitcast(ctx, PTR)

        def slot(kb, k, index):
            pos = le.linear_index(kb, out_shape, index)
            if k is not None:
                pos = kb.add(kb.mul(k, i64(outputs), flags=("nsw", "nuw")), pos, flags=("nsw", "nuw"))
            return kb.gep(kernel.scratch, [pos], inbounds=True, source_etype=rt)

        # Partial results: chunk k covers [k*extent/chunks, (k+1)*extent/chunks).
        kernel = Kernel(self, self.unique(f"kernel.{h.name}.chunks"), in_slices, scratch=True)
        kernel.root = h
        g = ElementGenerator(self, kernel, fusion)
        kb = kernel.b
        with le.for_loop(kb, kernel.begin, kernel.end, name="chunk") as k:
            lo = kb.udiv(kb.mul(k, i64(extent), flags=("nsw", "nuw")), i64(chunks))
            hi = kb.udiv(kb.mul(kb.add(k, i64(1), flags=("nsw", "nuw")), i64(extent),
                                flags=("nsw", "nuw")), i64(chunks))
            g.reduce_chunks = {id(root): (lo, hi, [identity])}
            saved = g.push_scope()
            le.loop_nest(kb, out_shape, lambda index: kb.store(g.value(root, index), slot(kb, k, index)))
            g.pop_scope(saved)
            g.reduce_chunks = {}
        kernel.finish()
        pf = self.declare("__xla_cpu_parallel_for", ir.FunctionType(VOID, [PTR, PTR, I64, I64]))
        b.call(pf, [kernel.function, ctx, i64(chunks), i64(1)])

        # The combination, serial, in chunk order.
        kernel = Kernel(self, self.unique(f"kernel.{h.name}.combine"), in_slices + [out_slice],
                        scratch=True)
        kernel.root = h
        g = ElementGenerator(self, kernel, fusion)
        kb = kernel.b
        comp = root.attr("to_apply")
        acc = kernel.alloca(rt, name="acc")

        def combine(index):
            kb.store(g.value(root.operands[1], []), acc)
            with le.for_loop(kb, 0, chunks, name="c") as c:
                part = kb.load(slot(kb, c, index), typ=rt)
                kb.store(self.emit_scalar_computation(kb, comp, [kb.load(acc, typ=rt), part]), acc)
            ptr = g.element_pointer(kernel.pointer(out_slice), out_shape, index)
            store_element(kb, kb.load(acc, typ=rt), ptr, out_shape.element_type)

        le.loop_nest(kb, out_shape, combine)
        kernel.finish()
        b.call(kernel.function, [ctx, i64(0), i64(le.outer_extent(out_shape))])
        return True

    def call_kernel(self, fn, loop_shape, work=None, access=None, extent=None, min_chunk=1):
        """Runs kernel ``fn`` (a Kernel, or a function with the table
        signature) over ``loop_shape``; ``work`` (default: its
        element count) is the number of elements it reads, which decides
        whether and how finely to split its outermost loop across threads.
        With ``access`` (a ``row_groups.KernelAccess``), a parallel kernel
        joins the row group of the parallel call just before it when it can
        (see row_groups.py). ``extent`` overrides the range the kernel splits
        (default: the loop shape's outermost extent), ``min_chunk`` is the
        least it hands one thread."""
        b = self.builder
        n = le.outer_extent(loop_shape) if extent is None else extent
        elements = loop_shape.num_elements() if work is None else work
        if (elements >= PARALLEL_MIN_ELEMENTS and n >= 2
                and "__xla_cpu_parallel_for" in self.runtime_symbols):
            if isinstance(fn, Kernel):
                fn = fn.function
            pf = self.declare("__xla_cpu_parallel_for",
                              ir.FunctionType(VOID, [PTR, PTR, I64, I64]))
            per_row = max(elements // n, 1)
            min_chunk = max(min_chunk, -(-PARALLEL_MIN_CHUNK_ELEMENTS // per_row))
            group = self.row_group
            if (access is not None and group is not None and self.row_groups_enabled
                    and b.block.instructions and b.block.instructions[-1] is group.call
                    and group.admits(access)):
                b.block.instructions.pop()
                group.add(fn, access, min_chunk)
                self.groups_grown = True   # the group's function is replaced (emit)
                fn = row_groups.group_function(self, group, KERNEL_TYPE)
                group.call = b.call(pf, [fn, self.table, i64(n), i64(group.min_chunk)])
                return
            call = b.call(pf, [fn, self.table, i64(n), i64(min_chunk)])
            self.row_group = (row_groups.Group(call, fn, access, min_chunk)
                              if access is not None and access.groupable else None)
        elif isinstance(fn, Kernel):
            fn.call_in_driver(b, self.table, i64(0), i64(n))
        else:
            b.call(fn, [self.table, i64(0), i64(n)])


def _address(b, base, offset):
    """``base`` plus ``offset`` bytes."""
    return b.gep(base, [i64(offset)], inbounds=True, source_etype=I8) if offset else base


def drop_unused_functions(llmod):
    """Removes the internal functions of ``llmod`` that nothing calls or
    takes the address of (an instruction operand, or a global's initializer
    of a type that holds pointers), until none is left: a row group that
    grows replaces its function by a new one, and a kernel wrapper its group
    no longer calls stays behind (a third of softmax's driver, 0.8 ms of its
    O0 machine code generation)."""
    while True:
        used = set()
        for g in llmod.globals.values():
            if isinstance(g, ir.Function):
                for block in g.blocks:
                    for instr in block.instructions:
                        for op in instr.operands:
                            if isinstance(op, ir.Function):
                                used.add(op.name)
            elif getattr(g, "initializer", None) is not None and "ptr" in str(g.value_type):
                used.update(re.findall(r'@"?([-\w.$]+)', str(g.initializer)))
        dead = [name for name, g in llmod.globals.items()
                if isinstance(g, ir.Function) and g.linkage == "internal" and g.blocks
                and name not in used]
        if not dead:
            return
        for name in dead:
            del llmod.globals[name]


def emit_module(module, assignment, runtime_symbols=(), on_kernel=None, profile=False,
                cancellable=False):
    """The driver and kernel modules (``kernels.EmittedModule``) for a
    scheduled, buffer-assigned HloModule; see the module docstring.
    ``on_kernel(symbol, text)`` is called for each distinct kernel as soon
    as it is emitted (the kernel compiler starts on it). ``profile``: each
    entry instruction between calls to the profiler (xla/runtime/profiler.py),
    with row groups off so that every kernel is timed on its own.
    ``cancellable``: the buffer table has one more entry, a pointer to the
    executable's cancel flag, which while loops check every iteration."""
    load_extensions_for(module)
    emitter = ModuleEmitter(module, assignment, runtime_symbols, row_groups_enabled=not profile)
    emitter.profile = profile
    if cancellable:
        emitter.cancel_slot = len(assignment.allocations)
    emitter.kernels.on_new = on_kernel
    return emitter.emit()
