"""Interpreter handlers: sort, topk.

sort: the comparator (to_apply, parameters lhs0, rhs0, lhs1, rhs1, ...)
says when lhs sorts strictly before rhs. Two strategies give the same
result for a comparator that is a strict weak order:

* recognized comparators -- ``compare(p[2m], p[2m+1])`` with LT/GT, and
  JAX's lexicographic form ``or(lt0, and(eq0, <rest>))`` -- become keys for
  a stable ``np.lexsort`` (TOTALORDER floats: -NaN < -inf < ... < -0 < +0
  < ... < +inf < +NaN; FLOAT: -0 == +0, NaNs after everything);
* any other comparator runs a bitonic sorting network whose
  compare-exchange steps evaluate the comparator vectorized over the whole
  array, made stable by breaking ties on the original position.

Both are stable (equal elements keep their order), which is also a valid
result for is_stable=false.
"""
import numpy as np

from xla.hlo.evaluator.elementwise import is_float_dtype
from xla.hlo.evaluator.ops_common import call_elementwise, total_order_key
from xla.hlo.evaluator.registry import register


# ----------------------------------------------------------------------------
# comparator recognition
# ----------------------------------------------------------------------------

def _param(instr):
    return instr.parameter_number if instr.opcode == "parameter" else None


def _simple_compare(instr):
    """(operand m, direction, type, swapped) for compare(p[2m], p[2m+1]), else None."""
    if instr.opcode != "compare" or len(instr.operands) != 2:
        return None
    a, b = (_param(o) for o in instr.operands)
    if a is None or b is None or a // 2 != b // 2 or a == b:
        return None
    direction = instr.attr("direction")
    return a // 2, direction, instr.attr("type"), a % 2 == 1


def _comparator_keys(comp):
    """[(operand m, descending, compare type), ...] most significant first, or None."""
    root = comp.root_instruction
    keys = []
    node = root
    while True:
        c = _simple_compare(node)
        if c is not None:
            m, direction, ctype, swapped = c
            if direction not in ("LT", "GT"):
                return None
            descending = (direction == "GT") != swapped
            keys.append((m, descending, ctype))
            return keys
        # or(lt_m, and(eq_m, rest)) in either operand order.
        if node.opcode != "or" or len(node.operands) != 2:
            return None
        found = False
        for first, second in (node.operands, node.operands[::-1]):
            c = _simple_compare(first)
            if c is None or c[1] not in ("LT", "GT") or second.opcode != "and":
                continue
            for eq, rest in (second.operands, second.operands[::-1]):
                e = _simple_compare(eq)
                if e is not None and e[1] == "EQ" and e[0] == c[0]:
                    m, direction, ctype, swapped = c
                    keys.append((m, (direction == "GT") != swapped, ctype))
                    node = rest
                    found = True
                    break
            if found:
                break
        if not found:
            return None


def _sort_key(x, ctype, descending):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return None
    if is_float_dtype(x.dtype) and ctype != "TOTALORDER":
        # FLOAT comparison: -0 == +0; NaN (unordered) placed last ascending.
        x = np.where(x == 0, np.zeros((), x.dtype), x)
        key = total_order_key(x)
        key = np.where(np.isnan(x.astype(np.float32) if x.dtype.kind == "V" else x),
                       np.iinfo(key.dtype).max if not descending else np.iinfo(key.dtype).min, key)
    else:
        key = total_order_key(x)
    if descending:
        key = ~key if key.dtype.kind in "iu" else -key
    return key


@register("sort")
def sort(instr, operands, ctx):
    dim = int(instr.attr("dimensions", (0,))[0])
    comp = instr.attr("to_apply")
    shapes = list(instr.shape.tuple_shapes) if instr.shape.is_tuple else [instr.shape]
    arrays = [np.asarray(o, s.dtype) for o, s in zip(operands, shapes)]
    tuple_result = instr.shape.is_tuple
    if arrays[0].size == 0 or arrays[0].shape[dim] <= 1:
        return tuple(arrays) if tuple_result else arrays[0]
    order = None
    spec = _comparator_keys(comp)
    if spec is not None:
        keys = [_sort_key(arrays[m], ctype, desc) for m, desc, ctype in spec]
        if all(k is not None for k in keys):
            # np.lexsort: last key is the primary one; stable.
            order = np.lexsort(keys[::-1], axis=dim)
    if order is None:
        order = _network_sort_order(ctx, comp, [np.moveaxis(a, dim, -1) for a in arrays])
        order = np.moveaxis(order, -1, dim)
    out = [np.take_along_axis(a, order, axis=dim) for a in arrays]
    return tuple(out) if tuple_result else out[0]


def _network_sort_order(ctx, comp, arrays):
    """Stable sort permutation along the last axis for an arbitrary comparator.

    Bitonic network over the length padded to a power of two; padding
    sorts after every element, ties break on the original position.
    """
    n = arrays[0].shape[-1]
    P = 1
    while P < n:
        P *= 2
    lead = arrays[0].shape[:-1]
    vals = []
    for a in arrays:
        if P > n:
            pad = np.repeat(a[..., :1], P - n, axis=-1)
            a = np.concatenate([a, pad], axis=-1)
        vals.append(np.array(a, copy=True))
    pos = np.broadcast_to(np.arange(P, dtype=np.int64), lead + (P,)).copy()
    is_pad = pos >= n

    def less(A, B, pa, pb, ia, ib):
        args = []
        for x, y in zip(A, B):
            args += [x, y]
        ab = call_elementwise(ctx, comp, args)[0].astype(bool)
        args = []
        for x, y in zip(A, B):
            args += [y, x]
        ba = call_elementwise(ctx, comp, args)[0].astype(bool)
        real = ~pa & ~pb
        return (~pa & pb) | (real & (ab | (~ba & (ia < ib))))

    idx = np.arange(P)
    k = 2
    while k <= P:
        j = k // 2
        while j >= 1:
            lo = idx[(idx & j) == 0]
            hi = lo + j
            asc = (lo & k) == 0
            A = [v[..., lo] for v in vals]
            B = [v[..., hi] for v in vals]
            pa, pb = is_pad[..., lo], is_pad[..., hi]
            ia, ib = pos[..., lo], pos[..., hi]
            swap = np.where(asc, less(B, A, pb, pa, ib, ia), less(A, B, pa, pb, ia, ib))
            for v, a_, b_ in zip(vals, A, B):
                v[..., lo] = np.where(swap, b_, a_)
                v[..., hi] = np.where(swap, a_, b_)
            for v in (is_pad, pos):
                a_, b_ = v[..., lo], v[..., hi]
                v[..., lo] = np.where(swap, b_, a_)
                v[..., hi] = np.where(swap, a_, b_)
            j //= 2
        k *= 2
    return pos[..., :n]


def top_k(x, k, largest=True):
    """(values, s32 indices) of the k largest (or smallest) along the last axis.

    Floats are ordered by TOTALORDER (+NaN largest); ties: lower index first.
    """
    x = np.asarray(x)
    key = total_order_key(x)
    if largest:
        key = ~key if key.dtype.kind in "iu" else -key
    order = np.argsort(key, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@register("topk")
def topk(instr, operands, ctx):
    (x,) = operands
    k = int(instr.attr("k"))
    largest = instr.attr("largest", True)
    values, indices = top_k(x, k, True if largest is None else bool(largest))
    shapes = instr.shape.tuple_shapes
    return values.astype(shapes[0].dtype), indices.astype(shapes[1].dtype)
