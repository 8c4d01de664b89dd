"""AlgebraicSimplifier: local rewrites that keep every result bit-identical.

Each rule looks at one instruction (and its operands) and replaces it by an
operand, or by a few new instructions inserted just before it (so a
scheduled module keeps a valid order). The rules, one row per opcode in
``_RULES``:

* ``add``: ``x + 0`` and ``0 + x`` -> ``x`` for integers and pred. For
  floating-point and complex types only when every zero is ``-0.0``:
  ``x + (-0.0)`` is exact, while ``x + (+0.0)`` turns ``-0.0`` into
  ``+0.0``. (XLA's simplifier applies ``A + 0 => A`` to floats as well; we
  choose exactness and document the difference.)
* ``subtract``: ``x - 0`` -> ``x`` for integers; for floats/complex only
  when every zero is ``+0.0`` (``x - (+0.0)`` is exact, ``x - (-0.0)`` is not).
* ``multiply``: ``x * 1`` and ``1 * x`` -> ``x`` for integers, pred and real
  floats (not complex: ``(a+bi)(1+0i)`` computes ``b*0``, which is NaN for
  an infinite ``b``). ``x * 0`` and ``0 * x`` -> broadcast 0 for integers
  and pred only (for floats ``inf * 0`` and ``NaN * 0`` are NaN, and
  ``-1 * 0`` is ``-0.0``).
* ``divide``: ``x / 1`` -> ``x`` for integers and real floats. For f16,
  bf16, f32 and f64, ``x / c`` with ``c`` a constant power of two whose
  reciprocal is exactly representable -> ``x * (1/c)`` (both round the same
  real number; other constants would round differently and are left alone).
* ``negate(negate(x))`` and ``not(not(x))`` -> ``x``.
* ``reshape(reshape(x))`` -> ``reshape(x)``; a reshape to the operand's own
  shape -> the operand.
* ``transpose(transpose(x))`` -> one transpose with the composed
  permutation; an identity transpose -> the operand.
* ``broadcast(broadcast(x))`` -> one broadcast with the composed dimension
  mapping; an identity broadcast (same dimensions, ``dimensions={0..n-1}``)
  -> the operand. A broadcast of a scalar constant is otherwise kept as is
  (as XLA keeps it: consumers fuse it).
* ``slice(slice(x))`` -> one slice (starts and strides composed); a slice
  that keeps every element -> the operand.
* ``concatenate``: zero-size operands are dropped; a concatenate of one
  operand -> the operand.
* ``copy`` of a tuple -> the tuple of its elements' copies.
* no-ops -> the operand: ``convert`` to the same type, ``copy`` (arrays)
  whose layout is the operand's, ``pad`` with all-zero low/high/interior,
  ``reverse`` of no dimensions or only size-1 ones, ``bitcast`` to the
  operand's own shape and layout, ``dynamic-slice`` of the whole operand,
  ``dynamic-update-slice`` whose update has the operand's dimensions (the
  start indices are then clamped to 0, whatever their value).
* ``dynamic-slice`` with constant start indices -> ``slice``, with the
  indices clamped to ``[0, dim - size]`` as dynamic-slice clamps them.
* ``reduce`` (one input): when some reduced dimension has size 0 ->
  broadcast of the init value; when all reduced dimensions have size 1 (or
  none is reduced) and the reducer is a single binary elementwise op of its
  two parameters -> that op applied elementwise to (broadcast init,
  reshape(x)), in the reducer's operand order: reduce over one element is
  ``reducer(init, x)``. Other reducers are left alone.
* ``dot`` whose contracting dimensions have size 1 in all (including no
  contracting dimension: outer products and pure batch products) ->
  ``multiply`` of the two operands, each reshaped to drop the contracting
  dimensions, transposed if needed, converted to the result type and
  broadcast to the result shape. Not for sparse dots or pred results.
* ``select`` with a constant predicate (a constant whose elements are all
  equal, or a broadcast of a scalar constant) -> the chosen operand;
  ``select(p, a, a)`` -> ``a``.
* ``compare(x, x)`` for integers and pred, and for floats with
  ``type=TOTALORDER`` -> broadcast ``true`` (EQ, LE, GE) or ``false`` (NE,
  LT, GT). Not for floats with the default (IEEE) comparison: ``NaN == NaN``
  is false.

Replacing an instruction by an operand needs equal shapes including layout
(no layout counts as row-major); when the layouts differ the rule does not
apply. Instructions with control predecessors or successors are not
rewritten. A replaced instruction is removed, and so are the operands it
leaves unused (transitively, never parameters or side-effecting ops); other
dead code is left to DCE. Rules run to a fixed point per computation
(bounded), over every computation of the module, fused ones included.

Not done (XLA does some of these): reassociation or any rewrite that could
change rounding, ``A + 0`` for floats with ``+0.0``, folding constants
(ConstantFolding's job), merging of reshapes into bitcasts, algebraic
rewrites of convolutions, gathers or scatters.
"""
import numpy as np

from xla.hlo.opcodes import OpcodeTable
from xla.hlo import opcodes
from xla.hlo.attributes import SliceDim
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Layout, Shape
from xla.hlo.types import PrimitiveType
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import control_successor_ids

_MAX_ROUNDS = 16
_EXACT_RECIPROCAL_TYPES = frozenset([PrimitiveType.F16, PrimitiveType.BF16, PrimitiveType.F32,
                                     PrimitiveType.F64])


# ----- shape and constant helpers ----------------------------------------------

def _effective_layout(shape):
    if shape.layout is None:
        return Layout.row_major(shape.rank)
    return shape.layout


def same_shape_and_layout(a, b):
    """Equal shapes, with no layout read as row-major (XLA's ShapeUtil::Equal)."""
    if not a.compatible(b):
        return False
    if a.is_tuple:
        return all(same_shape_and_layout(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes))
    if not a.is_array:
        return True
    return _effective_layout(a) == _effective_layout(b)


def _constant_value(instr):
    """The value of a constant, or of a broadcast of a scalar constant, else None."""
    if instr.opcode == "constant" and instr.literal is not None and instr.shape.is_array:
        value = np.asarray(instr.literal)
        if value.dtype != instr.shape.dtype:
            value = value.astype(instr.shape.dtype)
        if value.shape != instr.shape.dimensions:
            if value.size == instr.shape.num_elements():
                value = value.reshape(instr.shape.dimensions)
            elif value.size == 1:
                value = np.broadcast_to(value.reshape(()), instr.shape.dimensions)
            else:
                return None
        return value
    if instr.opcode == "broadcast" and instr.operands[0].shape.is_scalar:
        inner = _constant_value(instr.operands[0])
        if inner is not None:
            return np.broadcast_to(inner.reshape(()), instr.shape.dimensions)
    return None


def splat_value(instr):
    """The single value of a non-empty constant whose elements are all equal
    (bit for bit, so ``-0.0`` and ``+0.0`` differ), else None. A broadcast
    scalar is its scalar: nothing the size of the array is made (a
    broadcast of f32[2^26] would be 256 MiB, twice)."""
    if instr.opcode == "broadcast" and instr.operands[0].shape.is_scalar:
        if instr.shape.num_elements() == 0:
            return None
        inner = _constant_value(instr.operands[0])
        return None if inner is None else np.asarray(inner).reshape(-1)[0]
    value = _constant_value(instr)
    if value is None or value.size == 0:
        return None
    flat = np.ascontiguousarray(value).reshape(-1)
    rows = flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)
    return flat[0] if bool((rows == rows[0]).all()) else None


def _is_zero(value, kind, negative):
    """value == 0; for floats/complex also the sign of every zero part."""
    if kind in "su" or kind == "pred":
        return not bool(value)
    parts = [value.real, value.imag] if kind == "c" else [value]
    return all(float(p) == 0.0 and bool(np.signbit(float(p))) == negative for p in parts)


def _is_one(value, kind):
    if kind == "c":
        return False
    return bool(value == 1)


# ----- the rewriter --------------------------------------------------------------

class _Rewriter:
    """Creates instructions just before ``anchor`` in ``comp``."""

    def __init__(self, module, comp):
        self.module = module
        self.comp = comp
        self.anchor = None
        self.created = 0

    def add(self, opcode, shape, operands=(), attrs=None, literal=None):
        name = self.module.unique_name(opcode) if self.module is not None else None
        instr = HloInstruction(opcode, shape, operands, name=name, attrs=attrs, literal=literal)
        self.comp.insert_before(self.anchor, instr)
        self.created += 1
        return instr

    def shape(self, element_type, dims, like=None):
        """A new intermediate array shape: row-major when the anchor (or one of
        its operands) has a layout, else none."""
        shapes = [like] if like is not None else [self.anchor.shape] + [o.shape for o in self.anchor.operands]
        laid_out = any(s.is_array and s.layout is not None for s in shapes)
        layout = "default" if laid_out else None
        return Shape.array(element_type, dims, layout=layout)

    def constant(self, value, element_type):
        dtype = element_type.dtype
        return self.add("constant", self.shape(element_type, ()), literal=np.asarray(value, dtype))

    def broadcast_scalar(self, scalar, shape):
        """``scalar`` (an instruction) broadcast to ``shape``'s dimensions."""
        if shape.rank == 0:
            return scalar
        return self.add("broadcast", shape, [scalar], attrs={"dimensions": ()})

    def splat(self, value, shape):
        """A broadcast constant of ``shape`` (the replaced instruction's shape)."""
        scalar = self.constant(value, shape.element_type)
        return self.broadcast_scalar(scalar, shape)


def _kind(shape):
    return shape.element_type.kind


def _operand_if_same(instr, operand):
    return operand if same_shape_and_layout(instr.shape, operand.shape) else None


# ----- rules (one per opcode) ------------------------------------------------------

def _add(rw, instr):
    kind = _kind(instr.shape)
    for const, other in ((instr.operands[1], instr.operands[0]), (instr.operands[0], instr.operands[1])):
        value = splat_value(const)
        if value is not None and _is_zero(value, kind, negative=True if kind in "fc" else False):
            return _operand_if_same(instr, other)
    return None


def _subtract(rw, instr):
    kind = _kind(instr.shape)
    value = splat_value(instr.operands[1])
    if value is not None and _is_zero(value, kind, negative=False):
        return _operand_if_same(instr, instr.operands[0])
    return None


def _multiply(rw, instr):
    kind = _kind(instr.shape)
    for const, other in ((instr.operands[1], instr.operands[0]), (instr.operands[0], instr.operands[1])):
        value = splat_value(const)
        if value is None:
            continue
        if _is_one(value, kind):
            return _operand_if_same(instr, other)
        if kind in ("s", "u", "pred") and not bool(value):
            return rw.splat(0, instr.shape)
    return None


def _divide(rw, instr):
    x, divisor = instr.operands
    value = splat_value(divisor)
    if value is None:
        return None
    kind = _kind(instr.shape)
    if kind != "c" and _is_one(value, kind):
        return _operand_if_same(instr, x)
    et = instr.shape.element_type
    if et not in _EXACT_RECIPROCAL_TYPES:
        return None
    if not np.isfinite(float(value)) or float(value) == 0.0:
        return None
    mantissa, _ = np.frexp(float(value))
    if abs(mantissa) != 0.5:
        return None
    reciprocal = np.asarray(1.0 / float(value)).astype(et.dtype)
    if not np.isfinite(float(reciprocal)) or float(reciprocal) * float(value) != 1.0:
        return None
    factor = rw.splat(reciprocal, rw.shape(et, instr.shape.dimensions))
    return rw.add("multiply", instr.shape, [x, factor])


def _involution(rw, instr):
    inner = instr.operands[0]
    if inner.opcode == instr.opcode:
        return _operand_if_same(instr, inner.operands[0])
    return None


def _reshape(rw, instr):
    operand = instr.operands[0]
    if instr.shape.is_dynamic or operand.shape.is_dynamic:
        return None
    if operand.shape.dimensions == instr.shape.dimensions:
        return _operand_if_same(instr, operand)
    if operand.opcode == "reshape" and not operand.operands[0].shape.is_dynamic:
        return rw.add("reshape", instr.shape, [operand.operands[0]])
    return None


def _transpose(rw, instr):
    perm = tuple(instr.attr("dimensions", ()))
    operand = instr.operands[0]
    if perm == tuple(range(len(perm))):
        return _operand_if_same(instr, operand)
    if operand.opcode == "transpose":
        inner = tuple(operand.attr("dimensions", ()))
        composed = tuple(inner[p] for p in perm)
        return rw.add("transpose", instr.shape, [operand.operands[0]], attrs={"dimensions": composed})
    return None


def _broadcast(rw, instr):
    dims = tuple(instr.attr("dimensions", ()))
    operand = instr.operands[0]
    if dims == tuple(range(instr.shape.rank)) and operand.shape.dimensions == instr.shape.dimensions:
        return _operand_if_same(instr, operand)
    if operand.opcode == "broadcast":
        inner = tuple(operand.attr("dimensions", ()))
        composed = tuple(dims[d] for d in inner)
        return rw.add("broadcast", instr.shape, [operand.operands[0]], attrs={"dimensions": composed})
    return None


def _slice(rw, instr):
    operand = instr.operands[0]
    config = instr.attr("slice", ())
    if operand.shape.is_dynamic:
        return None
    if all(s.start == 0 for s in config) and instr.shape.dimensions == operand.shape.dimensions:
        return _operand_if_same(instr, operand)
    if operand.opcode == "slice" and not operand.operands[0].shape.is_dynamic:
        source = operand.operands[0]
        composed = []
        for outer, inner, size, n in zip(config, operand.attr("slice", ()), source.shape.dimensions,
                                         instr.shape.dimensions):
            stride = inner.stride * outer.stride
            start = min(inner.start + outer.start * inner.stride, size)
            limit = start + (n - 1) * stride + 1 if n > 0 else start
            composed.append(SliceDim(start, limit, stride if n > 1 else 1))
        return rw.add("slice", instr.shape, [source], attrs={"slice": tuple(composed)})
    return None


def _concatenate(rw, instr):
    (dim,) = instr.attr("dimensions", (0,))
    operands = instr.operands
    kept = [o for o in operands if o.shape.dimensions[dim] != 0]
    if len(kept) == 1:
        return _operand_if_same(instr, kept[0])
    if kept and len(kept) < len(operands):
        return rw.add("concatenate", instr.shape, kept, attrs=dict(instr.attrs))
    return None


def _convert(rw, instr):
    if instr.operands[0].shape.element_type is instr.shape.element_type:
        return _operand_if_same(instr, instr.operands[0])
    return None


def _copy(rw, instr):
    if instr.shape.is_array:
        return _operand_if_same(instr, instr.operands[0])
    if instr.shape.is_tuple:
        # A copy of a tuple is the tuple of its elements' copies (which the
        # rule above then drops where layouts agree): backends copy arrays.
        operand = instr.operands[0]
        copies = []
        for i, shape in enumerate(instr.shape.tuple_shapes):
            element = rw.add("get-tuple-element", operand.shape.tuple_shapes[i], [operand],
                             attrs={"index": i})
            copies.append(rw.add("copy", shape, [element]))
        return rw.add("tuple", instr.shape, copies)
    return None


def _get_dimension_size(rw, instr):
    # The size of a static dimension is a constant (XLA folds it too).
    shape = instr.operands[0].shape
    (d,) = instr.attr("dimensions")
    if not shape.is_array or shape.dynamic[d]:
        return None
    return rw.constant(shape.dimensions[d], instr.shape.element_type)


def _pad(rw, instr):
    if all(p.low == 0 and p.high == 0 and p.interior == 0 for p in instr.attr("padding", ())):
        return _operand_if_same(instr, instr.operands[0])
    return None


def _reverse(rw, instr):
    dims = instr.attr("dimensions", ())
    if all(instr.shape.dimensions[d] <= 1 for d in dims):
        return _operand_if_same(instr, instr.operands[0])
    return None


def _bitcast(rw, instr):
    operand = instr.operands[0]
    if operand.shape.is_array and same_shape_and_layout(instr.shape, operand.shape):
        return operand
    return None


def _constant_indices(index_operands, rank):
    """Start indices as ints when every index operand is a constant, else None."""
    values = []
    for op in index_operands:
        value = _constant_value(op)
        if value is None:
            return None
        values.extend(int(v) for v in np.asarray(value).reshape(-1))
    return values if len(values) == rank else None


def _dynamic_slice(rw, instr):
    operand = instr.operands[0]
    if operand.shape.is_dynamic or instr.shape.is_dynamic:
        return None
    sizes = tuple(instr.attr("dynamic_slice_sizes") or instr.shape.dimensions)
    if sizes == operand.shape.dimensions:
        return _operand_if_same(instr, operand)
    starts = _constant_indices(instr.operands[1:], operand.shape.rank)
    if starts is None:
        return None
    config = []
    for start, size, dim in zip(starts, sizes, operand.shape.dimensions):
        start = min(max(start, 0), max(dim - size, 0))
        config.append(SliceDim(start, start + size, 1))
    return rw.add("slice", instr.shape, [operand], attrs={"slice": tuple(config)})


def _dynamic_update_slice(rw, instr):
    operand, update = instr.operands[:2]
    if operand.shape.is_dynamic or update.shape.is_dynamic:
        return None
    if update.shape.dimensions == operand.shape.dimensions:
        return _operand_if_same(instr, update)
    return None


def _single_binary_reducer(comp):
    """(opcode, attrs, init_first) when ``comp`` is ``op(p0, p1)`` or ``op(p1, p0)``."""
    if comp is None or comp.num_parameters != 2:
        return None
    root = comp.root_instruction
    if root.opcode not in opcodes.BINARY_ELEMENTWISE or len(root.operands) != 2:
        return None
    if root.control_predecessors:
        return None
    nums = [o.parameter_number if o.opcode == "parameter" else None for o in root.operands]
    if sorted(n for n in nums if n is not None) != [0, 1] or None in nums:
        return None
    attrs = {k: v for k, v in root.attrs.items() if k in ("direction", "type")}
    return root.opcode, attrs, nums[0] == 0


def _reduce(rw, instr):
    if len(instr.operands) != 2 or not instr.shape.is_array:
        return None
    x, init = instr.operands
    if x.shape.is_dynamic:
        return None
    dims = tuple(instr.attr("dimensions", ()))
    sizes = [x.shape.dimensions[d] for d in dims]
    out_dims = instr.shape.dimensions
    if any(s == 0 for s in sizes):
        return rw.broadcast_scalar(init, instr.shape) if instr.shape.rank else _operand_if_same(instr, init)
    if any(s != 1 for s in sizes):
        return None
    reducer = _single_binary_reducer(instr.attr("to_apply"))
    if reducer is None or x.shape.element_type is not init.shape.element_type:
        return None
    opcode, attrs, init_first = reducer
    values = x if not dims else rw.add("reshape", rw.shape(x.shape.element_type, out_dims), [x])
    inits = init if not out_dims else rw.add(
        "broadcast", rw.shape(init.shape.element_type, out_dims), [init], attrs={"dimensions": ()})
    operands = [inits, values] if init_first else [values, inits]
    return rw.add(opcode, instr.shape, operands, attrs=attrs)


def _dot_of_batch_broadcast(rw, instr, lhs, rhs, lb, rb, lc, rc):
    """dot(x, broadcast(w)) where the broadcast only adds the rhs's batch
    dimensions (NumPy's ``x @ w`` for a batched x, as tracing writes it):
    dot(x, w) with x's batch dimensions as free ones, one matrix product
    instead of a batch of them, without materializing the broadcast. Only
    when the result keeps its dimension order: x's batch dimensions are its
    leading ones, in order."""
    if rhs.opcode != "broadcast" or not lb or tuple(lb) != tuple(range(len(lb))):
        return None
    w = rhs.operands[0]
    non_batch = [d for d in range(rhs.shape.rank) if d not in rb]
    if tuple(rhs.attr("dimensions", ())) != tuple(non_batch) or \
            tuple(w.shape.dimensions) != tuple(rhs.shape.dimensions[d] for d in non_batch):
        return None
    attrs = {k: v for k, v in instr.attrs.items()
             if k not in ("lhs_batch_dims", "rhs_batch_dims", "rhs_contracting_dims")}
    attrs["rhs_contracting_dims"] = tuple(non_batch.index(d) for d in rc)
    return rw.add("dot", instr.shape, [lhs, w], attrs=attrs)


def _dot(rw, instr):
    if len(instr.operands) != 2 or "sparsity" in instr.attrs or instr.shape.is_dynamic:
        return None
    result_type = instr.shape.element_type
    if result_type.is_pred:
        return None
    lhs, rhs = instr.operands
    lb = tuple(instr.attr("lhs_batch_dims", ()))
    rb = tuple(instr.attr("rhs_batch_dims", ()))
    lc = tuple(instr.attr("lhs_contracting_dims", ()))
    rc = tuple(instr.attr("rhs_contracting_dims", ()))
    unbroadcast = _dot_of_batch_broadcast(rw, instr, lhs, rhs, lb, rb, lc, rc)
    if unbroadcast is not None:
        return unbroadcast
    if any(lhs.shape.dimensions[d] != 1 for d in lc):
        return None
    nb = len(lb)
    lfree = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.shape.rank) if d not in rb and d not in rc]

    def prepare(operand, batch, contracting, free, offset):
        keep = [d for d in range(operand.shape.rank) if d not in contracting]
        mapping = [batch.index(d) if d in batch else offset + free.index(d) for d in keep]
        et = operand.shape.element_type
        value = operand
        if contracting:
            value = rw.add("reshape", rw.shape(et, [operand.shape.dimensions[d] for d in keep]), [value])
        if mapping != sorted(mapping):
            perm = tuple(sorted(range(len(mapping)), key=mapping.__getitem__))
            value = rw.add("transpose", rw.shape(et, [value.shape.dimensions[p] for p in perm]), [value],
                           attrs={"dimensions": perm})
            mapping = sorted(mapping)
        if et is not result_type:
            value = rw.add("convert", rw.shape(result_type, value.shape.dimensions), [value])
        if tuple(mapping) != tuple(range(instr.shape.rank)):
            value = rw.add("broadcast", rw.shape(result_type, instr.shape.dimensions), [value],
                           attrs={"dimensions": tuple(mapping)})
        return value

    a = prepare(lhs, lb, lc, lfree, nb)
    b = prepare(rhs, rb, rc, rfree, nb + len(lfree))
    return rw.add("multiply", instr.shape, [a, b])


def _select(rw, instr):
    pred, on_true, on_false = instr.operands
    if on_true is on_false:
        return _operand_if_same(instr, on_true)
    value = splat_value(pred)
    if value is not None:
        return _operand_if_same(instr, on_true if bool(value) else on_false)
    return None


_ALWAYS_TRUE = frozenset(["EQ", "LE", "GE"])


def _compare(rw, instr):
    lhs, rhs = instr.operands
    if lhs is not rhs:
        return None
    kind = _kind(lhs.shape)
    if not (kind in ("s", "u", "pred") or (kind == "f" and instr.attr("type") == "TOTALORDER")):
        return None
    direction = instr.attr("direction")
    if direction is None:
        return None
    return rw.splat(direction in _ALWAYS_TRUE, instr.shape)


_RULES = OpcodeTable("algebraic simplifier", {
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _divide,
    "negate": _involution,
    "not": _involution,
    "reshape": _reshape,
    "transpose": _transpose,
    "broadcast": _broadcast,
    "slice": _slice,
    "concatenate": _concatenate,
    "convert": _convert,
    "copy": _copy,
    "get-dimension-size": _get_dimension_size,
    "pad": _pad,
    "reverse": _reverse,
    "bitcast": _bitcast,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "reduce": _reduce,
    "dot": _dot,
    "select": _select,
    "compare": _compare,
})


def remove_unused(comp, instr, control_predecessors=None):
    """Removes ``instr`` if nothing uses it, then its operands that become unused.

    Never removes the root, parameters, side-effecting instructions or the
    control predecessor of an instruction. ``control_predecessors``: ids of
    the computation's control predecessors, when the caller has them.
    Costs O(live users) per instruction looked at (the IR tracks users).
    """
    if control_predecessors is None:
        control_predecessors = (
            {id(p) for i in comp.instructions for p in i.control_predecessors}
            if comp._has_control_dependencies() else ())
    stack = [instr]
    while stack:
        node = stack.pop()
        if (node.parent is not comp or node is comp.root_instruction or node.opcode == "parameter"
                or node.opcode in opcodes.SIDE_EFFECTING or id(node) in control_predecessors
                or any(u.parent is comp for u in node._users)):
            continue
        operands = list(node.operands)
        comp.remove_instruction(node)
        stack.extend(operands)


class AlgebraicSimplifier(HloPass):
    name = "algsimp"

    def run(self, module):
        changed = False
        for comp in list(module.computations):
            for _ in range(_MAX_ROUNDS):
                if not self._sweep(module, comp):
                    break
                changed = True
        return changed

    @staticmethod
    def _sweep(module, comp):
        rw = _Rewriter(module, comp)
        changed = False
        ordered = control_successor_ids(comp)
        for instr in list(comp.instructions):
            rule = _RULES.get(instr.opcode)
            if rule is None or instr.parent is not comp:
                continue
            if ordered and id(instr) in ordered or instr.attrs.get("control-predecessors"):
                continue
            rw.anchor = instr
            before = rw.created
            replacement = rule(rw, instr)
            if replacement is None or replacement is instr:
                # A rule that declines creates nothing; be safe anyway.
                assert rw.created == before, instr.opcode
                continue
            comp.replace_all_uses(instr, replacement)
            remove_unused(comp, instr, ordered)
            changed = True
        return changed
