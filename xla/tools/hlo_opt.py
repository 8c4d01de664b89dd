"""hlo_opt: run a platform's pipeline, or chosen passes, over an HLO module.

The command-line program ``tools/hlo_opt.py`` is a thin wrapper over
``optimize``.
"""
from xla.backends import registry
from xla.hlo.verifier import verify_module
from xla.service import pass_registry
from xla.service.pipelines import run_passes


def optimize(module, platform="interpreter", passes=None, disabled_passes=(), verify=True):
    """Optimizes ``module`` in place; returns the pipeline that ran (for timings)."""
    pass_registry.check_pass_names(disabled_passes)
    if verify:
        verify_module(module)
    if passes:
        pass_registry.check_pass_names(passes)
        return run_passes(module, passes, verify=verify, disabled_passes=disabled_passes)
    compiler = registry.get_compiler(platform)
    pipeline = compiler.optimization_pipeline(disabled_passes=disabled_passes, verify=verify)
    pipeline.run(module)
    return pipeline
