"""FlattenCallGraph: one call site per while/conditional/call computation."""
from pass_test_util import assert_same_results, run_pass
from xla.service.flatten_call_graph import FlattenCallGraph

SHARED = """HloModule m

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]) parameter(0)
  %j = s32[] get-tuple-element(%t), index=0
  %x = f32[4] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %j1 = s32[] add(%j, %one)
  %y = f32[4] add(%x, %x)
  ROOT %r = (s32[], f32[4]) tuple(%j1, %y)
}

ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %zero = s32[] constant(0)
  %i1 = (s32[], f32[4]) tuple(%zero, %a)
  %w1 = (s32[], f32[4]) while(%i1), condition=%cond, body=%body
  %i2 = (s32[], f32[4]) tuple(%zero, %b)
  %w2 = (s32[], f32[4]) while(%i2), condition=%cond, body=%body
  %x1 = f32[4] get-tuple-element(%w1), index=1
  %x2 = f32[4] get-tuple-element(%w2), index=1
  ROOT %d = f32[4] subtract(%x1, %x2)
}
"""


def _whiles(module):
    return [i for i in module.entry.instructions if i.opcode == "while"]


def test_second_call_site_gets_clones():
    module, changed = run_pass(FlattenCallGraph(), SHARED)
    assert changed
    w1, w2 = _whiles(module)
    assert w1.attr("body").name == "body" and w1.attr("condition").name == "cond"
    assert w2.attr("body") is not w1.attr("body")
    assert w2.attr("condition") is not w1.attr("condition")
    assert len(module.computations) == 5
    assert_same_results(SHARED, module)
    assert not FlattenCallGraph().run(module)


def test_single_call_sites_unchanged():
    text = SHARED.replace("%w2 = (s32[], f32[4]) while(%i2), condition=%cond, body=%body",
                          "%w2 = (s32[], f32[4]) copy(%i2)")
    module, changed = run_pass(FlattenCallGraph(), text)
    assert not changed
