"""matrix-vector-pair-fusion: two matrix-vector products of one matrix
become one kLoop fusion whose root is the tuple of the two dots; the CPU
emitter computes it in one pass over A (``emit_matrix_vector_pair.py``),
where the runtime's matmul reads A twice. Such products are bound by
reading A (1200x1000 f64: 9.6 MB), so one pass takes about half the time.
Two forms:

* the independent pair ``A x`` and ``y A`` (BiCG's ``A p`` and ``r A``,
  mvt's two updates);
* the dependent chain ``t = A x`` then ``t A`` (``A.T @ (A @ x)``: atax),
  described below.

Runs after ``fusion`` (the dots stay library calls until then, and no
consumer is fused into the pair). A pair is fused when: both dots read the
same instruction ``A``, a 2-D f32/f64 array laid out row-major with at
least ``MIN_ELEMENTS`` elements; one is ``dot(A, x)`` contracting A's
dimension 1 with x of shape ``[K]`` or ``[K, 1]``, the other ``dot(y, A)``
contracting y's last dimension (``[M]`` or ``[1, M]``) with A's dimension
0; no batch dimensions; all of one element type, x, y and the results
row-major; and neither dot depends on the other. Each matrix takes at most
one pair (the first such dots in instruction order). Nothing else changes:
the fused computation holds the two dots as they were, and each dot's
users read its get-tuple-element.

The chain: ``A x`` as above (the first such dot of A) and a dot reading
it, after any reshapes and bitcasts between (no other op: a convert, a
scale or an add stops it), as ``dot(t, A)`` of the pair's form, or as
``dot(A^T, t)`` with ``A^T`` a bitcast of A to ``[K, M]{0,1}`` (what
``dot-operand-layouts`` makes of ``transpose(A)``) or a ``transpose(A)``,
contracting ``A^T``'s dimension 1 with t ``[M]`` or ``[M, 1]``; the same
type, layout and size conditions, and only when A has no independent pair.
Its fusion reads A and x; its computation is ``tuple(A x, dot(reshape(A x)
to [1, M], A))`` (the second product ``f[1, K]``, reshaped after the fusion
to the shape the replaced dot had); ``A x``'s users read the first
element, so ``t`` is stored whether or not anything else reads it (M
elements), and the reshapes and the view of A that nothing reads any more
are removed.
"""
from xla.backends.cpu.loop_emitter import is_row_major
from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import add_before_callers, fusion_computations

MIN_ELEMENTS = 1 << 16     # smaller matrices stay in cache: two passes cost little
_TYPES = ("f32", "f64")


def _vector_like(shape, n, leading_one):
    """``[n]``, or ``[1, n]`` (``leading_one``) / ``[n, 1]``."""
    dims = tuple(shape.dimensions)
    return dims == (n,) or dims == ((1, n) if leading_one else (n, 1))


def pair_role(dot, matrix):
    """"rows" for ``dot(matrix, x)``, "cols" for ``dot(y, matrix)``, None
    for any other dot (see the module docstring)."""
    if dot.opcode != "dot" or len(dot.operands) != 2 or dot.attr("lhs_batch_dims", ()) or \
            dot.attr("rhs_batch_dims", ()):
        return None
    lhs, rhs = dot.operands
    lc = tuple(dot.attr("lhs_contracting_dims", ()) or ())
    rc = tuple(dot.attr("rhs_contracting_dims", ()) or ())
    et = matrix.shape.element_type.text
    if any(s.element_type.text != et or not is_row_major(s)
           for s in (lhs.shape, rhs.shape, dot.shape)):
        return None
    m, k = matrix.shape.dimensions
    if lhs is matrix and rhs is not matrix and lc == (1,) and rc == (0,) and \
            _vector_like(rhs.shape, k, leading_one=False):
        return "rows"
    if rhs is matrix and lhs is not matrix and rc == (0,) and lc == (lhs.shape.rank - 1,) and \
            _vector_like(lhs.shape, m, leading_one=True):
        return "cols"
    return None


def _transposed_view(view, matrix):
    """Whether ``view`` is ``transpose(matrix)`` or a bitcast of it to the
    same bytes read as ``[K, M]{0,1}``."""
    m, k = matrix.shape.dimensions
    if len(view.operands) != 1 or view.operands[0] is not matrix or \
            tuple(view.shape.dimensions) != (k, m):
        return False
    if view.opcode == "transpose":
        return tuple(view.attr("dimensions", ()) or ()) == (1, 0)
    layout = view.shape.layout
    return view.opcode == "bitcast" and layout is not None and \
        tuple(layout.minor_to_major) == (0, 1)


def chain_dot(dot, matrix, t):
    """Whether ``dot`` is ``t A`` (``dot(t, A)``) or ``A^T t`` (``dot(A^T,
    t)``) of the chain (module docstring)."""
    if dot.opcode != "dot" or len(dot.operands) != 2 or dot.attr("lhs_batch_dims", ()) or \
            dot.attr("rhs_batch_dims", ()):
        return False
    lhs, rhs = dot.operands
    if lhs is t and rhs is matrix:
        return pair_role(dot, matrix) == "cols"
    if rhs is not t or not _transposed_view(lhs, matrix):
        return False
    lc = tuple(dot.attr("lhs_contracting_dims", ()) or ())
    rc = tuple(dot.attr("rhs_contracting_dims", ()) or ())
    m, k = matrix.shape.dimensions
    et = matrix.shape.element_type.text
    return lc == (1,) and rc == (0,) and _vector_like(t.shape, m, leading_one=False) and \
        all(s.element_type.text == et for s in (t.shape, dot.shape)) and \
        is_row_major(t.shape) and is_row_major(dot.shape) and tuple(dot.shape.dimensions) in ((k,), (k, 1))


def _chain(rows, matrix):
    """(the dot reading ``rows`` as the chain's second product, the reshapes
    and bitcasts between them) for the first such dot, else None."""
    comp, m = rows.parent, matrix.shape.dimensions[0]
    et = matrix.shape.element_type.text
    stack = [(rows, ())]
    while stack:
        t, between = stack.pop(0)
        for user in t.users:
            if user.parent is not comp:
                continue
            if user.opcode in ("reshape", "bitcast") and user.shape.is_array and \
                    user.shape.num_elements() == m and user.shape.element_type.text == et and \
                    is_row_major(user.shape):
                stack.append((user, between + (user,)))
            elif chain_dot(user, matrix, t):
                return user, between
    return None


def _reaches(start, target):
    """Whether ``target`` is ``start`` or one of its transitive operands."""
    seen, stack = set(), [start]
    while stack:
        instr = stack.pop()
        if instr is target:
            return True
        if id(instr) not in seen:
            seen.add(id(instr))
            stack.extend(instr.operands)
    return False


class MatrixVectorPairFusion(HloPass):
    name = "matrix-vector-pair-fusion"

    def run(self, module):
        changed = False
        fused = fusion_computations(module)
        new = {}   # id(caller) -> its new fused computations
        for comp in list(module.computations):
            if id(comp) in fused:
                continue
            for matrix in list(comp.instructions):
                shape = matrix.shape
                if not shape.is_array or shape.rank != 2 or shape.element_type.text not in _TYPES \
                        or not is_row_major(shape) or shape.num_elements() < MIN_ELEMENTS:
                    continue
                users = [u for u in matrix.users if u.parent is comp]
                rows = next((u for u in users if pair_role(u, matrix) == "rows"), None)
                cols = next((u for u in users if pair_role(u, matrix) == "cols"), None)
                if rows is None:
                    continue
                if cols is not None and not _reaches(rows, cols) and not _reaches(cols, rows):
                    fused_comp = self._fuse(module, comp, matrix, rows, cols)
                else:
                    chain = _chain(rows, matrix)
                    if chain is None:
                        continue
                    fused_comp = self._fuse_chain(module, comp, matrix, rows, *chain)
                new.setdefault(id(comp), []).append(fused_comp)
                changed = True
        if changed:
            add_before_callers(module, new)
        return changed

    @staticmethod
    def _fuse(module, comp, matrix, rows, cols):
        x, y = rows.operands[1], cols.operands[0]
        params = [HloInstruction.create_parameter(i, o.shape, name=module.unique_name(f"param_{i}"))
                  for i, o in enumerate((matrix, x, y))]
        a, p_x, p_y = params
        d_rows = HloInstruction("dot", rows.shape, [a, p_x], name=module.unique_name(rows.name),
                                attrs=dict(rows.attrs))
        d_cols = HloInstruction("dot", cols.shape, [p_y, a], name=module.unique_name(cols.name),
                                attrs=dict(cols.attrs))
        root = HloInstruction("tuple", Shape.tuple([rows.shape, cols.shape]), [d_rows, d_cols],
                              name=module.unique_name("tuple"))
        fused = HloComputation(module.unique_name("fused_matrix_vector_pair"),
                               params + [d_rows, d_cols, root], root=root)
        fusion = HloInstruction("fusion", root.shape, [matrix, x, y],
                                name=module.unique_name("fusion"),
                                attrs={"kind": "kLoop", "calls": fused})
        parts = [HloInstruction("get-tuple-element", d.shape, [fusion],
                                name=module.unique_name("get-tuple-element"), attrs={"index": i})
                 for i, d in enumerate((rows, cols))]
        # Before the earlier dot, every operand of both defined: re-sorted below.
        first = min((rows, cols), key=comp.instructions.index)
        comp.insert_before(first, fusion)
        for part in parts:
            comp.insert_before(first, part)
        for dot, part in zip((rows, cols), parts):
            comp.replace_all_uses(dot, part)
            comp.remove_instruction(dot)
        comp.sort_post_order()
        return fused

    @staticmethod
    def _fuse_chain(module, comp, matrix, rows, second, between):
        m, k = matrix.shape.dimensions
        et = matrix.shape.element_type
        x = rows.operands[1]
        a, p_x = [HloInstruction.create_parameter(i, o.shape, name=module.unique_name(f"param_{i}"))
                  for i, o in enumerate((matrix, x))]
        d_rows = HloInstruction("dot", rows.shape, [a, p_x], name=module.unique_name(rows.name),
                                attrs=dict(rows.attrs))
        t = HloInstruction("reshape", Shape.array(et, (1, m)), [d_rows],
                           name=module.unique_name("reshape"))
        attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}
        if "metadata" in second.attrs:
            attrs["metadata"] = second.attrs["metadata"]
        d_second = HloInstruction("dot", Shape.array(et, (1, k)), [t, a],
                                  name=module.unique_name(second.name), attrs=attrs)
        root = HloInstruction("tuple", Shape.tuple([rows.shape, d_second.shape]), [d_rows, d_second],
                              name=module.unique_name("tuple"))
        fused = HloComputation(module.unique_name("fused_matrix_vector_chain"),
                               [a, p_x, d_rows, t, d_second, root], root=root)
        fusion = HloInstruction("fusion", root.shape, [matrix, x],
                                name=module.unique_name("fusion"),
                                attrs={"kind": "kLoop", "calls": fused})
        parts = [HloInstruction("get-tuple-element", d.shape, [fusion],
                                name=module.unique_name("get-tuple-element"), attrs={"index": i})
                 for i, d in enumerate((d_rows, d_second))]
        view = second.operands[0] if _transposed_view(second.operands[0], matrix) else None
        comp.insert_before(rows, fusion)
        for part in parts:
            comp.insert_before(rows, part)
        result = parts[1]
        if tuple(second.shape.dimensions) != (1, k):
            result = HloInstruction("reshape", second.shape, [parts[1]],
                                    name=module.unique_name("reshape"))
            comp.insert_before(rows, result)
        comp.replace_all_uses(rows, parts[0])
        comp.replace_all_uses(second, result)
        comp.remove_instruction(rows)
        comp.remove_instruction(second)
        # The reshapes between (last first) and A's view, where nothing reads them now.
        for instr in reversed(between + ((view,) if view is not None else ())):
            if not instr.users and instr is not comp.root_instruction:
                comp.remove_instruction(instr)
        comp.sort_post_order()
        return fused
