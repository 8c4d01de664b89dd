"""A small JIT over llvmlite: LLVM IR in, host machine code and function
addresses out.

``JitModule(ir_text_or_module, opt_level=3)`` parses the IR, retargets it to
the host (triple, data layout, CPU name and features), optimizes it with
LLVM's new pass manager (the O<opt_level> pipeline, loop and SLP
vectorization on) and compiles it with MCJIT. Functions are looked up by
name with ``address(name)`` or wrapped for ctypes with ``function(name,
restype, *argtypes)``.

Symbols the generated code calls are resolved, in order, among those
registered with ``add_symbol(name, address)`` and those of the process
(libm is loaded into the symbol search path once, so ``expf``, ``tanhf``,
``erff``, ``atan2``, ... resolve even where the interpreter binary does not
export them).

Initialization is lazy and thread-safe; compilation is serialized with one
lock because LLVM's global context is shared.
"""
import ctypes
import glob
import os
import struct
import threading

import llvmlite.binding as llvm
from llvmlite import ir

_lock = threading.RLock()
_target_machines = {}
_initialized = False


_codegen_initialized = False


def _initialize_codegen():
    """LLVM's native target, enough to compile IR to object code."""
    global _codegen_initialized
    if not _codegen_initialized:
        with _lock:
            if not _codegen_initialized:
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                llvm.initialize_native_asmparser()
                _codegen_initialized = True


def _initialize():
    global _initialized
    if _initialized:
        return
    with _lock:
        if _initialized:
            return
        _initialize_codegen()
        # The process itself (symbols of already loaded libraries), then libm
        # by name in case it was loaded with RTLD_LOCAL or not at all.
        try:
            llvm.load_library_permanently(None)
        except Exception:  # pragma: no cover - older llvmlite
            pass
        _load_libm()
        _initialized = True


# glibc's libm by its soname: found by the dynamic loader's own search,
# without ctypes.util.find_library (which runs ``ldconfig -p``, ~7 ms, and
# imports subprocess); other C libraries by that search.
_LIBM_SONAMES = ("libm.so.6",)


def _load_libm():
    for name in _LIBM_SONAMES:
        try:
            llvm.load_library_permanently(name)
            return
        except RuntimeError:
            pass
    import ctypes.util
    libm = ctypes.util.find_library("m")
    if libm:
        try:
            llvm.load_library_permanently(libm)
        except RuntimeError:  # pragma: no cover
            pass


# Compiler-runtime conversions LLVM may call for half/bfloat that the
# process may not export (libgcc/compiler-rt builtins); defined here in IR
# with round-to-odd through f32, so no double rounding.
_SUPPORT_IR = r"""
define internal float @round_to_odd(double %x) {
  %y = fptrunc double %x to float
  %w = fpext float %y to double
  %bits = bitcast float %y to i32
  %ay = call float @llvm.fabs.f32(float %y)
  %finite = fcmp olt float %ay, 0x7FF0000000000000
  %inexact = fcmp one double %w, %x
  %lsb = and i32 %bits, 1
  %even = icmp eq i32 %lsb, 0
  %f1 = and i1 %finite, %inexact
  %fix = and i1 %f1, %even
  %aw = call double @llvm.fabs.f64(double %w)
  %ax = call double @llvm.fabs.f64(double %x)
  %grow = fcmp olt double %aw, %ax
  %step = select i1 %grow, i32 1, i32 -1
  %moved = add i32 %bits, %step
  %r = select i1 %fix, i32 %moved, i32 %bits
  %f = bitcast i32 %r to float
  ret float %f
}
define internal i16 @f32_to_bf16_bits(float %x) {
  %bits = bitcast float %x to i32
  %hi = lshr i32 %bits, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %bits, %bias
  %sh = lshr i32 %sum, 16
  %out = trunc i32 %sh to i16
  %nan = fcmp uno float %x, %x
  %sign = trunc i32 %hi to i16
  %s = and i16 %sign, -32768
  %q = or i16 %s, 32704
  %r = select i1 %nan, i16 %q, i16 %out
  ret i16 %r
}
define half @__truncdfhf2(double %x) {
  %f = call float @round_to_odd(double %x)
  %h = fptrunc float %f to half
  ret half %h
}
define bfloat @__truncsfbf2(float %x) {
  %b = call i16 @f32_to_bf16_bits(float %x)
  %r = bitcast i16 %b to bfloat
  ret bfloat %r
}
define bfloat @__truncdfbf2(double %x) {
  %f = call float @round_to_odd(double %x)
  %b = call i16 @f32_to_bf16_bits(float %f)
  %r = bitcast i16 %b to bfloat
  ret bfloat %r
}
declare float @llvm.fabs.f32(float)
declare double @llvm.fabs.f64(double)
"""
_SUPPORT_NAMES = ("__truncdfhf2", "__truncsfbf2", "__truncdfbf2")
_support_module = None


def _ensure_support_functions(text, objects=()):
    """Installs the support functions when code may call them: IR that uses
    half or bfloat values (LLVM emits the calls while generating code), or
    objects that leave them undefined. Compiling them costs ~15 ms, which
    a process that never converts to half or bfloat does not pay."""
    if _support_module is not None:
        return
    if (" half" in text or "bfloat" in text
            or any(n in _SUPPORT_NAMES for o in objects for n in undefined_symbols(o))):
        with _lock:
            if _support_module is None:
                _install_support_functions()


def _install_support_functions():
    global _support_module
    needed = [n for n in _SUPPORT_NAMES if not llvm.address_of_symbol(n)]
    if not needed:
        _support_module = "the process has them"
        return
    _support_module = JitModule(_SUPPORT_IR, opt_level=2)
    for name in needed:
        llvm.add_symbol(name, _support_module.address(name))


_host = None   # (triple, CPU name, CPU features), read from LLVM once


def _host_target():
    global _host
    if _host is None:
        _initialize_codegen()
        _host = (llvm.get_process_triple(), llvm.get_host_cpu_name(),
                 llvm.get_host_cpu_features().flatten())
    return _host


def _create_target_machine(opt_level):
    _, cpu, features = _host_target()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=cpu, features=features, opt=opt_level, reloc="default", codemodel="jitdefault")


def target_machine(opt_level=3):
    """The host TargetMachine (host CPU name and features), cached per level.

    Never hand this one to an execution engine: MCJIT takes ownership of its
    target machine and frees it with the engine (JitModule makes its own).
    """
    _initialize_codegen()
    with _lock:
        tm = _target_machines.get(opt_level)
        if tm is None:
            tm = _target_machines[opt_level] = _create_target_machine(opt_level)
        return tm


def host_triple():
    _initialize()
    return _host_target()[0]


def host_cpu():
    """The host CPU name and features (what generated code may use)."""
    _initialize()
    _, cpu, features = _host_target()
    return cpu + ":" + features


def host_vector_bits():
    """The width of the host's vector registers that generated code uses:
    512 with AVX-512 (AVX-512F), else 256 (AVX, and the width the emitters
    were tuned at elsewhere)."""
    _initialize()
    features = _host_target()[2].split(",")
    return 512 if "+avx512f" in features else 256


def host_converts_bf16():
    """Whether the host converts f32 to bf16 in one instruction
    (AVX512-BF16's vcvtneps2bf16, with AVX512-VL for the narrower
    vectors): then ``llvm_types`` emits ``fptrunc`` to bfloat."""
    _initialize()
    features = _host_target()[2].split(",")
    return all(f in features for f in ("+avx512bf16", "+avx512vl", "+avx512bw"))


def host_last_level_cache_bytes(root="/sys/devices/system/cpu/cpu0/cache"):
    """The size in bytes of the host's largest data or unified cache (the
    L3 of an x86 CPU), from Linux's sysfs; None where unknown."""
    best = None
    for entry in glob.glob(os.path.join(root, "index*")):
        try:
            with open(os.path.join(entry, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(entry, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            size = int(text.rstrip("KMG")) * scale
        except (OSError, ValueError):
            continue
        best = size if best is None else max(best, size)
    return best


_streaming_store_bytes = []


def host_streaming_store_bytes():
    """The result size above which the JIT's loop kernels stream their
    stores (``streaming_stores``): the host's last-level cache size on
    x86-64 (32 MB where sysfs does not say), None on other hosts. Read
    once."""
    if not _streaming_store_bytes:
        x86 = llvm.get_process_triple().startswith("x86_64")
        _streaming_store_bytes.append((host_last_level_cache_bytes() or (32 << 20)) if x86
                                      else None)
    return _streaming_store_bytes[0]


_data_layout = None


def host_data_layout():
    global _data_layout
    if _data_layout is None:
        _data_layout = str(target_machine().target_data)
    return _data_layout


def add_symbol(name, address):
    """Makes ``name`` resolve to ``address`` in code compiled from now on
    (runtime functions the generated code calls by name)."""
    _initialize()
    if isinstance(address, ctypes._CFuncPtr):
        address = ctypes.cast(address, ctypes.c_void_p).value
    with _lock:
        llvm.add_symbol(name, int(address))


def address_of_symbol(name):
    """The address ``name`` resolves to in generated code, or None."""
    _initialize()
    return llvm.address_of_symbol(name)


# LLVM's loop unroller, after the vectorizer (which interleaves the loops
# that ask for it, see loop_emitter.loop_hints). Off: it fully unrolled small
# constant-trip loops (16x16 transpose tiles: 1,558 IR lines from 89, 190 ms
# to compile instead of 40; elementwise kernels 40 -> 24 ms) and bought
# nothing measurable at run time (benchmarks/cpu_workloads.py, twice each
# way, differences within this machine's run-to-run noise).
LOOP_UNROLLING = False


def llvm_lock():
    """The lock every use of LLVM in this process holds (other targets too)."""
    return _lock


# What a kernel's compilation may leave out of LLVM's O<n> pipeline (bits of
# ``skip``, see ``compile_to_object``):
# SKIP_LSR: loop strength reduction, an IR pass of machine code generation.
#   On kernels of small arrays it was a third of LLVM's time (its rewrite of
#   the vectorized loops' addressing also doubled the machine code to
#   select), and its code is a loop-counter instruction per iteration
#   better at most (docs/compile_time.md, "LLVM's pipeline").
# SKIP_VECTORIZERS: the loop and SLP vectorizers (--xla_llvm_disable_expensive_passes).
# SKIP_FULL_SIMPLIFICATION: the function simplification of O1 in place of
#   O2's and O3's (no GVN, jump threading, loop unswitching, ...); the
#   optimization that follows, the vectorizers with it, is O<n>'s. On small
#   kernels 15% less optimization time for the same vectorized loops.
SKIP_LSR = 1
SKIP_VECTORIZERS = 2
SKIP_FULL_SIMPLIFICATION = 4


def optimize(module_ref, opt_level=3, tm=None, run=None, skip=0):
    """Runs the new pass manager's O<opt_level> pipeline on a ModuleRef
    (``run``: the function that runs it, see ``compile_objects``; ``skip``:
    SKIP_VECTORIZERS and SKIP_FULL_SIMPLIFICATION, see above)."""
    tm = tm or target_machine(opt_level)
    short = opt_level >= 2 and skip & SKIP_FULL_SIMPLIFICATION
    pto = llvm.create_pipeline_tuning_options(speed_level=1 if short else opt_level)
    if opt_level >= 2:
        vectorize = not (skip & SKIP_VECTORIZERS)
        pto.loop_vectorization = vectorize
        pto.slp_vectorization = vectorize
        pto.loop_unrolling = LOOP_UNROLLING
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        if run is None:
            mpm.run(module_ref, pb)
        else:
            run(mpm, module_ref, pb)
    finally:
        _dispose_module_pass_manager(mpm)


_lsr_off = False   # -disable-lsr in force (LLVM's option is process-wide)


def _set_lsr(skip):
    """Turns LLVM's loop strength reduction off for SKIP_LSR in ``skip``,
    else on (call with ``_lock`` held: the option is process-wide, so
    whoever compiles sets it first, and other targets find it on)."""
    global _lsr_off
    off = bool(skip & SKIP_LSR)
    if off != _lsr_off:
        llvm.set_option("", "-disable-lsr=" + ("true" if off else "false"))
        _lsr_off = off


def _dispose_module_pass_manager(mpm):
    """Frees a new-pass-manager ModulePassManager. llvmlite 0.50's wrapper
    never does (its ``_dispose`` is ObjectRef's no-op), which leaked ~30 KB
    of LLVM memory per compiled module: a long-running process compiling
    many modules grew by gigabytes."""
    dispose = getattr(llvm.ffi.lib, "LLVMPY_DisposeNewModulePassManger", None)
    if dispose is None or type(mpm)._dispose is not llvm.ffi.ObjectRef._dispose:
        return   # a llvmlite whose wrapper frees it itself
    dispose.argtypes = [llvm.ffi.LLVMModulePassManagerRef]
    dispose.restype = None
    dispose(mpm)
    mpm.detach()


def compile_to_object(text, opt_level=3, skip=0):
    """Native object code (bytes) for an LLVM IR module's text (or a list
    of texts, linked into one module): parsed in a context of its own,
    retargeted to the host, optimized at ``opt_level`` less what ``skip``
    names (SKIP_*, above) and compiled with the JIT's code
    model, so an engine can load it (``JitModule.link``). Also what the
    kernel compiler's worker processes run (``llvm_worker.py`` loads this
    file without the package)."""
    _initialize_codegen()
    with _lock:
        tm = target_machine(opt_level)
        _set_lsr(skip)
        try:
            return bytes(tm.emit_object(_optimized_module(text, opt_level, tm, skip=skip)))
        finally:
            _set_lsr(0)


# compile_objects runs LLVM's two long steps (the optimization pipeline and
# machine code generation) on several threads at once. llvmlite takes one
# process-wide lock around every call into LLVM, so through its wrappers
# threads would compile one after the other; these are the same two entry
# points of llvmlite's library, called through ctypes without that lock (and
# without the GIL). That is safe because each thread compiles a module of its
# own, in an LLVMContext of its own, with a TargetMachine of its own: LLVM's
# unit of thread isolation (what its parallel LTO code generation does).
# Every other call, short ones (parsing, linking, verifying, building the
# pass pipeline), still goes through llvmlite and its lock.
_unlocked = None


def _unlocked_entry_points():
    """(run a module pass manager, emit object code to memory) without
    llvmlite's lock, or None when this llvmlite does not declare them with
    the signatures expected (then compile_objects compiles serially)."""
    global _unlocked
    if _unlocked is None:
        _unlocked = False
        ffi = llvm.ffi
        # name: (argument types, result type); a void function's result
        # type is left at ctypes' default (c_int) by llvmlite.
        expected = {
            "LLVMPY_RunNewModulePassManager": (
                [ffi.LLVMModulePassManagerRef, ffi.LLVMModuleRef, ffi.LLVMPassBuilderRef], None),
            "LLVMPY_TargetMachineEmitToMemory": (
                [ffi.LLVMTargetMachineRef, ffi.LLVMModuleRef, ctypes.c_int,
                 ctypes.POINTER(ctypes.c_char_p)], ffi.LLVMMemoryBufferRef),
        }
        try:
            lib = ctypes.CDLL(ffi.lib._name, handle=ffi.lib._handle)   # the loaded library
            functions = []
            for name, (argtypes, restype) in expected.items():
                declared = getattr(ffi.lib, name)
                if list(declared.argtypes) != argtypes or \
                        declared.restype not in ((None, ctypes.c_int) if restype is None else (restype,)):
                    return None
                function = getattr(lib, name)
                function.argtypes, function.restype = argtypes, restype
                functions.append(function)
            _unlocked = tuple(functions)
        except (AttributeError, OSError, TypeError):
            return None
    return _unlocked or None


def _compile_unlocked(text, opt_level, entry_points, skip):
    """compile_to_object, its long steps outside llvmlite's lock (see
    _unlocked_entry_points); for a thread of compile_objects."""
    run, emit = entry_points
    tm = _create_target_machine(opt_level)   # this thread's own
    mod = _optimized_module(text, opt_level, tm, run=run, skip=skip)
    ffi = llvm.ffi
    with ffi.OutputString() as error:
        buffer = emit(tm, mod, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer),
                                ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def compile_objects(texts, opt_level=3, threads=1, skip=0):
    """``[compile_to_object(t, opt_level, skip) for t in texts]`` (each a
    module's text or a list of texts to link), up to ``threads`` of them
    compiled at once, on this thread and helper threads; the same object
    code as compiled one by one. Serial where ``threads`` < 2, for a single
    text, or where llvmlite's entry points are not as expected."""
    texts = list(texts)
    entry_points = _unlocked_entry_points() if threads > 1 and len(texts) > 1 else None
    if entry_points is None:
        return [compile_to_object(t, opt_level, skip) for t in texts]
    _initialize_codegen()
    _host_target()
    if skip & SKIP_LSR:
        # The option is process-wide: held for the helpers' whole work, so
        # nothing else in the process compiles without it meanwhile.
        with _lock:
            _set_lsr(skip)
            try:
                return _compile_on_threads(texts, opt_level, threads, entry_points, skip)
            finally:
                _set_lsr(0)
    return _compile_on_threads(texts, opt_level, threads, entry_points, skip)


def _compile_on_threads(texts, opt_level, threads, entry_points, skip):
    results = [None] * len(texts)
    errors = []
    order = iter(range(len(texts)))
    order_lock = threading.Lock()

    def work():
        while not errors:
            with order_lock:
                k = next(order, None)
            if k is None:
                return
            try:
                results[k] = _compile_unlocked(texts[k], opt_level, entry_points, skip)
            except BaseException as e:  # noqa: BLE001 - raised by the calling thread
                errors.append(e)

    helpers = [threading.Thread(target=work, name="xla-cpu-llvm", daemon=True)
               for _ in range(min(threads, len(texts)) - 1)]
    for h in helpers:
        h.start()
    try:
        work()
        for h in helpers:
            h.join()
    except BaseException as e:   # e.g. KeyboardInterrupt while joining
        errors.append(e)         # the helpers stop after the module they compile
        raise
    if errors:
        raise errors[0]
    return results


def optimized_ir(text, opt_level=3, skip=0):
    """The IR of ``text`` after the optimization ``compile_to_object`` runs."""
    _initialize_codegen()
    with _lock:
        return str(_optimized_module(text, opt_level, target_machine(opt_level), skip=skip))


def _optimized_module(text, opt_level, tm, run=None, skip=0):
    """``text`` (or texts, linked) parsed in a new context, retargeted to
    ``tm``'s host, verified and optimized. Call with ``_lock`` held, or
    from ``_compile_unlocked`` (``run``: the unlocked pass manager entry)."""
    texts = [text] if isinstance(text, str) else list(text)
    context = llvm.create_context()
    mod = llvm.parse_assembly(texts[0], context=context)
    for other in texts[1:]:
        mod.link_in(llvm.parse_assembly(other, context=context))
    mod.triple = _host_target()[0]
    mod.data_layout = str(tm.target_data)
    mod.verify()
    if opt_level > 0:
        optimize(mod, opt_level, tm, run=run, skip=skip)
    return mod


_LIBM = frozenset(f"{n}{suffix}" for n in """sin cos tan asin acos atan atan2 sinh cosh tanh asinh
acosh atanh exp exp2 expm1 log log2 log10 log1p pow sqrt cbrt hypot erf erfc lgamma tgamma fmod
remainder floor ceil trunc round rint nearbyint fabs sincos ldexp frexp""".split() for suffix in ("", "f"))
_LIBC = frozenset(["memcpy", "memset", "memmove", "malloc", "free"])


def foreign_symbols(elf_bytes):
    """The undefined symbols of an object that code this project generates
    never calls: anything but the CPU runtime's (``__xla_cpu_*``), kernels,
    the half-precision support functions, libm's math, memcpy/memset/
    memmove/malloc/free, and the library functions of the same compilation
    (their names contain a '.', which no C library symbol has). A cached
    object that calls ``system`` or ``dlopen`` is refused by this check."""
    from xla.backends.cpu.kernels import KERNEL_PREFIX
    return sorted(n for n in undefined_symbols(elf_bytes)
                  if not (n.startswith("__xla_cpu_") or n.startswith(KERNEL_PREFIX)
                          or n in _SUPPORT_NAMES or n in _LIBM or n in _LIBC or "." in n))


def undefined_symbols(elf_bytes):
    """Names of the undefined symbols of an ELF64 little-endian object (what
    the JIT must resolve); empty for other formats."""
    return _symbols(elf_bytes, defined=False)


def defined_symbols(elf_bytes):
    """Names of the global symbols an ELF64 little-endian object defines."""
    return _symbols(elf_bytes, defined=True)


def _symbols(elf_bytes, defined):
    data = memoryview(elf_bytes)
    if len(data) < 64 or bytes(data[:4]) != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        _, _, _, _, off, size, link, _, _, entsize = sh
        stroff = sections[link][4]
        for k in range(1, size // entsize):
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", data, off + k * entsize)
            # Not local; undefined (section 0) or defined, as asked.
            if st_name and (st_info >> 4) != 0 and (st_shndx != 0) == defined:
                end = bytes(data[stroff + st_name:stroff + st_name + 256]).split(b"\0", 1)[0]
                names.append(end.decode())
    return names


def _unresolved_symbols(objects):
    """Symbols some of ``objects`` leave undefined that none of them
    defines and the process does not resolve, sorted."""
    defined = {n for o in objects for n in defined_symbols(o)}
    return sorted({n for o in objects for n in undefined_symbols(o)
                   if n not in defined and not llvm.address_of_symbol(n)})


def _check_elf(data):
    """Raises RuntimeError unless ``data`` is a well-formed ELF64 object whose
    section table and sections lie inside it (LLVM trusts its input)."""
    data = memoryview(data)
    try:
        if len(data) < 64 or bytes(data[:4]) != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not an ELF64 little-endian object")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        if shentsize != 64 or shoff + shnum * shentsize > len(data):
            raise ValueError("section table outside the file")
        for i in range(shnum):
            sh_type, = struct.unpack_from("<I", data, shoff + i * 64 + 4)
            offset, size = struct.unpack_from("<QQ", data, shoff + i * 64 + 24)
            if sh_type != 8 and offset + size > len(data):   # 8: SHT_NOBITS
                raise ValueError(f"section {i} outside the file")
    except (ValueError, struct.error) as e:
        raise RuntimeError(f"JIT: malformed object code: {e}") from None


class JitModule:
    """One LLVM module compiled for the host; keeps its engine alive."""

    def __init__(self, llvm_ir, opt_level=3, _extra_objects=(), skip=0):
        _initialize()
        text = str(llvm_ir) if isinstance(llvm_ir, ir.Module) else llvm_ir
        if text is not _SUPPORT_IR:
            _ensure_support_functions(text, _extra_objects)
        with _lock:
            tm = target_machine(opt_level)
            mod = llvm.parse_assembly(text)
            mod.triple = llvm.get_process_triple()
            mod.data_layout = str(tm.target_data)
            mod.verify()
            if opt_level > 0:
                optimize(mod, opt_level, tm, skip=skip)
            objects = []
            # The engine owns (and frees) the target machine it is given.
            self.engine = llvm.create_mcjit_compiler(mod, _create_target_machine(opt_level))
            self.engine.set_object_cache(notify_func=lambda _m, data: objects.append(bytes(data)))
            for extra in _extra_objects:
                self.engine.add_object_file(llvm.ObjectFileRef.from_data(extra))
            _set_lsr(skip)
            try:
                self.engine.finalize_object()   # machine code generation
            finally:
                _set_lsr(0)
            missing = _unresolved_symbols(list(objects) + list(_extra_objects))
            if missing:
                raise RuntimeError("JIT: unresolved symbols " + ", ".join(missing)
                                   + " (register runtime functions with jit.add_symbol)")
            self.engine.run_static_constructors()
        self.module_ref = mod
        self.opt_level = opt_level
        # The native object MCJIT produced from ``llvm_ir`` (not the extra
        # objects linked in): what the persistent cache stores.
        self.object_code = objects[0] if len(objects) == 1 else None

    @classmethod
    def from_object(cls, object_code, opt_level=3, extra_objects=()):
        """A JitModule from native object bytes (``object_code`` of an earlier
        JitModule for this host), with ``extra_objects`` (kernels) linked
        into the same engine: no LLVM optimization or code generation, only
        loading and linking. Raises RuntimeError for a malformed object or
        unresolved symbols."""
        _initialize()
        objects = [bytes(object_code)] + [bytes(o) for o in extra_objects]
        for o in objects:
            _check_elf(o)
        self = cls.__new__(cls)
        _ensure_support_functions("", objects)
        missing = _unresolved_symbols(objects)
        if missing:
            raise RuntimeError("JIT: unresolved symbols " + ", ".join(missing))
        with _lock:
            empty = llvm.parse_assembly("")
            empty.triple = llvm.get_process_triple()
            self.engine = llvm.create_mcjit_compiler(empty, _create_target_machine(opt_level))
            for o in objects:
                self.engine.add_object_file(llvm.ObjectFileRef.from_data(o))
            self.engine.finalize_object()
            self.engine.run_static_constructors()
        self.module_ref = None
        self.opt_level = opt_level
        self.object_code = objects[0]
        return self

    @classmethod
    def link(cls, llvm_ir, objects, opt_level=1):
        """A JitModule for ``llvm_ir`` (the driver) with native ``objects``
        (kernels from ``compile_to_object``) loaded into the same engine,
        so the driver's calls to the kernels' symbols resolve to them.
        Raises RuntimeError for a malformed object or unresolved symbols."""
        _initialize()
        objects = [bytes(o) for o in objects]
        for o in objects:
            _check_elf(o)
        return cls(llvm_ir, opt_level=opt_level, _extra_objects=objects)

    @property
    def optimized_ir(self):
        """The module's IR after optimization (to check vectorization); None
        for a module loaded from object code."""
        return str(self.module_ref) if self.module_ref is not None else None

    def assembly(self):
        """Host assembly of the optimized module (compiled again, for reading)."""
        with _lock:
            clone = llvm.parse_assembly(str(self.module_ref))
            return target_machine(self.opt_level).emit_assembly(clone)

    def address(self, name):
        """The address of function ``name``; KeyError if it is not defined."""
        with _lock:
            addr = self.engine.get_function_address(name)
        if not addr:
            raise KeyError(f"no function {name!r} in the JIT module")
        return addr

    get_function_address = address

    def function(self, name, restype=None, *argtypes):
        """A ctypes callable for function ``name`` (keeps this module alive)."""
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))
        fn._jit_module = self  # noqa: SLF001 - tie the engine's lifetime to the callable
        return fn
