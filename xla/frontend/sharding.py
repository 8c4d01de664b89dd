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

``with_sharding_constraint(x, sharding)`` (``xla.lax``), inside a traced
function, asks that ``x`` be cut as ``sharding`` says at that point: the
value becomes ``custom-call(x), custom_call_target="Sharding",
sharding={...}``, as JAX lowers it, which sharding propagation spreads from
and the partitioner reshards to. A bare ``PartitionSpec`` takes the mesh of
the enclosing ``xla.jit``'s ``in_shardings``/``out_shardings``. A jitted
function with constraints and no ``in_shardings``/``out_shardings`` is
partitioned over the constraints' mesh (arguments passed whole). Outside a
trace the value is returned as it is (one process holds it all).
"""
import math
import threading

import numpy as np

from xla.errors import InvalidArgumentError
from xla.frontend import pytree
from xla.frontend.tracing import Tracer, as_tracer, current_context, tracing_error
from xla.hlo.attributes import RawAttr
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


_local = threading.local()


class enclosing_mesh:
    """While ``xla.jit`` traces a function with shardings: their mesh, the
    one a bare ``PartitionSpec`` in ``with_sharding_constraint`` refers to."""

    def __init__(self, *groups):
        meshes = [s.mesh for g in groups if g is not None
                  for s in ([g] if isinstance(g, NamedSharding) else g) if s is not None]
        self.mesh = meshes[0] if meshes else None

    def __enter__(self):
        stack = _local.__dict__.setdefault("meshes", [])
        stack.append(self.mesh)
        return self

    def __exit__(self, *exc):
        _local.meshes.pop()


def _named(sharding):
    if isinstance(sharding, NamedSharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        stack = getattr(_local, "meshes", [])
        mesh = stack[-1] if stack else None
        if mesh is None:
            raise tracing_error(f"with_sharding_constraint: PartitionSpec {tuple(sharding)} needs "
                                "a mesh: pass a NamedSharding, or use it inside an xla.jit with "
                                "in_shardings/out_shardings")
        return NamedSharding(mesh, sharding)
    raise InvalidArgumentError(f"with_sharding_constraint: {sharding!r} is not a NamedSharding "
                               "or PartitionSpec")


def constraint_mesh_sizes(builder):
    """The sizes of the meshes of the constraints traced with ``builder``'s
    module (empty when there are none)."""
    return builder._state.__dict__.get("sharding_mesh_sizes", [])


def with_sharding_constraint(x, shardings):
    """``x`` (an array or a pytree of them), constrained to be cut as
    ``shardings`` say (one ``NamedSharding``/``PartitionSpec`` for every
    leaf, or a sequence of one per leaf): the XLA ``Sharding`` custom-call
    on each traced leaf; outside a trace, ``x`` itself."""
    leaves, treedef = pytree.flatten(x)
    if isinstance(shardings, (NamedSharding, PartitionSpec)):
        shardings = [shardings] * len(leaves)
    shardings = list(shardings)
    if len(shardings) != len(leaves):
        raise InvalidArgumentError(f"with_sharding_constraint: {len(shardings)} shardings for "
                                   f"{len(leaves)} arrays")
    for s in shardings:
        if not isinstance(s, (NamedSharding, PartitionSpec)):
            raise InvalidArgumentError(f"with_sharding_constraint: {s!r} is not a NamedSharding "
                                       "or PartitionSpec")
    if current_context(required=False) is None:
        return x
    out = []
    for leaf, s in zip(leaves, shardings):
        t = as_tracer(leaf)
        named = _named(s)
        hlo = named.to_hlo(len(t.shape))
        b = t.op.builder
        b._state.__dict__.setdefault("sharding_mesh_sizes", []).append(named.mesh.size)
        out.append(Tracer(b.custom_call("Sharding", (t.op,), t.op.shape,
                                        sharding=RawAttr(hlo.to_text())), weak=t.weak))
    return treedef.unflatten(out)
