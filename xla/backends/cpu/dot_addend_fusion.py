"""dot-addend-fusion: a large f32 matmul whose only reader is a loop fusion
computing ``addend + alpha * product`` elementwise becomes one ``kOutput``
fusion of the dot and that update; the emitter calls the runtime's
``__xla_cpu_matmul_addend_f32``, whose packed GEMM adds the addend as it
stores each tile of the product (``runtime/packed_gemm.h``).

A training step's weight update is the case: ``w - lr * (x^T @ dy)``. Its
dot wrote the gradient (16 MB for a 1024 x 4096 weight) and a loop kernel
then read it back with ``w`` to write the new weight; fused, the gradient
is never stored. JAX's MLP training step (2 x 16 MB weights, 2-core Zen 5):
each update kernel had taken 1.5 ms of the 27 ms step.

Runs after ``fusion`` and ``matrix-vector-pair-fusion``. A fusion ``F`` is
rewritten when:

* it is a kLoop fusion (or an ``add`` or ``subtract`` fusion left alone)
  with two operands, a ``dot`` ``D`` and the addend, and ``F`` is ``D``'s
  only user;
* its root is ``add(addend, s)``, ``add(s, addend)`` or
  ``subtract(addend, s)``, where ``s`` is ``D`` read through views that
  move no byte (a bitcast, a reshape or transpose whose bytes are in the
  same order, a copy to the same layout: each output element at its
  operand element's offset), scaled by ``multiply`` with broadcast scalar
  constants and ``negate``; the addend a parameter of ``F`` of its result
  shape and layout. ``alpha`` is the product of the scales (in f32);
* ``D`` is an f32 x f32 -> f32 matrix product the runtime's matmul
  computes (``runtime_dot``: no batch dimensions here) in layouts it reads,
  of at least ``MIN_MACS`` multiply-adds, not one the tiled kernel computes
  (``strided_gemm.small_gemm_shape``, emit_small_gemm's rule);
* and the compilation's runtime has the function (``runtime_context``:
  the JIT's does; objects compiled ahead of time keep the two kernels).

The fused computation is ``F``'s (or ``F`` itself) with the dot replaced
by the dot of two new parameters (the dot's operands), so it says what it
computes; ``match`` reads the form back for the emitter. The runtime rounds
``alpha * sum + addend`` once (a fused multiply-add) where the two kernels
rounded the product, the scaled product and the sum: results differ from
the unfused module's by about an ulp of the update.
"""
import numpy as np

from xla.backends.cpu import runtime_context
from xla.backends.cpu.dot_operand_layouts import matmul_function, matmul_transposed, runtime_dot
from xla.backends.cpu.strided_gemm import small_gemm_shape
from xla.hlo.ir import HloComputation, HloInstruction
from xla.service.algebraic_simplifier import same_shape_and_layout, splat_value
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import (add_before_callers, clone_instruction, control_successor_ids,
                                    fusion_computations, has_control_dependencies,
                                    remove_unreferenced)
from xla.service.reshape_to_bitcast import moves_no_byte

SYMBOL = "__xla_cpu_matmul_addend_f32"
MIN_MACS = 1 << 23   # the packed GEMM's (packed_gemm.h kMinMacs): below, no epilogue to fuse into


class AddendForm:
    """What a kOutput fusion computes: ``addend`` (a parameter number of
    the fused computation) plus ``alpha`` times ``dot`` (its instruction)."""

    def __init__(self, dot, addend, alpha):
        self.dot = dot
        self.addend = addend
        self.alpha = alpha


def _moves_no_byte(x):
    """Whether view ``x`` stores each element at its operand element's offset."""
    op = x.opcode
    if len(x.operands) != 1 or x.shape.element_type is not x.operands[0].shape.element_type:
        return False
    src = x.operands[0].shape
    if op == "bitcast":
        return True
    if op == "copy":
        return src.physical_minor_to_major() == x.shape.physical_minor_to_major()
    if op == "transpose":
        perm = list(x.attr("dimensions", ()))
        return tuple(perm[d] for d in x.shape.physical_minor_to_major()) == \
            src.physical_minor_to_major()
    return op == "reshape" and moves_no_byte(x)


def _scale(x):
    """The value of ``x`` where it is a broadcast scalar constant, else None."""
    return splat_value(x) if x.opcode == "broadcast" else None


def _scaled(x, target):
    """alpha (np.float32) when ``x`` is ``target`` through views and scales, else None."""
    alpha = np.float32(1)
    while x is not target:
        if x.opcode == "multiply":
            a, b = x.operands
            s = _scale(b)
            if s is None:
                a, s = b, _scale(a)
            if s is None:
                return None
            alpha, x = np.float32(alpha * np.float32(s)), a
        elif x.opcode == "negate":
            alpha, x = -alpha, x.operands[0]
        elif _moves_no_byte(x):
            x = x.operands[0]
        else:
            return None
    return alpha


def _form(root, dot, addend):
    """alpha when ``root`` computes addend + alpha * dot, else None."""
    if root.opcode not in ("add", "subtract") or addend is dot \
            or not same_shape_and_layout(addend.shape, root.shape):
        return None
    a, b = root.operands
    if a is addend:
        alpha = _scaled(b, dot)
        return None if alpha is None else (-alpha if root.opcode == "subtract" else alpha)
    if b is addend and root.opcode == "add":
        return _scaled(a, dot)
    return None


def match(fusion):
    """The ``AddendForm`` of a kOutput fusion this pass made, else None."""
    comp = fusion.attr("calls")
    if fusion.attr("kind") != "kOutput" or comp is None or len(fusion.operands) != 3 \
            or not fusion.shape.is_array \
            or not same_shape_and_layout(fusion.shape, comp.root_instruction.shape):
        return None
    dots = [i for i in comp.instructions if i.opcode == "dot"]
    params = comp.parameters
    if len(dots) != 1 or [p.parameter_number for p in dots[0].operands] != [0, 1] \
            or len(params) != 3 or not _fusable_dot(dots[0]):
        return None
    alpha = _form(comp.root_instruction, dots[0], comp.parameter(2))
    return None if alpha is None else AddendForm(dots[0], 2, alpha)


def _fusable_dot(dot):
    if dot.opcode != "dot" or len(dot.operands) != 2 or not runtime_dot(dot) \
            or matmul_function(dot) != "__xla_cpu_matmul_f32" or dot.attr("lhs_batch_dims", ()):
        return False
    lhs, rhs = dot.operands
    if lhs.shape.rank != 2 or rhs.shape.rank != 2 or any(
            matmul_transposed(s, 0) is None for s in (lhs.shape, rhs.shape, dot.shape)):
        return False
    (m, k), n = lhs.shape.dimensions, rhs.shape.dimensions[1]
    return m * k * n >= MIN_MACS and small_gemm_shape(dot, runtime_context.symbols()) is None


def _candidate(update, successor_ids):
    """(dot, addend, alpha) for an update to rewrite (a kLoop fusion, or an
    add or subtract left unfused), else None."""
    if update.opcode not in ("fusion", "add", "subtract") or len(update.operands) != 2 \
            or not update.shape.is_array or has_control_dependencies(update, successor_ids):
        return None
    fusion = update.opcode == "fusion"
    if fusion and update.attr("kind") != "kLoop":
        return None
    for i, dot in enumerate(update.operands):
        addend = update.operands[1 - i]
        if dot.opcode == "dot" and list(dot.users) == [update] and _fusable_dot(dot) \
                and not dot.is_root and not has_control_dependencies(dot, successor_ids):
            if fusion:
                comp = update.attr("calls")
                alpha = _form(comp.root_instruction, comp.parameter(i), comp.parameter(1 - i))
            else:
                alpha = _form(update, dot, addend)
            if alpha is not None:
                return dot, addend, alpha
    return None


class DotAddendFusion(HloPass):
    name = "dot-addend-fusion"

    def run(self, module):
        if SYMBOL not in runtime_context.symbols():
            return False
        fused = fusion_computations(module)
        new, replaced = {}, []
        for comp in module.computations:
            if id(comp) in fused:
                continue
            successor_ids = control_successor_ids(comp)
            for update in list(comp.instructions):
                found = _candidate(update, successor_ids)
                if found is not None:
                    if update.opcode == "fusion":
                        replaced.append(update.attr("calls"))
                    new.setdefault(id(comp), []).append(self._fuse(module, comp, update, *found))
        if new:
            add_before_callers(module, new)
            remove_unreferenced(module, replaced)
        return bool(new)

    @staticmethod
    def _fuse(module, comp, update, dot, addend, alpha):
        lhs, rhs = dot.operands
        params = [HloInstruction.create_parameter(i, x.shape, name=module.unique_name(f"param_{i}"))
                  for i, x in enumerate((lhs, rhs, addend))]
        inner = clone_instruction(dot, params[:2], module.unique_name(dot.name))
        body = params + [inner]
        if update.opcode == "fusion":
            old = update.attr("calls")
            i = update.operands.index(dot)
            values = {id(old.parameter(i)): inner, id(old.parameter(1 - i)): params[2]}
            instructions, old_root = old.instructions, old.root_instruction
            attrs = {k: v for k, v in update.attrs.items() if k not in ("kind", "calls")}
        else:
            values = {id(dot): inner, id(addend): params[2]}
            instructions, old_root = [update], update
            attrs = {k: v for k, v in update.attrs.items() if k == "metadata"}
        for instr in instructions:
            if instr.opcode == "parameter":
                continue
            clone = clone_instruction(instr, [values[id(o)] for o in instr.operands],
                                      module.unique_name(instr.name))
            values[id(instr)] = clone
            body.append(clone)
        computation = HloComputation(module.unique_name("fused_dot_addend"), body,
                                     root=values[id(old_root)])
        replacement = HloInstruction("fusion", update.shape, [lhs, rhs, addend],
                                     name=module.unique_name("fusion"),
                                     attrs={**attrs, "kind": "kOutput", "calls": computation})
        comp.insert_before(update, replacement)
        comp.replace_all_uses(update, replacement)
        comp.remove_instruction(update)
        comp.remove_instruction(dot)   # in the update's place, the order stays topological
        return computation
