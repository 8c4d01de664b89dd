"""sort, topk and the TopK custom call on the CPU backend, checked against
the interpreter (emit_sort.py)."""
import numpy as np
import pytest

from test_cpu_backend import check


def comparator(ty, direction="LT", ctype="TOTALORDER", name="cmp", extra=()):
    params = [f"{ty}[]"] * 2 + [f"{t}[]" for t in extra for _ in range(2)]
    sig = ", ".join(f"p{i}: {t}" for i, t in enumerate(params))
    lines = [f"  %{name}.p{i} = {t} parameter({i})" for i, t in enumerate(params)]
    kind = f", type={ctype}" if ctype else ""
    lines.append(f"  ROOT %{name}.r = pred[] compare(%{name}.p0, %{name}.p1), direction={direction}{kind}")
    return f"HloModule sort\n%{name} ({sig}) -> pred[] {{\n" + "\n".join(lines) + "\n}\n"


@pytest.mark.parametrize("ty,direction", [("f32", "LT"), ("f32", "GT"), ("s32", "LT"), ("u8", "GT"),
                                          ("f64", "LT"), ("s64", "GT"), ("bf16", "LT")])
@pytest.mark.parametrize("dims,dim", [((37,), 0), ((5, 70), 1), ((70, 5), 0), ((3, 1), 1),
                                      ((2, 3, 33), 1)])
def test_sort_one_operand(ty, direction, dims, dim):
    ctype = "TOTALORDER" if ty[0] in "fb" else None
    shape = f"{ty}[{','.join(map(str, dims))}]"
    check(comparator(ty, direction, ctype) + f"""
ENTRY %main (x: {shape}) -> {shape} {{
  %x = {shape} parameter(0)
  ROOT %s = {shape} sort(%x), dimensions={{{dim}}}, to_apply=%cmp
}}
""")


def test_sort_nans_totalorder():
    x = np.array([3, np.nan, -np.nan, -0.0, 0.0, -np.inf, np.inf, 1, np.nan, -2] * 5, np.float32)
    x[1] = np.float32("nan")
    x[2] = -np.float32("nan")
    for direction in ("LT", "GT"):
        text = comparator("f32", direction) + """
ENTRY %main (x: f32[50]) -> f32[50] {
  %x = f32[50] parameter(0)
  ROOT %s = f32[50] sort(%x), dimensions={0}, to_apply=%cmp
}
"""
        exe = check(text, args=[x])
        out = exe.execute(x)
        first, last = (out[:5], out[-5:]) if direction == "LT" else (out[-5:], out[:5])
        assert np.isnan(first).all() and np.signbit(first).all()  # -NaN smallest
        assert np.isnan(last).all() and not np.signbit(last).any()  # +NaN largest


def test_sort_multi_operand_stable():
    # Keys with many ties; the s32 payload records the original positions.
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 4, size=(3, 300)).astype(np.int32)
    vals = np.tile(np.arange(300, dtype=np.int32), (3, 1))
    f = rng.standard_normal((3, 300)).astype(np.float32)
    text = comparator("s32", "LT", None, extra=("s32", "f32")) + """
ENTRY %main (k: s32[3,300], v: s32[3,300], f: f32[3,300]) -> (s32[3,300], s32[3,300], f32[3,300]) {
  %k = s32[3,300] parameter(0)
  %v = s32[3,300] parameter(1)
  %f = f32[3,300] parameter(2)
  ROOT %s = (s32[3,300], s32[3,300], f32[3,300]) sort(%k, %v, %f), dimensions={1}, is_stable=true, to_apply=%cmp
}
"""
    exe = check(text, args=[keys, vals, f])
    k, v, ff = exe.execute(keys, vals, f)
    order = np.argsort(keys, axis=1, kind="stable")
    np.testing.assert_array_equal(v, order)
    np.testing.assert_array_equal(ff, np.take_along_axis(f, order, axis=1))


def test_sort_lexicographic_comparator():
    text = """
HloModule lex
%lex (a0: f32[], a1: f32[], b0: s32[], b1: s32[]) -> pred[] {
  %a0 = f32[] parameter(0)
  %a1 = f32[] parameter(1)
  %b0 = s32[] parameter(2)
  %b1 = s32[] parameter(3)
  %lt = pred[] compare(%a0, %a1), direction=LT, type=TOTALORDER
  %eq = pred[] compare(%a0, %a1), direction=EQ, type=TOTALORDER
  %lt2 = pred[] compare(%b0, %b1), direction=GT
  %and = pred[] and(%eq, %lt2)
  ROOT %or = pred[] or(%lt, %and)
}
ENTRY %main (x: f32[4,50], y: s32[4,50]) -> (f32[4,50], s32[4,50]) {
  %x = f32[4,50] parameter(0)
  %y = s32[4,50] parameter(1)
  ROOT %s = (f32[4,50], s32[4,50]) sort(%x, %y), dimensions={1}, to_apply=%lex
}
"""
    rng = np.random.default_rng(2)
    check(text, args=[rng.integers(0, 5, (4, 50)).astype(np.float32),
                      rng.integers(-9, 9, (4, 50)).astype(np.int32)])


def test_sort_large_row_uses_heap_scratch():
    n = 10000
    check(comparator("f32") + f"""
ENTRY %main (x: f32[2,{n}]) -> f32[2,{n}] {{
  %x = f32[2,{n}] parameter(0)
  ROOT %s = f32[2,{n}] sort(%x), dimensions={{1}}, to_apply=%cmp
}}
""")


def test_sort_large_stable_pairs_of_odd_sizes():
    # bf16 keys (2-byte copies of an odd count: the copy regions' padding),
    # s8 and f64 payloads, many ties: the stable order, on the heap
    import ml_dtypes
    n = 20001
    rng = np.random.default_rng(12)
    keys = rng.integers(-20, 20, n).astype(np.float32).astype(ml_dtypes.bfloat16)
    keys[::97] = np.nan
    small = rng.integers(-100, 100, n).astype(np.int8)
    pos = np.arange(n, dtype=np.float64)
    text = comparator("bf16", "LT", "TOTALORDER", extra=("s8", "f64")) + f"""
ENTRY %main (k: bf16[{n}], s: s8[{n}], p: f64[{n}]) -> (bf16[{n}], s8[{n}], f64[{n}]) {{
  %k = bf16[{n}] parameter(0)
  %s = s8[{n}] parameter(1)
  %p = f64[{n}] parameter(2)
  ROOT %r = (bf16[{n}], s8[{n}], f64[{n}]) sort(%k, %s, %p), dimensions={{0}}, is_stable=true, to_apply=%cmp
}}
"""
    exe = check(text, args=[keys, small, pos])
    k, sm, p = (np.asarray(a) for a in exe.execute(keys, small, pos))
    order = np.argsort(keys.astype(np.float32), kind="stable")   # NaNs last, as TOTALORDER's +NaN
    np.testing.assert_array_equal(p, order.astype(np.float64))
    np.testing.assert_array_equal(sm, small[order])
    assert k.tobytes() == keys[order].tobytes()


def test_sort_many_rows_parallel():
    check(comparator("s32") + """
ENTRY %main (x: s32[4096,40]) -> s32[4096,40] {
  %x = s32[4096,40] parameter(0)
  ROOT %s = s32[4096,40] sort(%x), dimensions={1}, to_apply=%cmp
}
""")


def test_sort_non_default_layout():
    check(comparator("s32") + """
ENTRY %main (x: s32[6,20]{0,1}) -> s32[6,20]{0,1} {
  %x = s32[6,20]{0,1} parameter(0)
  ROOT %s = s32[6,20]{0,1} sort(%x), dimensions={1}, to_apply=%cmp
}
""")


TIES = np.array([[1, 3, 3, 2, 3, 1, np.nan, -np.inf],
                 [0, 0, 0, 0, 0, 0, 0, 0],
                 [5, -1, np.inf, 5, -np.nan, 2, 2, 7]], np.float32)


@pytest.mark.parametrize("largest", ["true", "false"])
def test_topk_ties_and_nans(largest):
    exe = check(f"""
HloModule topk
ENTRY %main (x: f32[3,8]) -> (f32[3,5], s32[3,5]) {{
  %x = f32[3,8] parameter(0)
  ROOT %t = (f32[3,5], s32[3,5]) topk(%x), k=5, largest={largest}
}}
""", args=[TIES])
    if largest == "true":
        _, idx = exe.execute(TIES)
        np.testing.assert_array_equal(idx[0], [6, 1, 2, 4, 3])
        np.testing.assert_array_equal(idx[1], [0, 1, 2, 3, 4])


def test_topk_custom_call():
    check("""
HloModule topk_cc
%gt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = pred[] compare(%a, %b), direction=GT
}
ENTRY %main (x: f32[3,8]) -> (f32[3,4], s32[3,4]) {
  %x = f32[3,8] parameter(0)
  ROOT %t = (f32[3,4], s32[3,4]) custom-call(%x), custom_call_target="TopK", called_computations={%gt}
}
""", args=[TIES])


def test_topk_integers_one_dimensional():
    check("""
HloModule topk_int
ENTRY %main (x: s32[100]) -> (s32[7], s32[7]) {
  %x = s32[100] parameter(0)
  ROOT %t = (s32[7], s32[7]) topk(%x), k=7, largest=true
}
""", args=[(np.arange(100, dtype=np.int32) * 37) % 11])


def _topk_module(dims, k, largest="true", ty="f32", layout=""):
    shape = f"{ty}[{','.join(map(str, dims))}]{layout}"
    out = list(dims[:-1]) + [k]
    return f"""
HloModule topk_select
ENTRY %main (x: {shape}) -> ({ty}[{','.join(map(str, out))}], s32[{','.join(map(str, out))}]) {{
  %x = {shape} parameter(0)
  ROOT %t = ({ty}[{','.join(map(str, out))}], s32[{','.join(map(str, out))}]) topk(%x), k={k}, largest={largest}
}}
"""


def _stable_topk(x, k, largest):
    """NumPy's stable order: descending (largest) or ascending, ties by the
    lower index (no NaNs)."""
    idx = np.argsort(-x if largest else x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)


ROWS = np.random.default_rng(7).integers(-6, 7, (37, 300)).astype(np.float32)   # many ties


@pytest.mark.parametrize("k,largest,rows", [
    (16, True, ROWS), (16, False, ROWS), (1, True, ROWS), (32, True, ROWS),
    (5, True, np.tile(np.arange(300, dtype=np.float32), (3, 1))),      # every element enters
    (5, True, np.tile(np.arange(300, 0, -1, dtype=np.float32), (3, 1))),  # none after the first k
    (19, False, ROWS[:, :20]),                                          # k = n - 1
    (33, True, ROWS), (20, True, ROWS[:, :20]),                         # the sort: k > 32, k = n
])
def test_topk_selects_the_stable_first_k(k, largest, rows):
    exe = check(_topk_module(rows.shape, k, "true" if largest else "false"), args=[rows])
    values, indices = (np.asarray(a) for a in exe.execute(rows))
    want_values, want_indices = _stable_topk(rows, k, largest)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values, want_values)
    # which path: one selecting pass for k <= 32 below the row length
    selects = "select.header:" in exe.ir_text
    assert selects == (k <= 32 and k < rows.shape[-1])


def test_topk_selection_total_order():
    # NaNs of both signs, zeros of both signs, infinities, repeated
    rng = np.random.default_rng(8)
    pool = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -1.5, 3.0], np.float32)
    x = rng.choice(pool, (9, 100)).astype(np.float32)
    x[x != x] = np.where(rng.random((x != x).sum()) < 0.5, np.float32("nan"), -np.float32("nan"))
    for largest in ("true", "false"):
        exe = check(_topk_module(x.shape, 12, largest), args=[x])
        assert "select.header:" in exe.ir_text


def test_topk_selection_other_types_and_layouts():
    x = np.random.default_rng(9).integers(-100, 100, (6, 7, 64)).astype(np.int32)
    check(_topk_module(x.shape, 8, ty="s32"), args=[x])
    check(_topk_module(x.shape, 8, "false", ty="s32", layout="{1,2,0}"), args=[x])
    b = np.random.default_rng(10).standard_normal((4, 90)).astype(np.float32)
    check(_topk_module(b.shape, 7, ty="bf16"), args=[b.astype(np.float32).astype(__import__("ml_dtypes").bfloat16)])
