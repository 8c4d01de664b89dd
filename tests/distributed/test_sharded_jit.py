"""xla.jit with in_shardings/out_shardings over a device mesh, as in JAX:
results equal the unsharded function's, and PartitionSpecs become XLA's
shardings as documented."""
import numpy as np
import pytest

import xla
from xla.errors import InvalidArgumentError
from xla.sharding import Mesh, NamedSharding, P


def test_partition_specs_become_xla_shardings():
    mesh = Mesh((2, 2), ("data", "model"))
    assert NamedSharding(mesh, P("data", "model")).to_hlo(2).to_text() == "{devices=[2,2]0,1,2,3}"
    assert NamedSharding(mesh, P("model", "data")).to_hlo(2).to_text() == "{devices=[2,2]0,2,1,3}"
    assert NamedSharding(mesh, P("data")).to_hlo(2).to_text() == \
        "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"
    assert NamedSharding(mesh, P(("data", "model"))).to_hlo(1).to_text() == "{devices=[4]0,1,2,3}"
    assert NamedSharding(mesh, P()).to_hlo(2).is_replicated
    with pytest.raises(InvalidArgumentError, match="not one of the mesh's"):
        NamedSharding(mesh, P("batch")).to_hlo(1)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_data_and_tensor_parallel_jit_match_the_unsharded_function(backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 6)).astype(np.float32)
    mesh = Mesh((4,), ("batch",))
    f = xla.jit(lambda x, w: np.tanh(x @ w), backend=backend,
                in_shardings=(NamedSharding(mesh, P("batch", None)), NamedSharding(mesh, P())),
                out_shardings=NamedSharding(mesh, P("batch", None)))
    np.testing.assert_allclose(f(x, w), np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    mesh2 = Mesh((2, 2), ("data", "model"))
    g = xla.jit(lambda x, w: (x @ w, np.sum(x)), backend=backend,
                in_shardings=(NamedSharding(mesh2, P("data", "model")),
                              NamedSharding(mesh2, P("model", None))))
    prod, total = g(x, w)
    np.testing.assert_allclose(prod, x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(total, x.sum(), rtol=1e-5)
    assert g.cache_info().compilations == 1
    g(x + 1, w)
    assert g.cache_info().compilations == 1


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_batch_parallel_matmul_reshape_and_concatenate_match(backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8, 16)).astype(np.float32)
    w = rng.standard_normal((4, 16, 6)).astype(np.float32)
    mesh = Mesh((4,), ("batch",))
    batch = NamedSharding(mesh, P("batch"))

    def f(x, w):
        y = np.tanh(x @ w).reshape(4, 48)
        return np.concatenate([y, y[:, :8]], axis=1)

    g = xla.jit(f, backend=backend, in_shardings=(batch, batch), out_shardings=batch)
    np.testing.assert_allclose(g(x, w), f(x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_out_shardings_alone_propagate_backward(backend):
    # Only the result is sharded: ShardingPropagation cuts the intermediate
    # values backward from it (the arguments, without in_shardings, are
    # passed whole, as in JAX).
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    mesh = Mesh((4,), ("batch",))

    def f(x, w, b):
        return np.maximum(x @ w + b, 0.0).T

    g = xla.jit(f, backend=backend, out_shardings=NamedSharding(mesh, P(None, "batch")))
    np.testing.assert_allclose(g(x, w, b), f(x, w, b), rtol=1e-5, atol=1e-5)
