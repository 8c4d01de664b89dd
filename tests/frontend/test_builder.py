"""XlaBuilder: computations built op by op, with shape inference and errors."""
import numpy as np
import pytest

import xla
from xla import XlaBuilder
from xla.errors import InvalidArgumentError, ShapeError
from xla.hlo.shape import Shape

BACKENDS = ["cpu", "interpreter"]


def f32(*dims):
    return Shape.array("f32", dims)


def _run(module, backend, *args):
    xla.verify_module(module)
    # The printed module parses back into an equivalent module.
    again = xla.parse_hlo_module(module.to_text())
    assert again.to_text() == module.to_text()
    return xla.compile(module, backend).execute(*args)


@pytest.mark.parametrize("backend", BACKENDS)
def test_seed_reduce_with_a_sub_builder_reducer(backend):
    b = XlaBuilder("seed")
    x, y, z = (b.parameter(i, f32(16), n) for i, n in enumerate("xyz"))
    add = b.sub_builder("add")
    add.build(add.binary("add", add.parameter(0, f32(), "a"), add.parameter(1, f32(), "b")))
    s = b.reduce(b.binary("add", x, b.binary("multiply", y, z)), b.constant(np.float32(0)), add._built, [0])
    assert s.shape == Shape.array("f32", ())
    args = [np.random.default_rng(i).standard_normal(16).astype(np.float32) for i in range(3)]
    out = _run(b.build_module(s), backend, *args)
    np.testing.assert_allclose(out, np.sum(args[0] + args[1] * args[2]), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_and_conditional(backend):
    b = XlaBuilder("loop")
    n = b.parameter(0, Shape.array("s32", ()), "n")
    state_shape = Shape.tuple([Shape.array("s32", ()), Shape.array("s32", ())])
    cond = b.sub_builder("cond")
    p = cond.parameter(0, state_shape, "s")
    cond.build(cond.compare(cond.get_tuple_element(p, 0), cond.constant(np.int32(0)), "GT"))
    body = b.sub_builder("body")
    p = body.parameter(0, state_shape, "s")
    i, acc = body.get_tuple_element(p, 0), body.get_tuple_element(p, 1)
    body.build(body.tuple([body.binary("subtract", i, body.constant(np.int32(1))),
                           body.binary("add", acc, i)]))
    loop = b.while_loop(cond._built, body._built, b.tuple([n, b.constant(np.int32(0))]))
    total = b.get_tuple_element(loop, 1)
    pos = b.sub_builder("pos")
    pos.build(pos.binary("multiply", pos.parameter(0, Shape.array("s32", ()), "v"), pos.constant(np.int32(2))))
    neg = b.sub_builder("neg")
    neg.build(neg.unary("negate", neg.parameter(0, Shape.array("s32", ()), "v")))
    pred = b.compare(total, b.constant(np.int32(10)), "GT")
    out = b.conditional(pred, [pos._built, neg._built], [total, total])
    module = b.build_module(out)
    for k in (0, 3, 4, 10):
        s = k * (k + 1) // 2
        assert int(_run(module, backend, np.int32(k))) == (2 * s if s > 10 else -s)


def test_shape_errors_name_the_op_and_shapes():
    b = XlaBuilder("bad")
    x = b.parameter(0, f32(3), "x")
    y = b.parameter(1, f32(4), "y")
    with pytest.raises(ShapeError, match=r"add\(f32\[3\]\{0\}, f32\[4\]\{0\}\)"):
        b.binary("add", x, y)
    with pytest.raises(ShapeError, match="dot"):
        b.dot_general(x, y, [0], [0])
    with pytest.raises(ShapeError, match="reshape"):
        b.reshape(x, (2, 2))
    with pytest.raises(InvalidArgumentError, match="not a binary elementwise op"):
        b.binary("exponential", x, x)


def test_operands_from_another_builder_are_rejected():
    a, c = XlaBuilder("a"), XlaBuilder("c")
    x = a.parameter(0, f32(2), "x")
    with pytest.raises(InvalidArgumentError, match="belongs to computation a"):
        c.unary("negate", x)


def test_parameter_numbering_must_be_dense():
    b = XlaBuilder("p")
    b.parameter(0, f32(2), "x")
    y = b.parameter(2, f32(2), "y")
    with pytest.raises(InvalidArgumentError, match="not numbered 0..n-1"):
        b.build_module(y)
    with pytest.raises(InvalidArgumentError, match="already defined"):
        b.parameter(0, f32(1), "again")


@pytest.mark.parametrize("backend", BACKENDS)
def test_shape_ops_and_dot(backend):
    b = XlaBuilder("shapes")
    x = b.parameter(0, f32(2, 3), "x")
    t = b.transpose(x, [1, 0])
    r = b.reshape(t, (6,))
    s = b.slice(r, [1], [6], [2])
    bc = b.broadcast_in_dim(s, (4, 3), [1])
    d = b.dot_general(bc, x, [1], [1])
    c = b.concatenate([d, b.constant(np.ones((1, 2), np.float32))], 0)
    pd = b.pad(c, b.constant(np.float32(-1)), [(1, 0, 0), (0, 1, 1)])
    module = b.build_module(pd)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    s_ref = xv.T.reshape(6)[1:6:2]
    d_ref = np.broadcast_to(s_ref, (4, 3)) @ xv.T
    c_ref = np.concatenate([d_ref, np.ones((1, 2), np.float32)])
    ref = np.full((6, 4), -1, np.float32)
    ref[1:, 0::2] = c_ref
    np.testing.assert_allclose(_run(module, backend, xv), ref)


def test_unique_names_across_computations():
    b = XlaBuilder("names")
    x = b.parameter(0, f32(2), "x")
    m1 = b.scalar_computation("add", "f32")
    m2 = b.scalar_computation("maximum", "f32")
    r = b.reduce(b.reduce(x, b.constant(np.float32(0)), m1, [0]), b.constant(np.float32(0)), m2, [])
    module = b.build_module(r)
    names = [i.name for i in module.all_instructions()]
    assert len(names) == len(set(names))
    xla.verify_module(module)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sort_with_a_comparator_dynamic_slice_and_indexed_conditional(backend):
    b = XlaBuilder("misc")
    keys = b.parameter(0, Shape.array("s32", [6]), "keys")
    vals = b.parameter(1, f32(6), "vals")
    i = b.parameter(2, Shape.array("s32", ()), "i")
    cmp = b.sub_builder("less")      # sort's comparator takes (lhs, rhs) of every operand
    a, c = (cmp.parameter(n, Shape.array("s32", ()), name) for n, name in ((0, "a"), (1, "c")))
    cmp.parameter(2, f32(), "b")
    cmp.parameter(3, f32(), "d")
    cmp.build(cmp.compare(a, c, "LT"))
    sorted_ = b.sort([keys, vals], cmp._built, 0, is_stable=True)
    sv = b.get_tuple_element(sorted_, 1)
    window = b.dynamic_slice(sv, [i], [2])
    branches = []
    for k, op in enumerate(["add", "multiply", "subtract"]):
        br = b.sub_builder(f"branch{k}")
        p = br.parameter(0, f32(2), "w")
        br.build(br.binary(op, p, p) if op != "subtract" else br.unary("negate", p))
        branches.append(br._built)
    out = b.conditional(i, branches, [window] * 3)
    module = b.build_module(b.tuple([sv, out]))
    kv = np.array([3, 1, 2, 1, 0, 2], np.int32)
    vv = np.arange(6, dtype=np.float32)
    order = np.argsort(kv, kind="stable")
    for idx in (0, 1, 2, 7, -4):
        got_sorted, got = _run(module, backend, kv, vv, np.int32(idx))
        np.testing.assert_array_equal(got_sorted, vv[order])
        start = min(max(idx, 0), 4)                       # XLA clamps the start
        w = vv[order][start:start + 2]
        branch = min(max(idx, 0), 2) if 0 <= idx < 3 else 2  # out-of-range index: the last branch
        np.testing.assert_array_equal(got, [w + w, w * w, -w][branch])


@pytest.mark.parametrize("backend", BACKENDS)
def test_convolution_and_reduce_window(backend):
    from xla.hlo.attributes import ConvDimensionNumbers, Window, WindowDimension
    b = XlaBuilder("conv")
    x = b.parameter(0, f32(1, 1, 5, 5), "x")
    w = b.parameter(1, f32(2, 1, 3, 3), "w")
    window = Window([WindowDimension(size=3, stride=1, padding_low=1, padding_high=1)] * 2)
    dnums = ConvDimensionNumbers(0, 1, [2, 3], 1, 0, [2, 3], 0, 1, [2, 3])
    conv = b.convolution(x, w, window, dnums)
    pool = b.reduce_window(conv, b.constant(np.float32(-np.inf)), b.scalar_computation("maximum", "f32"),
                           Window([WindowDimension(size=1, stride=1)] * 2 +
                                  [WindowDimension(size=2, stride=2)] * 2))
    module = b.build_module(pool)
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((1, 1, 5, 5)).astype(np.float32)
    wv = rng.standard_normal((2, 1, 3, 3)).astype(np.float32)
    xp = np.pad(xv[0, 0], 1)
    conv_ref = np.array([[[np.sum(xp[i:i + 3, j:j + 3] * wv[o, 0]) for j in range(5)] for i in range(5)]
                         for o in range(2)])
    pool_ref = conv_ref[:, :4, :4].reshape(2, 2, 2, 2, 2).max(axis=(2, 4))[None]
    np.testing.assert_allclose(_run(module, backend, xv, wv), pool_ref, rtol=1e-5, atol=1e-5)


def test_control_flow_shape_errors_name_the_op():
    b = XlaBuilder("bad_loop")
    init = b.parameter(0, Shape.tuple([f32(2)]), "s")
    cond = b.sub_builder("cond")
    cond.parameter(0, Shape.tuple([f32(2)]), "s")
    cond.build(cond.compare(cond.constant(np.int32(0)), cond.constant(np.int32(1)), "LT"))
    body = b.sub_builder("body")
    p = body.parameter(0, Shape.tuple([f32(2)]), "s")
    body.build(body.tuple([body.slice(body.get_tuple_element(p, 0), [0], [1])]))
    with pytest.raises(ShapeError, match=r"^while\(.*body returns"):
        b.while_loop(cond._built, body._built, init)
    with pytest.raises(ShapeError, match=r"conditional.*branch 1"):
        b.conditional(b.constant(np.int32(0)), [cond._built, body._built], [init, init])


def test_a_built_computation_takes_no_more_ops():
    b = XlaBuilder("done")
    x = b.parameter(0, f32(2), "x")
    b.build(b.unary("negate", x))
    with pytest.raises(InvalidArgumentError, match="already built"):
        b.unary("negate", x)
    with pytest.raises(InvalidArgumentError, match="already built"):
        b.parameter(1, f32(2), "late")
    with pytest.raises(InvalidArgumentError, match="already built"):
        b.constant(np.float32(1))
