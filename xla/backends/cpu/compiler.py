"""CpuCompiler: the target-independent pipeline, buffer assignment, LLVM IR
emission (``ir_emitter``) and the JIT (``jit``), giving a CpuExecutable.

``compile(module)`` optimizes the module it is given in place (as XLA's
compilers take ownership of theirs); the executable keeps it as ``module``.
Ops the backend does not generate code for raise UnimplementedError naming
the op and "cpu" here, at compile time.
"""
import contextlib
import re
import time

from xla.backends.cpu import (fast_math, jit, kernel_compiler, llvm_types, prefetch,
                              runtime_context, streaming_stores)
from xla.backends.cpu.compile_progress import CompileProgress
from xla.backends.cpu.executable import CpuExecutable
from xla.backends.cpu.ir_emitter import emit_module
from xla.backends.cpu.kernel_compiler import KernelCompiler
from xla.backends.cpu.kernels import KERNEL_PREFIX, is_small_kernel
from xla.errors import UnimplementedError
from xla.gc_util import paused_gc
from xla.hlo.printer import module_to_text
from xla.hlo.verifier import verify_module
from xla.runtime import Compiler
from xla.service.buffer_assignment import assign_buffers

_runtime = None


# Modules that run at most this many kernels compile as one LLVM module with
# the kernels inlined into the driver (no call per kernel at run time);
# larger ones compile each distinct kernel separately and the driver at O0.
# One: with two or more kernels the one module is the slower to compile
# (O3 over the driver's row groups with the kernels inlined into them:
# softmax and layernorm, 3 kernels each, 20% more CPU time than separately),
# and a call per kernel costs nothing measurable at their run time.
SINGLE_MODULE_MAX_KERNELS = 1


def runtime_symbols():
    """The C++ runtime's functions (name -> address), registered with the JIT
    once; empty when the extension has none."""
    global _runtime
    if _runtime is None:
        symbols = dict(runtime_context.process_symbols())
        from xla.backends.cpu import collectives
        from xla.runtime import profiler
        symbols[collectives.SYMBOL] = collectives.address()
        symbols.update(profiler.symbols())
        for name, address in symbols.items():
            jit.add_symbol(name, address)
        _runtime = symbols
    return _runtime


_FAST_MATH = re.compile(r"= (fadd|fsub|fmul|fdiv|frem|fneg) (?!fast )")


def with_fast_math(ir_text):
    """``--xla_cpu_enable_fast_math``: every floating-point arithmetic
    instruction gets LLVM's ``fast`` flags (reassociation, contraction,
    no NaN/inf guarantees), as XLA:CPU's option does."""
    return _FAST_MATH.sub(lambda m: f"= {m.group(1)} fast ", ir_text)


_threads_applied = None


def _apply_thread_options(options):
    """--xla_cpu_multi_thread_eigen=false: one thread; --xla_cpu_num_threads=N."""
    global _threads_applied
    wanted = 1 if not options.xla_cpu_multi_thread_eigen else options.xla_cpu_num_threads
    if wanted == _threads_applied or (_threads_applied is None and wanted == 0):
        return
    from xla import _core
    setter = getattr(_core, "set_cpu_runtime_num_threads", None)
    if setter is not None:
        setter(wanted)
        _threads_applied = wanted


class CpuCompiler(Compiler):
    platform = "cpu"

    def __init__(self, opt_level=None, device=None):
        self._opt_level = opt_level   # None: --xla_backend_optimization_level
        self.device = device          # the executables' device (CpuPlatform's)
        self.dynamic_binding = None   # the last optimize's DynamicEntryBinding (dynamic_entry.py)
        self.configure()

    def configure(self, options=None):
        """Takes the LLVM opt level, fast math, disabled passes and thread
        options from ``options`` (default: the debug options in force).
        ``compile`` and ``emit`` call it first, so a compiler made earlier
        follows the options of the ``xla.compile`` that uses it."""
        if options is None:
            from xla.debug_options import debug_options
            options = debug_options()
        level = self._opt_level
        self.opt_level = options.xla_backend_optimization_level if level is None else level
        self.fast_math = options.xla_cpu_enable_fast_math
        self.excess_precision = options.xla_allow_excess_precision
        # What every kernel's compilation leaves out of LLVM's pipeline
        # (small kernels leave out more: kernel_compiler.SMALL_KERNEL_SKIP).
        self.skip = (jit.SKIP_VECTORIZERS | jit.SKIP_LSR | jit.SKIP_FULL_SIMPLIFICATION
                     if options.xla_llvm_disable_expensive_passes else 0)
        self.disabled_passes = tuple(options.xla_disable_hlo_passes)
        self.log_progress = options.xla_log_compile_progress
        self.compile_workers = options.xla_cpu_compile_workers
        self.profile = options.xla_hlo_profile
        # The driver is calls, loads of buffer pointers and control flow:
        # O0 (fast instruction selection, no inlining) compiles a driver of
        # thousands of calls several times faster than O1 (3.0 -> 0.5 s at
        # 10,000 instructions); optimization buys it nothing measurable.
        self.driver_opt_level = 0
        _apply_thread_options(options)

    def pipeline(self, **options):
        """The passes ``hlo_opt --platform=cpu`` runs: ``custom-fusion-inliner``
        (kCustom fusions, e.g. XLA:CPU's YNNPACK dot fusions, become plain HLO
        for the pipeline to re-fuse), the target-independent pipeline, then
        the CPU's stages (``cpu/pipeline.py``): fusion with the CPU's policy
        (what each kernel computes), copy insertion and scheduling."""
        from xla.backends.cpu.pipeline import cpu_pipeline
        return cpu_pipeline(**options)

    def optimize(self, module, timings=None, hooks=None, allow_mixed_precision=False):
        """Verifies ``module`` (``allow_mixed_precision``: the verifier's
        option; ``mixed-precision-normalizer`` then makes the converts
        explicit) and runs the optimization pipeline on it in place; returns
        its buffer assignment. ``timings`` (a dict) gets the seconds of
        "passes" and "buffer_assignment"."""
        start = time.perf_counter()
        verify_module(module, allow_mixed_precision=allow_mixed_precision)
        if allow_mixed_precision:
            # Here, not only as the pipeline's first pass: the emitters compute
            # one type per op, so --xla_disable_hlo_passes must not skip it.
            from xla.service.mixed_precision_normalizer import MixedPrecisionNormalizer
            MixedPrecisionNormalizer().run(module)
        for comp in module.computations:
            for instr in comp.instructions:
                if instr.shape.has_buffer:
                    raise UnimplementedError(
                        f"the cpu backend does not support buffer shapes ({instr.opcode} "
                        f"{instr.name}: {instr.shape.to_text(False)})")
        # Dynamic shapes run padded (dynamic-padder); the entry's dynamic
        # parameters and result cross as padded arrays plus sizes.
        from xla.service.dynamic_entry import bind_dynamic_entry
        self.dynamic_binding = bind_dynamic_entry(module)
        pipeline = self.pipeline()
        pipeline.disabled_passes = pipeline.disabled_passes | frozenset(self.disabled_passes)
        if hooks is not None and hooks.pass_hook is not None:
            pipeline.dump_hook = hooks.pass_hook
        pipeline.run(module)
        self.pass_timings = pipeline.all_timings()
        middle = time.perf_counter()
        assignment = assign_buffers(module)
        if timings is not None:
            timings["passes"] = middle - start
            timings["buffer_assignment"] = time.perf_counter() - middle
        return assignment

    def emit(self, module, runtime_symbols):
        """Verifies and optimizes ``module`` in place, assigns buffers and
        emits LLVM IR; returns (buffer assignment, ``kernels.EmittedModule``).
        ``runtime_symbols`` names the runtime functions the code may call
        (the JIT passes the C++ runtime's; AOT passes none, or its C file's).
        """
        self.configure()
        with runtime_context.compiling_with(runtime_symbols):
            assignment = self.optimize(module)
            if self.dynamic_binding is not None:
                raise UnimplementedError(f"module {module.name}: ahead-of-time compilation of an "
                                         "entry with dynamic shapes is not supported (its C "
                                         "signature would take the sizes apart)")
            with paused_gc(), self._emission_options():
                emitted = emit_module(module, assignment, runtime_symbols)
        return assignment, emitted

    @contextlib.contextmanager
    def _emission_options(self):
        """The debug options IR emission reads: fast-math approximations and
        excess precision for f16/bf16/f8, and the target's vector width and
        native f32 -> bf16 conversion (``llvm_types``)."""
        with fast_math.approximations(self.fast_math), \
                llvm_types.excess_precision(self.excess_precision), \
                llvm_types.vector_width(self.vector_bits()), \
                llvm_types.native_bf16_conversion(self.native_bf16_conversion()), \
                streaming_stores.streaming(self.streaming_store_bytes()), \
                prefetch.prefetching(self.prefetch_bytes()):
            yield

    def vector_bits(self):
        """The vector register width the emitted code is tuned for: the
        host's (the JIT compiles for the host CPU and its features)."""
        return jit.host_vector_bits()

    def native_bf16_conversion(self):
        """Whether f32 -> bf16 may use the target's instruction: the
        host's, where it has AVX512-BF16."""
        return jit.host_converts_bf16()

    def streaming_store_bytes(self):
        """Entry results larger than this many bytes are written with
        streaming stores (``streaming_stores``): the host's last-level
        cache size where the host is x86-64, else None (never)."""
        return jit.host_streaming_store_bytes()

    def prefetch_bytes(self):
        """Kernels reading entry parameters larger than this many bytes row
        by row prefetch their rows ahead (``prefetch``): a quarter of the
        host's last-level cache where the host is x86-64, else None
        (never). (Alternated on the 2-core Zen 5, 32 MB L3: f32 softmax and
        layernorm rows of 16 MB 1.12-1.18x faster prefetched, of 64 MB
        1.17-1.35x; bf16 ones of 8 MB 0.94-0.99x.)"""
        cache = jit.host_streaming_store_bytes()
        return None if cache is None else cache // 4

    def _transform(self, text):
        return with_fast_math(text) if self.fast_math else text

    def compile(self, module, hooks=None, cache=None, allow_mixed_precision=False):
        """An executable for ``module`` (optimized in place): a driver
        function over separately compiled kernels (see ``kernels.py`` and
        ``kernel_compiler.py``). With ``cache`` (an
        ``xla.frontend.disk_cache.PersistentCache``), the driver's native
        code is looked up by a hash of the optimized module first, and each
        kernel's by its fingerprint: a hit on the module skips IR emission
        and LLVM entirely, a hit on a kernel skips that kernel.

        The executable's ``compile_timings`` has the seconds of each stage
        (passes, buffer_assignment, codegen, llvm) and kernel counts.
        ``allow_mixed_precision``: the verifier's option (see ``optimize``)."""
        # The collector stays paused from the verifier to the executable, not
        # only within each stage: re-enabled between stages it walked the
        # whole module (0.1-0.2 s at 20,000 instructions).
        # Passes and emission agree on what the runtime computes (what the
        # symbols of this compile have it run).
        with paused_gc(), runtime_context.compiling_with(runtime_symbols()):
            return self._compile(module, hooks, cache, allow_mixed_precision)

    def _compile(self, module, hooks, cache, allow_mixed_precision):
        self.configure()
        started = time.perf_counter()
        timings = {}
        progress = CompileProgress(module.name) if self.log_progress else None
        symbols = runtime_symbols()
        if progress:
            progress.stage("passes")
        assignment = self.optimize(module, timings, hooks, allow_mixed_precision)
        from xla.backends.cpu import collectives
        if self.profile:
            from xla.runtime import profiler
            if profiler.active() is None:
                profiler.profile_process()
        if cache is not None and (self.profile or collectives.has_collectives(module)):
            cache = None   # op numbers are baked into the code (collectives.py, profiler.py)
        if hooks is not None:
            # Dumping: every artifact (IR before and after optimization) is
            # made, so the dump is the same whatever the cache holds.
            cache = None
        options = (f"O{self.opt_level} fast_math={self.fast_math} "
                   f"excess_precision={self.excess_precision} skip={self.skip} "
                   f"vector_bits={self.vector_bits()} "
                   f"native_bf16={self.native_bf16_conversion()} "
                   f"streaming_stores={self.streaming_store_bytes()} "
                   f"prefetch={self.prefetch_bytes()}")
        kernels = KernelCompiler(self.opt_level, options, self._transform, cache,
                                 progress.kernels if progress else None, self.compile_workers,
                                 self.skip)
        key = None
        if cache is not None:
            key = cache.key(module_to_text(module, metadata=False),
                            target=jit.host_triple() + ":" + jit.host_cpu(),
                            options=options + " driver " +
                            kernel_compiler.buffer_layout_fingerprint(assignment))
            exe = self._from_cache(cache, key, module, assignment, kernels)
            if exe is not None:
                exe.dynamic_binding = self.dynamic_binding
                timings["total"] = time.perf_counter() - started
                exe.compile_timings = timings
                exe.pass_timings = self.pass_timings
                return exe
        if progress:
            progress.stage("codegen")
        t = time.perf_counter()
        with paused_gc(), self._emission_options():
            emitted = emit_module(module, assignment, symbols, on_kernel=kernels.submit,
                                  profile=self.profile, cancellable=True)
        timings["codegen"] = time.perf_counter() - t
        if progress:
            progress.stage("llvm")
        t = time.perf_counter()
        if emitted.kernels_emitted <= SINGLE_MODULE_MAX_KERNELS:
            # Few kernels: one LLVM module, kernels inlined into the driver
            # (as fast to compile, and no call per kernel at run time).
            kernels.cancel()
            mod = emitted.link(transform=self._transform)
            small = emitted.kernels and all(map(is_small_kernel, emitted.kernels.values()))
            jit_module = jit.JitModule(str(mod), opt_level=self.opt_level,
                                       skip=self.skip | (kernel_compiler.SMALL_KERNEL_SKIP
                                                         if small else 0))
            objects = {}
        else:
            objects = kernels.finish()
            linked = _distinct(objects.values())
            if emitted.library_text is not None:   # sort, linear algebra: at the kernels' level
                linked.append(jit.compile_to_object(self._transform(emitted.library_text),
                                                    self.opt_level, self.skip))
            jit_module = jit.JitModule.link(self._transform(emitted.driver_text), linked,
                                            opt_level=self.driver_opt_level)
        # The driver's object, whose kernels the kernel cache holds (a
        # separately compiled library object is not cached: then neither
        # is the driver).
        if (cache is not None and jit_module.object_code is not None
                and (not objects or emitted.library_text is None)):
            cache.put(key, jit_module.object_code)
        timings["llvm"] = time.perf_counter() - t
        timings["total"] = time.perf_counter() - started
        timings["kernels"] = emitted.kernels_emitted
        timings["kernels_distinct"] = len(emitted.kernels)
        timings.update({f"kernels_{k}": v for k, v in kernels.stats.items() if k != "kernels"})
        if progress:
            progress.done(timings)
        exe = CpuExecutable(module, assignment, jit_module, emitted, objects,
                            self._transform, device=self.device)
        exe.kernel_opt_level = self.opt_level
        exe.kernel_skip = self.skip
        exe.dynamic_binding = self.dynamic_binding
        exe.compile_timings = timings
        exe.pass_timings = self.pass_timings
        return exe

    def _from_cache(self, cache, key, module, assignment, kernels):
        code = cache.get(key)
        if code is None:
            return None
        try:
            foreign = jit.foreign_symbols(code)
            if foreign:
                raise RuntimeError(f"it calls {', '.join(foreign[:5])}, which generated code never does")
            wanted = [s for s in jit.undefined_symbols(code) if s.startswith(KERNEL_PREFIX)]
            for symbol in wanted:
                kernels.submit(symbol, None)
            if kernels.stats["missing"]:   # a kernel is missing: compile all
                return None
            jit_module = jit.JitModule.from_object(
                code, self.driver_opt_level, _distinct(kernels.objects[s] for s in wanted))
        except RuntimeError as e:
            cache.discard(key, str(e))
            return None
        exe = CpuExecutable(module, assignment, jit_module, None, kernels.objects, self._transform,
                            device=self.device)
        exe.from_disk_cache = True
        return exe


def _distinct(objects):
    """Each object once (the kernels of a batch share one)."""
    return list({id(o): o for o in objects}.values())
