"""The target-independent optimization pipeline, and the stages backends add.

A backend's pipeline (its ``Compiler.pipeline``) is
``target_independent_pipeline()`` (steps 1-4 below, ending with layout
assignment), then the stages it chooses: ``add_fusion_stage`` with its own
``FusionPolicy``, ``add_scheduling_stage`` (copy insertion and the memory
scheduler, after which buffer assignment can run). The CPU's is
``xla/backends/cpu/pipeline.py``.

Order, and why:

1. ``mixed-precision-normalizer``: converts where a module mixes
   floating-point precisions (verified with ``allow_mixed_precision``), so
   no later pass sees an op whose operands or result disagree on a type;
   ``call-inliner``, ``dce``: later passes see one flat entry computation;
   ``dynamic-index-splitter``: start indices given as one vector become scalars;
   ``batchnorm_expander``: batch-norm-* become reduces and elementwise ops;
   ``stochastic_convert_decomposer``: so does stochastic-convert.
2. ``simplification`` (to a fixed point): algsimp, constant_folding,
   tuple-simplifier, simplify-while-loops, cse, dce, each making work for
   the others.
3. ``while-loop-invariant-code-motion``, then ``dot_decomposer`` (canonical
   dots for the emitters) and another simplification round to clean up the
   reshapes and transposes it adds.
4. ``layout-assignment``: every shape gets a layout; copies where they change.
5. (a backend stage) ``fusion`` (producer-consumer, reduction and
   multi-output sibling fusion, decided in one C++ call per computation)
   with the backend's policy, ``dce``.
6. (a backend stage) ``flatten-call-graph`` (one call site per while/conditional/call
   computation, so each gets buffers of its own), ``copy-insertion``
   (while/conditional buffers alias safely), then
   ``hlo-memory-scheduler``, after which the module is scheduled and buffer
   assignment (an analysis, not a pass) can run.
"""
from xla.service.hlo_pass import HloPassFix, HloPassPipeline
from xla.service.pass_registry import make_pass


def _pipeline(name, pass_names, **options):
    return HloPassPipeline(name, [make_pass(n) for n in pass_names], **options)


def simplification_pipeline(**options):
    return HloPassFix(_pipeline("simplification", [
        "algsimp", "constant_folding", "tuple-simplifier", "simplify-while-loops", "cse", "dce",
    ], **options))


def target_independent_pipeline(disabled_passes=(), verify=False, dump_hook=None,
                                allow_mixed_precision=False):
    """Steps 1-4: simplification through layout assignment (after
    ``mixed-precision-normalizer``, a no-op unless the module mixes
    floating-point precisions, which the verifier allows only with
    ``allow_mixed_precision``)."""
    options = dict(verify=verify, disabled_passes=disabled_passes, dump_hook=dump_hook,
                   allow_mixed_precision=allow_mixed_precision)
    p = HloPassPipeline("optimization", **options)
    p.add_pass(make_pass("mixed-precision-normalizer"))
    p.add_pass(make_pass("call-inliner"))
    p.add_pass(make_pass("dce"))
    p.add_pass(make_pass("dynamic-index-splitter"))
    p.add_pass(make_pass("batchnorm_expander"))
    p.add_pass(make_pass("stochastic_convert_decomposer"))
    p.add_pass(make_pass("scatter-to-dynamic-update-slice"))
    p.add_pass(simplification_pipeline(**options))
    p.add_pass(make_pass("while-loop-invariant-code-motion"))
    p.add_pass(make_pass("dot_decomposer"))
    p.add_pass(simplification_pipeline(**options))
    p.add_pass(make_pass("layout-assignment"))
    return p


def add_fusion_stage(pipeline, policy=None):
    """Step 5: ``fusion`` with ``policy`` (a FusionPolicy; None: the
    target-independent defaults), then ``dce``."""
    pipeline.add_pass(make_pass("fusion", policy=policy))
    pipeline.add_pass(make_pass("dce"))
    return pipeline


def add_scheduling_stage(pipeline):
    """Step 6: one call site per called computation, copies where while and
    conditional buffers would alias unsafely, and a schedule."""
    pipeline.add_pass(make_pass("flatten-call-graph"))
    pipeline.add_pass(make_pass("copy-insertion"))
    pipeline.add_pass(make_pass("hlo-memory-scheduler"))
    return pipeline


def default_pipeline(fusion_policy=None, **options):
    """The target-independent pipeline with the default fusion policy and
    scheduling: what ``hlo_opt --platform=interpreter`` runs, and a
    reference for the tests of whole-pipeline behaviour."""
    return add_scheduling_stage(add_fusion_stage(target_independent_pipeline(**options),
                                                 fusion_policy))


def run_passes(module, pass_names, verify=True, disabled_passes=(), dump_hook=None,
               allow_mixed_precision=False):
    """Runs the named passes in order (``hlo_opt --passes``); returns the pipeline."""
    p = _pipeline("hlo-opt", pass_names, verify=verify, disabled_passes=disabled_passes,
                  dump_hook=dump_hook, allow_mixed_precision=allow_mixed_precision)
    p.run(module)
    return p
