"""Windowed dot (XLA's windowed einsum): a dot whose operands are cut
along their free dimensions by the same devices cannot run on the tiles
(each device would need a diagonal of the result), and ``spmd_dot`` then
gathers one operand whole on every device. When that operand is large
(at least ``windowed_einsum_threshold_bytes``, an option of ``partition``;
off by default, as XLA's threshold is), this module computes the same
result without ever holding it whole: the operand's tiles travel round a
ring of collective-permutes, and at step i each device multiplies the tile
it holds by its own operand's tile and writes the product into its slot of
the result tile (a dynamic-update-slice at an offset read by
``partition-id``).

Which operand travels is the one ``spmd_dot`` would gather; the loop is
used when that operand is cut along exactly one dimension, a free or
batch dimension of the dot, into one tile per device (no replication), the
plan with it gathered leaves the corresponding result dimension whole, and
the travelling operand needs no cut of its own (the other operand is not
cut along the batch or contracting dimensions they share, so there are no
partial sums either). Otherwise, or below the threshold, the gather is
kept. The ring is unrolled: ``n`` dots and ``n - 1`` collective-permutes
of one tile each instead of one all-gather of the whole operand; each
device holds at most two tiles of that operand at a time. (XLA's loop is a
while loop whose body is one step; its bidirectional and reduce-scatter
variants are not built here.)
"""
import numpy as np

from xla.hlo.attributes import RawAttr
from xla.hlo.shape import Shape
from xla.hlo.sharding import local_dims, tile_coords


def windowed_dot(p, h, operands, have, attrs, roles, g, plan):
    """(value, sharding) of the dot ``h`` computed with operand ``g``'s tiles
    travelling round a ring, given ``plan`` (``spmd_dot._plan``'s, with
    operand ``g`` treated as replicated); None when the loop does not apply."""
    s = have[g]
    if h.opcode != "dot" or not s.is_tiled or s.replicate_last:
        return None
    cut = [k for k, t in enumerate(s.tiles) if t > 1]
    if len(cut) != 1 or s.tiles[cut[0]] != p.n:
        return None
    j = cut[0]
    role = roles[g][j]
    if role is None or role[0] != "out":
        return None
    r = role[1]
    out, wanted, _ = plan
    if out.is_tiled and out.tiles[r] != 1 or wanted[g].is_tiled and not wanted[g].is_replicated:
        return None
    o = 1 - g
    other = p.reshard(operands[o], have[o], wanted[o], h.operands[o].shape.dimensions)
    result_local = list(local_dims(h.shape.dimensions, out))
    width = h.shape.dimensions[r] // p.n
    piece_dims = list(result_local)
    piece_dims[r] = width
    n = p.n
    ring = [int(d) for d in s.devices.reshape(-1)]       # ring[k] holds tile k
    position = {d: tile_coords(s, d, len(s.tiles))[j] for d in range(n)}
    pairs = "{" + ",".join(f"{{{ring[k]},{ring[(k - 1) % n]}}}" for k in range(n)) + "}"
    zero = p.add("constant", Shape.scalar(h.shape.element_type),
                 literal=np.zeros((), dtype=h.shape.element_type.dtype))
    value = p.add("broadcast", p.array_shape(h.shape.element_type, result_local), [zero],
                  attrs={"dimensions": ()})
    chunk = operands[g]
    for step in range(n):
        pieces = [other, chunk] if g == 1 else [chunk, other]
        piece = p.add("dot", p.array_shape(h.shape.element_type, piece_dims), pieces, attrs=attrs)
        # After ``step`` permutes, the device that started with tile k holds
        # tile k + step: its product's columns start there.
        offsets = [p.per_device([((position[d] + step) % n) * width for d in range(n)])
                   if k == r else p.constant_s32(0) for k in range(len(result_local))]
        value = p.add("dynamic-update-slice", value.shape, [value, piece] + offsets)
        if step + 1 < n:
            chunk = p.add("collective-permute", chunk.shape, [chunk],
                          attrs={"channel_id": next(p.channel),
                                 "source_target_pairs": RawAttr(pairs)})
    return value, out
