"""DotMerger (``dot-merger``): dots that share an operand and do not depend
on each other become one dot over the concatenation of their other
operands, sliced back into each one's result:

    q = dot(x, wq)                        w = concatenate(wq, wk, wv), dimensions={1}
    k = dot(x, wk)            ->          d = dot(x, w)
    v = dot(x, wv)                        q = slice(d) [.., 0:n]; k = slice(d) [.., n:2n]; ...

(and the same with a shared rhs: the lhs operands are concatenated along
their row dimension and the result sliced along its rows). One larger GEMM
instead of several small ones: one pass over the shared operand, and a
product shape Eigen's blocking runs closer to its peak (attention's Q, K, V
projections; in a training step, the weight gradients ``x^T @ dq``, ``x^T @
dk``, ``x^T @ dv``).

Dots are merged when, pairwise:

* they use one instruction as the same operand (both lhs or both rhs), and
  do not use it as both operands;
* each has two operands (no sparse dots), static shapes, no control
  dependencies, and is not inside a fused computation;
* the other operands have exactly one free (non-batch, non-contracting)
  dimension and agree on every other dimension (as after
  ``dot_decomposer``, which XLA's pass also assumes), so that they
  concatenate along it;
* dimension numbers, the element types of lhs, rhs and result, the
  layouts of the result and the other operand (where the module has
  layouts), and every other attribute but ``metadata``
  (``precision_config``, ``operand_precision``, ``algorithm``, ...) are
  equal;
* neither depends on the other, through any chain of operands or control
  predecessors, in the module as rewritten so far (merging joins two nodes,
  which makes new paths; those are tracked, so no cycle forms);
* the bytes of the dot's operands and result, for at least one side (a dot
  on its own, or the merged dot built so far), are at most
  ``max_size_to_merge`` (XLA's rule: a small dot may join a large one, two
  large ones are not merged);
* ``can_merge(a, b)``, when given (XLA's hook for a backend's own rule), is
  true for the new dot and each dot already in its group.

The merged dot keeps the first dot's attributes (metadata included); each
old dot becomes a slice that keeps its name. When every concatenated
operand is a constant, the concatenation is one new constant made here (no
pass after this one need fold it) and the old constants go once unused.
Each result element is the same sum of the same products; a backend may
add them in another order (Eigen's blocking depends on the product's
shape), so results agree up to rounding. Not done: dots whose differing
operands have no free dimension (matrix-vector products:
``matrix-vector-pair-fusion`` handles ``A x`` and ``y A`` of one matrix)
or more than one; dots that share nothing; scheduled modules (left
unchanged: new instructions are placed by sorting the computation into
post order).

The cost is a concatenate of the differing operands (a copy of the weights
each call when they are parameters) and one result buffer whose live range
covers all the merged results' (XLA's reason for the size threshold). On
the CPU that copy is not paid back: ``cpu/pipeline.py`` merges only dots
whose differing operands are constants (its comment has the figures).
"""
import numpy as np

from xla.hlo.attributes import SliceDim
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape
from xla.hlo.shape_functions_compute import infer_dot_shape
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import fusion_computations

_IGNORED_ATTRS = frozenset({"metadata"})

# XLA:GPU's default (xla_gpu_dot_merger_threshold_mb = 32).
DEFAULT_MAX_SIZE_TO_MERGE = 32 << 20


def _dims(dot, name):
    return tuple(dot.attr(name, ()) or ())


def _free_dim(dot, side):
    """The one free dimension of operand ``side`` (0: lhs, 1: rhs), or None."""
    prefix = ("lhs_", "rhs_")[side]
    used = set(_dims(dot, prefix + "batch_dims")) | set(_dims(dot, prefix + "contracting_dims"))
    free = [d for d in range(dot.operands[side].shape.rank) if d not in used]
    return free[0] if len(free) == 1 else None


def _is_constant(instr):
    return instr.opcode == "constant" and instr.literal is not None


def _bytes(dot):
    return dot.shape.byte_size() + sum(o.shape.byte_size() for o in dot.operands)


def _eligible(dot):
    return (len(dot.operands) == 2 and "sparsity" not in dot.attrs
            and dot.shape.is_array and not dot.shape.is_dynamic
            and not any(o.shape.is_dynamic or not o.shape.is_array for o in dot.operands)
            and dot.operands[0] is not dot.operands[1])


def _signature(dot, side):
    """What two dots sharing operand ``side`` must agree on to merge: the
    attributes, the element types, and the differing operand's shape but
    for its free dimension."""
    other = dot.operands[1 - side]
    free = _free_dim(dot, 1 - side)
    if free is None:
        return None
    dims = list(other.shape.dimensions)
    dims[free] = None
    attrs = tuple(sorted((k, repr(v)) for k, v in dot.attrs.items() if k not in _IGNORED_ATTRS))
    types = tuple(s.element_type for s in (dot.shape, dot.operands[0].shape, dot.operands[1].shape))
    layouts = (dot.shape.layout, other.shape.layout)  # the merged dot's and the concatenate's
    return side, attrs, types, layouts, tuple(dims), free


def _in_operand_order(instructions):
    seen = set()
    for instr in instructions:
        if any(id(p) not in seen for p in (*instr.operands, *instr.control_predecessors)):
            return False
        seen.add(id(instr))
    return True


class _Reachability:
    """Which dots reach which, over the module as merges rewrite it.

    ``anc[i]`` is a bit set of the dots (by index) from which dot ``i`` is
    reachable through operands and control predecessors. Merging a group
    makes each of its members reach what any member reaches and be reached
    by what reaches any member; only dots get bits, which is exact because
    every new path runs through a merged dot."""

    def __init__(self, comp, dots):
        self.index = {id(d): k for k, d in enumerate(dots)}
        masks = self._masks(comp.instructions)
        if masks is None:  # the list is not in operand order
            masks = self._masks(comp.post_order())
        self.anc = [masks[id(d)] for d in dots]

    def _masks(self, order):
        masks = {}
        index = self.index
        for instr in order:
            mask = 0
            for pred in (*instr.operands, *instr.control_predecessors):
                above = masks.get(id(pred))
                if above is None:
                    return None
                k = index.get(id(pred))
                mask |= above if k is None else above | (1 << k)
            masks[id(instr)] = mask
        return masks

    def independent(self, group, dot):
        """Neither ``dot`` nor any member of ``group`` (indices) reaches the other."""
        k = self.index[id(dot)]
        members = 0
        for m in group:
            members |= 1 << m
        return not (self.anc[k] & members) and not (self.anc[group[0]] >> k) & 1

    def merge(self, group):
        members, above = 0, 0
        for m in group:
            members |= 1 << m
            above |= self.anc[m]
        for m in group:
            self.anc[m] = above
        # Whatever a member reached, everything above any member now reaches.
        for k, mask in enumerate(self.anc):
            if mask & members:
                self.anc[k] = mask | above | members


class DotMerger(HloPass):
    name = "dot-merger"

    def __init__(self, max_size_to_merge=DEFAULT_MAX_SIZE_TO_MERGE, can_merge=None):
        self.max_size_to_merge = int(max_size_to_merge)
        self.can_merge = can_merge

    def run(self, module):
        if module.is_scheduled:
            return False
        changed = False
        fused = fusion_computations(module)
        for comp in module.computations:
            if id(comp) not in fused and self._merge_computation(module, comp):
                changed = True
        return changed

    def _small(self, nbytes):
        return nbytes <= self.max_size_to_merge

    def _mergeable(self, group, dot):
        """The size rule and ``can_merge`` for ``dot`` joining ``group`` (a dict)."""
        if not (self._small(_bytes(dot)) or self._small(group["bytes"])):
            return False
        return self.can_merge is None or all(self.can_merge(d, dot) for d in group["dots"])

    def _has_candidate_pair(self, side, members):
        """Whether two of ``members`` could merge, dependences aside."""
        by_signature = {}
        for dot in members:
            signature = _signature(dot, side)
            if signature is None:
                continue
            for other in by_signature.get(signature, ()):
                if self._mergeable({"dots": [other], "bytes": _bytes(other)}, dot):
                    return True
            by_signature.setdefault(signature, []).append(dot)
        return False

    def _merge_computation(self, module, comp):
        dots = [i for i in comp.instructions if i.opcode == "dot"]
        if len(dots) < 2:
            return False
        controlled = {id(p) for i in comp.instructions
                      for p in i.attrs.get("control-predecessors", ())}
        dots = [i for i in dots if _eligible(i) and not i.control_predecessors
                and id(i) not in controlled]
        # (id of the shared operand, its side) -> the dots using it there, in order.
        classes = {}
        for dot in dots:
            for side in (0, 1):
                classes.setdefault((id(dot.operands[side]), side), []).append(dot)
        classes = {k: v for k, v in classes.items()
                   if len(v) > 1 and self._has_candidate_pair(k[1], v)}
        if not classes:
            return False
        reach = _Reachability(comp, list(dict.fromkeys(d for v in classes.values() for d in v)))
        merged = set()
        groups = []
        for (_, side), members in classes.items():
            # This class's groups, each with its signature and merged dot's bytes.
            open_groups = []
            for dot in members:
                if id(dot) in merged:
                    continue
                signature = _signature(dot, side)
                if signature is None:
                    continue
                k = reach.index[id(dot)]
                for group in open_groups:
                    if group["signature"] != signature or not self._mergeable(group, dot) \
                            or not reach.independent(group["indices"], dot):
                        continue
                    group["dots"].append(dot)
                    group["indices"].append(k)
                    # The merged dot grows by the differing operand and the result.
                    group["bytes"] += _bytes(dot) - dot.operands[side].shape.byte_size()
                    reach.merge(group["indices"])
                    break
                else:
                    open_groups.append({"signature": signature, "dots": [dot], "indices": [k],
                                        "bytes": _bytes(dot)})
            for group in open_groups:
                if len(group["dots"]) > 1:
                    merged.update(id(d) for d in group["dots"])
                    groups.append((side, group["dots"]))
        if not groups:
            return False
        for side, group in groups:
            self._rewrite(module, comp, side, group)
        if not _in_operand_order(comp.instructions):
            comp.sort_post_order()
        return True

    @staticmethod
    def _rewrite(module, comp, side, dots):
        first = dots[0]
        # Just before the last of the dots (in list order), after every
        # operand; the caller sorts when an earlier dot's user came before it.
        last = dots[-1]
        shared = first.operands[side]
        other = 1 - side
        concat_dim = _free_dim(first, other)
        parts = [d.operands[other] for d in dots]
        part_shape = parts[0].shape
        dims = list(part_shape.dimensions)
        dims[concat_dim] = sum(p.shape.dimensions[concat_dim] for p in parts)
        concat_shape = Shape(part_shape.element_type, dims, part_shape.layout)
        if all(_is_constant(p) for p in parts):
            # Concatenated now: no pass after this one need fold it.
            concat = HloInstruction.create_constant(
                np.ascontiguousarray(np.concatenate([p.literal for p in parts], axis=concat_dim)),
                shape=concat_shape, name=module.unique_name("constant"))
        else:
            concat = HloInstruction("concatenate", concat_shape, parts,
                                    name=module.unique_name("concatenate"),
                                    attrs={"dimensions": (concat_dim,)})
        comp.insert_before(last, concat)
        operands = [shared, concat] if side == 0 else [concat, shared]
        a = first.attrs
        out = infer_dot_shape(operands[0].shape, operands[1].shape, a.get("lhs_contracting_dims"),
                              a.get("rhs_contracting_dims"), a.get("lhs_batch_dims"),
                              a.get("rhs_batch_dims"), first.shape.element_type)
        merged = HloInstruction("dot", Shape(out.element_type, out.dimensions, first.shape.layout),
                                operands, name=module.unique_name("dot"), attrs=dict(first.attrs))
        comp.insert_before(last, merged)
        # The result's dimensions: batch, lhs free, rhs free; the differing
        # operand's free dimension is the last (shared lhs) or the first
        # after the batch dimensions (shared rhs, whose lhs has one free dimension).
        nb = len(_dims(first, "lhs_batch_dims"))
        slice_dim = merged.shape.rank - 1 if side == 0 else nb
        start = 0
        pieces = []
        for dot in dots:
            size = dot.shape.dimensions[slice_dim]
            window = tuple(SliceDim(start, start + size, 1) if d == slice_dim else SliceDim(0, n, 1)
                           for d, n in enumerate(merged.shape.dimensions))
            start += size
            # The slice takes the dot's name (the dot, removed below, a fresh one).
            name, dot.name = dot.name, module.unique_name(dot.name)
            piece = HloInstruction("slice", dot.shape, [merged], name=name,
                                   attrs={"slice": window})
            comp.insert_before(last, piece)
            pieces.append(piece)
        for dot, piece in zip(dots, pieces):
            comp.replace_all_uses(dot, piece)
            comp.remove_instruction(dot)
        if concat.opcode == "constant":
            for part in dict.fromkeys(parts):
                if not part.users and part is not comp.root_instruction:
                    comp.remove_instruction(part)
