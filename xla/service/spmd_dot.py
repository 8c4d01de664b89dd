"""SPMD partitioning of dot and convolution, both seen as contractions.

Each operand dimension of a contraction is either *carried* to a result
dimension (a dot's batch dimensions, of both operands, to the same result
dimension; its free dimensions to their own; a convolution's input batch
to the output batch and its kernel output feature to the output feature),
*summed* (a dot's contracting pairs; a convolution's input feature with the
kernel input feature, when feature_group_count is 1), or needed *whole* (a
convolution's spatial dimensions, and with feature groups its features).

Given the operands' shardings, a device's tile coordinates along a
dimension the two operands share (batch, contracting) must agree where both
are cut; where only one operand is cut along it, the other operand's tile
is cut to match by a local dynamic-slice (no communication). The local op
on the tiles then computes the device's tile of the result, or, when summed
dimensions are cut, a partial sum of it; an all-reduce over the devices
that hold the same result tile, one per summed tile, adds the partial sums.
The result is tiled along the carried dimensions (replicated over the
devices an all-reduce joined, and over operands' replication). Examples:
batch-parallel (both cut along a batch dimension), data-parallel (lhs cut
along a free dimension, rhs replicated), rhs cut along its free dimension
with the lhs replicated, both free dimensions cut over the two axes of a
2-D mesh (result tiled 2-D), tensor-parallel (contracting dimension cut,
then an all-reduce).

When the cuts are inconsistent (the two operands cut along their free
dimensions by the same devices, whose result tiles would lie on a
diagonal; a shared dimension cut differently), the rhs is gathered and the
rule retried, then the lhs; failing both, the handler returns None and the
partitioner gathers both operands. Cut whole dimensions, and a
batch_group_count other than 1, make it return None at once.
"""
import numpy as np

from xla.hlo.sharding import REPLICATED, from_tile_coords, tile_coords, tiled
from xla.service.spmd_windowed_dot import windowed_dot


def _cut(s):
    return s is not None and s.is_tiled and not s.is_replicated


def _plan(n, shardings, roles, out_rank):
    """(result sharding, operand shardings wanted, all-reduce groups or
    None), or None when ``shardings`` are not a consistent plan."""
    nsum = max((r[1] + 1 for role in roles for r in role if r and r[0] == "sum"), default=0)
    out_tiles, sum_tiles = [1] * out_rank, [1] * nsum
    for s, role in zip(shardings, roles):
        if not _cut(s):
            continue
        for k, t in enumerate(s.tiles):
            if t == 1:
                continue
            if role[k] is None:
                return None
            kind, i = role[k]
            table = out_tiles if kind == "out" else sum_tiles
            if table[i] not in (1, t):
                return None
            table[i] = t
    if all(t == 1 for t in out_tiles + sum_tiles):
        return None
    coords = []
    for d in range(n):
        c = [None] * (out_rank + nsum)
        for s, role in zip(shardings, roles):
            if not _cut(s):
                continue
            tc = tile_coords(s, d, len(role))
            for k, t in enumerate(s.tiles):
                if t == 1:
                    continue
                kind, i = role[k]
                pos = i if kind == "out" else out_rank + i
                if c[pos] is not None and c[pos] != tc[k]:
                    return None
                c[pos] = tc[k]
        coords.append([0 if x is None else x for x in c])
    full = from_tile_coords(out_tiles + sum_tiles, coords)
    if full is None:
        return None
    devices = full.devices.reshape(out_tiles + sum_tiles + [-1])
    replicas = devices.shape[-1]
    summed = int(np.prod(sum_tiles, dtype=np.int64))
    groups = None
    if summed > 1:
        groups = np.moveaxis(devices, -1, out_rank).reshape(-1, summed).tolist()
    if all(t == 1 for t in out_tiles):
        out = REPLICATED
    elif summed * replicas > 1:
        out = tiled(devices.reshape(out_tiles + [summed * replicas]), True)
    else:
        out = tiled(devices.reshape(out_tiles))
    wanted = []
    for role in roles:
        tiles = [1 if r is None else (out_tiles if r[0] == "out" else sum_tiles)[r[1]] for r in role]
        pos = [None if r is None else r[1] if r[0] == "out" else out_rank + r[1] for r in role]
        wanted.append(from_tile_coords(tiles, [[0 if q is None else c[q] for q in pos]
                                               for c in coords]))
    return out, wanted, groups


def contraction(p, h, operands, have, attrs, roles):
    """(value, sharding) of the partitioned contraction ``h`` whose operand
    dimensions play ``roles`` (per operand, per dimension: ("out", result
    dimension), ("sum", index) or None for whole), or None."""
    for gathered, kept in ((None, (have[0], have[1])), (1, (have[0], REPLICATED)),
                           (0, (REPLICATED, have[1]))):
        plan = _plan(p.n, kept, roles, h.shape.rank)
        if plan is not None:
            break
    else:
        return None
    threshold = p.windowed_einsum_threshold_bytes
    if gathered is not None and threshold is not None and _cut(have[gathered]) and \
            h.operands[gathered].shape.byte_size() >= threshold:
        result = windowed_dot(p, h, operands, have, attrs, roles, gathered, plan)
        if result is not None:
            return result
    out, wanted, groups = plan
    values = [p.reshard(v, s, w, o.shape.dimensions)
              for v, s, w, o in zip(operands, have, wanted, h.operands)]
    value = p.add(h.opcode, p.tile_shape(h.shape, out), values, attrs=attrs)
    if groups:
        value = p.all_reduce(value, groups, p.add_reducer(h.shape.element_type))
    return value, out


def result_sharding(n, h, shardings):
    """The sharding the partitioner gives the result of the contraction
    ``h`` (a dot or convolution) when its operands are cut by
    ``shardings`` (after any operand it gathers), or None when it computes
    ``h`` whole."""
    roles = contraction_roles(h)
    if roles is None:
        return None
    for kept in ((shardings[0], shardings[1]), (shardings[0], REPLICATED),
                 (REPLICATED, shardings[1])):
        plan = _plan(n, kept, roles, h.shape.rank)
        if plan is not None:
            return plan[0]
    return None


def operand_sharding(h, k, result, other):
    """The sharding of operand ``k`` of the contraction ``h`` that yields
    tiles of a result cut by ``result``: its carried dimensions cut as the
    result's, its summed dimensions as the ``other`` operand's (when that
    is known and consistent), whole dimensions whole. None when ``h`` is
    not a contraction the partitioner splits."""
    roles = contraction_roles(h)
    if roles is None:
        return None
    mine, theirs = roles[k], roles[1 - k]
    sources = [None if r is None else ("result", r[1]) if r[0] == "out" else
               ("other", theirs.index(r)) for r in mine]
    n = max(_size(result), _size(other))
    if n == 1:
        return REPLICATED
    for use_other in (True, False):
        tiles, coords = [], [[] for _ in range(n)]
        for src in sources:
            s = None if src is None or (src[0] == "other" and not use_other) else \
                result if src[0] == "result" else other
            if not _cut(s):
                tiles.append(1)
                for c in coords:
                    c.append(0)
                continue
            tiles.append(s.tiles[src[1]])
            for d, c in enumerate(coords):
                c.append(tile_coords(s, d, len(s.tiles))[src[1]])
        out = from_tile_coords(tiles, coords)
        if out is not None:
            return out
    return None


def _size(s):
    return int(s.devices.size) if s is not None and s.is_tiled else 1


def contraction_roles(h):
    """Per operand of the dot or convolution ``h``, per dimension: ("out",
    result dimension), ("sum", index) or None (needed whole); None when the
    partitioner does not split ``h`` (see the module docstring)."""
    if h.opcode == "dot":
        return _dot_roles(h)
    if h.opcode == "convolution":
        return _convolution_roles(h)
    return None


def _dot_roles(h):
    if len(h.operands) != 2:
        return None
    lb, rb = tuple(h.attr("lhs_batch_dims", ())), tuple(h.attr("rhs_batch_dims", ()))
    lc, rc = tuple(h.attr("lhs_contracting_dims", ())), tuple(h.attr("rhs_contracting_dims", ()))
    roles, first_free = [], len(lb)
    for x, batch, contracting in ((h.operands[0], lb, lc), (h.operands[1], rb, rc)):
        role = [None] * x.shape.rank
        for i, d in enumerate(batch):
            role[d] = ("out", i)
        for j, d in enumerate(contracting):
            role[d] = ("sum", j)
        for d in range(x.shape.rank):
            if role[d] is None:
                role[d] = ("out", first_free)
                first_free += 1
        roles.append(role)
    return roles


def _convolution_roles(h):
    if h.attr("batch_group_count", 1) != 1 or len(h.operands) != 2:
        return None
    dn = h.attr("dim_labels")
    features = h.attr("feature_group_count", 1) == 1
    lhs, rhs = [None] * h.operands[0].shape.rank, [None] * h.operands[1].shape.rank
    lhs[dn.input_batch_dimension] = ("out", dn.output_batch_dimension)
    if features:
        lhs[dn.input_feature_dimension] = ("sum", 0)
        rhs[dn.kernel_input_feature_dimension] = ("sum", 0)
        rhs[dn.kernel_output_feature_dimension] = ("out", dn.output_feature_dimension)
    return [lhs, rhs]


def _partition(p, h, operands, have, attrs):
    roles = contraction_roles(h)
    return None if roles is None else contraction(p, h, operands, have, attrs, roles)


HANDLERS = {"dot": _partition, "convolution": _partition}
