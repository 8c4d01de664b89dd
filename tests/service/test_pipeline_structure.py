"""The whole pipeline on the classic examples, checked by structure and by
the bytes buffer assignment gives them (expected values derived by hand)."""
import pathlib

from pass_test_util import assert_same_results
from test_multi_output_fusion import LAYERNORM, SOFTMAX
from xla.hlo.parser import parse_hlo_module
from xla.service.buffer_assignment import assign_buffers
from xla.service.pipelines import default_pipeline

# The seed example reduce_sum(x + y*z), as bundled for `make demo`.
SEED = (pathlib.Path(__file__).resolve().parents[2] / "examples" / "fma_reduce.hlo").read_text()


def optimize(text):
    module = parse_hlo_module(text)
    default_pipeline(verify=True).run(module)
    return module, assign_buffers(module)


def entry_ops(module):
    return [i.opcode for i in module.entry.instructions]


def fusion_kinds(module):
    return [i.attrs["kind"] for i in module.entry.instructions if i.opcode == "fusion"]


def test_seed_is_one_fusion_with_no_temporaries():
    module, ba = optimize(SEED)
    assert entry_ops(module) == ["parameter"] * 3 + ["fusion"]
    assert fusion_kinds(module) == ["kInput"]
    fused = module.entry.root_instruction.attrs["calls"]
    assert sorted(i.opcode for i in fused.instructions) == sorted(
        ["parameter"] * 3 + ["multiply", "add", "constant", "reduce"])
    # y*z and x + y*z never reach memory: no temporaries at all; the only
    # buffer besides the parameters is the 4-byte result.
    assert ba.temp_bytes == 0 and ba.peak_bytes == 0
    outputs = [a for a in ba.allocations if a.kind == "maybe-live-out"]
    assert [a.size for a in outputs] == [4]
    assert "is_scheduled=true" in module.to_text().splitlines()[0]
    assert_same_results(SEED, module)


def test_softmax_reads_its_input_twice():
    module, ba = optimize(SOFTMAX)
    x = module.entry.parameter(0)
    assert sum(1 for u in x.users if u.opcode in ("fusion", "reduce")) == 2
    assert fusion_kinds(module) == ["kInput", "kLoop"]
    # Temporaries: the row max f32[32] (128 B), exp(x - max) f32[32,256]
    # (32768 B) and the row sums f32[32] (128 B), written together by the
    # multi-output fusion, plus its two-entry tuple table (16 B); all live
    # while that fusion runs.
    assert ba.peak_bytes == 128 + 32768 + 128 + 16
    assert_same_results(SOFTMAX, module, rtol=1e-5)


def test_layernorm_sums_share_one_pass_over_the_input():
    module, ba = optimize(LAYERNORM)
    assert fusion_kinds(module) == ["kInput", "kLoop"]
    first = module.entry.instructions[3]
    assert first.opcode == "fusion" and first.shape.is_tuple and len(first.shape.tuple_shapes) == 2
    # Only the two row sums f32[32] and their tuple table are temporaries.
    assert ba.peak_bytes == 2 * 128 + 16
    assert_same_results(LAYERNORM, module, rtol=1e-5, atol=1e-5)
