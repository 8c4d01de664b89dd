"""``xla.sharding``: device meshes and shardings for ``xla.jit`` (see
xla/frontend/sharding.py and docs/distributed.md)."""
from xla.frontend.sharding import Mesh, NamedSharding, P, PartitionSpec  # noqa: F401

__all__ = ["Mesh", "NamedSharding", "P", "PartitionSpec"]
