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
