"""Buffer assignment: hand-computed cases, properties over random modules
(hypothesis) and the corpus."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pass_test_util import (assert_corpus_results, corpus_files, corpus_has_elided_constants,
                            evaluate)

from xla.errors import InvalidArgumentError
from xla.hlo.parser import parse_hlo_module
from xla.service.buffer_assignment import assign_buffers
from xla.service.hlo_memory_scheduler import HloMemoryScheduler


def scheduled(text):
    module = parse_hlo_module(text)
    HloMemoryScheduler().run(module)
    return module


def assign(text):
    module = scheduled(text)
    return module, assign_buffers(module)


def instr(module, name):
    for i in module.all_instructions():
        if i.name == name:
            return i
    raise KeyError(name)


def check_properties(module, ba):
    """Every array has a buffer, live wherever it is used; parameters and
    constants stay out of the arena; no two buffers live at one position
    overlap in memory; the peak equals an independent sweep and the arena
    covers it."""
    pos = {id(i): p for p, i in enumerate(ba.sequence)}
    for p, i in enumerate(ba.sequence):
        assert ba.has_buffers(i)
        bufs = ba.buffers_of(i)
        for index, shape in i.shape.leaves():
            if shape.is_array:
                assert index in bufs, f"{i.name}{index} has no buffer"
        for b in bufs.values():
            assert b.start <= p <= b.end or b.instruction is not i, b
        for o in i.operands:
            for b in ba.buffers_of(o).values():
                assert b.start <= p <= b.end, f"{b} used by {i.name} at {p}"
        if i.opcode == "parameter" and i.parent is module.entry:
            assert all(b.allocation.kind == "parameter" for b in bufs.values())
        if i.opcode == "constant":
            assert all(b.allocation.kind == "constant" and b.instruction is i for b in bufs.values())
    last = len(ba.sequence) - 1
    for b in ba.buffers_of(module.entry.root_instruction).values():
        assert b.end == last and b.allocation.kind != "preallocated-temp"
    # Slots: members share allocation and offset.
    slots = {}
    for b in ba.buffers:
        s = slots.setdefault(b.slot, [b.allocation, b.offset, 0, b.start, b.end])
        assert (s[0], s[1]) == (b.allocation, b.offset)
        s[2] = max(s[2], b.size)
        s[3], s[4] = min(s[3], b.start), max(s[4], b.end)
    items = list(slots.values())
    for k, (alloc, off, size, start, end) in enumerate(items):
        assert off + size <= alloc.size
        for alloc2, off2, size2, start2, end2 in items[k + 1:]:
            if alloc2 is alloc and start <= end2 and start2 <= end and size and size2:
                assert off + size <= off2 or off2 + size2 <= off, "live buffers overlap"
    live = [0] * (last + 2)
    for alloc, off, size, start, end in items:
        if alloc.kind == "preallocated-temp":
            for p in range(start, end + 1):
                live[p] += size
    assert ba.peak_bytes == max(live) == ba.core_peak_bytes
    assert ba.temp_bytes >= ba.peak_bytes


# ----- hand-computed cases ------------------------------------------------------
def test_chain_of_equal_sizes_packs_into_two_slots():
    # reverse is not elementwise, so no in-place reuse: a and c share a slot,
    # b the other; d is the output.
    module, ba = assign("""
HloModule chain

ENTRY main {
  p = f32[16] parameter(0)
  a = f32[16] reverse(p), dimensions={0}
  b = f32[16] reverse(a), dimensions={0}
  c = f32[16] reverse(b), dimensions={0}
  ROOT d = f32[16] reverse(c), dimensions={0}
}
""")
    check_properties(module, ba)
    a, b, c = (ba.buffer(instr(module, n)) for n in "abc")
    assert a.allocation is b.allocation is c.allocation
    assert a.allocation.kind == "preallocated-temp"
    assert (a.offset, b.offset, c.offset) == (0, 64, 0)
    assert ba.temp_bytes == 128 and ba.peak_bytes == 128
    assert ba.buffer(instr(module, "d")).allocation.kind == "maybe-live-out"
    assert ba.buffer(instr(module, "p")).allocation.kind == "parameter"


def test_elementwise_chain_reuses_one_buffer_in_place():
    module, ba = assign("""
HloModule chain

ENTRY main {
  p = f32[16] parameter(0)
  a = f32[16] exponential(p)
  b = f32[16] negate(a)
  c = f32[16] sine(b)
  ROOT d = f32[16] reverse(c), dimensions={0}
}
""")
    check_properties(module, ba)
    a, b, c = (ba.buffer(instr(module, n)) for n in "abc")
    assert a.slot == b.slot == c.slot
    assert ba.temp_bytes == 64
    # The parameter is never written: exp(p) gets a buffer of its own.
    assert ba.buffer(instr(module, "p")).slot != a.slot


def test_in_place_needs_the_same_layout():
    # A fusion whose root writes its elements in another physical order
    # (an elementwise op with a transposing copy fused in) would overwrite
    # operand elements it has yet to read: no in-place reuse across layouts.
    module, ba = assign("""
HloModule layouts

fused {
  x = f32[32,16]{1,0} parameter(0)
  c = f32[32,16]{0,1} copy(x)
  ROOT n = f32[32,16]{0,1} negate(c)
}

ENTRY main {
  p = f32[32,16]{1,0} parameter(0)
  a = f32[32,16]{1,0} exponential(p)
  f = f32[32,16]{0,1} fusion(a), kind=kLoop, calls=fused
  same = f32[32,16]{0,1} sine(f)
  ROOT r = f32[32,16]{0,1} negate(same)
}
""")
    check_properties(module, ba)
    a, f, same = (ba.buffer(instr(module, n)) for n in ("a", "f", "same"))
    assert f.slot != a.slot
    assert same.slot == f.slot      # same layout: still in place


MULTI_OUTPUT = """
HloModule multi

fused {
  a = f32[16] parameter(0)
  b = f32[16] parameter(1)
  one = f32[] constant(1)
  ones = f32[16] broadcast(one), dimensions={}
  x0 = f32[16] add(a, ones)
  x1 = f32[16] multiply(a, b)
  ROOT t = (f32[16], f32[16]) tuple(x0, x1)
}

ENTRY main {
  p = f32[16] parameter(0)
  q = f32[16] parameter(1)
  ea = f32[16] exponential(p)
  eb = f32[16] negate(q)
  f = (f32[16], f32[16]) fusion(A, eb), kind=kLoop, calls=fused
  f0 = f32[16] get-tuple-element(f), index=0
  f1 = f32[16] get-tuple-element(f), index=1
  g = f32[16] add(f0, f1)
  ROOT r = f32[16] sine(g)
}
"""


def test_multi_output_elementwise_fusion_writes_over_operands_it_reads():
    # Each output takes the buffer of an operand it reads (the kernel keeps
    # the elements it loaded for the outputs after): x0 = a + 1 over a,
    # x1 = a * b over b.
    module, ba = assign(MULTI_OUTPUT.replace("fusion(A,", "fusion(ea,"))
    check_properties(module, ba)
    f = instr(module, "f")
    assert ba.buffer(f, (0,)).slot == ba.buffer(instr(module, "ea")).slot
    assert ba.buffer(f, (1,)).slot == ba.buffer(instr(module, "eb")).slot


def test_multi_output_fusion_output_never_takes_an_operand_it_does_not_read():
    # x0 = p + 1 reads the (read-only) parameter only: written over eb, it
    # would destroy eb's element before x1 = p * eb reads it.
    module, ba = assign(MULTI_OUTPUT.replace("fusion(A,", "fusion(p,"))
    check_properties(module, ba)
    f, b = instr(module, "f"), ba.buffer(instr(module, "eb"))
    assert ba.buffer(f, (0,)).slot != b.slot
    assert ba.buffer(f, (1,)).slot == b.slot


def test_in_place_needs_the_last_use_and_same_size():
    module, ba = assign("""
HloModule inplace

ENTRY main {
  p = f32[16] parameter(0)
  a = f32[16] exponential(p)
  b = f32[16] negate(a)
  c = f32[16] add(a, b)
  d = f64[16] convert(c)
  ROOT t = (f32[16], f64[16]) tuple(c, d)
}
""")
    check_properties(module, ba)
    a, b, c, d = (ba.buffer(instr(module, n)) for n in "abcd")
    assert b.slot != a.slot          # a is still used by c
    assert c.slot in (a.slot, b.slot) or c.allocation.kind == "maybe-live-out"
    assert d.slot != c.slot          # different size


def test_parameter_and_constant_allocations():
    module, ba = assign("""
HloModule kinds

ENTRY main {
  p0 = f32[8] parameter(0)
  p1 = (f32[4], s32[2]) parameter(1)
  k = f32[8] constant({1,2,3,4,5,6,7,8})
  g = f32[4] get-tuple-element(p1), index=0
  s = f32[8] add(p0, k)
  ROOT r = f32[8] multiply(s, s)
}
""")
    check_properties(module, ba)
    k = ba.buffer(instr(module, "k"))
    assert k.allocation.kind == "constant" and k.allocation.buffers == [k] and k.offset == 0
    p0 = ba.buffer(instr(module, "p0"))
    assert p0.allocation.kind == "parameter" and p0.allocation.parameter_number == 0
    # The tuple parameter: its index table and each leaf, all parameter allocations.
    p1 = instr(module, "p1")
    kinds = {index: b.allocation.kind for index, b in ba.buffers_of(p1).items()}
    assert kinds == {(): "parameter", (0,): "parameter", (1,): "parameter"}
    # get-tuple-element aliases the parameter's leaf.
    assert ba.buffer(instr(module, "g")) is ba.buffer(p1, (0,))
    assert not any(b.allocation.kind == "preallocated-temp" for b in (p0, k))
    text = ba.to_text()
    assert "allocation 0: size 32, parameter 0, shape index {}:" in text
    assert " value: %p0{} (size=32,offset=0): f32[8]" in text
    assert ", constant:\n value: %k{} (size=32,offset=0): f32[8]" in text
    assert ", maybe-live-out:\n value: %r{} (size=32,offset=0): f32[8]" in text
    assert "preallocated-temp:\n value: %s{} (size=32,offset=0): f32[8]" in text
    assert "Total bytes used: " in text and "Live ranges" in text
    report = ba.memory_usage_report()
    assert "Peak live temp bytes: 32" in report and "Largest buffers (top 10):" in report


def test_tuple_and_bitcast_alias_their_operands():
    module, ba = assign("""
HloModule alias

ENTRY main {
  p = f32[4,4] parameter(0)
  a = f32[4,4] exponential(p)
  b = f32[16] bitcast(a)
  c = f32[16] negate(b)
  t = (f32[4,4], f32[16]) tuple(a, c)
  g0 = f32[4,4] get-tuple-element(t), index=0
  g1 = f32[16] get-tuple-element(t), index=1
  ROOT r = f32[16] add(g1, g1)
}
""")
    check_properties(module, ba)
    a, b, c = (ba.buffer(instr(module, n)) for n in "abc")
    assert b is a
    t = instr(module, "t")
    assert ba.buffer(t, (0,)) is a and ba.buffer(t, (1,)) is c
    assert ba.buffer(t).size == 16  # the index table
    assert ba.buffer(instr(module, "g0")) is a and ba.buffer(instr(module, "g1")) is c


WHILE = """
HloModule loop

cond {
  cp = (s32[], f32[64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[64] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  i1 = s32[] add(bi, one)
  y = f32[64] reverse(bx), dimensions={0}
  ROOT bt = (s32[], f32[64]) tuple(i1, y)
}

ENTRY main {
  x = f32[64] parameter(0)
  zero = s32[] constant(0)
  x2 = f32[64] reverse(x), dimensions={0}
  init = (s32[], f32[64]) tuple(zero, x2)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  ROOT wx = f32[64] get-tuple-element(w), index=1
}
"""


def test_while_state_shares_one_slot_per_index():
    module, ba = assign(WHILE)
    check_properties(module, ba)
    w, bp, cp, bt = (instr(module, n) for n in ("w", "bp", "cp", "bt"))
    for index in ((), (0,), (1,)):
        slot = ba.buffer(w, index).slot
        assert ba.buffer(bp, index).slot == slot
        assert ba.buffer(cp, index).slot == slot
    # The body root's leaf 1 (reverse of the state) cannot be written over the
    # state it reads: it keeps its own slot; i1 is defined after bi's last read.
    assert ba.buffer(bt, (1,)).slot != ba.buffer(w, (1,)).slot
    assert ba.buffer(bt, (0,)).slot == ba.buffer(w, (0,)).slot
    # The init leaf x2 is last used by the while: it becomes the loop state.
    assert ba.buffer(instr(module, "x2")).slot == ba.buffer(w, (1,)).slot
    # The constant zero is copied in, never shared; the result is live out.
    assert ba.buffer(instr(module, "zero")).slot != ba.buffer(w, (0,)).slot
    assert ba.buffer(w, (1,)).allocation.kind == "maybe-live-out"
    # Body temporaries live inside the while's window.
    y = ba.buffer(instr(module, "y"))
    assert ba.buffer(bp, (1,)).start <= y.start <= y.end <= ba.buffer(w, (1,)).end


def test_in_place_body_root_joins_the_loop_state():
    module, ba = assign(WHILE.replace("reverse(bx), dimensions={0}", "negate(bx)"))
    check_properties(module, ba)
    assert ba.buffer(instr(module, "y")).slot == ba.buffer(instr(module, "w"), (1,)).slot


def test_input_output_alias_shares_the_parameter_allocation():
    module, ba = assign("""
HloModule donate, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY main {
  p = f32[8] parameter(0)
  ROOT r = f32[8] negate(p)
}
""")
    r, p = ba.buffer(instr(module, "r")), ba.buffer(instr(module, "p"))
    assert r.allocation is p.allocation and p.allocation.kind == "parameter"
    assert "parameter 0, shape index {}, maybe-live-out:" in ba.to_text()


def test_needs_a_scheduled_module():
    with pytest.raises(InvalidArgumentError, match="scheduled"):
        assign_buffers(parse_hlo_module("HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"))


# ----- properties over random modules -------------------------------------------
SIZES = (1, 4, 16, 64)


@st.composite
def random_modules(draw):
    """HLO text of a random DAG of elementwise, reduce, broadcast, reverse,
    tuple and get-tuple-element ops over f32 vectors of a few sizes."""
    values = []  # (name, shape text, dims or "tuple")
    lines = []
    for i in range(draw(st.integers(1, 3))):
        n = draw(st.sampled_from(SIZES))
        lines.append(f"  p{i} = f32[{n}] parameter({i})")
        values.append((f"p{i}", n))
    tuples = []
    for i in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce", "broadcast", "reverse", "tuple", "gte"]))
        a_name, a_n = values[draw(st.integers(0, len(values) - 1))]
        name = f"v{i}"
        if kind == "unary":
            op = draw(st.sampled_from(["negate", "exponential", "sine"]))
            lines.append(f"  {name} = f32[{a_n}] {op}({a_name})")
        elif kind == "binary":
            same = [v for v in values if v[1] == a_n]
            b_name = same[draw(st.integers(0, len(same) - 1))][0]
            op = draw(st.sampled_from(["add", "multiply", "maximum"]))
            lines.append(f"  {name} = f32[{a_n}] {op}({a_name}, {b_name})")
        elif kind == "reduce":
            lines.append(f"  {name} = f32[] reduce({a_name}, zero), dimensions={{0}}, to_apply=add")
            lines.append(f"  {name}b = f32[1] reshape({name})")
            values.append((name + "b", 1))
            continue
        elif kind == "broadcast":
            n = draw(st.sampled_from(SIZES))
            if a_n == 1:
                lines.append(f"  {name} = f32[{n}] broadcast({a_name}), dimensions={{0}}"
                             if n == 1 else f"  {name}s = f32[] reshape({a_name})\n"
                             f"  {name} = f32[{n}] broadcast({name}s), dimensions={{}}")
                a_n = n
            else:
                lines.append(f"  {name} = f32[{a_n}] broadcast({a_name}), dimensions={{0}}")
        elif kind == "reverse":
            lines.append(f"  {name} = f32[{a_n}] reverse({a_name}), dimensions={{0}}")
        elif kind == "tuple":
            k = draw(st.integers(1, 3))
            elems = [values[draw(st.integers(0, len(values) - 1))] for _ in range(k)]
            shape = ", ".join(f"f32[{n}]" for _, n in elems)
            lines.append(f"  {name} = ({shape}) tuple({', '.join(e for e, _ in elems)})")
            tuples.append((name, elems))
            continue
        else:
            if not tuples:
                continue
            t_name, elems = tuples[draw(st.integers(0, len(tuples) - 1))]
            k = draw(st.integers(0, len(elems) - 1))
            lines.append(f"  {name} = f32[{elems[k][1]}] get-tuple-element({t_name}), index={k}")
            a_n = elems[k][1]
        values.append((name, a_n))
    outs = [values[-1]] + [values[draw(st.integers(0, len(values) - 1))]
                           for _ in range(draw(st.integers(0, 2)))]
    shape = ", ".join(f"f32[{n}]" for _, n in outs)
    lines.append(f"  ROOT out = ({shape}) tuple({', '.join(v for v, _ in outs)})")
    return ("HloModule random\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(x, y)\n}\n\nENTRY main {\n  zero = f32[] constant(0)\n"
            + "\n".join(lines) + "\n}\n")


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(random_modules())
def test_random_modules_pack_without_overlap(text):
    module = parse_hlo_module(text)
    args = [np.linspace(-1, 1, p.shape.num_elements(), dtype=np.float32).reshape(p.shape.dimensions)
            for p in module.entry.parameters]
    expected = evaluate(module, args)
    HloMemoryScheduler().run(module)
    for comp in module.computations:
        seen = set()
        for i in comp.instructions:
            assert all(id(o) in seen for o in i.operands)
            seen.add(id(i))
    check_properties(module, assign_buffers(module))
    for e, a in zip(expected, evaluate(module, args)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


# ----- the corpus -----------------------------------------------------------------
FILES = corpus_files()


def test_corpus_is_not_empty():
    assert FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_schedule_and_assignment(path):
    text = path.read_text()
    module = parse_hlo_module(text)
    HloMemoryScheduler().run(module)
    for comp in module.computations:
        seen = set()
        for i in comp.instructions:
            assert all(id(o) in seen for o in list(i.operands) + list(i.control_predecessors))
            seen.add(id(i))
    ba = assign_buffers(module)
    check_properties(module, ba)
    if not corpus_has_elided_constants(module):
        assert_corpus_results(path, module, original=parse_hlo_module(text))


# x[i] = x[i] + x[i-1] in a loop (a prefix sum): the dynamic-update-slice
# writes over the loop state it updates (XLA's in-place DUS), so an
# iteration moves one element, not a copy of x.
PREFIX_SUM = """
HloModule prefix

cond {
  cp = (s32[], f32[64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(64)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[64] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  prev = s32[] subtract(bi, one)
  a = f32[1] dynamic-slice(bx, bi), dynamic_slice_sizes={1}
  b = f32[1] dynamic-slice(bx, prev), dynamic_slice_sizes={1}
  s = f32[1] add(a, b)
  y = f32[64] dynamic-update-slice(bx, s, bi)
  i1 = s32[] add(bi, one)
  ROOT bt = (s32[], f32[64]) tuple(i1, y)
}

ENTRY main {
  x = f32[64] parameter(0)
  one = s32[] constant(1)
  x2 = f32[64] negate(x)
  init = (s32[], f32[64]) tuple(one, x2)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  ROOT wx = f32[64] get-tuple-element(w), index=1
}
"""

# if (p) x[i] = x[i] * 2 else x[i] = x[i] + 1 in a loop: both branches update
# the loop state in place, so the conditional copies nothing in or out; the
# captured table t is only read by the branches, which read its own buffer.
CONDITIONAL_UPDATE = """
HloModule cond_update

double {
  dp = (f32[64], s32[], f32[64]) parameter(0)
  dx = f32[64] get-tuple-element(dp), index=0
  di = s32[] get-tuple-element(dp), index=1
  dt = f32[64] get-tuple-element(dp), index=2
  dv = f32[1] dynamic-slice(dx, di), dynamic_slice_sizes={1}
  tv = f32[1] dynamic-slice(dt, di), dynamic_slice_sizes={1}
  d2 = f32[1] multiply(dv, tv)
  dy = f32[64] dynamic-update-slice(dx, d2, di)
  ROOT dr = (f32[64]) tuple(dy)
}

increment {
  ip = (f32[64], s32[], f32[64]) parameter(0)
  ix = f32[64] get-tuple-element(ip), index=0
  ii = s32[] get-tuple-element(ip), index=1
  iv = f32[1] dynamic-slice(ix, ii), dynamic_slice_sizes={1}
  c1 = f32[] constant(1)
  c1b = f32[1] broadcast(c1), dimensions={}
  i2 = f32[1] add(iv, c1b)
  iy = f32[64] dynamic-update-slice(ix, i2, ii)
  ROOT ir = (f32[64]) tuple(iy)
}

cond {
  cp = (s32[], f32[64], f32[64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(64)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[64], f32[64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[64] get-tuple-element(bp), index=1
  bt = f32[64] get-tuple-element(bp), index=2
  v = f32[1] dynamic-slice(bx, bi), dynamic_slice_sizes={1}
  v0 = f32[] reshape(v)
  zero = f32[] constant(0)
  positive = pred[] compare(v0, zero), direction=GT
  ops = (f32[64], s32[], f32[64]) tuple(bx, bi, bt)
  c = (f32[64]) conditional(positive, ops, ops), true_computation=double, false_computation=increment
  y = f32[64] get-tuple-element(c), index=0
  one = s32[] constant(1)
  i1 = s32[] add(bi, one)
  ROOT br = (s32[], f32[64], f32[64]) tuple(i1, y, bt)
}

ENTRY main {
  x = f32[64] parameter(0)
  t = f32[64] parameter(1)
  zero = s32[] constant(0)
  x2 = f32[64] negate(x)
  init = (s32[], f32[64], f32[64]) tuple(zero, x2, t)
  w = (s32[], f32[64], f32[64]) while(init), condition=cond, body=body
  ROOT wx = f32[64] get-tuple-element(w), index=1
}
"""


def _cpu_matches_interpreter(text, *args):
    import xla
    expected = xla.compile(parse_hlo_module(text), "interpreter").execute(*args)
    got = xla.compile(parse_hlo_module(text), "cpu").execute(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_dynamic_update_slice_updates_the_loop_state_in_place():
    module, ba = assign(PREFIX_SUM)
    check_properties(module, ba)
    state = ba.buffer(instr(module, "w"), (1,))
    assert ba.buffer(instr(module, "y")).slot == state.slot
    assert ba.buffer(instr(module, "bp"), (1,)).slot == state.slot
    x = np.random.default_rng(0).random(64).astype(np.float32)
    _cpu_matches_interpreter(PREFIX_SUM, x)
    np.testing.assert_allclose(
        xla_cpu(PREFIX_SUM, x), np.cumsum(-x.astype(np.float64)), rtol=1e-5)


def xla_cpu(text, *args):
    import xla
    return xla.compile(parse_hlo_module(text), "cpu").execute(*args)


def test_a_dus_whose_operand_is_read_later_is_not_in_place():
    text = PREFIX_SUM.replace("ROOT bt = (s32[], f32[64]) tuple(i1, y)",
                              "z = f32[64] add(y, bx)\n  ROOT bt = (s32[], f32[64]) tuple(i1, z)")
    module, ba = assign(text)
    check_properties(module, ba)
    assert ba.buffer(instr(module, "y")).slot != ba.buffer(instr(module, "bp"), (1,)).slot
    x = np.random.default_rng(1).random(64).astype(np.float32)
    _cpu_matches_interpreter(text, x)


# x[i] += x[i-1]; x[i] /= 2 in a loop (seidel_2d's two updates of one
# row): the second DUS updates the first in place, which updates the loop
# state in place, so the whole chain shares the state's slot and an
# iteration copies no array.
TWO_UPDATES = PREFIX_SUM.replace(
    "  y = f32[64] dynamic-update-slice(bx, s, bi)\n",
    "  y0 = f32[64] dynamic-update-slice(bx, s, bi)\n"
    "  c = f32[1] dynamic-slice(y0, bi), dynamic_slice_sizes={1}\n"
    "  two = f32[] constant(2)\n"
    "  twob = f32[1] broadcast(two), dimensions={}\n"
    "  h = f32[1] divide(c, twob)\n"
    "  y = f32[64] dynamic-update-slice(y0, h, bi)\n")


def test_chained_updates_of_the_loop_state_share_its_slot():
    module, ba = assign(TWO_UPDATES)
    check_properties(module, ba)
    state = ba.buffer(instr(module, "w"), (1,)).slot
    assert ba.buffer(instr(module, "y0")).slot == state
    assert ba.buffer(instr(module, "y")).slot == state
    x = np.random.default_rng(2).random(64).astype(np.float32)
    _cpu_matches_interpreter(TWO_UPDATES, x)
    want = -x.astype(np.float64)
    for i in range(1, 64):
        want[i] = (want[i] + want[i - 1]) / 2
    np.testing.assert_allclose(xla_cpu(TWO_UPDATES, x), want, rtol=1e-5)


def test_a_chain_whose_first_update_is_read_later_keeps_it_apart():
    # y0 is read after y updates it: y cannot write over y0, so only y (defined
    # after the state's last read) joins the loop state; y0 keeps its own slot.
    text = TWO_UPDATES.replace("ROOT bt = (s32[], f32[64]) tuple(i1, y)",
                               "z = f32[64] add(y, y0)\n  ROOT bt = (s32[], f32[64]) tuple(i1, z)")
    module, ba = assign(text)
    check_properties(module, ba)
    state = ba.buffer(instr(module, "w"), (1,)).slot
    assert ba.buffer(instr(module, "y0")).slot != state
    assert ba.buffer(instr(module, "y0")).slot != ba.buffer(instr(module, "y")).slot
    x = np.random.default_rng(3).random(64).astype(np.float32)
    _cpu_matches_interpreter(text, x)


def test_a_conditional_updating_the_loop_state_in_place_copies_nothing():
    module, ba = assign(CONDITIONAL_UPDATE)
    check_properties(module, ba)
    state = ba.buffer(instr(module, "w"), (1,)).slot
    for name, index in (("c", (0,)), ("dp", (0,)), ("ip", (0,)), ("dy", ()), ("iy", ())):
        assert ba.buffer(instr(module, name), index).slot == state, name
    # The table the branches only read: their parameters read its buffer.
    table = ba.buffer(instr(module, "bp"), (2,)).slot
    assert ba.buffer(instr(module, "dp"), (2,)).slot == table
    assert ba.buffer(instr(module, "ip"), (2,)).slot == table
    rng = np.random.default_rng(2)
    x = (rng.random(64) - 0.5).astype(np.float32)
    t = rng.random(64).astype(np.float32)
    _cpu_matches_interpreter(CONDITIONAL_UPDATE, x, t)
    want = np.where(-x > 0, -x * t, -x + 1)
    np.testing.assert_allclose(xla_cpu(CONDITIONAL_UPDATE, x, t), want, rtol=1e-6)


def test_a_conditional_whose_operand_lives_on_copies():
    # The old array is read after the conditional: the branches cannot
    # update it in place.
    text = CONDITIONAL_UPDATE.replace(
        "ROOT br = (s32[], f32[64], f32[64]) tuple(i1, y, bt)",
        "y2 = f32[64] add(y, bx)\n  ROOT br = (s32[], f32[64], f32[64]) tuple(i1, y2, bt)")
    module, ba = assign(text)
    check_properties(module, ba)
    assert ba.buffer(instr(module, "c"), (0,)).slot != ba.buffer(instr(module, "bp"), (1,)).slot
    rng = np.random.default_rng(3)
    _cpu_matches_interpreter(text, (rng.random(64) - 0.5).astype(np.float32),
                             rng.random(64).astype(np.float32))


# A fusion whose root is the DUS (the update computed inside it): in place
# when the fused computation reads the updated array only through the DUS;
# one that also reads it for the update is not.
FUSED_DUS = """
HloModule fused_dus

fused {
  fx = f32[64] parameter(0)
  fv = f32[4] parameter(1)
  fi = s32[] parameter(2)
  two = f32[] constant(2)
  twob = f32[4] broadcast(two), dimensions={}
  u = f32[4] multiply(fv, twob)
  ROOT fy = f32[64] dynamic-update-slice(fx, u, fi)
}

ENTRY main {
  x = f32[64] parameter(0)
  v = f32[4] parameter(1)
  i = s32[] parameter(2)
  x2 = f32[64] negate(x)
  y = f32[64] fusion(x2, v, i), kind=kLoop, calls=fused
  ROOT z = f32[64] add(y, y)
}
"""


def test_a_fusion_rooted_at_a_dus_updates_in_place():
    module, ba = assign(FUSED_DUS)
    check_properties(module, ba)
    assert ba.buffer(instr(module, "y")).slot == ba.buffer(instr(module, "x2")).slot
    rng = np.random.default_rng(4)
    x, v = rng.random(64).astype(np.float32), rng.random(4).astype(np.float32)
    for i in (0, 7, 60, 200, -5):     # starts clamp to [0, 60]
        _cpu_matches_interpreter(FUSED_DUS, x, v, np.int32(i))
    reads = FUSED_DUS.replace("u = f32[4] multiply(fv, twob)",
                              "s = f32[4] slice(fx), slice={[0:4]}\n  u = f32[4] multiply(s, twob)")
    module, ba = assign(reads)
    check_properties(module, ba)
    assert ba.buffer(instr(module, "y")).slot != ba.buffer(instr(module, "x2")).slot
    _cpu_matches_interpreter(reads, x, v, np.int32(3))


# The loop state updated in place after a nested loop (a windowed dot's
# ring inside a partitioned loop body): y = tanh(dus(acc, ...)) where acc is
# the inner loop's accumulator, started from zeros written before the inner
# loop copies its start from the outer state. Walking back from y, the
# in-place chain reached the inner while's buffer, which later joined the
# inner loop's own set with those zeros: written into the outer state's
# slot while the outer state was still to be copied (every element wrong).
NESTED_LOOP_THEN_UPDATE = """
HloModule nested

icond {
  ip = (s32[], f32[64], f32[64]) parameter(0)
  j = s32[] get-tuple-element(ip), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(j, two), direction=LT
}

ibody {
  ip = (s32[], f32[64], f32[64]) parameter(0)
  j = s32[] get-tuple-element(ip), index=0
  v = f32[64] get-tuple-element(ip), index=1
  acc = f32[64] get-tuple-element(ip), index=2
  acc2 = f32[64] add(acc, v)
  one = s32[] constant(1)
  j1 = s32[] add(j, one)
  ROOT it = (s32[], f32[64], f32[64]) tuple(j1, v, acc2)
}

cond {
  cp = (s32[], f32[64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

body {
  bp = (s32[], f32[64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bx = f32[64] get-tuple-element(bp), index=1
  z = f32[] constant(0)
  zeros = f32[64] broadcast(z), dimensions={}
  zero = s32[] constant(0)
  start = (s32[], f32[64], f32[64]) tuple(zero, bx, zeros)
  inner = (s32[], f32[64], f32[64]) while(start), condition=icond, body=ibody
  acc = f32[64] get-tuple-element(inner), index=2
  u = f32[1] constant({3})
  d = f32[64] dynamic-update-slice(acc, u, bi)
  y = f32[64] tanh(d)
  one = s32[] constant(1)
  i1 = s32[] add(bi, one)
  ROOT bt = (s32[], f32[64]) tuple(i1, y)
}

ENTRY main {
  x = f32[64] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[64]) tuple(zero, x)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  ROOT wx = f32[64] get-tuple-element(w), index=1
}
"""


def test_a_nested_loops_state_keeps_its_own_slot():
    module, ba = assign(NESTED_LOOP_THEN_UPDATE)
    check_properties(module, ba)
    assert ba.buffer(instr(module, "inner"), (2,)).slot != ba.buffer(instr(module, "w"), (1,)).slot
    x = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    _cpu_matches_interpreter(NESTED_LOOP_THEN_UPDATE, x)
    want = x.astype(np.float64)
    for i in range(4):
        want = 2 * want
        want[i] = 3.0
        want = np.tanh(want)
    np.testing.assert_allclose(xla_cpu(NESTED_LOOP_THEN_UPDATE, x), want, rtol=1e-5)
