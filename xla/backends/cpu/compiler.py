"""CpuCompiler: the target-independent pipeline, buffer assignment, LLVM IR
emission (``ir_emitter``) and the JIT (``jit``), giving a CpuExecutable.

``compile(module)`` optimizes the module it is given in place (as XLA's
compilers take ownership of theirs); the executable keeps it as ``module``.
Ops the backend does not generate code for raise UnimplementedError naming
the op and "cpu" here, at compile time.
"""
import re

from xla.backends.cpu import fast_math, jit
from xla.backends.cpu.executable import CpuExecutable
from xla.backends.cpu.ir_emitter import emit_module
from xla.errors import UnimplementedError
from xla.gc_util import paused_gc
from xla.hlo.verifier import verify_module
from xla.service.buffer_assignment import assign_buffers

_runtime = None


def runtime_symbols():
    """The C++ runtime's functions (name -> address), registered with the JIT
    once; empty when the extension has none."""
    global _runtime
    if _runtime is None:
        from xla import _core
        get = getattr(_core, "cpu_runtime_symbols", None)
        symbols = dict(get()) if get is not None else {}
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


class CpuCompiler:
    platform = "cpu"
    supports_persistent_cache = True   # compile(module, cache=...)

    def __init__(self, opt_level=None):
        self._opt_level = opt_level   # None: --xla_backend_optimization_level
        self.dumper = None   # set by xla.backends.registry.compile when dumping
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
        self.disabled_passes = tuple(options.xla_disable_hlo_passes)
        _apply_thread_options(options)

    def optimization_pipeline(self, **options):
        """The passes ``hlo_opt --platform=cpu`` runs: ``custom-fusion-inliner``
        (kCustom fusions, e.g. XLA:CPU's YNNPACK dot fusions, become plain HLO
        for the pipeline to re-fuse), then the target-independent pipeline
        (fusion decides what each kernel computes)."""
        from xla.service.pass_registry import make_pass
        from xla.service.pipelines import target_independent_pipeline
        pipeline = target_independent_pipeline(**options)
        pipeline.passes.insert(0, make_pass("custom-fusion-inliner"))
        return pipeline

    def optimize(self, module):
        """Verifies ``module`` and runs the optimization pipeline on it in
        place; returns its buffer assignment."""
        verify_module(module)
        for p in module.entry.parameters:
            if p.shape.is_dynamic:
                raise UnimplementedError(f"the cpu backend does not support dynamic shapes "
                                         f"(parameter {p.name}: {p.shape})")
        pipeline = self.optimization_pipeline()
        pipeline.disabled_passes = pipeline.disabled_passes | frozenset(self.disabled_passes)
        if self.dumper is not None:
            pipeline.dump_hook = self.dumper.pass_hook()
        pipeline.run(module)
        return assign_buffers(module)

    def emit(self, module, runtime_symbols):
        """Verifies and optimizes ``module`` in place, assigns buffers and
        emits the LLVM module; returns (buffer assignment, llvmlite module).
        ``runtime_symbols`` names the runtime functions the code may call
        (the JIT passes the C++ runtime's; AOT passes none, or its C file's).
        """
        self.configure()
        assignment = self.optimize(module)
        with paused_gc():
            llvm_module = emit_module(module, assignment, runtime_symbols)
        return assignment, llvm_module

    def compile(self, module, cache=None):
        """An executable for ``module`` (optimized in place). With ``cache``
        (an ``xla.frontend.disk_cache.PersistentCache``), native code is
        looked up by a hash of the optimized module first, and stored after
        compiling: a hit skips LLVM entirely."""
        self.configure()
        symbols = runtime_symbols()
        assignment = self.optimize(module)
        key = None
        if cache is not None:
            key = cache.key(module.to_text(), target=jit.host_triple() + ":" + jit.host_cpu(),
                            options=f"O{self.opt_level} fast_math={self.fast_math}")
            code = cache.get(key)
            if code is not None:
                try:
                    jit_module = jit.JitModule.from_object(code, self.opt_level)
                except RuntimeError as e:
                    cache.discard(key, str(e))
                else:
                    exe = CpuExecutable(module, assignment, jit_module, None)
                    exe.from_disk_cache = True
                    return exe
        with paused_gc(), fast_math.approximations(self.fast_math):
            llvm_module = emit_module(module, assignment, symbols)
        ir_text = str(llvm_module)
        if self.fast_math:
            ir_text = with_fast_math(ir_text)
        jit_module = jit.JitModule(ir_text, opt_level=self.opt_level)
        if cache is not None and jit_module.object_code is not None:
            cache.put(key, jit_module.object_code)
        return CpuExecutable(module, assignment, jit_module, ir_text)
