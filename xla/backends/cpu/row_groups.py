"""Row groups: consecutive parallel kernels run block by block of rows.

Softmax over f32[4096,1024] is three kernels in the schedule: the row
maxima, the exponentials with their row sums, the quotients. Run one after
the other, each streams 16 MB through memory. All three parallelize over
the same 4096 rows, and row ``r`` of each output depends only on row ``r``
of the arrays the earlier ones wrote. So the entry function calls one
*group* function through ``__xla_cpu_parallel_for`` instead, which walks
its rows in blocks of a few rows and runs every member kernel on a block
before moving to the next: what one kernel writes, the next reads while
it is still in the core's cache. (XLA:CPU gets the same effect for softmax
by handing the whole fusion to a library kernel; here it falls out of the
schedule for any chain of row-parallel kernels: layernorm, softmax, their
gradients, elementwise chains between row reductions.)

A kernel joins the group before it when

* both split the same number of rows: the extent of the most major
  dimension, in the layout, of their loop shapes, or where that is short
  the linear index of their leading dimensions (``le.split_dimensions``:
  attention's scores f32[2, 8, 512, 512] and their row maxima f32[2, 8,
  512] both have 8192 rows);
* every buffer of the group's outputs that it reads, it reads *row-locally*:
  output row ``r`` reads row ``r`` of that buffer only, through elementwise
  ops, broadcasts and reduces that keep the row dimension, transposes that
  move it, reshapes and bitcasts that keep its place in the element order
  (JAX's keepdims: [rows] -> [rows, 1]; ``row_reads`` follows the index from
  the root to the buffers);
* every buffer it writes is either untouched by the group or the very slice
  the group accesses only row-locally (buffer assignment reuses dead
  buffers: a later block must never read what an earlier block of a later
  kernel has overwritten).

Nothing else may have been emitted into the entry function between the two
calls (the group call must be the block's last instruction). Results are
the same as running the kernels one after the other: each kernel computes
every element exactly as before, only the order of the rows changes.

Arrays a group writes and alone reads (softmax's exponentials: written
with the row sums, read by the quotients) never need to reach memory: the
group function keeps them in a scratch of one block's rows on its stack
and hands the member kernels a base address that maps the block's rows
there (``local_temporaries``). Softmax then moves 32 MB instead of 80.
"""
from llvmlite import ir

from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.loop_emitter import i64
from xla.hlo.opcodes import ELEMENTWISE

# A block's working set (the bytes per row of every buffer the group
# touches, times the rows in a block) aims at this much of a core's cache.
BLOCK_BYTES = 32 * 1024


class KernelAccess:
    """What one kernel reads and writes: byte ranges ``(allocation, begin,
    end)`` of buffer slices, reads marked row-local or not."""

    def __init__(self, rows):
        self.rows = rows
        self.reads = []   # (range, row_local)
        self.writes = []  # ranges, always row-local
        self.values = []  # (range, instruction, shape index) of each write
        self.groupable = True
        self.kernel = None  # the ir_emitter.Kernel, set by its emitter


def buffer_range(assignment, instr, index=()):
    buf = assignment.buffer(instr, index)
    return (buf.allocation.index, buf.offset, buf.offset + buf.size)


def row_reads(assignment, root, fusion, row_dim):
    """{id(materialized instruction): (instruction, {dims})}: for each buffer
    the element generators of ``root`` read, the logical dimension of it that
    carries the loop's row index (``row_dim`` of ``root``), None where the
    read index is not the row index (a broadcast along rows, an unknown op).
    Mirrors ``ElementGenerator._compute``: instructions with buffers are
    loads, a fusion's parameters stand for its operands."""
    found = {}
    seen = set()

    def record(x, d):
        found.setdefault(id(x), (x, set()))[1].add(d)

    # An explicit stack, not recursion: fused chains may be long.
    stack = [(root, row_dim)]
    while stack:
        x, d = stack.pop()
        key = (id(x), d)
        if key in seen:
            continue
        seen.add(key)
        if x is not root and assignment.has_buffers(x):
            record(x, d)
            continue
        op = x.opcode
        if op == "parameter" and fusion is not None:
            stack.append((fusion.operands[x.parameter_number], d))
        elif op in ("constant", "iota"):
            continue
        elif op == "broadcast":
            dims = list(x.attr("dimensions", ()))
            stack.append((x.operands[0], dims.index(d) if d in dims else None))
        elif op == "transpose":
            stack.append((x.operands[0], None if d is None else x.attr("dimensions")[d]))
        elif op in ("reshape", "bitcast"):
            stack.append((x.operands[0], _reshaped_dimension(x, d)))
        elif op == "reduce":
            k = len(x.operands) // 2
            reduced = set(x.attr("dimensions", ()))
            kept = [i for i in range(x.operands[0].shape.rank) if i not in reduced]
            stack.extend((o, None if d is None else kept[d]) for o in x.operands[:k])
            stack.extend((o, None) for o in x.operands[k:])
        elif op == "tuple":
            stack.extend((o, d) for o in x.operands)
        elif (op in ELEMENTWISE and op != "map") or op == "copy":
            for o in x.operands:
                same = o.shape.is_array and x.shape.is_array and o.shape.rank == x.shape.rank
                stack.append((o, d if same else None))
        else:
            stack.extend((o, None) for o in x.operands)
    return found


def _reshaped_dimension(x, d):
    """The dimension of a reshape's or bitcast's operand that carries the
    index of ``x``'s dimension ``d``, or None: the one at the same place in
    the element order (as many elements before it, the same extent), as in
    JAX's keepdims forms ([rows] -> [rows, 1] and back). A bitcast moves no
    element, so the order is the layouts'; a reshape's is the logical
    row-major order, followed only where both layouts are row-major."""
    operand = x.operands[0]
    if d is None or not (x.shape.is_array and operand.shape.is_array):
        return None
    if x.opcode == "reshape" and not (le.is_row_major(x.shape) and le.is_row_major(operand.shape)):
        return None
    order = le.major_to_minor(x.shape)
    before = 1
    for dim in order[:order.index(d)]:
        before *= x.shape.dimensions[dim]
    extent = x.shape.dimensions[d]
    seen = 1
    for dim in le.major_to_minor(operand.shape):
        if seen == before and operand.shape.dimensions[dim] == extent:
            return dim
        seen *= operand.shape.dimensions[dim]
        if seen > before:
            return None
    return None


def row_dimensions(shape, split=1):
    """The logical dimensions a loop nest over ``shape`` with ``split``
    (``le.split_dimensions``) walks as its rows, most major first, those of
    size 1 left out (they carry no index)."""
    return [d for d in le.major_to_minor(shape)[:split] if shape.dimensions[d] != 1]


def kernel_access(emitter, h, root, fusion, loop_shape, outputs, sides, split=1):
    """The KernelAccess of one kernel of ``emit_loops``: ``outputs`` are
    (shape index, shape) of what its loop stores, ``sides`` (shape index,
    reduce) the side outputs its reduces store at their input index;
    ``split``: how many leading dimensions of ``loop_shape`` its rows span
    (their linear index is the row)."""
    assignment = emitter.assignment
    dims = row_dimensions(loop_shape, split)
    acc = KernelAccess(le.outer_extent(loop_shape, split))
    if not dims:
        acc.groupable = False
        return acc
    leaves = [root.operands[si[0]] for si, _ in outputs] if root.opcode == "tuple" else [root]
    # For each buffer read, which of its dimensions carry row dimension k.
    found = {}
    for k, d in enumerate(dims):
        for leaf in leaves:
            for key, (x, carried) in row_reads(assignment, leaf, fusion, d).items():
                found.setdefault(key, (x, {}))[1].setdefault(k, set()).update(carried)
    extents = [loop_shape.dimensions[d] for d in dims]
    for x, carried in found.values():
        if not x.shape.is_array:
            acc.groupable = False
            return acc
        xd = row_dimensions(x.shape, len(x.shape.dimensions))[:len(dims)]
        local = len(xd) == len(dims) and all(
            carried.get(k) == {xd[k]} and x.shape.dimensions[xd[k]] == extents[k]
            for k in range(len(dims)))
        acc.reads.append((buffer_range(assignment, x), local))
    for si, shape in outputs:
        if row_dimensions(shape, len(shape.dimensions))[:len(dims)] != dims:
            acc.groupable = False
        acc.writes.append(buffer_range(assignment, h, si))
        acc.values.append((acc.writes[-1], h, si))
    for si, r in sides:
        reduced = set(r.attr("dimensions", ()))
        kept = [i for i in range(r.operands[0].shape.rank) if i not in reduced]
        side = h.shape.subshape(si)
        if row_dimensions(side, len(side.dimensions))[:len(dims)] != [kept[d] for d in dims]:
            acc.groupable = False
        acc.writes.append(buffer_range(assignment, h, si))
        acc.values.append((acc.writes[-1], h, si))
    return acc


def _overlap(a, b):
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


class Group:
    """The pending group: its members, their accesses, and the call of the
    entry function that runs it."""

    def __init__(self, call, fn, access, min_chunk):
        self.call = call
        self.functions = [fn]
        self.members = [access]
        self.rows = access.rows
        self.reads = list(access.reads)
        self.writes = list(access.writes)
        self.min_chunk = min_chunk

    def admits(self, access):
        if not access.groupable or access.rows != self.rows:
            return False
        for rng, local in access.reads:
            for w in self.writes:
                if _overlap(rng, w) and not (rng == w and local):
                    return False
        accessed = self.reads + [(w, True) for w in self.writes]
        for rng in access.writes:
            for other, local in accessed:
                if _overlap(rng, other) and not (rng == other and local):
                    return False
        return True

    def add(self, fn, access, min_chunk):
        self.functions.append(fn)
        self.members.append(access)
        self.reads += access.reads
        self.writes += access.writes
        self.min_chunk = min(self.min_chunk, min_chunk)

    def block_rows(self):
        ranges = {rng for rng, _ in self.reads} | set(self.writes)
        per_row = sum(hi - lo for _, lo, hi in ranges) // max(1, self.rows)
        return max(1, BLOCK_BYTES // max(1, per_row))


def _readers(value, index):
    """The instructions that read output ``index`` of ``value``, through
    get-tuple-element; None when something else (a bitcast, a tuple, the
    computation's root) sees it."""
    comp = value.parent
    if comp is None or comp.root_instruction is value:
        return None
    if index == ():
        users = value.users
    else:
        users = []
        for u in value.users:
            if u.opcode != "get-tuple-element":
                return None
            if (u.attr("index"),) == tuple(index[:1]) and len(index) == 1:
                if comp.root_instruction is u:
                    return None
                users += u.users
    if any(u.opcode in ("bitcast", "tuple", "get-tuple-element") for u in users):
        return None
    return users


def local_temporaries(assignment, group, rows):
    """{range: bytes per row} of the arrays the group both writes and is the
    only reader of: temporaries of the arena whose rows the next kernel of
    the group reads right after they are written. In the group function they
    live in a per-call scratch of ``rows`` rows (on the stack of the thread
    running the call) instead of the arena, so they never go to memory."""
    members = {id(a.kernel.root) for a in group.members if a.kernel is not None}
    if len(members) != len(group.members):
        return {}
    counts = {}
    for w in group.writes:
        counts[w] = counts.get(w, 0) + 1
    local = {}
    for j, rng, value, index in ((j, *v) for j, a in enumerate(group.members) for v in a.values):
        alloc = assignment.allocations[rng[0]]
        row_bytes = (rng[2] - rng[1]) // max(1, group.rows)
        if (counts[rng] != 1 or alloc.kind != "preallocated-temp"
                or row_bytes * group.rows != rng[2] - rng[1] or row_bytes < MIN_SCRATCH_ROW_BYTES
                or row_bytes * rows > MAX_SCRATCH_BYTES):
            continue
        if any(_overlap(rng, r) and r != rng for r, _ in group.reads):
            continue
        # A member up to the writer reading the range reads what was there
        # before (buffer assignment gave the temporary a dead array's
        # bytes): that must come from the arena.
        if any(_overlap(rng, r) for a in group.members[:j + 1] for r, _ in a.reads):
            continue
        if any(_overlap(rng, w) and w != rng for w in group.writes):
            continue
        readers = _readers(value, tuple(index))
        if readers and all(id(u) in members for u in readers):
            local[rng] = row_bytes
    return local


# A scratch row block of one local temporary is at most this large; rows
# shorter than a cache line (row maxima, sums) are not worth redirecting.
MAX_SCRATCH_BYTES = 256 * 1024
MIN_SCRATCH_ROW_BYTES = 64


def group_function(emitter, group, kernel_type):
    """``void group(table, begin, end)``: for each block of rows of
    [begin, end), every member kernel on that block, in order (calling
    their ``.impl`` functions with the group's temporaries redirected to
    scratch, see ``local_temporaries``)."""
    fn = ir.Function(emitter.llmod, kernel_type, emitter.unique("row_group"))
    fn.linkage = "internal"
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    table, begin, end = fn.args
    rows = group.block_rows()
    local = local_temporaries(emitter.assignment, group, rows)
    scratch = {}
    for rng, row_bytes in local.items():
        # 64 bytes more, so that the kernel's base address can keep the
        # alignment it was declared with (see below).
        buf = b.alloca(ir.IntType(8), size=i64(row_bytes * rows + 64), name="rows")
        buf.align = 64
        scratch[rng] = (buf, row_bytes)
    count = b.udiv(b.add(b.sub(end, begin), i64(rows - 1)), i64(rows))
    with le.for_loop(b, 0, count, name="block") as k:
        lo = b.add(begin, b.mul(k, i64(rows), flags=("nsw", "nuw")), flags=("nsw", "nuw"))
        hi = b.add(lo, i64(rows), flags=("nsw", "nuw"))
        hi = b.select(b.icmp_signed("<", hi, end), hi, end)
        for member, access in zip(group.functions, group.members):
            kernel = access.kernel
            if kernel is None or not scratch:
                member.attributes.add("alwaysinline")
                b.call(member, [table, lo, hi])
                continue
            ptrs = []
            for key in kernel.keys:
                rng = next((r for r in scratch if r[0] == key[0] and r[1] == key[1]), None)
                if rng is None:
                    ptrs.append(emitter.slice_pointer(b, table, key))
                    continue
                # Row r of the temporary at start + (r - lo) * row_bytes: the
                # kernel indexes from a base lo rows before the start (an
                # address computation only; it reads and writes rows
                # [lo, hi), inside the scratch). start = buf + (shift mod
                # 64) puts the base on a 64-byte boundary, like the arena.
                buf, row_bytes = scratch[rng]
                shift = b.mul(lo, i64(row_bytes), flags=("nsw", "nuw"))
                base = b.sub(b.ptrtoint(buf, ir.IntType(64)), b.and_(shift, i64(~63)))
                ptrs.append(b.inttoptr(base, ir.PointerType()))
            b.call(kernel.impl, ptrs + kernel.extra_arguments() + [lo, hi])
    b.ret_void()
    return fn
