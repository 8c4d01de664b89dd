"""DotOperandLayouts (``dot-operand-layouts``): a ``transpose`` that feeds a
dot the runtime's matmul computes becomes a ``bitcast`` with a transposed
layout, so the matmul reads the transpose's operand in place with its
transpose flag (``__xla_cpu_matmul_*(..., transpose_lhs, transpose_rhs)``)
instead of a kernel copying it first.

``dot_decomposer`` makes every dot canonical (lhs ``[batch..., M, K]``, rhs
``[batch..., K, N]``) by transposing operands; ``A^T x`` and ``x^T A``
written by users reach the emitter as such transposes. XLA gets the same
effect from layout assignment (a transpose whose layout makes it a
bitcast). Run after layout assignment: the bitcast's layout is the one
under which its bytes are the operand's, and only where the dot accepts it
(batch dimensions major and in order, the two matrix dimensions in either
order; the element types the runtime multiplies). Dots ``skip`` names are
left as they are (the CPU pipeline's: ``strided_gemm.kernel_only``, dots
whose layouts only the tiled kernel reads; a transposed bitcast of one
operand could take the kernel away, leaving the other to no one). A transpose with other users stays for them; one
without is removed at once (left for DCE, fusion would merge the bitcast
into a kernel with it as siblings).
"""
from xla.backends.cpu.loop_emitter import is_row_major, major_to_minor, reshape_groups
from xla.hlo.ir import HloInstruction
from xla.hlo.opcodes import ELEMENTWISE
from xla.hlo.shape import Layout
from xla.service.hlo_pass import HloPass

# Element types __xla_cpu_matmul_<type> takes (operands and result).
MATMUL_TYPES = frozenset(["f32", "f64", "s32", "c64", "c128"])
# (operand type, result type) of __xla_cpu_matmul_<operand>_<result>; the
# CPU pipeline's dot-type-widening leaves such dots for them.
MIXED_MATMUL_TYPES = (("s8", "s32"), ("bf16", "f32"))


def matmul_function(dot):
    """The name of the runtime matmul for ``dot``'s element types, or None."""
    lhs, rhs = (o.shape.element_type.text for o in dot.operands)
    out = dot.shape.element_type.text
    if lhs != rhs:
        return None
    if lhs == out:
        return f"__xla_cpu_matmul_{out}" if out in MATMUL_TYPES else None
    return f"__xla_cpu_matmul_{lhs}_{out}" if (lhs, out) in MIXED_MATMUL_TYPES else None


def matmul_transposed(shape, nb):
    """For a matmul operand with ``nb`` leading batch dimensions: 0 when its
    layout stores it row-major, 1 when its two matrix dimensions are stored
    swapped, None otherwise (batch dimensions must be major, in order)."""
    order = major_to_minor(shape)
    if order[:nb] != list(range(nb)):
        return None
    rest = order[nb:]
    if rest == sorted(rest):
        return 0
    return 1 if rest == [nb + 1, nb] else None


def runtime_dot(dot):
    """A dot the runtime's matmul computes (up to operand layouts; what
    ``runtime_matmul.emit_runtime_matmul`` checks first): element types one
    of its functions takes (``matmul_function``), leading batch dimensions,
    lhs ``[..., M, K]`` and rhs ``[..., K, N]`` (or without M / N)."""
    lhs, rhs = dot.operands
    if matmul_function(dot) is None:
        return False
    lb, rb = tuple(dot.attr("lhs_batch_dims", ()) or ()), tuple(dot.attr("rhs_batch_dims", ()) or ())
    lc = tuple(dot.attr("lhs_contracting_dims", ()) or ())
    rc = tuple(dot.attr("rhs_contracting_dims", ()) or ())
    nb = len(lb)
    return (lb == tuple(range(nb)) and rb == lb and len(lc) == 1 and len(rc) == 1
            and lc[0] == lhs.shape.rank - 1 and rc[0] == nb
            and lhs.shape.rank <= nb + 2 and rhs.shape.rank <= nb + 2)


class DotOperandLayouts(HloPass):
    name = "dot-operand-layouts"

    def __init__(self, skip=None):
        # skip(dot): dots left as they are (the CPU pipeline's: those the
        # strided tiled GEMM computes, whose layouts strided-dot-layouts chose).
        self.skip = skip

    def run(self, module):
        changed = False
        for comp in module.computations:
            for dot in list(comp.instructions):
                if dot.opcode != "dot" or not dot.shape.is_array or len(dot.operands) != 2 \
                        or not runtime_dot(dot) or (self.skip is not None and self.skip(dot)):
                    continue
                nb = len(dot.attr("lhs_batch_dims", ()) or ())
                for i, x in enumerate(list(dot.operands)):
                    # A transpose, or a reshape (a row-major bitcast) of one.
                    t = x.operands[0] if _row_major_reshape(x) else x
                    if t.opcode != "transpose" or not t.shape.is_array:
                        continue
                    source = t.operands[0]
                    if source.shape.layout is None or t.shape.layout is None:
                        continue
                    perm = list(t.attr("dimensions"))
                    # The result dimension holding operand dimension d is perm.index(d).
                    order = [perm.index(d) for d in major_to_minor(source.shape)]
                    if x is not t:
                        order = _reshaped_order(t.shape, x.shape, order)
                        if order is None:
                            continue
                    shape = x.shape.with_layout(Layout(tuple(reversed(order))))
                    if matmul_transposed(shape, nb) is None:
                        continue
                    bitcast = HloInstruction("bitcast", shape, [source],
                                             name=module.unique_name("bitcast"))
                    comp.insert_before(dot, bitcast)
                    operands = list(dot.operands)
                    operands[i] = bitcast
                    dot.operands = operands
                    for dead in ((x, t) if x is not t else (t,)):
                        if not dead.users and dead is not comp.root_instruction:
                            comp.remove_instruction(dead)
                    changed = True
        return changed


def _row_major_reshape(x):
    """Whether ``x`` is a reshape, or a bitcast between row-major layouts
    (the same thing), of an array."""
    if x.opcode not in ("bitcast", "reshape") or not x.shape.is_array:
        return False
    y = x.operands[0].shape
    return (y.is_array and x.shape.layout is not None and y.layout is not None
            and is_row_major(x.shape) and is_row_major(y))


def _reshaped_order(t_shape, x_shape, t_order):
    """The physical order (major to minor) under which ``x_shape``, a
    row-major reshape of ``t_shape``, has the bytes of ``t_shape`` stored in
    ``t_order``; None where no layout does (the reshape's groups of
    dimensions must lie together, in order, in ``t_order``). The AD of a
    dense layer over [batch, seq, features] gives such operands: a
    transpose of [4, 256, 2048] to [2048, 4, 256] reshaped to [2048, 1024]
    is the [1024, 2048] matrix read transposed."""
    groups = reshape_groups(t_shape.dimensions, x_shape.dimensions)
    if groups is None:
        return None
    first = {tg[0]: (tg, xg) for tg, xg in groups if tg}
    order, k = [], 0
    while k < len(t_order):
        if t_order[k] not in first:
            return None
        tg, xg = first[t_order[k]]
        if t_order[k:k + len(tg)] != tg:
            return None
        order += xg
        k += len(tg)
    order += [d for tg, xg in groups if not tg for d in xg]
    return order if sorted(order) == list(range(x_shape.rank)) else None


class DotOperandCopies(HloPass):
    """``dot-operand-copies``: a dot the runtime's matmul computes but whose
    operand (or result) layout neither it nor the tiled kernel reads (batch
    dimensions not major, e.g. a head transpose that layout assignment made
    free, ``[4,8,64,256]{2,1,3,0}``) gets a ``copy`` of that operand into
    row-major order (and a row-major result copied to the layout asked
    for), as XLA:CPU's layout assignment gives its Eigen calls the layouts
    they read. Without it such a dot was emitted as a loop per output
    element: 88 ms for a transformer's 32 x (64 x 256 x 256) attention
    gradient against under 1 ms through the matmul; the copy moves each
    element once. Runs after ``dot-operand-layouts``; dots ``plan`` (the
    tiled kernel's) takes are left alone."""
    name = "dot-operand-copies"

    def __init__(self, plan):
        self.plan = plan

    def run(self, module):
        changed = False
        for comp in module.computations:
            for dot in list(comp.instructions):
                if dot.opcode != "dot" or not dot.shape.is_array or len(dot.operands) != 2 \
                        or not runtime_dot(dot) or dot.shape.layout is None \
                        or any(o.shape.layout is None for o in dot.operands):
                    continue
                nb = len(dot.attr("lhs_batch_dims", ()) or ())
                bad = [matmul_transposed(o.shape, nb) is None for o in dot.operands]
                bad_result = matmul_transposed(dot.shape, nb) is None
                if not (any(bad) or bad_result) or self.plan(dot) is not None:
                    continue
                operands = list(dot.operands)
                for i, o in enumerate(operands):
                    if bad[i]:
                        operands[i] = comp.insert_before(dot, HloInstruction(
                            "copy", o.shape.with_layout(Layout.row_major(o.shape.rank)), [o],
                            name=module.unique_name("copy")))
                dot.operands = operands
                if bad_result:
                    wanted = dot.shape
                    dot.shape = wanted.with_layout(Layout.row_major(wanted.rank))
                    copy = HloInstruction("copy", wanted, [dot], name=module.unique_name("copy"))
                    comp.insert_after(dot, copy)
                    comp.replace_all_uses(dot, copy)
                    copy.operands = [dot]
                changed = True
        return changed


class DotResultLayouts(HloPass):
    """``dot-result-layouts``: a matmul's result that reaches a layout-
    changing ``copy`` through a transpose of its two matrix dimensions and
    elementwise ops is written in the copy's order instead. A training
    step's weight update as JAX lowers it, ``w - lr * transpose(dW)``, with
    the transpose and the scaling laid out as the product ({0,1}) and a
    copy to the weight's row-major layout before the subtract, moved every
    element of dW across cache lines (5 ms for a 1024 x 4096 f32 weight on
    this VM's two threads, a quarter of the MLP step; with bf16 weights
    the product is f32 and a convert to bf16 precedes the transpose, which
    the converts' layouts follow: 4.2 ms per weight there). The chain's layouts
    become the copy's, the copy goes, and the runtime's matmul writes the
    product transposed (rhs^T x lhs^T) at no cost. The elementwise ops'
    other operands must be broadcasts of scalars (cloned where shared).
    Runs after ``dot-operand-copies``; not for dots ``skip`` names (the
    tiled kernel's)."""
    name = "dot-result-layouts"

    def __init__(self, skip=None):
        self.skip = skip

    def run(self, module):
        changed = False
        for comp in module.computations:
            for c in list(comp.instructions):
                if c.opcode == "copy" and c.parent is comp:
                    changed |= self._fold(module, comp, c)
        return changed

    def _fold(self, module, comp, c):
        if not c.shape.is_array or c.shape.layout is None:
            return False
        new_layout = c.shape.layout
        chain, x = [], c.operands[0]
        while x.opcode != "transpose":
            if x.opcode not in ELEMENTWISE or x.opcode in ("copy", "map") or len(x.users) != 1 \
                    or not x.shape.is_array or x.shape.layout != c.operands[0].shape.layout:
                return False
            arrays = [o for o in x.operands if _scalar_broadcast(o) is None]
            if len(arrays) != 1:
                return False
            chain.append(x)
            x = arrays[0]
        t = x
        if len(t.users) != 1 or t.shape.layout != c.operands[0].shape.layout:
            return False
        # Converts between the dot and the transpose (dot-type-widening's,
        # after a bf16 x bf16 -> bf16 dot computed in f32) follow its layout.
        converts, d = [], t.operands[0]
        while d.opcode == "convert" and len(d.users) == 1 and d.shape.is_array \
                and d.shape.layout == d.operands[0].shape.layout:
            converts.append(d)
            d = d.operands[0]
        if d.opcode != "dot" or len(d.users) != 1 or d is comp.root_instruction \
                or not runtime_dot(d) or d.shape.layout is None \
                or (self.skip is not None and self.skip(d)):
            return False
        nb = len(d.attr("lhs_batch_dims", ()) or ())
        perm = list(range(nb)) + [nb + 1, nb]
        # A result of rank nb + 2: both operands are matrices (runtime_dot).
        if list(t.attr("dimensions")) != perm or matmul_transposed(d.shape, nb) != 0:
            return False
        t_shape = t.shape.with_layout(new_layout)
        # The transpose's dimension k holds the dot's dimension perm[k].
        order = [perm[k] for k in major_to_minor(t_shape)]
        d_shape = d.shape.with_layout(Layout(tuple(reversed(order))))
        if matmul_transposed(d_shape, nb) != 1:
            return False
        d.shape = d_shape
        for x in converts:
            x.shape = x.shape.with_layout(d_shape.layout)
        t.shape = t_shape
        for x in chain:
            x.shape = x.shape.with_layout(new_layout)
            operands = list(x.operands)
            for i, o in enumerate(operands):
                source = _scalar_broadcast(o)
                if source is not None:
                    b = HloInstruction("broadcast", source.shape.with_layout(new_layout),
                                       list(source.operands), attrs=dict(source.attrs),
                                       name=module.unique_name("broadcast"))
                    comp.insert_before(x, b)
                    operands[i] = b
            x.operands = operands
        top = chain[0] if chain else t
        comp.replace_all_uses(c, top)
        comp.remove_instruction(c)
        return True


def _scalar_broadcast(x):
    """The broadcast of a scalar that ``x`` is, or copies (layout
    assignment's) of; None otherwise. Any layout gives the same bytes."""
    while x.opcode == "copy":
        x = x.operands[0]
    if (x.opcode == "broadcast" and len(x.operands) == 1 and x.operands[0].shape.is_array
            and x.operands[0].shape.rank == 0):
        return x
    return None
