"""SPMD partitioning of the ops that move data without computing on it:
transpose, broadcast, reshape, slice, pad, concatenate, dynamic-slice and
dynamic-update-slice. Each handler
takes the partitioner ``p`` (``xla/service/spmd_partitioner.py``), the
instruction, its operands' partitioned values and their shardings, and
returns ``(value, sharding)`` for a local op on the tiles, or None when
the op must be computed whole (the partitioner then gathers).

The rule they share: a dimension that is cut must pass through the op
unchanged (same size, same tile boundaries), so each device's local op on
its tile computes exactly its tile of the result; the dimensions that are
whole may change freely. A dynamic-slice or dynamic-update-slice that
takes a dimension whole starts it at 0 (XLA clamps the start), so its
cut survives with the start replaced by 0 (a loop writing step i of a
stack of batch-cut values, as ``xla.grad`` keeps residuals, stays cut).
"""
import numpy as np

from xla.hlo.attributes import SliceDim
from xla.hlo.sharding import REPLICATED, local_dims, project_sharding, tiled


def _cut(s):
    return s.is_tiled and not s.is_replicated


def transpose_sharding(s, dimensions):
    """The sharding of ``transpose(x), dimensions=...`` for ``x`` cut by ``s``."""
    axes = list(dimensions) + ([len(dimensions)] if s.replicate_last else [])
    return tiled(s.devices.transpose(axes), s.replicate_last)


def broadcast_sharding(s, rank, dimensions):
    """The sharding of a rank-``rank`` broadcast of ``x`` cut by ``s``
    (dimension i of x becomes dimension ``dimensions[i]``, in order), or
    None when the dimensions are out of order."""
    bdims = list(dimensions)
    if bdims != sorted(bdims):
        return None
    tiles = [1] * rank
    for i, d in enumerate(bdims):
        tiles[d] = s.tiles[i]
    shape = tiles + ([s.devices.shape[-1]] if s.replicate_last else [])
    return tiled(s.devices.reshape(shape), s.replicate_last)


def reshape_sharding(s, in_dims, out_dims):
    """The sharding of ``reshape(x)`` to ``out_dims`` for ``x`` of
    ``in_dims`` cut by ``s`` when every device reshapes its own tile into
    its tile of the result (``reshape_tiles``), else None. With the
    dimensions swapped it answers the other way: the operand's sharding
    that makes a reshape produce tiles cut by ``s``."""
    out_tiles = reshape_tiles(in_dims, s.tiles, out_dims)
    if out_tiles is None:
        return None
    return tiled(s.devices.reshape(out_tiles + ([s.devices.shape[-1]] if s.replicate_last else [])),
                 s.replicate_last)


def transpose(p, h, operands, have, attrs):
    s = have[0]
    if not _cut(s):
        return None
    out = transpose_sharding(s, h.attr("dimensions"))
    return p.add("transpose", p.tile_shape(h.shape, out), operands, attrs=attrs), out


def broadcast(p, h, operands, have, attrs):
    s = have[0]
    if not _cut(s):
        return None
    out = broadcast_sharding(s, h.shape.rank, h.attr("dimensions", ()))
    if out is None:
        return None
    return p.add("broadcast", p.tile_shape(h.shape, out), operands, attrs=attrs), out


def broadcast_to(p, h, operands, have, attrs, want):
    """The broadcast ``h`` computed directly as tiles cut by ``want`` (its
    written sharding): each device broadcasts the part of the operand its
    tile covers (the operand resharded to ``want``'s cuts of the broadcast
    dimensions, cut locally when it is whole), never the whole result."""
    bdims = list(h.attr("dimensions", ()))
    x = p.reshard(operands[0], have[0], project_sharding(want, bdims), h.operands[0].shape.dimensions)
    return p.add("broadcast", p.tile_shape(h.shape, want), [x], attrs=attrs), want


def _chunks(dims, tiles):
    """How many contiguous chunks the tiles cut the row-major flattening of
    ``dims`` into: leading dimensions cut to size-1 tiles, then at most one
    dimension cut partially, then whole dimensions; None when the tiles are
    not contiguous chunks of the flattening."""
    count, partial = 1, False
    for d, t in zip(dims, tiles):
        if partial and t != 1:
            return None
        count *= t
        if t != d:
            partial = True
    return count


def _spread(dims, count):
    """Tiles of ``dims`` cutting their row-major flattening into ``count``
    contiguous chunks (the inverse of ``_chunks``), or None."""
    tiles = []
    for d in dims:
        if count == 1 or d % count == 0:
            tiles.append(count)
            count = 1
        elif count % d == 0:
            tiles.append(d)
            count //= d
        else:
            return None
    return tiles if count == 1 else None


def reshape_tiles(in_dims, tiles, out_dims):
    """The output tiles of a reshape whose operand is cut into ``tiles``,
    such that each device reshapes its own tile into its tile of the result
    and the tiles keep their order (the device array is reshaped); None
    when the reshape moves data across tile boundaries.

    The dimensions of size 1 aside, the reshape splits into groups of
    consecutive input and output dimensions of equal product. A group whose
    input tiles cut its flattening into contiguous chunks hands the same
    chunks to its output dimensions: [8,6] cut 4 on dimension 0 becomes
    [8,2,3] cut (4,1,1), or [2,4,6] cut (2,2,1)."""
    ins = [(d, t) for d, t in zip(in_dims, tiles) if d != 1]
    outs = [k for k, d in enumerate(out_dims) if d != 1]
    out_tiles = [1] * len(out_dims)
    i = j = 0
    while i < len(ins) or j < len(outs):
        if i == len(ins) or j == len(outs):
            return None
        gi, gj = [ins[i]], [outs[j]]
        pi, pj = ins[i][0], out_dims[outs[j]]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                if i == len(ins):
                    return None
                gi.append(ins[i])
                pi *= ins[i][0]
                i += 1
            else:
                if j == len(outs):
                    return None
                gj.append(outs[j])
                pj *= out_dims[outs[j]]
                j += 1
        count = _chunks([d for d, _ in gi], [t for _, t in gi])
        spread = None if count is None else _spread([out_dims[k] for k in gj], count)
        if spread is None:
            return None
        for k, t in zip(gj, spread):
            out_tiles[k] = t
    return out_tiles


def reshape(p, h, operands, have, attrs):
    s = have[0]
    if not _cut(s):
        return None
    out = reshape_sharding(s, h.operands[0].shape.dimensions, h.shape.dimensions)
    if out is None:
        return None
    return p.add("reshape", p.tile_shape(h.shape, out), operands, attrs=attrs), out


def slice_(p, h, operands, have, attrs):
    s = have[0]
    if not _cut(s):
        return None
    dims = h.operands[0].shape.dimensions
    local = local_dims(dims, s)
    config = list(h.attr("slice"))
    for k, t in enumerate(s.tiles):
        if t > 1:
            if tuple(config[k]) != (0, dims[k], 1):
                return None
            config[k] = SliceDim(0, local[k], 1)
    attrs = dict(attrs, slice=tuple(config))
    return p.add("slice", p.tile_shape(h.shape, s), operands, attrs=attrs), s


def pad(p, h, operands, have, attrs):
    s = have[0]
    if not _cut(s):
        return None
    config = h.attr("padding")
    if any(t > 1 and tuple(config[k]) != (0, 0, 0) for k, t in enumerate(s.tiles)):
        return None
    value = p.reshard(operands[1], have[1], REPLICATED, ())
    return p.add("pad", p.tile_shape(h.shape, s), [operands[0], value], attrs=attrs), s


def concatenate(p, h, operands, have, attrs):
    axis = h.attr("dimensions")[0]
    s = next((s for s in have if _cut(s)), None)
    if s is None or s.tiles[axis] != 1:
        return None
    values = [p.reshard(v, t, s, o.shape.dimensions) for v, t, o in zip(operands, have, h.operands)]
    return p.add("concatenate", p.tile_shape(h.shape, s), values, attrs=attrs), s


def _zero_starts(p, h, first, cut):
    """``h``'s start-index operands (from ``first``) with those of the
    ``cut`` dimensions replaced by a zero of their type (whole there)."""
    out = []
    for k, o in enumerate(h.operands[first:]):
        out.append(p.add("constant", o.shape, literal=np.zeros((), o.shape.element_type.dtype))
                   if k in cut else None)
    return out


def dynamic_slice(p, h, operands, have, attrs):
    s = have[0]
    if not _cut(s) or any(not o.shape.is_array or o.shape.rank for o in h.operands[1:]):
        return None
    cut = {k for k, t in enumerate(s.tiles) if t > 1}
    if not cut <= set(unchanged_dimensions(h)):
        return None
    local = local_dims(h.operands[0].shape.dimensions, s)
    sizes = [local[k] if k in cut else n for k, n in enumerate(h.attr("dynamic_slice_sizes"))]
    starts = [z if z is not None else v
              for z, v in zip(_zero_starts(p, h, 1, cut), operands[1:])]
    return p.add("dynamic-slice", p.tile_shape(h.shape, s), [operands[0]] + starts,
                 attrs=dict(attrs, dynamic_slice_sizes=tuple(sizes))), s


def dynamic_update_slice(p, h, operands, have, attrs):
    if any(not o.shape.is_array or o.shape.rank for o in h.operands[2:]):
        return None
    whole = set(unchanged_dimensions(h))
    for s in have[:2]:
        cut = {k for k, t in enumerate(s.tiles) if t > 1} if _cut(s) else set()
        if cut and cut <= whole:
            break
    else:
        return None
    x, u = h.operands[0].shape, h.operands[1].shape
    base = p.reshard(operands[0], have[0], s, x.dimensions)
    update = p.reshard(operands[1], have[1], s, u.dimensions)
    starts = [z if z is not None else v
              for z, v in zip(_zero_starts(p, h, 2, cut), operands[2:])]
    return p.add("dynamic-update-slice", p.tile_shape(h.shape, s), [base, update] + starts,
                 attrs=attrs), s


def unchanged_dimensions(h):
    """The dimensions a slice, pad, concatenate, dynamic-slice or
    dynamic-update-slice ``h`` passes through whole and unmoved (a
    full-range unit-stride slice, no padding, not the concatenated
    dimension, a dynamic slice or update as long as the dimension): a cut
    along them survives the op."""
    x = h.operands[0].shape
    if h.opcode == "dynamic-slice":
        return [k for k, n in enumerate(h.attr("dynamic_slice_sizes")) if n == x.dimensions[k]]
    if h.opcode == "dynamic-update-slice":
        u = h.operands[1].shape
        return [k for k in range(x.rank) if u.dimensions[k] == x.dimensions[k]]
    if h.opcode == "slice":
        return [k for k, c in enumerate(h.attr("slice")) if tuple(c) == (0, x.dimensions[k], 1)]
    if h.opcode == "pad":
        return [k for k, c in enumerate(h.attr("padding")) if tuple(c) == (0, 0, 0)]
    axis = h.attr("dimensions")[0]
    return [k for k in range(x.rank) if k != axis]


HANDLERS = {"transpose": transpose, "broadcast": broadcast, "reshape": reshape,
            "slice": slice_, "pad": pad, "concatenate": concatenate,
            "dynamic-slice": dynamic_slice, "dynamic-update-slice": dynamic_update_slice}
