"""Which loop kernels to tile: those that read an operand transposed.

A kernel's loop nest walks its output in layout order, so stores are
contiguous. A transpose (or a layout-changing copy) in the kernel reads its
operand in another order: when the operand's minor-most dimension (in its
layout) lands on an output dimension other than the output's minor one,
consecutive output elements read elements a whole operand row apart.
``transposed_dimension`` traces the output index through the kernel's
elementwise ops, broadcasts, transposes, copies and bitcasts (reshapes
that move no byte) to the buffers it loads
and names that output dimension; ``loop_emitter.tiled_loop_nest`` then
walks the output in tiles over it and the minor dimension.
"""
from xla.backends.cpu import loop_emitter as le
from xla.hlo.opcodes import ELEMENTWISE

# Output elements along each side of a tile: 16 x 4-byte elements is a
# cache line along each side; 32 and more rows 4 KB apart overflow the
# L1 set they all map to (measured: f32[4096,1024] transpose 3.0 ms at 16,
# 4.8 at 32, 3.3 at 8).
TILE = 16


def transposed_dimension(assignment, root, fusion, out_shape):
    """The output dimension to tile with the minor one, or None."""
    order = le.major_to_minor(out_shape)
    if len(order) < 2:
        return None
    out_minor = order[-1]
    seen = set()
    # Depth first, operands in order, with an explicit stack (fusions of
    # long elementwise chains must not exhaust Python's recursion limit).
    stack = [(root, list(range(out_shape.rank)))]
    while stack:
        x, dims = stack.pop()
        # dims[i]: the output dimension that indexes dimension i of x, or None.
        key = (id(x), tuple(dims))
        if key in seen:
            continue
        seen.add(key)
        if x is not root and assignment.has_buffers(x):
            if x.shape.is_array and x.shape.rank >= 2:
                minor = le.major_to_minor(x.shape)[-1]
                target = dims[minor]
                # (Where no dimension of x follows the output's minor one, a
                # broadcast along it, consecutive output elements read one
                # element: nothing to tile.)
                if (target is not None and target != out_minor and out_minor in dims
                        and out_shape.dimensions[target] >= TILE
                        and out_shape.dimensions[out_minor] >= TILE):
                    return target
            continue
        op = x.opcode
        if op == "parameter" and fusion is not None:
            stack.append((fusion.operands[x.parameter_number], dims))
        elif op == "broadcast":
            mapping = x.attr("dimensions", ())
            stack.append((x.operands[0], [dims[m] for m in mapping]))
        elif op == "transpose":
            perm = x.attr("dimensions")
            inner = [None] * len(perm)
            for k, p in enumerate(perm):
                inner[p] = dims[k]
            stack.append((x.operands[0], inner))
        elif (op in ELEMENTWISE and op != "map") or op == "copy":
            for o in reversed(x.operands):
                if o.shape.is_array and x.shape.is_array and o.shape.rank == x.shape.rank:
                    stack.append((o, dims))
        elif op == "bitcast" and x.shape.is_array and x.operands[0].shape.is_array:
            inner = _bitcast_dims(x.shape, x.operands[0].shape, dims)
            if inner is not None:
                stack.append((x.operands[0], inner))
    return None


def _bitcast_dims(shape, source_shape, dims):
    """For ``bitcast(source)`` whose dimension i the output dimension
    ``dims[i]`` indexes: the same for the source's dimensions, or None.
    The two shapes hold the same bytes, so their physical dimensions
    (major to minor) fall into groups of equal element counts, each a
    merge or split of the other's (a reshape that moves no byte); a source
    dimension in a group follows the group's minor-most dimension of
    ``shape`` (consecutive source elements along it step along that one)."""
    if shape.layout is None or source_shape.layout is None:
        return None
    order, source_order = le.major_to_minor(shape), le.major_to_minor(source_shape)
    groups = le.reshape_groups([shape.dimensions[d] for d in order],
                               [source_shape.dimensions[d] for d in source_order])
    if groups is None:
        return None
    inner = [None] * source_shape.rank
    for group, source_group in groups:
        target = dims[order[group[-1]]] if group else None
        for position in source_group:
            inner[source_order[position]] = target
    return inner
