"""Compile-time scale benchmark: an unrolled MLP training step.

Builds an HLO module of a deep MLP's SGD step (forward, backward and update
for every layer, unrolled, as a traced training step is), at two sizes, and
reports the time of parsing, verifying and printing, of fusion, scheduling
and buffer assignment and of the whole target-independent pipeline, plus
how the time grows when the module doubles (n log n growth gives a ratio a
little above 2). ``--per_pass`` adds every pass's time at both sizes and
its growth, and the arena buffer assignment packed against the peak of
live temp bytes (a lower bound).

    .venv/bin/python benchmarks/compile_scale.py [--layers=N] [--batch=B] [--width=D] [--per_pass]

Goals on a 2-core machine at >= 20,000 instructions: fusion + scheduling +
buffer assignment under 2 s, the whole pipeline under 10 s.
"""
import argparse
import time

from xla.gc_util import paused_gc
from xla.hlo.parser import parse_hlo_module
from xla.hlo.verifier import verify_module
from xla.service.buffer_assignment import assign_buffers
from xla.service.pass_registry import make_pass
from xla.service.pipelines import default_pipeline, target_independent_pipeline


def mlp_training_step(layers, batch=8, width=16):
    """HLO text of one SGD step of a `layers`-deep ReLU MLP with a squared loss."""
    B, D = batch, width
    act = f"f32[{B},{D}]{{1,0}}"
    mat = f"f32[{D},{D}]{{1,0}}"
    vec = f"f32[{D}]{{0}}"
    params = [("x", act), ("y", act)]
    for i in range(layers):
        params += [(f"w{i}", mat), (f"b{i}", vec)]
    lines = []
    emit = lines.append
    for n, (name, shape) in enumerate(params):
        emit(f"  %{name} = {shape} parameter({n})")
    emit("  %zero = f32[] constant(0)")
    emit("  %lr = f32[] constant(0.01)")
    emit(f"  %zeros = {act} broadcast(f32[] %zero), dimensions={{}}")
    emit(f"  %lrs_m = {mat} broadcast(f32[] %lr), dimensions={{}}")
    emit(f"  %lrs_v = {vec} broadcast(f32[] %lr), dimensions={{}}")
    h = "x"
    for i in range(layers):  # forward
        emit(f"  %z{i} = {act} dot({act} %{h}, {mat} %w{i}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
        emit(f"  %bb{i} = {act} broadcast({vec} %b{i}), dimensions={{1}}")
        emit(f"  %a{i} = {act} add({act} %z{i}, {act} %bb{i})")
        emit(f"  %h{i} = {act} maximum({act} %a{i}, {act} %zeros)")
        h = f"h{i}"
    emit(f"  %g{layers} = {act} subtract({act} %{h}, {act} %y)")
    outs = []
    for i in reversed(range(layers)):  # backward and update
        g = f"g{i + 1}"
        inp = "x" if i == 0 else f"h{i - 1}"
        emit(f"  %mask{i} = pred[{B},{D}]{{1,0}} compare({act} %a{i}, {act} %zeros), direction=GT")
        emit(f"  %ga{i} = {act} select(pred[{B},{D}]{{1,0}} %mask{i}, {act} %{g}, {act} %zeros)")
        emit(f"  %gw{i} = {mat} dot({act} %{inp}, {act} %ga{i}), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}")
        emit(f"  %gb{i} = {vec} reduce({act} %ga{i}, f32[] %zero), dimensions={{0}}, to_apply=%add")
        if i > 0:
            emit(f"  %g{i} = {act} dot({act} %ga{i}, {mat} %w{i}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}")
        emit(f"  %uw{i} = {mat} multiply({mat} %gw{i}, {mat} %lrs_m)")
        emit(f"  %nw{i} = {mat} subtract({mat} %w{i}, {mat} %uw{i})")
        emit(f"  %ub{i} = {vec} multiply({vec} %gb{i}, {vec} %lrs_v)")
        emit(f"  %nb{i} = {vec} subtract({vec} %b{i}, {vec} %ub{i})")
        outs += [(f"nw{i}", mat), (f"nb{i}", vec)]
    outs.reverse()
    tuple_shape = "(" + ", ".join(s for _, s in outs) + ")"
    emit(f"  ROOT %out = {tuple_shape} tuple(" + ", ".join(f"{s} %{n}" for n, s in outs) + ")")
    sig = ", ".join(f"{n}: {s}" for n, s in params)
    return "\n".join([
        "HloModule mlp_step",
        "",
        "%add (p: f32[], q: f32[]) -> f32[] {",
        "  %p = f32[] parameter(0)",
        "  %q = f32[] parameter(1)",
        "  ROOT %s = f32[] add(f32[] %p, f32[] %q)",
        "}",
        "",
        f"ENTRY %main ({sig}) -> {tuple_shape} {{",
        *lines,
        "}",
        "",
    ])


def timed(fn):
    # As in the compiler's pipeline, the cyclic garbage collector is paused
    # while a stage runs (see xla/gc_util.py).
    with paused_gc():
        start = time.perf_counter()
        value = fn()
        return value, time.perf_counter() - start


def measure(layers, batch, width):
    text = mlp_training_step(layers, batch, width)
    module, t_parse = timed(lambda: parse_hlo_module(text))
    n = sum(len(c.instructions) for c in module.computations)
    _, t_verify = timed(lambda: verify_module(module))
    _, t_print = timed(module.to_text)

    # Stages in isolation, on a module prepared by the passes before them.
    prepared = parse_hlo_module(text)
    target_independent_pipeline().run(prepared)
    _, t_fusion = timed(lambda: make_pass("fusion").run(prepared))
    _, t_sched = timed(lambda: make_pass("hlo-memory-scheduler").run(prepared))
    assignment, t_ba = timed(lambda: assign_buffers(prepared))

    whole = parse_hlo_module(text)
    pipeline = default_pipeline()
    _, t_pipeline = timed(lambda: pipeline.run(whole))
    final, t_ba2 = timed(lambda: assign_buffers(whole))
    _, t_verify_after = timed(lambda: verify_module(whole))
    passes = dict(pipeline.all_timings())
    passes.update({"(parse)": t_parse, "(verify)": t_verify, "(to_text)": t_print,
                   "(verify after pipeline)": t_verify_after, "(buffer assignment)": t_ba2})
    return {
        "passes": passes, "arena": final.temp_bytes, "peak": final.peak_bytes,
        "packing": final.packing,
        "instructions": n, "parse": t_parse, "fusion": t_fusion, "schedule": t_sched,
        "buffer_assignment": t_ba, "fusion+schedule+ba": t_fusion + t_sched + t_ba,
        "pipeline+ba": t_pipeline + t_ba2, "temp_bytes": assignment.temp_bytes,
        "slowest_passes": sorted(pipeline.timings.items(), key=lambda kv: -kv[1])[:5],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1400, help="layers of the smaller module")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--per_pass", action="store_true", help="print every pass's time")
    args = parser.parse_args()
    results = [measure(args.layers * k, args.batch, args.width) for k in (1, 2)]
    print(f"{'instructions':>12} {'parse':>8} {'fusion':>8} {'schedule':>9} {'buf.asg':>8} "
          f"{'fus+sch+ba':>10} {'pipeline':>9}")
    for r in results:
        print(f"{r['instructions']:>12} {r['parse']:>7.2f}s {r['fusion']:>7.2f}s {r['schedule']:>8.2f}s "
              f"{r['buffer_assignment']:>7.2f}s {r['fusion+schedule+ba']:>9.2f}s {r['pipeline+ba']:>8.2f}s")
    a, b = results
    print(f"growth when the module doubles: fusion+schedule+ba x{b['fusion+schedule+ba'] / a['fusion+schedule+ba']:.2f}, "
          f"whole pipeline x{b['pipeline+ba'] / a['pipeline+ba']:.2f}")
    print("slowest passes at the larger size: " +
          ", ".join(f"{name} {sec:.2f}s" for name, sec in b["slowest_passes"]))
    for r in results:
        print(f"{r['instructions']} instructions: temp arena {r['arena']} bytes, peak live "
              f"{r['peak']} bytes ({r['packing']} packing)")
    if args.per_pass:
        print(f"{'pass (seconds, summed over runs)':<50} {a['instructions']:>8} {b['instructions']:>8}  growth")
        for name, sec in a["passes"].items():
            other = b["passes"].get(name, 0.0)
            growth = f"x{other / sec:.2f}" if sec > 0.005 else ""
            print(f"{name:<50} {sec:>8.3f} {other:>8.3f}  {growth}")


if __name__ == "__main__":
    main()
