"""Shardy's form of sharding, as JAX's HLO carries it, read into
HloShardings (``xla/hlo/sharding.py``).

JAX (through XLA's Shardy round-trip export) writes:

* the meshes as a module frontend attribute,
  ``xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}`` (axes major to
  minor, optionally ``device_ids=[...]``);
* a value's sharding as ``xla.sdy.sharding="#sdy.sharding<@mesh, [{"x"},
  {}]>"`` (per dimension, the mesh axes it is split over, major first;
  ``?`` marks a dimension open to propagation, ``replicated={...}`` axes
  it is explicitly replicated over), several values' as
  ``#sdy.sharding_per_value<[<@mesh, [...]>, ...]>``;
* shard_map and pmap bodies as ``xla.sdy.manual_computation_body``
  computations, called between ``xla.sdy.GlobalToLocalShape`` and
  ``xla.sdy.LocalToGlobalShape`` custom-calls whose ``xla.sdy.in_shardings``
  / ``out_shardings`` say how the global values are cut and
  ``xla.sdy.manual_axes`` over which axes the body is manual;
  ``xla.sdy.FuncResultSharding`` custom-calls mark results' shardings.

A dimension split over axes ``a, b`` has ``size(a) * size(b)`` tiles, the
tile index major in ``a``; axes no dimension uses replicate the value
(``last_tile_dim_replicate``). Sub-axes (``"x":(1)2``) and inline meshes
are refused by name.
"""
import numpy as np

from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo.sharding import REPLICATED, tiled

GLOBAL_TO_LOCAL = "xla.sdy.GlobalToLocalShape"
LOCAL_TO_GLOBAL = "xla.sdy.LocalToGlobalShape"
FUNC_RESULT_SHARDING = "xla.sdy.FuncResultSharding"
SHARDING_CONSTRAINT = "xla.sdy.ShardingConstraint"


def _split_top(text, sep=","):
    """``text`` split at ``sep`` outside quotes and brackets of any kind."""
    parts, depth, start, quoted, escaped = [], 0, 0, False, False
    for i, c in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                quoted = False
            continue
        if c == '"':
            quoted = True
        elif c in "{[<(":
            depth += 1
        elif c in "}]>)":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def attribute_dict(raw):
    """``{key=value, key2="quoted"}`` (a frontend_attributes text) as a dict
    of strings (quotes removed); None gives {}."""
    if raw is None:
        return {}
    text = str(getattr(raw, "text", raw)).strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    out = {}
    for part in _split_top(text):
        key, sep, value = part.partition("=")
        if not sep:
            raise InvalidArgumentError(f"attribute {part!r} has no value")
        out[key.strip()] = _unquote(value)
    return out


def _inside(text, prefix):
    """The text between ``prefix<`` and the closing ``>``."""
    text = text.strip()
    if not (text.startswith(prefix + "<") and text.endswith(">")):
        raise InvalidArgumentError(f"expected {prefix}<...>, got {text!r}")
    return text[len(prefix) + 1:-1]


class Mesh:
    """A Shardy mesh: axis names and sizes (major to minor) and device ids."""

    def __init__(self, axes, device_ids=None):
        self.axes = list(axes)
        size = int(np.prod([n for _, n in self.axes], dtype=np.int64))
        ids = np.arange(size) if device_ids is None else np.asarray(device_ids, np.int64)
        if ids.size != size:
            raise InvalidArgumentError(f"mesh of {size} devices lists {ids.size} device ids")
        self.devices = ids.reshape([n for _, n in self.axes]) if self.axes else ids.reshape(())

    @property
    def size(self):
        return int(self.devices.size)

    def axis(self, name):
        for i, (a, _) in enumerate(self.axes):
            if a == name:
                return i
        raise InvalidArgumentError(f"mesh has no axis {name!r} (axes: {[a for a, _ in self.axes]})")


def parse_mesh(text):
    """``#sdy.mesh<["x"=2, "y"=2]>`` (optionally ``, device_ids=[...]``) as a Mesh."""
    parts = _split_top(_inside(text, "#sdy.mesh"))
    axes_text = parts[0] if parts else "[]"
    axes = []
    for a in _split_top(axes_text.strip()[1:-1]):
        name, _, size = a.partition("=")
        axes.append((_unquote(name), int(size)))
    device_ids = None
    for extra in parts[1:]:
        key, _, value = extra.partition("=")
        if key.strip() != "device_ids":
            raise UnimplementedError(f"mesh attribute {key.strip()!r} ({text})")
        device_ids = [int(v) for v in _split_top(value.strip()[1:-1])]
    return Mesh(axes, device_ids)


def module_meshes(module):
    """The module's meshes by name (from its ``xla.sdy.meshes`` frontend attribute)."""
    attrs = attribute_dict(module.header_attrs.get("frontend_attributes"))
    raw = attrs.get("xla.sdy.meshes")
    if raw is None:
        return {}
    raw = raw.strip()
    if raw.startswith("{") and raw.endswith("}"):
        raw = raw[1:-1]
    meshes = {}
    for entry in _split_top(raw):
        name, _, mesh = entry.partition("=")
        meshes[name.strip()] = parse_mesh(mesh)
    return meshes


def _tensor_sharding(text, meshes, rank=None):
    """``<@mesh, [{"x"}, {}]>`` (the inside of one value's sharding) as an HloSharding."""
    parts = _split_top(text)
    ref = parts[0]
    if not ref.startswith("@"):
        raise UnimplementedError(f"sharding with an inline mesh ({text})")
    mesh = meshes.get(ref[1:])
    if mesh is None:
        raise InvalidArgumentError(f"sharding names mesh {ref[1:]!r}, which the module does not define")
    dims_text = parts[1].strip()
    dims = []
    for d in _split_top(dims_text[1:-1]):
        axes = []
        for a in _split_top(d.strip()[1:-1]):
            if a == "?":
                continue
            if ":" in a:
                raise UnimplementedError(f"sharding over a sub-axis {a} ({text})")
            axes.append(mesh.axis(_unquote(a)))
        dims.append(axes)
    if rank is not None and len(dims) != rank:
        raise InvalidArgumentError(f"sharding {text} has {len(dims)} dimensions for rank {rank}")
    used = [a for axes in dims for a in axes]
    if len(set(used)) != len(used):
        raise InvalidArgumentError(f"sharding {text} uses a mesh axis twice")
    if not used:
        return REPLICATED
    rest = [a for a in range(len(mesh.axes)) if a not in used]
    devices = np.transpose(mesh.devices, used + rest)
    tiles = [int(np.prod([mesh.axes[a][1] for a in axes], dtype=np.int64)) for axes in dims]
    replicas = int(np.prod([mesh.axes[a][1] for a in rest], dtype=np.int64))
    if replicas > 1:
        return tiled(devices.reshape(tiles + [replicas]), replicate_last=True)
    return tiled(devices.reshape(tiles))


def parse_sharding(text, meshes, rank=None):
    """``#sdy.sharding<@mesh, [...]>`` as an HloSharding."""
    return _tensor_sharding(_inside(text, "#sdy.sharding"), meshes, rank)


def parse_sharding_per_value(text, meshes):
    """``#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`` as a list of HloShardings."""
    inner = _inside(text, "#sdy.sharding_per_value").strip()
    return [_tensor_sharding(v.strip()[1:-1], meshes) for v in _split_top(inner[1:-1])]


def parse_manual_axes(text):
    """``#sdy<manual_axes{"i"}>`` as a list of axis names."""
    inner = _inside(text, "#sdy").strip()
    if not inner.startswith("manual_axes{") or not inner.endswith("}"):
        raise InvalidArgumentError(f"expected manual_axes{{...}}, got {text!r}")
    return [_unquote(a) for a in _split_top(inner[len("manual_axes{"):-1])]


def uses_shardy(module):
    """Whether the module is in Shardy's form (its sdy custom-calls need the
    SPMD partitioner before it can run per device)."""
    return any(i.opcode == "custom-call" and str(i.attr("custom_call_target", "")).startswith("xla.sdy.")
               for c in module.computations for i in c.instructions)
