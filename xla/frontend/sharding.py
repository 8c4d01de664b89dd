"""Shardings as JAX users write them: a device ``Mesh`` with named axes, a
``PartitionSpec`` per array, ``NamedSharding(mesh, spec)``; and how
``xla.jit(f, in_shardings=..., out_shardings=...)`` runs a function over
them (SPMD partitioning, ``xla/service/spmd_partitioner.py``).

::

    mesh = xla.sharding.Mesh((4,), ("batch",))
    f = xla.jit(step, in_shardings=(NamedSharding(mesh, P("batch", None)),
                                    NamedSharding(mesh, P())),
                out_shardings=NamedSharding(mesh, P("batch", None)))

Arguments and results are whole NumPy arrays; the jitted function cuts the
arguments into the devices' tiles, runs the partitioned program on the
mesh's devices (partitions of the platform, in one process) and puts the
results back together. A ``PartitionSpec`` entry names the mesh axis (or
axes, a tuple) a dimension is cut along, or None; mesh axes it does not use
replicate the array over them.
"""
import math

import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo.sharding import REPLICATED, tiled


class Mesh:
    """Devices 0..n-1 laid out in a grid with named axes (row-major)."""

    def __init__(self, shape, axis_names):
        shape = tuple(int(s) for s in shape)
        axis_names = tuple(axis_names)
        if len(shape) != len(axis_names) or len(set(axis_names)) != len(axis_names):
            raise InvalidArgumentError(f"Mesh: {len(shape)} axis sizes need as many distinct names, "
                                       f"got {axis_names}")
        self.shape = dict(zip(axis_names, shape))
        self.axis_names = axis_names
        self.devices = np.arange(math.prod(shape)).reshape(shape)

    @property
    def size(self):
        return int(self.devices.size)

    def __repr__(self):
        return f"Mesh({dict(self.shape)})"


class PartitionSpec(tuple):
    """Per array dimension: a mesh axis name, a tuple of them, or None."""

    def __new__(cls, *parts):
        return super().__new__(cls, parts)


P = PartitionSpec


class NamedSharding:
    def __init__(self, mesh, spec):
        self.mesh = mesh
        self.spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)

    def to_hlo(self, rank):
        """The XLA sharding of an array of ``rank`` dimensions."""
        mesh, spec = self.mesh, self.spec
        if len(spec) > rank:
            raise InvalidArgumentError(f"PartitionSpec {tuple(spec)} has more entries than the "
                                       f"array's {rank} dimensions")
        used, tiles = [], []
        for entry in list(spec) + [None] * (rank - len(spec)):
            names = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
            for name in names:
                if name not in mesh.shape:
                    raise InvalidArgumentError(f"PartitionSpec names axis {name!r}, not one of the "
                                               f"mesh's {mesh.axis_names}")
                if name in used:
                    raise InvalidArgumentError(f"PartitionSpec uses mesh axis {name!r} twice")
                used.append(name)
            tiles.append(math.prod(mesh.shape[n] for n in names))
        if not used:
            return REPLICATED
        rest = [n for n in mesh.axis_names if n not in used]
        order = [mesh.axis_names.index(n) for n in used + rest]
        devices = mesh.devices.transpose(order)
        replicate = math.prod(mesh.shape[n] for n in rest)
        if replicate > 1:
            return tiled(devices.reshape(tiles + [replicate]), replicate_last=True)
        return tiled(devices.reshape(tiles))

    def __repr__(self):
        return f"NamedSharding({self.mesh}, {tuple(self.spec)})"


def hlo_shardings(shardings, ranks, what):
    """One XLA sharding (or None) per array of ``ranks`` from jit's
    ``in_shardings``/``out_shardings`` (one for all, or one per array)."""
    if shardings is None:
        return [None] * len(ranks)
    if isinstance(shardings, NamedSharding):
        shardings = [shardings] * len(ranks)
    shardings = list(shardings)
    if len(shardings) != len(ranks):
        raise InvalidArgumentError(f"{what}: {len(shardings)} shardings for {len(ranks)} arrays")
    out = []
    for s, r in zip(shardings, ranks):
        if s is not None and not isinstance(s, NamedSharding):
            raise InvalidArgumentError(f"{what}: {s!r} is not a NamedSharding")
        out.append(None if s is None else s.to_hlo(r))
    return out


def mesh_size(*groups):
    sizes = {s.mesh.size for g in groups if g is not None
             for s in ([g] if isinstance(g, NamedSharding) else g) if s is not None}
    if len(sizes) != 1:
        raise InvalidArgumentError(f"shardings on meshes of different sizes: {sorted(sizes)}")
    return sizes.pop()
