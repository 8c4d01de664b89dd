"""XLA's shardings: how an array is split over the devices of a program.

Written as the ``sharding={...}`` attribute:

- ``{replicated}``: every device holds the whole array;
- ``{maximal device=k}``: only device k holds it;
- ``{devices=[a,b]<=[n]}`` (iota form, ``<=[...]T(...)`` with a transpose as
  for replica groups) or ``{devices=[a,b]0,1,2,3}``: dimension 0 is cut into
  ``a`` tiles and dimension 1 into ``b``; device ``ids[i, j]`` holds tile
  ``(i, j)``. With ``last_tile_dim_replicate`` the device array has one more
  dimension, whose devices hold the same tile;
- ``{{...}, {...}}``: one sharding per element of a tuple.

``HloSharding.devices`` is that device array (NumPy), ``tiles`` the
number of tiles per array dimension. ``local_dims`` is the shape of one
tile, ``tile_coords`` the tile a device holds, and ``from_tile_coords``
the sharding that places given tiles on the devices (the SPMD
partitioner builds result shardings with it).
"""
import re
from dataclasses import dataclass

import numpy as np

from xla.errors import InvalidArgumentError, UnimplementedError

_IOTA = re.compile(r"^devices=\[([\d,\s]*)\]<=\[([\d,\s]*)\](?:T\(([\d,\s]*)\))?(.*)$")
_LIST = re.compile(r"^devices=\[([\d,\s]*)\]([\d,\s]+)(.*)$")


@dataclass(frozen=True, eq=False)
class HloSharding:
    kind: str                       # "replicated", "maximal", "tiled", "manual", "tuple"
    devices: object = None          # np.ndarray of device ids (tiled)
    replicate_last: bool = False    # the device array's last dimension replicates
    device: int = None              # maximal
    elements: tuple = ()            # tuple

    @property
    def tiles(self):
        """Tiles per array dimension (tiled shardings)."""
        shape = self.devices.shape
        return tuple(shape[:-1]) if self.replicate_last else tuple(shape)

    @property
    def is_tiled(self):
        return self.kind == "tiled"

    @property
    def is_replicated(self):
        return self.kind == "replicated" or (self.kind == "tiled" and all(t == 1 for t in self.tiles))

    def tile_index(self, device):
        """The tile coordinates of ``device`` (and its replica coordinate last
        when ``replicate_last``)."""
        where = np.argwhere(self.devices == device)
        if len(where) != 1:
            raise InvalidArgumentError(f"sharding {self.to_text()} does not place device {device} "
                                       "exactly once")
        return tuple(int(i) for i in where[0])

    def to_text(self):
        if self.kind == "tuple":
            return "{" + ", ".join(e.to_text() for e in self.elements) + "}"
        if self.kind == "maximal":
            return f"{{maximal device={self.device}}}"
        if self.kind in ("replicated", "manual"):
            return "{" + self.kind + "}"
        dims = ",".join(str(d) for d in self.devices.shape)
        ids = ",".join(str(int(d)) for d in self.devices.reshape(-1))
        return f"{{devices=[{dims}]{ids}" + (" last_tile_dim_replicate}" if self.replicate_last else "}")

    def __eq__(self, other):
        return isinstance(other, HloSharding) and self.to_text() == other.to_text()

    def __hash__(self):
        return hash(self.to_text())


REPLICATED = HloSharding("replicated")


def tiled(devices, replicate_last=False):
    return HloSharding("tiled", np.asarray(devices, dtype=np.int64), replicate_last)


def local_dims(dims, sharding):
    """The dimensions of one tile of an array of ``dims`` under ``sharding``
    (``dims`` itself unless tiled); UnimplementedError unless every cut
    dimension divides evenly."""
    if sharding is None or not sharding.is_tiled:
        return tuple(dims)
    tiles = sharding.tiles
    if len(tiles) != len(dims):
        raise UnimplementedError(f"sharding {sharding.to_text()} has {len(tiles)} tile dimensions "
                                 f"for an array of rank {len(dims)}")
    for d, t in zip(dims, tiles):
        if d % t:
            raise UnimplementedError(f"dimension of size {d} does not split evenly into {t} tiles "
                                     f"(sharding {sharding.to_text()})")
    return tuple(d // t for d, t in zip(dims, tiles))


def tile_coords(sharding, device, rank):
    """The coordinates of the tile ``device`` holds of a rank-``rank`` array
    under ``sharding`` (zeros unless tiled)."""
    if sharding is None or not sharding.is_tiled:
        return (0,) * rank
    return sharding.tile_index(device)[:rank]


def from_tile_coords(tiles, coords):
    """The sharding under which device ``d`` holds tile ``coords[d]`` of an
    array cut into ``tiles`` tiles per dimension: tiled, with
    ``last_tile_dim_replicate`` when r > 1 devices hold each tile
    (replicated when there is one tile). None unless every tile is held by
    the same number of devices."""
    tiles = tuple(int(t) for t in tiles)
    holders = {}
    for d, c in enumerate(coords):
        c = tuple(int(i) for i in c)
        if len(c) != len(tiles) or not all(0 <= i < t for i, t in zip(c, tiles)):
            return None
        holders.setdefault(c, []).append(d)
    count = int(np.prod(tiles, dtype=np.int64))
    r = len(coords) // count
    if len(holders) != count or any(len(ds) != r for ds in holders.values()):
        return None
    if count == 1:
        return REPLICATED
    devices = np.empty(tiles + (r,), np.int64)
    for c, ds in holders.items():
        devices[c] = ds
    return tiled(devices, True) if r > 1 else tiled(devices.reshape(tiles))


def project_sharding(sharding, source_dims):
    """The sharding of an array whose dimension j is cut exactly as
    ``sharding`` cuts dimension ``source_dims[j]`` (None: j is whole), each
    device keeping its tile coordinates along the dimensions kept; the cuts
    of dimensions left out become replication. Transposing, broadcasting,
    reducing and contracting dimensions all map tiles this way."""
    if sharding is None or not sharding.is_tiled or sharding.is_replicated:
        return REPLICATED
    rank = len(sharding.tiles)
    tiles = [1 if k is None else sharding.tiles[k] for k in source_dims]
    coords = [[0 if k is None else tile_coords(sharding, d, rank)[k] for k in source_dims]
              for d in sorted(int(x) for x in sharding.devices.reshape(-1))]
    return from_tile_coords(tiles, coords)


def tile_count(sharding):
    """How many distinct tiles ``sharding`` cuts an array into (1 unless
    tiled): the measure by which one sharding is more specific than
    another."""
    if sharding is None or not sharding.is_tiled:
        return 1
    return int(np.prod(sharding.tiles, dtype=np.int64))


def _ints(text):
    return [int(v) for v in text.replace(" ", "").split(",") if v]


def _split_top(text):
    """Top-level comma-separated items of ``text`` (braces balanced)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        items.append(tail)
    return items


def parse_sharding(value):
    """An HloSharding from the attribute's value (text or RawAttr)."""
    text = getattr(value, "text", value)
    if isinstance(text, HloSharding):
        return text
    # The printer's /*index=N*/ markers in long tuples are comments.
    text = re.sub(r"/\*.*?\*/", "", str(text)).strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise InvalidArgumentError(f"sharding {text!r} is not of the form {{...}}")
    inner = text[1:-1].strip()
    if inner.startswith("{"):
        return HloSharding("tuple", elements=tuple(parse_sharding(p) for p in _split_top(inner)))
    if inner in ("replicated", "manual"):
        return HloSharding(inner)
    m = re.match(r"^maximal device=(\d+)$", inner)
    if m:
        return HloSharding("maximal", device=int(m.group(1)))
    m = _IOTA.match(inner)
    if m:
        shape, reshape = _ints(m.group(1)), _ints(m.group(2))
        ids = np.arange(int(np.prod(reshape, dtype=np.int64))).reshape(reshape)
        if m.group(3) is not None:
            ids = ids.transpose(_ints(m.group(3)))
        devices, rest = ids.reshape(shape), m.group(4)
    else:
        m = _LIST.match(inner)
        if not m:
            raise InvalidArgumentError(f"sharding {text!r}: expected replicated, maximal device=N, "
                                       "devices=[...]<=[...] or devices=[...]ids")
        shape, devices, rest = _ints(m.group(1)), np.asarray(_ints(m.group(2))), m.group(3)
        if devices.size != int(np.prod(shape, dtype=np.int64)):
            raise InvalidArgumentError(f"sharding {text!r}: {devices.size} device ids for a "
                                       f"{shape} device array")
        devices = devices.reshape(shape)
    rest = rest.strip()
    replicate_last = False
    if rest == "last_tile_dim_replicate":
        replicate_last = True
    elif rest:
        raise InvalidArgumentError(f"sharding {text!r}: {rest!r} is not supported here "
                                   "(last_tile_dim_replicate is)")
    return tiled(devices, replicate_last)


def sharding_of(instr):
    """The instruction's sharding, or None."""
    value = instr.attrs.get("sharding")
    return None if value is None else parse_sharding(value)
