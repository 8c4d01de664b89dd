"""xla.lax.with_sharding_constraint, as in JAX: inside a jitted function it
becomes XLA's Sharding custom-call, which the partitioner reshards to (one
all-to-all when the same devices cut another dimension), and results are
NumPy's."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError
from xla.frontend.tracing import TracingError
from xla.sharding import Mesh, NamedSharding, P

MESH = Mesh((4,), ("x",))
ROWS, COLS = NamedSharding(MESH, P("x", None)), NamedSharding(MESH, P(None, "x"))
A = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)


def collectives(module):
    ops = [i.opcode for c in module.computations for i in c.instructions]
    return sorted(o for o in ops if o in ("all-gather", "all-reduce", "all-to-all",
                                         "collective-permute", "reduce-scatter"))


def test_emits_the_sharding_custom_call_as_jax_does():
    f = xla.jit(lambda a: xla.lax.with_sharding_constraint(np.sin(a), COLS) * 2,
                in_shardings=ROWS)
    text = f.lower(A).as_hlo_text()
    # JAX: custom-call(sin.1), custom_call_target="Sharding", sharding={devices=[1,4]<=[4]}
    assert 'custom_call_target="Sharding", sharding={devices=[1,4]0,1,2,3}' in text


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_a_constraint_that_moves_the_cut_adds_all_to_alls(backend):
    def f(a):
        return xla.lax.with_sharding_constraint(np.sin(a), COLS) * 2

    g = xla.jit(f, backend=backend, in_shardings=ROWS, out_shardings=ROWS)
    np.testing.assert_allclose(g(A), np.sin(A) * 2, rtol=1e-6)
    # Rows to columns and back: the same 4 devices, each a 2x2 block to each.
    assert collectives(g.lower(A).partitioned_module()) == ["all-to-all", "all-to-all"]


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_a_constraint_matching_the_propagated_sharding_adds_nothing(backend):
    g = xla.jit(lambda a: xla.lax.with_sharding_constraint(np.sin(a), ROWS) * 2, backend=backend,
                in_shardings=ROWS, out_shardings=ROWS)
    np.testing.assert_allclose(g(A), np.sin(A) * 2, rtol=1e-6)
    assert collectives(g.lower(A).partitioned_module()) == []


def test_a_replicated_constraint_gathers():
    g = xla.jit(lambda a: xla.lax.with_sharding_constraint(np.sin(a), NamedSharding(MESH, P())),
                in_shardings=ROWS)
    np.testing.assert_allclose(g(A), np.sin(A), rtol=1e-6)
    assert collectives(g.lower(A).partitioned_module()) == ["all-gather"]


def test_over_a_2d_mesh_the_all_to_all_runs_within_groups():
    mesh = Mesh((2, 2), ("a", "b"))
    rows, cols = NamedSharding(mesh, P("a", None)), NamedSharding(mesh, P(None, "a"))
    g = xla.jit(lambda a: np.cos(xla.lax.with_sharding_constraint(a * 3, cols)),
                in_shardings=rows, out_shardings=cols)
    np.testing.assert_allclose(g(A), np.cos(A * 3), rtol=1e-6)
    module = g.lower(A).partitioned_module()
    assert collectives(module) == ["all-to-all"]
    # Devices 0 and 2 (and 1 and 3) share b's coordinate: they swap blocks.
    (a2a,) = [i for i in module.entry.instructions if i.opcode == "all-to-all"]
    assert a2a.attr("replica_groups").text == "{{0,2},{1,3}}"


def test_constraints_alone_partition_the_function_over_their_mesh():
    w = np.random.default_rng(1).standard_normal((8, 6)).astype(np.float32)

    def f(a, w):
        return np.tanh(xla.lax.with_sharding_constraint(a, ROWS) @ w)

    g = xla.jit(f)
    np.testing.assert_allclose(g(A, w), np.tanh(A @ w), rtol=1e-5, atol=1e-6)
    module = g.lower(A, w).partitioned_module()
    assert module.header_attrs["num_partitions"] == 4
    (dot,) = [i for i in module.entry.instructions if i.opcode == "dot"]
    assert dot.shape.dimensions == (2, 6)      # the rows' tile: a data-parallel dot
    assert collectives(module) == []


def test_a_partition_spec_takes_the_mesh_of_the_enclosing_jit():
    g = xla.jit(lambda a: xla.lax.with_sharding_constraint(a + 1, P(None, "x")),
                in_shardings=ROWS, out_shardings=ROWS)
    np.testing.assert_allclose(g(A), A + 1)
    assert collectives(g.lower(A).partitioned_module()) == ["all-to-all", "all-to-all"]
    with pytest.raises(TracingError, match="needs a mesh"):
        xla.jit(lambda a: xla.lax.with_sharding_constraint(a, P("x")))(A)


def test_pytrees_eager_values_and_bad_shardings():
    a, b = xla.lax.with_sharding_constraint((A, A + 1), ROWS)   # outside a trace: as is
    assert a is A and np.array_equal(b, A + 1)
    g = xla.jit(lambda t: xla.lax.with_sharding_constraint(t, [ROWS, COLS]), in_shardings=ROWS)
    x, y = g((A, A * 2))
    np.testing.assert_array_equal(x, A)
    np.testing.assert_array_equal(y, A * 2)
    with pytest.raises(InvalidArgumentError, match="2 shardings for 1 arrays"):
        xla.jit(lambda a: xla.lax.with_sharding_constraint(a, [ROWS, COLS]))(A)
    with pytest.raises(InvalidArgumentError, match="not a NamedSharding or PartitionSpec"):
        xla.lax.with_sharding_constraint(A, "x")


def test_out_shardings_after_a_constraint_or_a_parameter_reshard_the_result():
    # The root is the constraint itself (or the parameter): out_shardings is
    # one more Sharding custom-call after it, not a replacement of its own.
    g = xla.jit(lambda a: xla.lax.with_sharding_constraint(a + 1, COLS), in_shardings=ROWS,
                out_shardings=ROWS)
    np.testing.assert_allclose(g(A), A + 1)
    assert collectives(g.lower(A).partitioned_module()) == ["all-to-all", "all-to-all"]
    ident = xla.jit(lambda a: a, in_shardings=ROWS, out_shardings=COLS)
    np.testing.assert_array_equal(ident(A), A)
    assert collectives(ident.lower(A).partitioned_module()) == ["all-to-all"]


def test_the_gradient_of_a_constraint_is_the_constraint_on_the_cotangent():
    def loss(a):
        return np.sum(np.tanh(xla.lax.with_sharding_constraint(a * a, COLS)))

    g = xla.jit(xla.grad(loss), in_shardings=ROWS, out_shardings=ROWS)
    np.testing.assert_allclose(g(A), 2 * A * (1 - np.tanh(A * A) ** 2), rtol=1e-5, atol=1e-6)
    assert g.lower(A).as_hlo_text().count('custom_call_target="Sharding"') == 2
