"""matrix-vector-pair-fusion: two independent matrix-vector products of one
matrix, ``A x`` and ``y A`` (BiCG's ``A p`` and ``r A``, mvt's two
updates), become one kLoop fusion whose root is the tuple of the two dots;
the CPU emitter computes it in one pass over A (``emit_matrix_vector_pair.py``),
where the runtime's matmul reads A twice. Such products are bound by
reading A (1200x1000 f64: 9.6 MB), so one pass takes about half the time.

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
"""
from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import add_before_callers, fusion_computations

MIN_ELEMENTS = 1 << 16     # smaller matrices stay in cache: two passes cost little
_TYPES = ("f32", "f64")


def _row_major(shape):
    layout = shape.layout
    return layout is None or list(layout.minor_to_major) == list(range(shape.rank))[::-1]


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
    if any(s.element_type.text != et or not _row_major(s)
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
                        or not _row_major(shape) or shape.num_elements() < MIN_ELEMENTS:
                    continue
                users = [u for u in matrix.users if u.parent is comp]
                rows = next((u for u in users if pair_role(u, matrix) == "rows"), None)
                cols = next((u for u in users if pair_role(u, matrix) == "cols"), None)
                if rows is None or cols is None or _reaches(rows, cols) or _reaches(cols, rows):
                    continue
                new.setdefault(id(comp), []).append(self._fuse(module, comp, matrix, rows, cols))
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
