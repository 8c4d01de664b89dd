"""HloPassPipeline.all_timings: the passes of sub-pipelines as
``outer/inner``, summed over sub-pipelines that share a name (the CPU
pipeline runs two "simplification" pipelines), each pass counted once."""
import xla
from xla.service.hlo_pass import HloPass, HloPassPipeline

TEXT = """HloModule m
ENTRY e {
  ROOT p = f32[2] parameter(0)
}"""


class Ticks(HloPass):
    """Takes ``seconds`` of the pipeline's clock (a fake one: see the test)."""

    def __init__(self, name, seconds, clock):
        self.name, self.seconds, self.clock = name, seconds, clock

    def run(self, module):
        self.clock[0] += self.seconds
        return False


def test_sub_pipelines_of_one_name_add_up(monkeypatch):
    clock = [0.0]
    import xla.service.hlo_pass as hlo_pass
    monkeypatch.setattr(hlo_pass.time, "perf_counter", lambda: clock[0])
    first = HloPassPipeline("simplification", [Ticks("algsimp", 1.0, clock), Ticks("dce", 2.0, clock)])
    second = HloPassPipeline("simplification", [Ticks("algsimp", 4.0, clock)])
    outer = HloPassPipeline("cpu", [first, Ticks("fusion", 8.0, clock), second, first])
    outer.run(xla.parse_hlo_module(TEXT))
    t = outer.all_timings()
    assert t["fusion"] == 8.0
    assert t["simplification"] == 1.0 + 2.0 + 4.0 + 1.0 + 2.0   # three runs under that name
    # first ran twice (its own timings hold both runs), second once.
    assert t["simplification/algsimp"] == 2 * 1.0 + 4.0
    assert t["simplification/dce"] == 2 * 2.0
