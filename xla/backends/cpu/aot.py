"""Ahead-of-time compilation for the CPU backend, as tfcompile does it: an
HloModule becomes a relocatable object file and a C header, for a target
that need not be the host.

``aot_compile(module, target="x86_64", name="entry") -> AotResult`` runs the
CPU compiler's pipeline and buffer assignment, emits the LLVM module with no
runtime symbols (so the IR emitter uses its self-contained code paths: no
``__xla_cpu_parallel_for``, no Eigen matmul) and compiles it for the
target's triple with LLVM's target machine (no JIT involved).

The object defines one function with external linkage and the C ABI,
``void NAME(void** buffer_table)``: the table has one pointer per buffer
allocation (``NAME_NUM_BUFFERS``, index = allocation index, see
``BufferAssignment.allocations``). The caller fills the entries of the
parameters (input arrays, read in place), of the results and of the temp
arena (buffers of ``NAME_BUFFER_SIZES[i]`` bytes, 64-byte aligned). The
entries of *constant* allocations are the function's business: their bytes
are embedded in the object (read-only globals) and ``NAME`` stores their
addresses into the table on entry, so the caller leaves them alone and
may read a result that lives in a constant allocation after the call.

Arrays are stored in the physical order of their layout (row-major for
the default layout ``{n-1,...,0}``); pred is one byte; tuple results also
get an index table (one pointer per element) in their own allocation.

The object's undefined symbols are libm functions (``expf``, ``tanhf``,
...) that LLVM or the elemental emitter call, and on x86-64 libgcc's
half-precision conversions: link with ``-lm``. LLVM's bfloat conversion
helpers, which older libgccs lack, are defined in the object with weak
linkage when it calls them. ``AotResult.undefined_symbols`` lists them.

Runtime functions: by default none (the IR emitter gets no runtime
symbols). Ops the emitter generates code for only through the runtime (a
complex dot) then fail with UnimplementedError. With
``runtime_c=True`` the emitter may call the runtime's matmul and conv2d
(both forms) entry points, and ``AotResult.runtime_source`` is ``aot_runtime.c`` (serial,
portable C implementations of them, written next to the object as
``xla_cpu_runtime.c``) when the object calls any: link it too.

Target CPUs: the baseline of each architecture (``x86-64``, ``generic`` for
AArch64), so the object runs on any machine of that architecture;
``host_cpu=True`` compiles for the host's CPU and features instead (only
when the target is the host's architecture).
"""
import os
import platform
import re

import llvmlite.binding as llvm
from llvmlite import ir

from xla.backends.cpu import jit
from xla.backends.cpu.compiler import CpuCompiler
from xla.backends.cpu.executable import literal_array_at
from xla.backends.cpu.ir_emitter import physical_bytes
from xla.errors import InvalidArgumentError, UnimplementedError
from xla.service.buffer_assignment import ALIGNMENT

# target -> (LLVM triple, baseline CPU)
TARGETS = {
    "x86_64": ("x86_64-unknown-linux-gnu", "x86-64"),
    "aarch64": ("aarch64-unknown-linux-gnu", "generic"),
}
_HOST_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

# The name the IR emitter gives the entry function (ir_emitter contract).
_EMITTED_ENTRY = "entry"
_WRAPPER = "aot.entry"  # not a C identifier, so it cannot collide with NAME

# The runtime entry points aot_runtime.c implements that the emitter is told
# about with runtime_c=True (not __xla_cpu_parallel_for: a serial one gains
# nothing over calling the kernel directly).
RUNTIME_C_SYMBOLS = ("__xla_cpu_matmul_f32", "__xla_cpu_matmul_f64", "__xla_cpu_matmul_s32",
                     "__xla_cpu_matmul_s8_s32", "__xla_cpu_matmul_bf16_f32", "__xla_cpu_matmul_c64",
                     "__xla_cpu_matmul_c128", "__xla_cpu_conv2d_f32", "__xla_cpu_conv2d_f64",
                     "__xla_cpu_conv2d_filter_f32", "__xla_cpu_conv2d_filter_f64")
RUNTIME_C_FILE = "xla_cpu_runtime.c"
_RUNTIME_C_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aot_runtime.c")

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while _Bool _Complex _Imaginary""".split())

_targets_initialized = False


def host_target():
    """The ``target`` name of the host's architecture, or None."""
    return _HOST_ARCH.get(platform.machine().lower())


class AotBuffer:
    """One entry of the buffer table, as the header describes it."""

    def __init__(self, index, kind, size, description):
        self.index = index
        self.kind = kind  # "parameter" | "constant" | "maybe-live-out" | "preallocated-temp"
        self.size = size
        self.description = description


class AotResult:
    """What ``aot_compile`` produced.

    Attributes:
      name, target, triple, cpu, features: what the object was built as.
      object_bytes: the relocatable ELF object.
      header_text: ``NAME.h`` (see ``header``).
      buffers: AotBuffer per allocation, by index.
      args: per entry parameter, [(shape index, allocation index, shape)]
        for its array leaves (tuple parameters have several).
      results: [(allocation index, offset, shape)] for the result's array
        leaves, flattened in order.
      result_table_index: the allocation of the result tuple's index table
        (None for an array result).
      temp_index, temp_size: the temp arena (index None when there is none).
      undefined_symbols: what the object needs from the C library (libm)
        and libgcc.
      runtime_symbols: the runtime functions it calls (runtime_c=True
        only); runtime_source: the C file that defines them, or None.
      optimized_ir: the optimized LLVM IR the object was compiled from.
      module: the optimized HloModule; assignment: its BufferAssignment.
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)

    @property
    def object_name(self):
        return f"{self.name}.o"

    @property
    def header_name(self):
        return f"{self.name}.h"


def check_name(name):
    if not isinstance(name, str) or not _C_IDENTIFIER.match(name) or name in _C_KEYWORDS:
        raise InvalidArgumentError(f"--name={name!r} is not a C identifier")
    if name.startswith("__"):
        raise InvalidArgumentError(f"--name={name}: names starting with __ are reserved")
    return name


def aot_compile(module, target="x86_64", name="entry", host_cpu=False, runtime_c=False,
                opt_level=3):
    """Compiles ``module`` (optimized in place) to an object and header; see
    the module docstring."""
    check_name(name)
    if target not in TARGETS:
        raise InvalidArgumentError(f"unknown target {target!r}; one of: " + ", ".join(sorted(TARGETS)))
    if host_cpu and target != host_target():
        raise InvalidArgumentError(f"host CPU features apply only to the host's target "
                                   f"({host_target()}), not {target}")
    assignment, emitted = _emit(module, RUNTIME_C_SYMBOLS if runtime_c else ())
    constant_bytes = _constant_allocations(assignment)
    _add_wrapper(emitted.driver, assignment, constant_bytes)

    triple, cpu = TARGETS[target]
    features = ""
    if host_cpu:
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    with jit._lock:  # noqa: SLF001 - LLVM's global context is shared with the JIT
        _initialize_targets()
        tm = llvm.Target.from_triple(triple).create_target_machine(
            cpu=cpu, features=features, opt=opt_level, reloc="pic", codemodel="default")
        mod = _finish_module(emitted, name, triple, tm, opt_level)
        object_bytes = tm.emit_object(mod)
        undefined = jit.undefined_symbols(object_bytes)
        support = sorted(set(undefined) & set(jit._SUPPORT_NAMES))  # noqa: SLF001
        if support:
            mod.link_in(_support_module(support, triple, tm))
            if opt_level > 0:
                jit.optimize(mod, opt_level, tm)
            object_bytes = tm.emit_object(mod)
            undefined = jit.undefined_symbols(object_bytes)
        optimized_ir = str(mod)
    runtime = sorted({s for s in undefined if s.startswith("__xla")})
    if set(runtime) - set(RUNTIME_C_SYMBOLS if runtime_c else ()):
        raise UnimplementedError(
            "cpu aot: the generated code calls runtime function(s) " + ", ".join(runtime)
            + " that an ahead-of-time object cannot resolve")
    runtime_source = None
    if runtime:
        with open(_RUNTIME_C_SOURCE, encoding="utf-8") as f:
            runtime_source = f.read()

    result = _describe(module, assignment, name, target)
    result.update(object_bytes=object_bytes, triple=triple, cpu=cpu, features=features,
                  undefined_symbols=sorted(set(undefined) - set(runtime)),
                  runtime_symbols=runtime, runtime_source=runtime_source, optimized_ir=optimized_ir,
                  module=module, assignment=assignment, opt_level=opt_level)
    aot = AotResult(**result)
    aot.header_text = header(aot)
    return aot


# ----- the CPU compiler's pieces -------------------------------------------------
class _AotCompiler(CpuCompiler):
    """The CPU compiler without ``linalg-composite-rewriter``: an object's C
    runtime has no eigensolver or SVD, so the composites ``xla.eigh`` and
    ``xla.svd`` run their decompositions."""

    def pipeline(self, **options):
        pipeline = super().pipeline(**options)
        pipeline.disabled_passes = pipeline.disabled_passes | {"linalg-composite-rewriter"}
        return pipeline

    def vector_bits(self):
        # Objects are built for a target CPU that need not be this one
        # (a baseline x86-64 or AArch64 CPU by default): the 256-bit width
        # the emitters were tuned at, which LLVM splits where registers are
        # narrower.
        return 256

    def native_bf16_conversion(self):
        # vcvtneps2bf16 only where the object's target is known to have
        # AVX512-BF16, which a baseline CPU has not.
        return False

    def streaming_store_bytes(self):
        # Plain stores: the object's target and its caches are not this
        # host's (and sfence is x86's).
        return None

    def prefetch_bytes(self):
        # No software prefetch: measured on this host only.
        return None


def _emit(module, runtime_symbols):
    """CpuCompiler.emit with runtime symbol names only (nothing is resolved)."""
    return _AotCompiler().emit(module, {s: 0 for s in runtime_symbols})


def _constant_allocations(assignment):
    """{allocation index: bytes} of the constant allocations, filled as
    CpuExecutable fills them."""
    out = {}
    for alloc in assignment.allocations:
        if alloc.kind != "constant":
            continue
        data = bytearray(alloc.size)
        for b in alloc.buffers:
            if b.shape.is_array and b.instruction.opcode == "constant":
                value = physical_bytes(literal_array_at(b.instruction, b.index), b.shape)
                data[b.offset:b.offset + len(value)] = value
        out[alloc.index] = bytes(data)
    return out


def _add_wrapper(llmod, assignment, constant_bytes):
    """Adds ``aot.entry(table)``: stores the embedded constants' addresses
    into the table, then runs the emitted entry function (made internal, so
    it is inlined)."""
    ptr = ir.PointerType()
    i8 = ir.IntType(8)
    i64 = ir.IntType(64)
    entry = llmod.get_global(_EMITTED_ENTRY)
    entry.linkage = "internal"
    wrapper = ir.Function(llmod, ir.FunctionType(ir.VoidType(), [ptr]), _WRAPPER)
    wrapper.attributes.add("nounwind")
    b = ir.IRBuilder(wrapper.append_basic_block("entry"))
    table = wrapper.args[0]
    for index, data in sorted(constant_bytes.items()):
        typ = ir.ArrayType(i8, max(len(data), 1))
        gv = ir.GlobalVariable(llmod, typ, name=f"aot.constant_allocation.{index}")
        gv.initializer = ir.Constant(typ, bytearray(data or b"\0"))
        gv.global_constant = True
        gv.linkage = "internal"
        gv.align = ALIGNMENT
        slot = b.gep(table, [ir.Constant(i64, index)], inbounds=True, source_etype=ptr)
        b.store(gv, slot)
    b.call(entry, [table])
    b.ret_void()


def _initialize_targets():
    global _targets_initialized
    if not _targets_initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _targets_initialized = True


def _finish_module(emitted, name, triple, tm, opt_level):
    """Links the driver and kernel modules into one (kernels internal),
    names the exported function ``name``, retargets and optimizes it."""
    mod = emitted.link()
    existing = {g.name: g for g in list(mod.functions) + list(mod.global_variables)}
    clash = existing.get(name)
    if clash is not None:
        if clash.is_declaration:
            raise InvalidArgumentError(f"--name={name} is a function the generated code calls")
        clash.name = f"{name}.internal"
    wrapper = mod.get_function(_WRAPPER)
    wrapper.name = name
    wrapper.linkage = "external"
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    if opt_level > 0:
        jit.optimize(mod, opt_level, tm)
    return mod


def _support_module(names, triple, tm):
    """jit's IR definitions of LLVM's half/bfloat conversion libcalls, weak
    (several AOT objects may be linked together, and a libgcc that has them
    may be linked too)."""
    mod = llvm.parse_assembly(jit._SUPPORT_IR)  # noqa: SLF001
    mod.triple = triple
    mod.data_layout = str(tm.target_data)
    for fn in mod.functions:
        if fn.name in jit._SUPPORT_NAMES and not fn.is_declaration:  # noqa: SLF001
            fn.linkage = "weak_any" if fn.name in names else "internal"
    return mod


# ----- the header ------------------------------------------------------------------
def _describe(module, assignment, name, target):
    entry = module.entry
    descriptions = {a.index: [] for a in assignment.allocations}
    args = []
    for p in entry.parameters:
        leaves = []
        if assignment.has_buffers(p):
            for index, buf in sorted(assignment.buffers_of(p).items()):
                shape = p.shape.subshape(index)
                leaves.append((index, buf.allocation.index, shape))
                where = f"argument {p.parameter_number}" + _index_text(index)
                what = "index table of the tuple (not read)" if shape.is_tuple else shape.to_text()
                descriptions[buf.allocation.index].append(f"{where} ({p.name}): {what}")
        args.append(leaves)
    root = entry.root_instruction
    results = []
    result_table_index = None
    if root.shape.is_tuple:
        table = assignment.buffer(root, ())
        result_table_index = table.allocation.index
        descriptions[result_table_index].append(
            f"result index table ({len(root.shape.tuple_shapes)} pointers) at offset {table.offset}")
    for index, shape in root.shape.leaves():
        if not shape.is_array:
            continue
        buf = assignment.buffer(root, index)
        results.append((buf.allocation.index, buf.offset, shape))
        descriptions[buf.allocation.index].append(
            f"result {len(results) - 1}{_index_text(index) if len(index) > 1 else ''}: "
            f"{shape.to_text()} at offset {buf.offset}")
    temp_index = None
    buffers = []
    for alloc in assignment.allocations:
        text = descriptions[alloc.index]
        if alloc.kind == "constant":
            text = ["constants embedded in the object; " + name + " sets this entry"] + text
        elif alloc.kind == "preallocated-temp":
            temp_index = alloc.index
            text = ["temp arena"] + text
        buffers.append(AotBuffer(alloc.index, alloc.kind, alloc.size, "; ".join(text) or alloc.kind))
    return dict(name=name, target=target, buffers=buffers, args=args, results=results,
                result_table_index=result_table_index, temp_index=temp_index,
                temp_size=assignment.temp_bytes if temp_index is not None else 0,
                module_name=module.name, program_shape=_program_shape(entry))


def _index_text(index):
    return "{" + ",".join(map(str, index)) + "}" if index else ""


def _program_shape(entry):
    params = ", ".join(f"{p.name}: {p.shape.to_text()}" for p in entry.parameters)
    return f"({params}) -> {entry.root_instruction.shape.to_text()}"


def _c_array(ctype, name, values):
    body = ", ".join(str(v) for v in values) if values else "0"
    return f"static const {ctype} {name}[{max(len(values), 1)}] = {{{body}}};"


def header(aot):
    """The text of ``NAME.h`` for an AotResult."""
    n = aot.name
    guard = f"XLA_AOT_{n.upper()}_H_"
    lines = [
        f"/* Generated by aot_compile from HLO module {aot.module_name}; do not edit.",
        f" * Target: {aot.triple} (cpu {aot.cpu}{', features ' + aot.features if aot.features else ''}).",
        f" * Program shape: {aot.program_shape}",
        " *",
        f" * {n}(buffer_table) runs the computation. buffer_table has {n}_NUM_BUFFERS",
        " * entries, one per buffer allocation. Before the call, point every entry",
        f" * except the constant ones at {n}_BUFFER_ALIGNMENT-aligned memory of",
        f" * {n}_BUFFER_SIZES[i] bytes: arguments hold the inputs (read in place, not",
        " * written unless an argument is also a result), results and the temp arena",
        f" * are written. Constant entries are set by {n} itself (the constants are",
        " * embedded in the object). Arrays are stored in their layout's order",
        " * (row-major for the default layout); pred is one byte per element.",
        " * Calls on one table must not overlap (the temp arena is shared).",
        " *",
    ]
    if aot.undefined_symbols:
        lines.append(" * The object calls these C library functions (link with -lm): "
                     + ", ".join(aot.undefined_symbols) + ".")
    else:
        lines.append(" * The object needs nothing from the C library.")
    if aot.runtime_symbols:
        lines.append(f" * It calls the runtime functions {', '.join(aot.runtime_symbols)}:")
        lines.append(f" * compile and link {RUNTIME_C_FILE} (written next to it) too.")
    lines += [" *", " * Buffers:"]
    for buf in aot.buffers:
        lines.append(f" *   [{buf.index}] {buf.kind}, {buf.size} bytes: {buf.description}")
    lines += [" */", f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
              "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
              f"void {n}(void** buffer_table);", "",
              f"#define {n}_NEEDS_RUNTIME {int(bool(aot.runtime_symbols))}",
              f"#define {n}_NUM_BUFFERS {len(aot.buffers)}",
              f"#define {n}_BUFFER_ALIGNMENT {ALIGNMENT}",
              _c_array("int64_t", f"{n}_BUFFER_SIZES", [b.size for b in aot.buffers]),
              "/* 1 where the entry is a constant allocation (set by the function). */",
              _c_array("int", f"{n}_BUFFER_IS_CONSTANT", [int(b.kind == "constant") for b in aot.buffers]),
              ""]
    lines.append(f"#define {n}_NUM_ARGS {len(aot.args)}")
    flat_args = []
    for number, leaves in enumerate(aot.args):
        for index, alloc, shape in leaves:
            suffix = "".join(f"_{i}" for i in index)
            lines.append(f"#define {n}_ARG{number}{suffix}_INDEX {alloc}  /* {shape.to_text()} */")
            if shape.is_array:
                flat_args.append((alloc, shape))
    lines += ["/* The arguments' array leaves, flattened in order. */",
              f"#define {n}_NUM_ARG_ARRAYS {len(flat_args)}",
              _c_array("int", f"{n}_ARG_INDICES", [a for a, _ in flat_args]),
              _c_array("int64_t", f"{n}_ARG_SIZES", [s.byte_size() for _, s in flat_args]), ""]
    lines.append(f"#define {n}_NUM_RESULTS {len(aot.results)}")
    if aot.result_table_index is not None:
        lines.append(f"#define {n}_RESULT_TUPLE_INDEX {aot.result_table_index}")
    for k, (alloc, offset, shape) in enumerate(aot.results):
        lines.append(f"#define {n}_RESULT{k}_INDEX {alloc}  /* {shape.to_text()} */")
        lines.append(f"#define {n}_RESULT{k}_OFFSET {offset}")
    if aot.result_table_index is None and len(aot.results) == 1:
        lines.append(f"#define {n}_RESULT_INDEX {n}_RESULT0_INDEX")
        lines.append(f"#define {n}_RESULT_OFFSET {n}_RESULT0_OFFSET")
    lines += ["/* The result's array leaves, flattened in order: allocation, byte offset, bytes. */",
              _c_array("int", f"{n}_RESULT_INDICES", [a for a, _, _ in aot.results]),
              _c_array("int64_t", f"{n}_RESULT_OFFSETS", [o for _, o, _ in aot.results]),
              _c_array("int64_t", f"{n}_RESULT_SIZES", [s.byte_size() for _, _, s in aot.results]), ""]
    lines.append(f"#define {n}_TEMP_INDEX {aot.temp_index if aot.temp_index is not None else -1}")
    lines.append(f"#define {n}_TEMP_SIZE {aot.temp_size}")
    lines += ["", "#ifdef __cplusplus", "}  /* extern \"C\" */", "#endif", "", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)
