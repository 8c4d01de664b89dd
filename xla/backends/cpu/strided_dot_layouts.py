"""StridedDotLayouts (``strided-dot-layouts``): the transposes around a
batched dot that the tiled GEMM kernel computes in place
(``strided_gemm.plan``) become bitcasts, so no kernel copies them.

For each batched f32/f64 dot, after layout assignment, it considers:

* each operand that is a ``transpose``: read instead as a ``bitcast`` of the
  transpose's operand, with the layout under which its bytes are that
  operand's (any layout: the kernel reads with strides);
* the result, where the dot's only user is a ``transpose`` whose users are
  all ``reshape``s: the transpose gets the default (row-major) layout and
  becomes a bitcast of the dot, which gets the layout that makes it one.
  The reshapes then read row-major bytes (``reshape-to-bitcast`` makes
  those that move no byte bitcasts): attention's per-head results going
  back to ``[batch, seq, heads * dim]`` for the output projection.

and makes the choices that remove the most copies among those for which
``strided_gemm.plan`` still applies (the kernel needs stride 1 along N in
the rhs and the result, or along M in the lhs and the result), unless the
runtime's matmul would be left fewer copies (``dot-operand-layouts`` makes
transposes of the two matrix dimensions bitcasts it reads with its
transpose flags; a tie goes to the kernel, or to the matmul where the plan
is ``blocked``: the runtime's blocked GEMM either way, and the matmul's
split over the pool). Nothing changes for dots it
does not apply to, nor for unbatched dots. A transpose with other users stays for them; one left without
users is removed. Runs before ``dot-operand-layouts``, which leaves the
dots the plan accepts as they are.
"""
import itertools

from xla.backends.cpu import strided_gemm
from xla.backends.cpu.dot_operand_layouts import matmul_transposed
from xla.backends.cpu.loop_emitter import is_row_major, major_to_minor
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Layout
from xla.service.hlo_pass import HloPass


def _bytes_of(x):
    """The instruction whose buffer holds ``x``'s bytes in the same order:
    through bitcasts and row-major to row-major reshapes (which fusion would
    otherwise make copy kernels of, before ``reshape-to-bitcast`` runs)."""
    while x.opcode == "bitcast" or (x.opcode == "reshape" and is_row_major(x.shape)
                                    and is_row_major(x.operands[0].shape)):
        x = x.operands[0]
    return x


def _bitcast_shape(transpose):
    """The transpose's shape with the layout that makes it a bitcast of its
    operand, or None without layouts."""
    source = transpose.operands[0]
    if source.shape.layout is None or transpose.shape.layout is None:
        return None
    perm = list(transpose.attr("dimensions"))
    # The result dimension holding operand dimension d is perm.index(d).
    order = [perm.index(d) for d in major_to_minor(source.shape)]
    return transpose.shape.with_layout(Layout(tuple(reversed(order))))


def _result_choice(dot):
    """(the dot's shape with its new layout, the transpose's row-major
    shape) where the dot's only user is a transpose feeding reshapes, else None."""
    users = dot.users
    if len(users) != 1 or dot.is_root or dot.shape.layout is None:
        return None
    t = users[0]
    if t.opcode != "transpose" or t.is_root or not t.users or \
            any(u.opcode != "reshape" for u in t.users):
        return None
    perm = list(t.attr("dimensions"))
    rank = t.shape.rank
    row_major = t.shape.with_layout(Layout(tuple(range(rank - 1, -1, -1))))
    # Row-major t walks its dimensions 0, 1, ...: dot dimensions perm[0], perm[1], ...
    return dot.shape.with_layout(Layout(tuple(reversed(perm)))), row_major


class StridedDotLayouts(HloPass):
    name = "strided-dot-layouts"

    def run(self, module):
        changed = False
        for comp in module.computations:
            for dot in list(comp.instructions):
                if dot.opcode == "dot" and dot.parent is comp and dot.shape.is_array \
                        and len(dot.operands) == 2 and dot.attr("lhs_batch_dims", ()):
                    changed |= self._run_on(module, comp, dot)
        return changed

    def _run_on(self, module, comp, dot):
        operands = [_bitcast_shape(o) if o.opcode == "transpose" and o.shape.is_array else None
                    for o in dot.operands]
        result = _result_choice(dot)
        transposes = sum(o.opcode == "transpose" for o in dot.operands) + (result is not None)
        best = None
        for lhs, rhs, out in itertools.product((None, operands[0]), (None, operands[1]),
                                               (None, result)):
            if (lhs, rhs, out) == (None, None, None):
                continue
            shapes = (lhs, rhs, out[0] if out else None)
            walk = strided_gemm.plan(dot, *shapes)
            if walk is None:
                continue
            copies = transposes - sum(x is not None for x in (lhs, rhs, out))
            if best is None or copies < best[0]:
                best = (copies, lhs, rhs, out, walk.blocked)
        # The runtime's matmul reads transposes of the two matrix dimensions
        # in place (dot-operand-layouts); where that leaves fewer copies,
        # the dot is left to it, and so it is at a tie with the runtime's
        # blocked walk (the matmul's own split over the pool).
        nb = len(dot.attr("lhs_batch_dims"))
        runtime_copies = (result is not None) + sum(
            o.opcode == "transpose" and (s is None or matmul_transposed(s, nb) is None)
            for o, s in zip(dot.operands, operands))
        if best is None or best[0] > runtime_copies or (best[0] == runtime_copies and best[4]):
            return False
        _, lhs, rhs, out, _ = best
        new_operands = list(dot.operands)
        for i, shape in enumerate((lhs, rhs)):
            if shape is None:
                continue
            t = dot.operands[i]
            bitcast = HloInstruction("bitcast", shape, [_bytes_of(t.operands[0])],
                                     name=module.unique_name("bitcast"))
            comp.insert_before(dot, bitcast)
            new_operands[i] = bitcast
        old = list(dict.fromkeys(dot.operands))
        dot.operands = new_operands
        for t in old:
            if t not in new_operands and not t.users and t is not comp.root_instruction:
                comp.remove_instruction(t)
        if out is not None:
            dot_shape, t_shape = out
            t = dot.users[0]
            dot.shape = dot_shape
            for r in t.users:
                if is_row_major(r.shape):   # now moves no byte
                    bitcast = HloInstruction("bitcast", r.shape, [dot],
                                             name=module.unique_name("bitcast"))
                    comp.insert_after(dot, bitcast)
                    comp.replace_all_uses(r, bitcast)
                    comp.remove_instruction(r)
            if t.users:
                bitcast = HloInstruction("bitcast", t_shape, [dot],
                                         name=module.unique_name("bitcast"))
                comp.insert_after(dot, bitcast)
                comp.replace_all_uses(t, bitcast)
            comp.remove_instruction(t)
        return True
