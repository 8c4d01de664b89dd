"""DotDecomposer: rewrites every dot into XLA's canonical dot form.

A dot is canonical when, with ``nb`` batch dimensions:

* ``lhs_batch_dims = rhs_batch_dims = {0, ..., nb-1}``;
* there is exactly one contracting dimension on each side, the last one of
  the lhs (``lhs = [batch..., M, K]``) and the one right after the batch
  dimensions of the rhs (``rhs = [batch..., K, N]``);
* each side has at most one non-contracting dimension (``M`` / ``N``); a
  side with none has rank ``nb + 1`` (``[batch..., K]``), as in XLA, where
  the non-contracting dimension is left out rather than added as size 1.

Canonical dots are left alone. Any other dot becomes: a transpose of each
operand (batch dimensions in ``lhs_batch_dims`` order, then the lhs's
non-contracting then contracting dimensions, or the rhs's contracting then
non-contracting ones; left out when it is the identity), a reshape that
flattens the non-contracting dimensions into one and the contracting
dimensions into one (a dot with no contracting dimension gets a size-1
``K``), the canonical dot, and a reshape back to the original result shape
(left out when the dimensions already agree). The result element type
(``preferred_element_type``) and the dot's other attributes
(``precision_config``, ``operand_precision``, ...) are kept. Summation order
is unchanged: the same ``B x M x K`` by ``B x K x N`` products are summed.

A dot of preds (an OR of ANDs) first becomes the same dot over s32 zeros
and ones compared with 0, which the backends' integer dots compute.

Not rewritten: sparse dots (more than two operands), dots with dynamic
dimensions. New intermediate shapes get row-major layouts when the dot had
a layout (no layout otherwise); the final reshape (or the new dot) keeps
the dot's shape and name.
"""
import math

import numpy as np

from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass

_DIM_ATTRS = ("lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims")


def dot_dimension_numbers(dot):
    """(lhs_batch, rhs_batch, lhs_contracting, rhs_contracting) as tuples."""
    return tuple(tuple(dot.attr(name, ())) for name in _DIM_ATTRS)


def is_canonical_dot(dot):
    lb, rb, lc, rc = dot_dimension_numbers(dot)
    nb = len(lb)
    lhs_rank = dot.operands[0].shape.rank
    rhs_rank = dot.operands[1].shape.rank
    return (lb == rb == tuple(range(nb)) and len(lc) == 1 and len(rc) == 1
            and lhs_rank in (nb + 1, nb + 2) and rhs_rank in (nb + 1, nb + 2)
            and lc == (lhs_rank - 1,) and rc == (nb,))


class DotDecomposer(HloPass):
    name = "dot_decomposer"

    def run(self, module):
        changed = self._pred_dots_to_s32(module)
        for comp in module.computations:
            # New instructions go just before the dot they replace; the list
            # is rebuilt once per computation (inserting one by one is
            # quadratic on large modules).
            inserted = {}
            for instr in list(comp.instructions):
                if instr.opcode != "dot" or len(instr.operands) != 2 or "sparsity" in instr.attrs:
                    continue
                if any(o.shape.is_dynamic for o in instr.operands) or instr.shape.is_dynamic:
                    continue
                if is_canonical_dot(instr):
                    continue
                self._canonicalize(module, comp, instr, inserted.setdefault(instr, []))
                changed = True
            if inserted:
                order = []
                for instr in comp.instructions:
                    order.extend(inserted.get(instr, ()))
                    if instr not in inserted:
                        order.append(instr)
                comp.instructions = order
        return changed

    @staticmethod
    def _pred_dots_to_s32(module):
        """A dot of preds is an OR of ANDs (XLA's semantics): the same dot
        over s32 zeros and ones, compared with 0 (no overflow below 2^31
        terms), so the backends' integer dots compute it."""
        from xla.hlo.types import PrimitiveType
        changed = False
        s32 = PrimitiveType.S32
        for comp in module.computations:
            for dot in list(comp.instructions):
                if dot.opcode != "dot" or len(dot.operands) != 2 or dot.shape.is_tuple \
                        or dot.shape.element_type is not PrimitiveType.PRED \
                        or any(o.shape.element_type is not PrimitiveType.PRED for o in dot.operands):
                    continue

                def add(opcode, shape, operands, attrs=None, literal=None):
                    instr = HloInstruction(opcode, shape, operands, name=module.unique_name(opcode),
                                           attrs=attrs, literal=literal)
                    comp.insert_before(dot, instr)
                    return instr

                ints = [add("convert", o.shape.with_element_type(s32), [o]) for o in dot.operands]
                attrs = {k: v for k, v in dot.attrs.items() if k in _DIM_ATTRS}
                product = add("dot", dot.shape.with_element_type(s32), ints, attrs)
                zero = add("constant", Shape.scalar(s32), [], literal=np.zeros((), np.int32))
                zeros = add("broadcast", product.shape, [zero], {"dimensions": ()})
                result = HloInstruction("compare", dot.shape, [product, zeros], name=dot.name,
                                        attrs={"direction": "NE"})
                comp.insert_before(dot, result)
                comp.replace_instruction(dot, result)
                changed = True
        return changed

    @staticmethod
    def _canonicalize(module, comp, dot, new_instructions):
        lhs, rhs = dot.operands
        lb, rb, lc, rc = dot_dimension_numbers(dot)
        lfree = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
        rfree = [d for d in range(rhs.shape.rank) if d not in rb and d not in rc]
        laid_out = any(s.layout is not None for s in (dot.shape, lhs.shape, rhs.shape))
        layout = "default" if laid_out else None

        def add(opcode, element_type, dims, operands, attrs=None, shape=None):
            shape = shape if shape is not None else Shape.array(element_type, dims, layout=layout)
            instr = HloInstruction(opcode, shape, operands, name=module.unique_name(opcode), attrs=attrs)
            instr.parent = comp
            new_instructions.append(instr)
            return instr

        def prepare(operand, order, groups):
            dims = operand.shape.dimensions
            et = operand.shape.element_type
            value = operand
            if tuple(order) != tuple(range(len(order))):
                value = add("transpose", et, [dims[d] for d in order], [value],
                            attrs={"dimensions": tuple(order)})
            new_dims = [math.prod(dims[d] for d in group) for group in groups]
            if tuple(new_dims) != value.shape.dimensions:
                value = add("reshape", et, new_dims, [value])
            return value

        batch_l = [[d] for d in lb]
        batch_r = [[d] for d in rb]
        new_lhs = prepare(lhs, list(lb) + lfree + list(lc),
                          batch_l + ([lfree] if lfree else []) + [list(lc)])
        new_rhs = prepare(rhs, list(rb) + list(rc) + rfree,
                          batch_r + [list(rc)] + ([rfree] if rfree else []))
        nb = len(lb)
        attrs = {k: v for k, v in dot.attrs.items() if k not in _DIM_ATTRS}
        attrs = {"lhs_batch_dims": tuple(range(nb)), "lhs_contracting_dims": (new_lhs.shape.rank - 1,),
                 "rhs_batch_dims": tuple(range(nb)), "rhs_contracting_dims": (nb,), **attrs}
        if not nb:
            del attrs["lhs_batch_dims"], attrs["rhs_batch_dims"]
        out_dims = ([lhs.shape.dimensions[d] for d in lb]
                    + ([new_lhs.shape.dimensions[nb]] if lfree else [])
                    + ([new_rhs.shape.dimensions[nb + 1]] if rfree else []))
        et = dot.shape.element_type
        if tuple(out_dims) == dot.shape.dimensions:
            replacement = add("dot", et, out_dims, [new_lhs, new_rhs], attrs=attrs, shape=dot.shape)
        else:
            new_dot = add("dot", et, out_dims, [new_lhs, new_rhs], attrs=attrs)
            replacement = add("reshape", et, None, [new_dot], shape=dot.shape)
        comp.replace_all_uses(dot, replacement)
        dot.parent = None  # dropped from comp.instructions by run()
        replacement.name = dot.name
