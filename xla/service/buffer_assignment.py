"""Buffer assignment: where every array of a scheduled module lives.

``assign_buffers(module)`` reads the schedule (each computation's
``instructions``, see ``HloMemoryScheduler``) and returns a
``BufferAssignment``: logical buffers, their live ranges, and allocations
with each buffer's offset. The analysis is Python (one pass over the
instructions); the packing is C++ (``xla._core.assign_buffers``,
csrc/buffer_assignment.h), called once per module with flat arrays.

Logical buffers (XLA's LogicalBuffer): every array leaf of an instruction's
shape and every tuple's index table (8 bytes per element), tokens none, with
these aliasing rules instead of new buffers:

* get-tuple-element is the operand's buffer at its index; bitcast,
  opt-barrier and add-dependency (operand 0) are their operand's buffers;
  a tuple defines only its index table, its elements are its operands';
* while: the result, the body parameter, the condition parameter and, when
  it is safe, the body root and the init operand share one slot per shape
  index (a colocation set). The body root's buffer joins only if it is a temp
  of the body defined after the body parameter's buffer at that index was
  last read (or by an elementwise op or DUS reading it last: in place),
  and with it the chain of temps it updates in place back to one that
  updates the parameter's buffer in place (``x[i] += u; x[i] /= 9``: two
  DUSes, both on the state's slot; ``in_place_chain``); the init
  buffer joins only if it is a temp of the caller, not live out, not in
  another set (unless it is the state of the loop whose body runs this
  one, its body parameter, and nothing else holds that slot while this
  loop runs: ``enclosing_state``, a nested loop updating the outer
  loop's state in place), and the while is its last user. An index the
  body passes through unchanged and whose result nothing reads joins the
  init's buffer (a temp or parameter) whoever else reads it: the loop only
  reads it. Otherwise XLA's copy insertion would copy: the buffer keeps its
  own slot, live across the loop;
* conditional: per array of the branches' operand (one tuple every branch
  shares), when each branch passes it through or updates it in place as
  its last reader and the operand is a temp the conditional reads last
  (a while body's state included), the operand, the branch parameters,
  their roots and the result share one slot; an array no branch returns
  is read from the operand's buffer; everything else is copied in and out;
* call: copy in, copy out. The called computation's parameters and root
  are buffers of their own, live over the whole call;
* computations called by fusion, reduce, sort, map, scatter... get no
  buffers: they run in registers inside their caller's loops;
* in-place reuse (XLA's CanShareBuffer): an elementwise instruction, or a
  kLoop fusion made only of elementwise ops (parameters, scalar constants and
  their broadcasts aside), whose array result has the same dimensions,
  layout and byte size as an operand's buffer, shares that buffer when it is its last
  user and the buffer is a temp (not a parameter, constant, live-out or loop
  buffer); each output of such a fusion with a tuple root likewise, over an
  operand that output reads (the kernel computes the outputs in turn at
  each element and keeps what it loaded for the later ones, so nothing
  reads an element after it was overwritten: ``_output_reads``); so does a dynamic-update-slice with its operand 0, and a kLoop
  fusion rooted at one with the operand bound to the DUS's array when
  nothing else in the fusion reads it (``in_place_update_operand``): the
  kernel then writes only the update;
* ``input_output_alias`` in the header: the output shares its parameter's
  allocation when that is safe (``alias_is_safe``); otherwise the alias,
  a ``may-alias``, is dropped rather than copied around.

Kinds: the entry's parameters are ``parameter`` allocations (one per
buffer, never written unless aliased to an output); constants are read-only
``constant`` allocations; the entry result's buffers are ``maybe-live-out``
allocations; everything else is packed into one ``preallocated-temp`` arena.

Liveness: the schedules are flattened into one sequence of positions: each
computation a while, conditional or call runs is laid out, at its first
call, just before the calling instruction (condition and body of a while in
attribute order). A buffer lives from the position of the instruction that
defines it to the position of its last user (through aliases); live-out
buffers to the last position. Called computations nest: their buffers live
inside the caller's window, so a while body's temporaries are packed in the
same arena and may reuse memory the caller does not hold across the loop
(the loop state and the while's operands span the whole window). A called
computation's parameters live from the start of its window and its root's
buffers until the calling instruction; a computation called from several
places has all its buffers live from its first window to its last caller.
"""
import numpy as np

from xla.gc_util import paused_gc
from xla import _core
from xla.errors import InvalidArgumentError
from xla.hlo.attributes import RawAttr
from xla.hlo.opcodes import ELEMENTWISE

ALIGNMENT = 64

# Instructions whose called computations have buffers of their own.
_CONTROL_FLOW = frozenset(["while", "conditional", "call"])

_KIND_CODES = {"temp": 0, "parameter": 1, "constant": 2, "output": 3}
_KIND_NAMES = {0: "preallocated-temp", 1: "parameter", 2: "constant", 3: "maybe-live-out"}


class LogicalBuffer:
    """One array (or tuple index table) defined by ``instruction`` at ``index``."""

    __slots__ = ("id", "instruction", "index", "shape", "size", "kind", "start", "end",
                 "last_use", "live_out", "allocation", "offset", "slot")

    def __init__(self, id, instruction, index, shape, kind):
        self.id = id
        self.instruction = instruction
        self.index = index
        self.shape = shape
        self.size = shape.byte_size()
        self.kind = kind
        self.start = self.end = self.last_use = -1
        self.live_out = False
        self.allocation = None
        self.offset = 0
        self.slot = -1

    @property
    def name(self):
        return f"%{self.instruction.name}{{{','.join(map(str, self.index))}}}"

    def __repr__(self):
        return f"<LogicalBuffer {self.id} {self.name} size={self.size} [{self.start}, {self.end}]>"


class BufferAllocation:
    """A contiguous block: one parameter, constant or output, or the temp arena."""

    def __init__(self, index, size, kind):
        self.index = index
        self.size = size
        self.kind = kind  # "parameter" | "constant" | "maybe-live-out" | "preallocated-temp"
        self.buffers = []
        self.parameter_number = None
        self.parameter_index = None
        self.maybe_live_out = kind == "maybe-live-out"

    def __repr__(self):
        return f"<BufferAllocation {self.index} {self.kind} size={self.size}>"


class BufferAssignment:
    """The result of ``assign_buffers``.

    Attributes:
      buffers: every LogicalBuffer, in definition order.
      allocations: BufferAllocation list; each buffer's ``allocation`` and
        ``offset`` say where it lives.
      temp_bytes: size of the temp arena.
      peak_bytes: the largest sum of sizes of temp slots live at one position
        (computed here from the live ranges; the arena can only be larger).
      sequence: the flattened schedule (instructions by position).
    """

    def __init__(self, module, buffers, allocations, sequence, points_to, core_result):
        self.module = module
        self.buffers = buffers
        self.allocations = allocations
        self.sequence = sequence
        self._points_to = points_to
        arena = core_result["arena_allocation"]
        self.temp_bytes = int(core_result["arena_size"]) if arena >= 0 else 0
        self.core_peak_bytes = int(core_result["peak_temp_bytes"])
        # The heuristic whose arena was kept: "global-decreasing-size" or
        # "sweep" (csrc/buffer_assignment.h).
        self.packing = str(core_result["packing"])
        self.slot_sizes = core_result["slot_size"]
        self.slot_starts = core_result["slot_start"]
        self.slot_ends = core_result["slot_end"]
        self.slot_kinds = core_result["slot_kind"]
        self.peak_bytes = self._peak_temp_bytes()

    def _peak_temp_bytes(self):
        temp = self.slot_kinds == _KIND_CODES["temp"]
        if not np.any(temp) or not self.sequence:
            return 0
        delta = np.zeros(len(self.sequence) + 1, dtype=np.int64)
        np.add.at(delta, self.slot_starts[temp], self.slot_sizes[temp])
        np.add.at(delta, self.slot_ends[temp] + 1, -self.slot_sizes[temp])
        return int(np.cumsum(delta).max())

    def buffers_of(self, instr):
        """{shape index: LogicalBuffer} for an instruction that has buffers."""
        return dict(self._points_to[id(instr)])

    def buffer(self, instr, index=()):
        return self._points_to[id(instr)][tuple(index)]

    def has_buffers(self, instr):
        return id(instr) in self._points_to

    def total_bytes(self):
        return sum(a.size for a in self.allocations)

    def to_text(self):
        """A report in the style of XLA's ``*-buffer-assignment.txt``."""
        lines = ["BufferAssignment:"]
        for alloc in self.allocations:
            head = f"allocation {alloc.index}: size {alloc.size}"
            if alloc.kind == "parameter":
                index = ",".join(map(str, alloc.parameter_index or ()))
                head += f", parameter {alloc.parameter_number}, shape index {{{index}}}"
                if alloc.maybe_live_out:
                    head += ", maybe-live-out"
            elif alloc.kind == "constant":
                head += ", constant" + (", maybe-live-out" if alloc.maybe_live_out else "")
            else:
                head += f", {alloc.kind}"
            lines.append(head + ":")
            for b in sorted(alloc.buffers, key=lambda b: (b.offset, b.id)):
                lines.append(f" value: {b.name} (size={b.size},offset={b.offset}): {b.shape}")
        lines.append("")
        total = self.total_bytes()
        lines.append(f"Total bytes used: {total} ({_human(total)})")
        lines.append(f"Temp arena bytes: {self.temp_bytes}")
        lines.append(f"Peak live temp bytes: {self.peak_bytes}")
        lines.append("")
        lines.append("Live ranges (flattened schedule positions, inclusive):")
        for b in self.buffers:
            lines.append(f" {b.name}: [{b.start}, {b.end}]")
        return "\n".join(lines) + "\n"

    def memory_usage_report(self, top=10):
        by_kind = {}
        for alloc in self.allocations:
            by_kind[alloc.kind] = by_kind.get(alloc.kind, 0) + alloc.size
        lines = [f"Total temp bytes: {self.temp_bytes} ({_human(self.temp_bytes)})",
                 f"Peak live temp bytes: {self.peak_bytes} ({_human(self.peak_bytes)})"]
        for kind in ("parameter", "constant", "maybe-live-out"):
            lines.append(f"Total {kind} bytes: {by_kind.get(kind, 0)}")
        lines.append(f"Largest buffers (top {top}):")
        largest = sorted(self.buffers, key=lambda b: (-b.size, b.id))[:top]
        for rank, b in enumerate(largest, 1):
            alloc = b.allocation
            lines.append(f" {rank}. {b.name}: {b.size} bytes, {b.shape}, allocation {alloc.index} "
                         f"({alloc.kind}) offset {b.offset}, live [{b.start}, {b.end}]")
        return "\n".join(lines) + "\n"


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n}{unit}" if unit == "B" else f"{n:.2f}{unit}"
        n /= 1024


def _buffer_positions(shape, index=()):
    """(index, subshape) for every array leaf and tuple of ``shape``."""
    if shape.is_tuple:
        out = [(index, shape)]
        for i, s in enumerate(shape.tuple_shapes):
            out.extend(_buffer_positions(s, index + (i,)))
        return out
    return [(index, shape)] if shape.is_array else []


def in_place_update_operand(instr):
    """The operand a dynamic-update-slice (or a fusion whose root is one)
    may write its result over, as XLA updates in place: operand 0 of the
    DUS, for a fusion the operand bound to that parameter when nothing else
    in the fused computation reads it and no other operand is the same
    value. None otherwise."""
    if instr.opcode == "dynamic-update-slice":
        return instr.operands[0]
    if instr.opcode != "fusion" or instr.attr("kind") != "kLoop":
        return None
    calls = instr.attr("calls")
    root = calls.root_instruction if calls is not None else None
    if root is None or root.opcode != "dynamic-update-slice":
        return None
    param = root.operands[0]
    if param.opcode != "parameter" or any(u is not root for u in param.users) or \
            root.operands.count(param) != 1:
        return None
    operand = instr.operands[param.parameter_number]
    if instr.operands.count(operand) != 1:
        return None
    return operand


def _is_elementwise_fusion(instr):
    """A kLoop fusion of elementwise ops (parameters, scalar constants and
    their broadcasts aside), its root a tuple of arrays or not."""
    if instr.opcode != "fusion" or instr.attr("kind") != "kLoop":
        return False
    calls = instr.attr("calls")
    if calls is None:
        return False
    root = calls.root_instruction
    for f in calls.instructions:
        op = f.opcode
        if op in ELEMENTWISE or op == "parameter":
            continue
        if op == "tuple" and f is root and all(o.shape.is_array for o in f.operands):
            continue
        if op == "constant" and f.shape.is_scalar:
            continue
        if op == "broadcast" and f.operands[0].shape.is_scalar:
            continue
        return False
    return True


def _output_reads(fusion, k, operand_numbers):
    """Whether output ``k`` of the multi-output fusion ``fusion`` reads one
    of its parameters ``operand_numbers``. The kernel computes its outputs
    one after another at each element and keeps each element it loaded for
    the outputs after (``ElementGenerator``'s memo): output ``k`` may be
    written over an operand's element once it has read it, and no later
    output reads that element from memory again."""
    root = fusion.attr("calls").root_instruction
    wanted = set(operand_numbers)
    seen, stack = set(), [root.operands[k]]
    while stack:
        h = stack.pop()
        if id(h) in seen:
            continue
        seen.add(id(h))
        if h.opcode == "parameter" and h.parameter_number in wanted:
            return True
        stack.extend(h.operands)
    return False


def _parse_input_output_alias(module):
    """[(output index, parameter number, parameter index)] from the header."""
    import re
    value = module.header_attrs.get("input_output_alias")
    if value is None:
        return []
    text = value.text if isinstance(value, RawAttr) else str(value)
    out = []
    for m in re.finditer(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}", text):
        def idx(g):
            return tuple(int(x) for x in g.replace(" ", "").split(",") if x)
        out.append((idx(m.group(1)), int(m.group(2)), idx(m.group(3))))
    return out


class _UnionFind:
    def __init__(self):
        self.parent = []

    def add(self):
        self.parent.append(len(self.parent))

    def find(self, x):
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[b] = a
        return a


def assign_buffers(module, alignment=ALIGNMENT, fit="best"):
    """Assigns buffers for a scheduled module (see the module docstring)."""
    if not module.is_scheduled:
        raise InvalidArgumentError(
            f"buffer assignment needs a scheduled module; run HloMemoryScheduler on {module.name} first")
    with paused_gc():
        return _Assigner(module, alignment, fit).run()


def _dead_results(w):
    """The shape indices (one level) of ``w``'s result that nothing reads:
    every user of ``w`` is a get-tuple-element of another index."""
    if w.is_root or not w.shape.is_tuple:
        return ()
    used = set()
    for u in w.users:
        if u.opcode != "get-tuple-element":
            return ()
        used.add(u.attr("index"))
    return {(k,) for k in range(len(w.shape.tuple_shapes)) if k not in used}


def _runs_computations(instr):
    """Whether ``instr``'s buffers are those of computations it runs (a
    nested while's loop state, a conditional's or call's results). Such a
    buffer joins its own colocation set (with the nested loop's init and
    body buffers) when that instruction is assigned, which may be after an
    enclosing loop's in-place chain took it: the nested loop's init, written
    before the outer state's last read, then shared the outer state's slot
    (a windowed dot's ring inside a partitioned loop: every element wrong)."""
    return (instr.opcode in ("while", "conditional", "call", "async-start", "async-done")
            or instr.opcode.endswith(("-start", "-done")))


class _Assigner:
    def __init__(self, module, alignment, fit):
        self.module = module
        self.alignment = alignment
        self.fit = fit
        self.buffers = []
        self.points_to = {}        # id(instr) -> {index: LogicalBuffer}
        self.pos = {}              # id(instr) -> position
        self.sequence = []
        self.window = {}           # id(comp) -> [start, end]
        self.multi = set()         # id(comp) called from more than one place
        self.comps = []            # computations with buffers, in layout order
        self.call_edges = []       # (caller comp, callee comp) in discovery order
        self.uf = _UnionFind()

    # ----- flattening -------------------------------------------------------
    def layout(self, comp):
        self.comps.append(comp)
        start = len(self.sequence)
        self.window[id(comp)] = [start, start]
        for instr in comp.instructions:
            callees = instr.called_computations if instr.opcode in _CONTROL_FLOW else ()
            for callee in callees:
                self.call_edges.append((comp, callee))
                if id(callee) in self.window:
                    self.multi.add(id(callee))
                else:
                    self.layout(callee)
            self.pos[id(instr)] = len(self.sequence)
            self.sequence.append(instr)
            for callee in callees:
                w = self.window[id(callee)]
                w[1] = max(w[1], self.pos[id(instr)])
        self.window[id(comp)][1] = max(self.window[id(comp)][1], len(self.sequence) - 1)

    # ----- logical buffers ----------------------------------------------------
    def new_buffer(self, instr, index, shape, kind):
        b = LogicalBuffer(len(self.buffers), instr, index, shape, kind)
        self.buffers.append(b)
        self.uf.add()
        return b

    def define(self, instr, kind):
        return {index: self.new_buffer(instr, index, s, kind)
                for index, s in _buffer_positions(instr.shape)}

    def compute_points_to(self, comp):
        entry = comp is self.module.entry
        pts = self.points_to
        for instr in comp.instructions:
            op = instr.opcode
            if op == "get-tuple-element":
                k = instr.attr("index")
                src = pts[id(instr.operands[0])]
                out = {index[1:]: b for index, b in src.items() if index[:1] == (k,)}
            elif op == "bitcast" and instr.operands and not instr.operands[0].shape.is_tuple:
                out = dict(pts[id(instr.operands[0])])
            elif op in ("opt-barrier", "add-dependency") and instr.operands:
                out = dict(pts[id(instr.operands[0])])
            elif op == "tuple":
                out = {(): self.new_buffer(instr, (), instr.shape, "temp")}
                for i, o in enumerate(instr.operands):
                    for index, b in pts[id(o)].items():
                        out[(i,) + index] = b
            elif op == "parameter":
                out = self.define(instr, "parameter" if entry else "temp")
            elif op == "constant":
                out = self.define(instr, "constant")
            else:
                out = self.define(instr, "temp")
            pts[id(instr)] = out

    # ----- liveness -----------------------------------------------------------
    def compute_liveness(self):
        pts = self.points_to
        last = len(self.sequence) - 1
        for b in self.buffers:
            b.start = self.pos[id(b.instruction)]
            b.end = b.start
            b.last_use = -1
        for comp in self.comps:
            for instr in comp.instructions:
                p = self.pos[id(instr)]
                for o in instr.operands:
                    for b in pts[id(o)].values():
                        if p > b.last_use:
                            b.last_use = p
        for b in self.buffers:
            b.end = max(b.end, b.last_use)
        # Multi-called computations make their callees multi-called too.
        for caller, callee in self.call_edges:
            if id(caller) in self.multi:
                self.multi.add(id(callee))
                w = self.window[id(callee)]
                w[1] = max(w[1], self.window[id(caller)][1])
        for comp in self.comps:
            start, end = self.window[id(comp)]
            if comp is self.module.entry:
                for param in comp.parameters:  # filled before the program runs
                    for b in pts[id(param)].values():
                        b.start = 0
                for b in pts[id(comp.root_instruction)].values():
                    b.live_out = True
                    b.end = last
                continue
            if id(comp) in self.multi:
                for instr in comp.instructions:
                    for b in pts[id(instr)].values():
                        b.start, b.end = min(b.start, start), max(b.end, end)
            for param in comp.parameters:
                for b in pts[id(param)].values():
                    b.start = start
            for b in pts[id(comp.root_instruction)].values():
                b.end = max(b.end, end)
        for b in self.buffers:
            if b.live_out and b.kind == "temp":
                b.kind = "output"

    # ----- colocation ---------------------------------------------------------
    def singleton(self, b):
        return self.set_size[self.uf.find(b.id)] == 1

    def join(self, a, b, pinned=False):
        ra, rb = self.uf.find(a.id), self.uf.find(b.id)
        if ra == rb:
            return
        r = self.uf.union(ra, rb)
        other = rb if r == ra else ra
        self.set_size[r] += self.set_size[other]
        self.set_end[r] = max(self.set_end[r], self.set_end[other])
        self.pinned[r] = self.pinned[r] or self.pinned[other] or pinned

    def colocate(self):
        pts = self.points_to
        self.set_size = [1] * len(self.buffers)
        self.set_end = [b.end for b in self.buffers]
        self.pinned = [b.kind != "temp" for b in self.buffers]
        self.while_of_body = {id(w.attr("body")): w for comp in self.comps
                              for w in comp.instructions if w.opcode == "while"}
        self.while_bodies = set(self.while_of_body)
        for comp in self.comps:
            for w in comp.instructions:
                if w.opcode == "while":
                    self.colocate_while(w)
                elif w.opcode == "conditional":
                    self.colocate_conditional(w)
        for out_index, number, param_index in _parse_input_output_alias(self.module):
            entry = self.module.entry
            try:
                out = pts[id(entry.root_instruction)][out_index]
                param = pts[id(entry.parameter(number))][param_index]
            except (KeyError, IndexError):
                continue
            if self.alias_is_safe(param, out):
                self.join(param, out, pinned=True)
        for comp in self.comps:
            for instr in comp.instructions:
                self.share_in_place(instr)

    def alias_is_safe(self, param, out):
        """Whether the output buffer ``out`` may be written over the donated
        parameter buffer ``param``. XLA's copy insertion would add a copy
        where it may not; here the alias (``may-alias``) is dropped instead
        and the output gets its own allocation. Safe when ``param`` is last
        read before any buffer of ``out``'s set is defined, or when
        ``out``'s instruction is that last reader and updates it in place
        elementwise."""
        rp, ro = self.uf.find(param.id), self.uf.find(out.id)
        if rp == ro:
            return True
        if self.set_size[rp] != 1:
            return False
        members = [b for b in self.buffers if self.uf.find(b.id) == ro]
        if any(b.kind not in ("temp", "output") for b in members):
            return False
        start = min(b.start for b in members)
        end = self.set_end[rp]
        if end < start:
            return True
        return (len(members) == 1 and end == start == self.pos[id(out.instruction)]
                and self.can_update_in_place(out.instruction, param, out.index))

    def colocate_while(self, w):
        pts = self.points_to
        body, cond = w.attr("body"), w.attr("condition")
        init = w.operands[0]
        body_param, cond_param = body.parameter(0), cond.parameter(0)
        p_w = self.pos[id(w)]
        for index, wb in pts[id(w)].items():
            bp = pts[id(body_param)].get(index)
            cp = pts[id(cond_param)].get(index)
            for b in (bp, cp):
                if b is not None and b.instruction.parent in (body, cond) and b.kind == "temp":
                    self.join(wb, b, pinned=True)
            br = pts[id(body.root_instruction)].get(index)
            if br is not None and bp is not None and br is not bp:
                for b in self.in_place_chain(body, bp, br):
                    self.join(wb, b, pinned=True)
            ib = pts[id(init)].get(index)
            if (ib is not None and ib.kind == "temp" and not ib.live_out
                    and ib.instruction.parent is w.parent and ib.last_use == p_w
                    and id(w.parent) not in self.multi
                    and (self.singleton(ib) or self.enclosing_state(w, ib))):
                self.join(wb, ib, pinned=True)
            elif (ib is not None and ib.kind in ("temp", "parameter") and br is bp
                    and bp is not None and id(w.parent) not in self.multi
                    and index in _dead_results(w)):
                # Read-only state: the loop passes it through unchanged and
                # nothing reads its result, so it reads the init's buffer
                # in place, whoever else reads that buffer later (a matrix a
                # nested loop only reads: no copy per outer iteration).
                self.join(wb, ib, pinned=True)

    def enclosing_state(self, w, ib):
        """Whether the init buffer ``ib`` of the nested while ``w``, already
        in a colocation set, may join ``w``'s: it is the state of the loop
        whose body runs ``w`` (that body's parameter buffer), ``w`` reads it
        last (the caller checks), and no other buffer of its set holds a
        value while ``w``'s condition and body run (the enclosing loop's
        result and condition parameter live outside this body). The nested
        loop then updates the enclosing loop's state in place: nothing is
        copied into or out of it each outer iteration (the outer body's root
        takes the nested loop's result, in the same slot)."""
        outer = self.while_of_body.get(id(w.parent))
        if ib.instruction.opcode != "parameter" or outer is None:
            return False
        # Buffers of the enclosing loop's caller in the set (its init and
        # result) hold the slot around that whole loop by construction: the
        # loop's own buffers are the ones that take turns in it.
        lo = min(self.window[id(w.attr("condition"))][0], self.window[id(w.attr("body"))][0])
        hi = self.pos[id(w)]
        r = self.uf.find(ib.id)
        return not any(m is not ib and self.uf.find(m.id) == r
                       and m.instruction.parent is not outer.parent
                       and m.start <= hi and lo <= m.end for m in self.buffers)

    def in_place_chain(self, body, bp, br):
        """The buffers of ``body`` that may share the loop state's slot with
        its parameter buffer ``bp`` at one index, ending with the root's
        ``br``. Walking back from ``br``, each buffer's instruction updates
        the one before it in place as its last reader (``x[i] += u;
        x[i] /= 9``: two dynamic-update-slices), back to one that updates
        ``bp`` in place or is defined after ``bp``'s last read; the longest
        such chain. Every buffer is a temp of the body of its own, so at
        any position only one of them (or ``bp``) holds a value. [] when
        not even ``br`` qualifies."""
        chain, best = [], []
        b = br
        while (b.kind == "temp" and self.singleton(b) and b.instruction.parent is body
               and b.instruction.opcode != "parameter" and b not in chain
               and not _runs_computations(b.instruction)):
            chain.append(b)
            instr = b.instruction
            d = self.pos[id(instr)]
            if bp.last_use == d and self.can_update_in_place(instr, bp, b.index):
                return list(chain)
            if bp.last_use < d:
                best = list(chain)
            if not (instr.opcode in ELEMENTWISE or _is_elementwise_fusion(instr)
                    or in_place_update_operand(instr) is not None):
                break
            previous = [ob for ob in (self.points_to[id(o)].get(()) for o in instr.operands)
                        if ob is not None and ob.last_use == d
                        and self.can_update_in_place(instr, ob, b.index)]
            if not previous:
                break
            b = previous[0]
        return best

    def set_busy(self, b, lo, hi):
        """Whether a buffer of ``b``'s colocation set other than ``b`` holds a
        value during positions [lo, hi]."""
        r = self.uf.find(b.id)
        if self.set_size[r] == 1:
            return False
        return any(m is not b and self.uf.find(m.id) == r and m.start <= hi and lo <= m.end
                   for m in self.buffers)

    def colocate_conditional(self, c):
        """Per array of the branches' operand (one tuple shared by every
        branch, as lax.cond builds them): when every branch passes it through
        or updates it in place (a dynamic-update-slice or elementwise op, its
        last reader), the operand, the branch parameters, their roots and the
        conditional's result share one slot, so nothing is copied in or out;
        when no branch returns it (a value the branches only read), the branch
        parameters read the operand's own buffer. Otherwise, copy in, copy
        out (emit_control_flow.py)."""
        pts = self.points_to
        branches = c.attr("branch_computations")
        if branches is None:
            branches = [c.attr("true_computation"), c.attr("false_computation")]
        branches = list(branches)
        operands = c.operands[1:]
        if len(operands) != len(branches) or any(o is not operands[0] for o in operands) or \
                id(c.parent) in self.multi or any(id(b) in self.multi for b in branches):
            return
        operand = operands[0]
        roots = [comp.root_instruction for comp in branches]
        p_c = self.pos[id(c)]
        for index, ob in pts[id(operand)].items():
            if not ob.shape.is_array:
                continue
            params = [pts[id(comp.parameter(0))].get(index) for comp in branches]
            if any(pb is None or pb.instruction is not comp.parameter(0) or not self.singleton(pb)
                   for pb, comp in zip(params, branches)):
                continue
            returned = [[(ri, rb) for ri, rb in pts[id(root)].items()
                         if rb is pb or rb.instruction.parent is comp and pb.last_use ==
                         self.pos[id(rb.instruction)] and
                         self.can_update_in_place(rb.instruction, pb, rb.index)]
                        for pb, root, comp in zip(params, roots, branches)]
            if not any(returned):
                # Only read by the branches: they read the operand's buffer.
                if ob.kind in ("temp", "parameter"):
                    for pb in params:
                        self.join(ob, pb, pinned=True)
                continue
            chains = []
            for pb, comp, ret in zip(params, branches, returned):
                if len(ret) != 1 or ret[0][0] != index:
                    break
                rb = ret[0][1]
                if rb is not pb and (rb.kind != "temp" or not self.singleton(rb)):
                    break
                chains.append((pb, rb))
            else:
                cb = pts[id(c)].get(index)
                if (cb is None or cb.instruction is not c or cb.kind != "temp" or
                        not self.singleton(cb) or ob.kind != "temp" or ob.live_out or
                        ob.last_use != p_c or ob.instruction.parent is not c.parent):
                    continue
                # The operand's slot may hold other values while the branches
                # run, unless it is a while loop's state (the body parameter:
                # the slot holds the loop's current value, which this
                # conditional consumes and replaces, as the body root would).
                loop_state = (ob.instruction.opcode == "parameter" and
                              id(c.parent) in self.while_bodies)
                if not loop_state and self.set_busy(
                        ob, min(self.window[id(comp)][0] for comp in branches), cb.end):
                    continue
                # Any other use of the operand's array by a root at another
                # index would alias two results: refused above (one return).
                for pb, rb in chains:
                    self.join(ob, pb, pinned=True)
                    self.join(pb, rb, pinned=True)
                self.join(ob, cb, pinned=True)

    def can_update_in_place(self, instr, operand_buffer, index=()):
        """Whether ``instr`` may write its array result (at shape ``index``
        of a multi-output fusion's tuple) over ``operand_buffer``."""
        target = in_place_update_operand(instr)
        if target is not None and index == ():
            pts = self.points_to
            return (operand_buffer is pts[id(target)].get(()) and
                    sum(operand_buffer is pts[id(o)].get(()) for o in instr.operands) == 1 and
                    operand_buffer.shape.is_array and
                    operand_buffer.shape.byte_size() == instr.shape.byte_size())
        if not (instr.opcode in ELEMENTWISE or _is_elementwise_fusion(instr)):
            return False
        shape = instr.shape.subshape(index) if index else instr.shape
        if not shape.is_array or instr.opcode in ("bitcast", "bitcast-convert"):
            return False
        if index and not _output_reads(instr, index[0], [
                k for k, o in enumerate(instr.operands)
                if operand_buffer is self.points_to[id(o)].get(())]):
            return False
        other = operand_buffer.shape
        # Same layout too: a kernel writing its elements in another order
        # (a fusion whose root transposes through its layout) would
        # overwrite elements it has yet to read (XLA's ShapeUtil::Equal).
        return (other.is_array and other.dimensions == shape.dimensions
                and other.byte_size() == shape.byte_size()
                and other.physical_minor_to_major() == shape.physical_minor_to_major()
                and any(operand_buffer is self.points_to[id(o)].get(()) for o in instr.operands))

    def share_in_place(self, instr):
        pts = self.points_to
        if instr.opcode in ("parameter", "constant"):
            return
        if instr.shape.is_array:
            if not (instr.opcode in ELEMENTWISE or _is_elementwise_fusion(instr) or
                    in_place_update_operand(instr) is not None):
                return
            indices = [()]
        elif _is_elementwise_fusion(instr):
            # A multi-output elementwise fusion: each output may take the
            # buffer of an operand it reads (a while body's loop state
            # updated in place: z = z * z + c; n += |z| < 2).
            indices = [(k,) for k in range(len(instr.shape.tuple_shapes))]
        else:
            return
        p = self.pos[id(instr)]
        for index in indices:
            out = pts[id(instr)].get(index)
            if out is None or out.instruction is not instr or out.kind != "temp" or \
                    not self.singleton(out):
                continue
            for o in instr.operands:
                b = pts[id(o)].get(())
                if b is None or b.kind != "temp":
                    continue
                r = self.uf.find(b.id)
                if self.pinned[r] or self.set_end[r] != p or \
                        not self.can_update_in_place(instr, b, index):
                    continue
                self.join(b, out)
                break

    # ----- packing ------------------------------------------------------------
    def run(self):
        module = self.module
        self.layout(module.entry)
        for comp in self.comps:
            self.compute_points_to(comp)
        self.compute_liveness()
        self.colocate()
        n = len(self.buffers)
        colocation = np.empty(n, dtype=np.int64)
        for b in self.buffers:
            r = self.uf.find(b.id)
            colocation[b.id] = r if self.set_size[r] > 1 else -1
        result = _core.assign_buffers(
            sizes=np.fromiter((b.size for b in self.buffers), np.int64, n),
            alignments=np.full(n, self.alignment, dtype=np.int64),
            starts=np.fromiter((b.start for b in self.buffers), np.int64, n),
            ends=np.fromiter((b.end for b in self.buffers), np.int64, n),
            colocations=colocation,
            kinds=np.fromiter((_KIND_CODES[b.kind] for b in self.buffers), np.int64, n),
            fit=self.fit)
        allocations = [BufferAllocation(i, int(size), _KIND_NAMES[int(kind)])
                       for i, (size, kind) in enumerate(zip(result["allocation_size"],
                                                            result["allocation_kind"]))]
        alloc_of, offset_of, slot_of = result["allocation"], result["offset"], result["slot"]
        slot_start, slot_end = result["slot_start"], result["slot_end"]
        for b in self.buffers:
            alloc = allocations[alloc_of[b.id]]
            b.allocation = alloc
            b.offset = int(offset_of[b.id])
            b.slot = int(slot_of[b.id])
            alloc.buffers.append(b)
            if b.live_out:
                alloc.maybe_live_out = True
            if b.kind == "parameter" and alloc.parameter_number is None:
                alloc.parameter_number = b.instruction.parameter_number
                alloc.parameter_index = b.index
        # A buffer's reported range is its slot's: in-place and loop sharing
        # extend it to the members' span.
        for b in self.buffers:
            b.start, b.end = int(slot_start[b.slot]), int(slot_end[b.slot])
        return BufferAssignment(module, self.buffers, allocations, self.sequence,
                                self.points_to, result)
