"""hlo_opt: run a platform's pipeline, or chosen passes, over an HLO module.

The command-line program ``tools/hlo_opt.py`` is a thin wrapper over
``optimize``.
"""
from xla import runtime
from xla.hlo.verifier import verify_module
from xla.service import pass_registry
from xla.service.pipelines import run_passes


def optimize(module, platform="interpreter", passes=None, disabled_passes=(), verify=True,
             dump_to=None, allow_mixed_precision=False):
    """Optimizes ``module`` in place; returns the pipeline that ran (for timings).
    ``dump_to``: write the module there at each pipeline's start and after
    every pass that changed it (XLA's per-pass dump files, as
    ``--xla_dump_hlo_pass_re=.*`` would). Without
    it, the dump options in force (``--xla_dump_to`` ...) apply as in
    ``xla.compile``. ``allow_mixed_precision``: the verifier's option
    (XLA's HloVerifierOpts; the pipelines start with
    ``mixed-precision-normalizer``)."""
    import dataclasses
    from xla.debug_options import debug_options
    from xla.service.dump import ModuleDumper
    pass_registry.check_pass_names(disabled_passes)
    if verify:
        verify_module(module, allow_mixed_precision=allow_mixed_precision)
    mixed = {"allow_mixed_precision": True} if allow_mixed_precision else {}
    options = debug_options()
    if dump_to:
        options = dataclasses.replace(options, xla_dump_to=dump_to, xla_dump_hlo_pass_re=".*")
    dumper = ModuleDumper(module, options, platform)
    dumper.dump_module(module, "before_optimizations")
    hook = dumper.pass_hook()
    if passes:
        pass_registry.check_pass_names(passes)
        pipeline = run_passes(module, passes, verify=verify, disabled_passes=disabled_passes,
                              dump_hook=hook, **mixed)
    else:
        compiler = runtime.get_compiler(platform)
        pipeline = compiler.pipeline(disabled_passes=disabled_passes, verify=verify,
                                     dump_hook=hook, **mixed)
        pipeline.run(module)
    dumper.dump_module(module, f"{platform}_after_optimizations")
    return pipeline
