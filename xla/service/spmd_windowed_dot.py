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
kept.

The ring is a while loop, as XLA builds it: its state is (step, the other
operand's tile, the travelling tile, the result tile); its body multiplies
the two tiles, writes the product at offset ``((position + step) mod n) *
width`` along the result dimension (position: the device's tile of the
travelling operand, a table read by ``partition-id``), passes the
travelling tile on by one collective-permute and counts the step. It runs
``n - 1`` times (``known_trip_count``); the last step's dot and update are
peeled after it, so that no tile is sent that nobody uses. Each device
holds at most two tiles of the travelling operand at a time. (XLA's
bidirectional and reduce-scatter, contracting-cut, variants are not built
here.)
"""
import numpy as np

from xla.hlo.attributes import RawAttr
from xla.hlo.shape import Shape
from xla.hlo.sharding import local_dims, tile_coords
from xla.hlo.types import PrimitiveType


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
    et = h.shape.element_type
    zero = p.add("constant", Shape.scalar(et), literal=np.zeros((), dtype=et.dtype))
    value = p.add("broadcast", p.array_shape(et, result_local), [zero], attrs={"dimensions": ()})
    chunk = operands[g]
    s32 = Shape.scalar(PrimitiveType.S32)

    def step(p, i, other, chunk, value):
        """One ring step at (traced) step ``i``: the result tile with this
        step's product written in."""
        piece = p.add("dot", p.array_shape(et, piece_dims),
                      [other, chunk] if g == 1 else [chunk, other], attrs=attrs)
        # After ``i`` permutes, the device that started with tile k holds
        # tile k + i: its product's columns start there.
        slot = p.add("remainder", s32, [p.add("add", s32, [
            p.per_device([position[d] for d in range(n)]), i]), p.constant_s32(n)])
        offset = p.add("multiply", s32, [slot, p.constant_s32(width)])
        offsets = [offset if k == r else p.constant_s32(0) for k in range(len(result_local))]
        return p.add("dynamic-update-slice", value.shape, [value, piece] + offsets)

    state_shape = Shape.tuple([s32, other.shape, chunk.shape, value.shape])

    def body(p, state):
        i, o, c, v = (p.add("get-tuple-element", state_shape.tuple_shapes[k], [state],
                            attrs={"index": k}) for k in range(4))
        v = step(p, i, o, c, v)
        c = p.add("collective-permute", c.shape, [c],
                  attrs={"channel_id": next(p.channel), "source_target_pairs": RawAttr(pairs)})
        i = p.add("add", s32, [i, p.constant_s32(1)])
        return p.add("tuple", state_shape, [i, o, c, v])

    def condition(p, state):
        i = p.add("get-tuple-element", s32, [state], attrs={"index": 0})
        return p.add("compare", Shape.scalar(PrimitiveType.PRED), [i, p.constant_s32(n - 1)],
                     attrs={"direction": "LT"})

    init = p.add("tuple", state_shape, [p.constant_s32(0), other, chunk, value])
    loop = p.add("while", state_shape, [init], attrs={
        "body": p.subcomputation(f"windowed_dot.{h.name}.body", [state_shape], body),
        "condition": p.subcomputation(f"windowed_dot.{h.name}.condition", [state_shape],
                                      condition),
        "backend_config": RawAttr('{"known_trip_count":{"n":"%d"}}' % (n - 1))})
    o, c, v = (p.add("get-tuple-element", state_shape.tuple_shapes[k], [loop], attrs={"index": k})
               for k in (1, 2, 3))
    return step(p, p.constant_s32(n - 1), o, c, v), out
