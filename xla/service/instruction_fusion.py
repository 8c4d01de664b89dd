"""Instruction fusion: groups elementwise work, reductions and cheap data
movement into ``fusion`` instructions, with the decisions made in C++
(``xla._core.compute_fusion``, csrc/fusion.h documents the algorithm).

Which computations: the entry and, transitively, the computations it runs
through ``while`` (condition and body), ``conditional`` and ``call``; never
reducers, comparators, scatter/map bodies or existing fused computations.

Per computation the pass flattens the instructions (in post order) into
arrays: a kind code (``FUSION_OP_KIND``: unfusible, loop-fusible, reduce,
scalar constant), an ``expensive`` flag (``EXPENSIVE``: never duplicated),
result byte sizes, the operand graph, the root as the live-out value, and a
shape key (reduce: operand dimensions and reduced dimensions; others: output
dimensions), and ``reads_own_index`` (elementwise ops whose operands have
their shape: they read each operand at their own index; everything else
computes a new index per read). Instructions with control dependencies are
unfusible, and so is a bitcast (other than the root) that no fusible
instruction reads, or a reshape that moves no byte (``reshape-to-bitcast``
makes it a bitcast after fusion: a transformer's GELU gradient, reshaped
for the dot of the input gradient, was computed a third time for it): it
stays a view of its operand's buffer (free), where as
a fusion's root it would copy its producers into a kernel of their own, a
second computation of a value already computed for the producer's other
users (an MLP's backward pass computed the ReLU gradient twice per layer:
for the dot that reads it and for the transposed bitcast the weight
gradient's dot reads). A cheap producer that reads an array a
dynamic-update-slice updates, and has users on both sides of that update,
is flagged like an expensive one (computed once): a copy of it in the later
fusion would read the array after the update, which then could not be done
in place.

Each fusion is bounded (csrc/fusion.h, "Bounds"): its longest operand chain
is at most ``max_depth`` instructions (``MAX_FUSION_DEPTH``, 100: the CPU
element generators recurse per fused instruction), and its estimated
emitted code, where a member read through k different index maps (slices
of a concatenate or pad at different offsets) counts k times, at most
``max_emitted_ops`` (``MAX_FUSION_EMITTED_OPS``); an expensive producer is
not fused where it would be evaluated at several indices. A producer that
does not fit starts a new fusion, so a stencil loop becomes a few steps per
fusion instead of code exponential in the number of steps. It gets back
fusion groups and rewrites each into

  %fused_computation.N (param_0: ..., ...) -> ... { members..., ROOT ... }
  %fusion.N = SHAPE fusion(operands...), kind=kLoop|kInput, calls=%fused_computation.N

where the parameters are the values the group reads from outside, in order
of first use. A group with several outputs (a value used outside the group)
is a multi-output fusion: the fused computation's root is a ``tuple`` and
outside users read ``get-tuple-element``s of the fusion. Members computed
only in the fusion move into it (same instruction, same name); duplicated
members (cheap producers copied into several fusions) are clones with fresh
names. Fused computations
are added to the module just before the computation that calls them.

``multi_output`` (the default) lets a producer whose one user group is a
reduce of it alone join that group although other users read it too (it
becomes the reduce fusion's second output: a gradient beside its bias
gradient; csrc/fusion.h), and runs phase 2 of the C++ planner: a
producer fusion read by several consumers merges into its shallowest
consumer, and fusions at the same depth that read the same large value
with compatible shapes (reduces: same operand dimensions and reduced
dimensions; loops: same output dimensions) merge into one multi-output
fusion. XLA runs these as a separate ``multi_output_fusion`` pass; here
both phases share one flattening and one call into C++.
"""
from dataclasses import dataclass, fields, replace

import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo import opcodes
from xla.hlo.ir import HloComputation, HloInstruction
from xla.hlo.shape import Shape
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import add_before_callers
from xla.service.reshape_to_bitcast import moves_no_byte

# Kind codes of csrc/fusion.h's FusionOpKind.
UNFUSIBLE, LOOP, REDUCE, SCALAR_CONSTANT = 0, 1, 2, 3

LOOP_FUSIBLE = (opcodes.ELEMENTWISE - {"map"}) | frozenset("""
broadcast reshape bitcast transpose slice pad concatenate iota dynamic-slice gather reverse
""".split())

# Ops whose duplication costs real time: computed once, never copied.
EXPENSIVE = frozenset("""
exponential exponential-minus-one log log-plus-one tanh logistic divide power remainder
atan2 sqrt rsqrt cbrt sine cosine tan erf gather acos acosh asin asinh atanh cosh sinh
""".split())

FUSION_KINDS = ("kLoop", "kInput")

# Defaults of the bounds on one fusion: csrc/fusion.h's kMaxFusionDepth and
# kMaxFusionEmittedOps (checked against xla._core by the tests).
MAX_FUSION_DEPTH = 100
MAX_FUSION_EMITTED_OPS = 500

# Computations reached through these opcodes are fused like the entry.
_CONTROL_FLOW = frozenset(["while", "conditional", "call"])


@dataclass(frozen=True)
class FusionPolicy:
    """What a backend decides about fusion; the pass does the rest.

    loop_fusible: opcodes that may join a loop fusion (its code generator
        can compute them per element). expensive: opcodes never duplicated
        into several fusions. max_depth / max_emitted_ops: bounds on one
        fusion (csrc/fusion.h, "Bounds"). max_operands: distinct values one
        fusion may read. max_duplicates: fusions a cheap producer may be
        copied into. multi_output: run phase 2 (producer merging and
        sibling multi-output fusion) for groups reading at least
        ``sibling_min_bytes``. fuse_singletons: a lone fusible instruction
        becomes a fusion of one.

    The defaults are target-independent (what ``hlo_opt --passes=fusion``
    runs); each backend keeps its own policy in its folder (the CPU's is
    ``xla/backends/cpu/fusion_policy.py``).
    """
    loop_fusible: frozenset = LOOP_FUSIBLE
    expensive: frozenset = EXPENSIVE
    max_depth: int = MAX_FUSION_DEPTH
    max_emitted_ops: int = MAX_FUSION_EMITTED_OPS
    max_operands: int = 64
    max_duplicates: int = 4
    multi_output: bool = True
    sibling_min_bytes: int = 256
    fuse_singletons: bool = False

    def with_options(self, **options):
        """This policy with some fields replaced; unknown names are an error."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InvalidArgumentError(f"fusion: unknown option(s) {', '.join(unknown)}; "
                                       f"options are {', '.join(sorted(known))}")
        return replace(self, **options)


DEFAULT_POLICY = FusionPolicy()


def fusion_op_kind(instr, has_control_deps, policy=DEFAULT_POLICY):
    if has_control_deps:
        return UNFUSIBLE
    op = instr.opcode
    if op == "constant":
        return SCALAR_CONSTANT if instr.shape.is_array and instr.shape.is_scalar else UNFUSIBLE
    if op == "reduce":
        return REDUCE
    if op in policy.loop_fusible and instr.shape.is_array:
        return LOOP
    return UNFUSIBLE


def _byte_size(shape):
    if shape.is_array:
        return shape.num_elements() * shape.dtype.itemsize
    if shape.is_tuple:
        return sum(_byte_size(s) for s in shape.tuple_shapes)
    return 0


def reads_own_index(instr):
    """Whether ``instr`` reads every operand at its own output index."""
    if instr.opcode not in opcodes.ELEMENTWISE or not instr.shape.is_array:
        return False
    dims = instr.shape.dimensions
    return all(o.shape.is_array and o.shape.dimensions == dims for o in instr.operands)


def _shape_key(instr):
    if instr.opcode == "reduce":
        return hash((tuple(instr.operands[0].shape.dimensions), -1,
                     tuple(instr.attr("dimensions", ()))))
    shape = instr.shape
    return hash(tuple(shape.dimensions)) if shape.is_array else 0


class _NameUniquer:
    """Fresh names against every name already in the module (one scan)."""

    def __init__(self, module):
        self.taken = {i.name for i in module.all_instructions()}
        self.taken.update(c.name for c in module.computations)
        self.next = {}

    def take(self, name):
        self.taken.add(name)
        return name

    def __call__(self, prefix, bare_ok=True):
        base = prefix
        head, _, tail = prefix.rpartition(".")
        if head and tail.isdigit():
            base = head
        if bare_ok and base not in self.taken:
            return self.take(base)
        n = self.next.get(base, 0)
        while True:
            n += 1
            name = f"{base}.{n}"
            if name not in self.taken:
                self.next[base] = n
                return self.take(name)


def computations_to_fuse(module):
    """The entry and what it reaches through while/conditional/call, callees first."""
    if module.entry is None:
        return []
    order, seen = [], set()

    def visit(comp):
        if id(comp) in seen:
            return
        seen.add(id(comp))
        for instr in comp.instructions:
            if instr.opcode in _CONTROL_FLOW:
                for callee in instr.called_computations:
                    visit(callee)
        order.append(comp)

    visit(module.entry)
    return order


def flatten_for_fusion(comp, policy=DEFAULT_POLICY):
    """(instructions in post order, dict of arrays for xla._core.compute_fusion).

    The instruction list itself when it already has operands before users
    (as parsed or sorted), else ``comp.post_order()``.
    """
    order = comp.instructions
    index = {id(instr): k for k, instr in enumerate(order)}
    flat = []
    ends = []
    for k, instr in enumerate(order):
        for o in instr.operands:
            j = index.get(id(o), k)
            if j >= k:
                break
            flat.append(j)
        else:
            ends.append(len(flat))
            continue
        order = comp.post_order()
        index = {id(instr): k for k, instr in enumerate(order)}
        flat = [index[id(o)] for instr in order for o in instr.operands]
        ends = np.cumsum([len(instr.operands) for instr in order]).tolist()
        break
    n = len(order)
    controlled = set()
    for instr in order:
        for pred in instr.control_predecessors:
            controlled.add(id(pred))
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = ends
    kind = np.zeros(n, dtype=np.int8)
    expensive = np.zeros(n, dtype=np.uint8)
    nbytes = np.zeros(n, dtype=np.int64)
    shape_key = np.zeros(n, dtype=np.int64)
    own_index = np.zeros(n, dtype=np.uint8)
    sizes = {}
    root = comp.root_instruction
    for k in range(n - 1, -1, -1):   # users before their operands
        instr = order[k]
        op_kind = fusion_op_kind(instr, bool(instr.control_predecessors) or id(instr) in controlled,
                                 policy)
        if op_kind == LOOP and (instr.opcode == "bitcast" or moves_no_byte(instr)) and \
                instr is not root and \
                not any(kind[index[id(u)]] for u in instr.users if id(u) in index):
            op_kind = UNFUSIBLE   # a view of its operand (module docstring)
        kind[k] = op_kind
        expensive[k] = instr.opcode in policy.expensive
        shape = instr.shape
        size = sizes.get(id(shape))
        if size is None:
            size = sizes[id(shape)] = _byte_size(shape)
        nbytes[k] = size
        if op_kind != UNFUSIBLE:
            shape_key[k] = _shape_key(instr)
            own_index[k] = reads_own_index(instr)
    for k in _copies_that_break_in_place_updates(order, index, kind):
        expensive[k] = 1
    live_out = np.zeros(n, dtype=np.uint8)
    if comp.root_instruction is not None:
        live_out[index[id(comp.root_instruction)]] = 1
    return order, dict(offsets=offsets, indices=np.asarray(flat, dtype=np.int64), kind=kind,
                       expensive=expensive, bytes=nbytes, live_out=live_out, shape_key=shape_key,
                       reads_own_index=own_index)


def _copies_that_break_in_place_updates(order, index, kind):
    """Post-order indices of fusible producers never to duplicate (flagged
    like expensive ones), so that a dynamic-update-slice can stay in place.

    A dynamic-update-slice ``D`` of ``x`` is computed in place (buffer
    assignment, ``in_place_update_operand``) only when nothing reads ``x``
    after ``D``. A fusible ``P`` that reads ``x`` through fusible
    instructions (``x[i] * s``) and has users on both sides of ``D`` (``D``
    itself, or a value ``D`` does not reach, and one computed from ``D``'s
    result) would be copied into the later user's fusion, which then reads
    ``x`` after ``D``: ``D`` writes a copy of ``x``, every time it runs (in
    a loop body, a whole matrix per iteration to update one row). Computed
    once instead, ``P`` is read by both sides. Producers whose users are all
    on one side are not affected."""
    flagged = set()
    for d in order:
        if d.opcode != "dynamic-update-slice":
            continue
        target = d.operands[0]
        # Fusible instructions that read target's elements, directly or
        # through other fusible instructions.
        readers, stack = set(), [target]
        while stack:
            for u in stack.pop().users:
                k = index.get(id(u))
                if k is not None and kind[k] != UNFUSIBLE and k not in readers:
                    readers.add(k)
                    stack.append(u)
        candidates = [k for k in readers if len(order[k].users) > 1]
        if not candidates:
            continue
        # What D reaches, as far as the candidates' users go (post order:
        # nothing past the last of them can be one).
        horizon = max(index.get(id(u), -1) for k in candidates for u in order[k].users)
        after, stack = set(), [d]
        while stack:
            for u in stack.pop().users:
                k = index.get(id(u))
                if k is not None and k <= horizon and k not in after:
                    after.add(k)
                    stack.append(u)
        for k in candidates:
            sides = {index.get(id(u)) in after for u in order[k].users}
            if len(sides) == 2:
                flagged.add(k)
    return flagged


def _clone(instr, operands, name):
    return HloInstruction(instr.opcode, instr.shape, operands, name=name, attrs=dict(instr.attrs),
                          literal=instr.literal, parameter_number=instr.parameter_number)


class InstructionFusion(HloPass):
    """Producer-consumer fusion (and, with ``multi_output``, multi-output fusion)."""

    name = "fusion"

    def __init__(self, policy=None, check=False, **options):
        """``policy``: a FusionPolicy (default: the target-independent one);
        ``options`` replace fields of it (``multi_output=False``...);
        ``check``: the C++ planner verifies its own invariants (tests)."""
        self.policy = (policy or DEFAULT_POLICY).with_options(**options)
        p = self.policy
        self.options = dict(max_operands=p.max_operands, max_duplicates=p.max_duplicates,
                            multi_output=p.multi_output, sibling_min_bytes=p.sibling_min_bytes,
                            fuse_singletons=p.fuse_singletons, max_depth=p.max_depth,
                            max_emitted_ops=p.max_emitted_ops, check=check)

    def run(self, module):
        from xla import _core

        names = None
        changed = False
        new_computations = {}  # id(caller) -> fused computations, in creation order
        for comp in computations_to_fuse(module):
            order, arrays = flatten_for_fusion(comp, self.policy)
            if not order:
                continue
            plan = _core.compute_fusion(**arrays, **self.options)
            if len(plan["group_kind"]) == 0:
                continue
            if names is None:
                names = _NameUniquer(module)
            new_computations[id(comp)] = self._rewrite(comp, order, arrays, plan, names)
            changed = True
        if changed:
            add_before_callers(module, new_computations)
        return changed

    @staticmethod
    def _rewrite(comp, order, arrays, plan, names):
        """Replaces the groups of ``plan`` by fusions. Home members move into
        their fused computation (same object, same name); copies are clones."""
        csr_offsets = arrays["offsets"].tolist()
        csr_indices = arrays["indices"].tolist()
        root_index = int(np.flatnonzero(arrays["live_out"])[0])
        instruction_group = plan["instruction_group"].tolist()
        unfused = plan["unfused"].tolist()
        offsets = plan["group_offsets"].tolist()
        members_all = plan["group_members"].tolist()
        is_output_all = plan["member_is_output"].tolist()
        kinds = plan["group_kind"].tolist()
        value = {}  # node index -> the instruction that holds its value outside fusions

        def value_of(q):
            return order[q] if unfused[q] else value[q]

        fused_computations = []
        new_instrs = []
        for g, kind in enumerate(kinds):
            lo, hi = offsets[g], offsets[g + 1]
            members = members_all[lo:hi]
            outputs = [m for m, out in zip(members, is_output_all[lo:hi]) if out]
            inside = {}  # node index -> its instruction in the fused computation
            params = []
            param_of = {}
            body = []
            for m in members:
                instr = order[m]
                operands = []
                for q in csr_indices[csr_offsets[m]:csr_offsets[m + 1]]:
                    p = inside.get(q)
                    if p is None:
                        p = param_of.get(q)
                        if p is None:
                            number = len(params)
                            p = HloInstruction.create_parameter(number, order[q].shape,
                                                                name=names(f"param_{number}"))
                            param_of[q] = p
                            params.append(q)
                            body.append(p)
                    operands.append(p)
                if instruction_group[m] == g:
                    instr.operands = operands
                    member = instr
                else:
                    member = _clone(instr, operands, names(instr.name, False))
                inside[m] = member
                body.append(member)
            # A multi-output fusion's root is a flat tuple: a tuple-shaped
            # output (a variadic reduce) gives one element per array in it,
            # and outside, a tuple of those stands for its value.
            flat = []     # (output, element index or None)
            if len(outputs) == 1:
                root = inside[outputs[0]]
            else:
                elements = []
                for m in outputs:
                    shape = inside[m].shape
                    if shape.is_tuple:
                        for i, s in enumerate(shape.tuple_shapes):
                            gte = HloInstruction("get-tuple-element", s, [inside[m]],
                                                 name=names("get-tuple-element"), attrs={"index": i})
                            body.append(gte)
                            elements.append(gte)
                            flat.append((m, i))
                    else:
                        elements.append(inside[m])
                        flat.append((m, None))
                root = HloInstruction("tuple", Shape.tuple([e.shape for e in elements]),
                                      elements, name=names("tuple"))
                body.append(root)
            fused = HloComputation(names("fused_computation"), body, root=root)
            fused_computations.append(fused)
            attrs = {"kind": FUSION_KINDS[kind], "calls": fused}
            metadata = order[members[-1]].attrs.get("metadata")
            if metadata is not None:
                attrs["metadata"] = metadata
            fusion = HloInstruction("fusion", root.shape, [value_of(q) for q in params],
                                    name=names("fusion"), attrs=attrs)
            new_instrs.append(fusion)
            if len(outputs) == 1:
                value[outputs[0]] = fusion
            else:
                parts = {}
                for k, (m, i) in enumerate(flat):
                    gte = HloInstruction("get-tuple-element", root.operands[k].shape, [fusion],
                                         name=names("get-tuple-element"), attrs={"index": k})
                    new_instrs.append(gte)
                    if i is None:
                        value[m] = gte
                    else:
                        parts.setdefault(m, []).append(gte)
                for m, gtes in parts.items():
                    tup = HloInstruction("tuple", inside[m].shape, gtes, name=names("tuple"))
                    new_instrs.append(tup)
                    value[m] = tup

        kept = []
        for k, instr in enumerate(order):
            if not unfused[k]:
                continue
            ops = csr_indices[csr_offsets[k]:csr_offsets[k + 1]]
            if not all(unfused[q] for q in ops):
                instr.operands = [value_of(q) for q in ops]
            kept.append(instr)
        for instr in new_instrs:
            instr.parent = comp
        comp.instructions = kept + new_instrs
        comp.root_instruction = value_of(root_index)
        comp.sort_post_order()
        return fused_computations
