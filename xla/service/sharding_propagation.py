"""ShardingPropagation: gives the instructions of the entry computation
that have no ``sharding={...}`` the sharding their neighbours imply,
forward from operands and backward from users, to a fixed point, so that
the SPMD partitioner (``spmd_partitioner.py``, which runs this pass first)
sees every value cut as the annotations around it ask.

Sources are the shardings written in the module: on parameters, on
``custom-call(x), custom_call_target="Sharding"`` annotations of
intermediate values, on any instruction, and on the root (a tuple root's
tuple sharding, element by element). A written sharding is never changed.

Forward (from operands), as the partitioner computes the result's tiles:

- elementwise ops (operands of the result's shape): the most specific
  operand sharding;
- transpose, broadcast, reshape (when the cut dimensions' tile boundaries
  survive, ``spmd_shape_ops.reshape_tiles``): the tiles move with the
  dimensions;
- slice, pad, concatenate, dynamic-slice, dynamic-update-slice (operand
  or update): the cuts of the dimensions passed through whole
  (``spmd_shape_ops.unchanged_dimensions``) are kept, the others dropped;
- reduce (one operand): the kept dimensions' cuts, replicated over the
  reduced ones;
- dot and convolution: the result sharding of ``spmd_dot``'s plan (an
  operand without a sharding counts as replicated).

Backward (from users), each rule the inverse of the forward one: an
elementwise user's sharding for its operands; through a transpose,
broadcast (the broadcast dimensions' cuts become replication) and reshape
to their operand; a slice, pad, concatenate, dynamic-slice or
dynamic-update-slice's (to operand and update) cuts of the dimensions it
passes through whole; a reduce's kept dimensions (reduced ones whole); a
dot or convolution operand cut along its batch and free dimensions as the
result is, and along its contracting dimensions as the other operand is
(``spmd_dot.operand_sharding``); a tuple's element to its operand; a
``Sharding`` custom-call's sharding to its operand.

Priority, as XLA's pass: a sharding inferred earlier is replaced only by a
strictly more specific one (more tiles; ``{replicated}`` is the least
specific, and unknown less still), so the iteration ends; among candidates
of equal specificity the first wins: forward before backward, the first
operand, the first user. Each round walks the computation forward (post
order) then backward, until a round changes nothing.

Control flow: the computations a while (body, condition), a conditional
(branches) or a call (``to_apply``) runs are propagated with the entry, as
one graph. Values passed through unchanged are one value each, array by
array (a tuple's elements, a get-tuple-element, XLA's flattened tuple
shardings): a while's operand, body parameter, body root, condition
parameter and result; a call's or branch's operands and its parameters,
its root and the call's result. So a carried value ends with one sharding,
from outside the loop or from inside its body, to a fixed point. A
tuple-shaped instruction that learnt a sharding for some array gets XLA's
tuple sharding (``{{replicated}, {devices=...}}``, replicated where none is
known), which the partitioner reads on a while or conditional.

What it does not do: entry parameters get a sharding only where
``allow_spmd_sharding_propagation_to_parameters`` allows (XLA's module
option, per parameter or one for all, read from the module header when not
given; default false: an unannotated parameter stays replicated, as the
caller passes it). Scalars get none, nor do reducers' and comparators'
computations. Only
tiled and replicated shardings propagate (maximal and manual stay where
they are written). A module in Shardy's form is propagated from its
``xla.sdy.sharding`` attributes (parameters, ``xla.sdy.FuncResultSharding``,
``xla.sdy.ShardingConstraint``), as JAX's default lowering of a sharded
jit writes them, unless it has manual regions (``xla.sdy.GlobalToLocalShape``
/``LocalToGlobalShape``, shard_map and pmap): those are left alone, as
their per-device code must not be resharded. An inferred
sharding whose tiles do not divide the dimensions evenly is dropped. The
root is treated as any instruction (XLA's
``allow_spmd_sharding_propagation_to_output`` on): the partitioner reports
the result's sharding to its caller, who puts the result back together.
Reshapes that move data across tile boundaries, gather, scatter and sort
pass no sharding either way.
"""
from xla.errors import InvalidArgumentError
from xla.hlo import opcodes, sdy
from xla.hlo.attributes import RawAttr
from xla.hlo.sharding import (REPLICATED, HloSharding, project_sharding, sharding_of,
                              tile_count)
from xla.service import spmd_dot
from xla.service.hlo_pass import HloPass
from xla.service.spmd_shape_ops import (broadcast_sharding, reshape_sharding, transpose_sharding,
                                        unchanged_dimensions)


def _cut(s):
    return s is not None and s.is_tiled and not s.is_replicated


def _elementwise(h):
    return h.opcode in opcodes.ELEMENTWISE and h.opcode != "map" and all(
        o.shape.is_array and o.shape.dimensions == h.shape.dimensions for o in h.operands)


_ANNOTATIONS = ("Sharding", sdy.FUNC_RESULT_SHARDING, sdy.SHARDING_CONSTRAINT)


def _is_sharding_op(h):
    """XLA's ``Sharding`` annotation, or Shardy's result sharding or
    constraint: the value itself, cut as the annotation says."""
    return h.opcode == "custom-call" and str(h.attr("custom_call_target", "")) in _ANNOTATIONS


def _has_manual_regions(module):
    return any(h.opcode == "custom-call" and str(h.attr("custom_call_target", "")) in (
        sdy.GLOBAL_TO_LOCAL, sdy.LOCAL_TO_GLOBAL) for c in module.computations
        for h in c.instructions)


def _written(h, meshes):
    """The sharding written on ``h``: ``sharding={...}``, or in Shardy's
    form the ``xla.sdy.sharding`` of a parameter, result sharding or
    constraint."""
    s = sharding_of(h)
    if s is not None or not meshes:
        return s
    text = sdy.attribute_dict(h.attr("frontend_attributes")).get("xla.sdy.sharding")
    if text is None or not h.shape.is_array:
        return None
    if h.opcode == "parameter":
        return sdy.parse_sharding(text, meshes, h.shape.rank)
    if _is_sharding_op(h) and text.startswith("#sdy.sharding_per_value"):
        (s,) = sdy.parse_sharding_per_value(text, meshes)
        return s
    return None


def _most_specific(candidates):
    best = None
    for s in candidates:
        if s is not None and (best is None or tile_count(s) > tile_count(best)):
            best = s
    return best


# ----- forward: the result's sharding from the operands' ---------------------------

def _forward(h, have, n):
    """The sharding of ``h`` implied by its operands' (``have``, None where
    unknown), or None."""
    op = h.opcode
    if _elementwise(h) or (_is_sharding_op(h) and len(have) == 1):
        return _most_specific(have)
    if op in ("slice", "pad", "concatenate", "dynamic-slice", "dynamic-update-slice"):
        s = _most_specific(have if op == "concatenate" else
                           have[:2] if op == "dynamic-update-slice" else have[:1])
        if s is None:
            return None
        kept = set(unchanged_dimensions(h))
        return project_sharding(s, [k if k in kept else None for k in range(h.shape.rank)])
    if op in ("dot", "convolution"):
        if all(s is None for s in have):
            return None
        return spmd_dot.result_sharding(n, h, [s or REPLICATED for s in have])
    s = have[0] if have else None
    if s is None:
        return None
    if not _cut(s):
        return REPLICATED if op in ("transpose", "broadcast", "reshape", "reduce") else None
    if op == "transpose":
        return transpose_sharding(s, h.attr("dimensions"))
    if op == "broadcast":
        bdims = list(h.attr("dimensions", ()))
        return broadcast_sharding(s, h.shape.rank, bdims) or project_sharding(
            s, [bdims.index(j) if j in bdims else None for j in range(h.shape.rank)])
    if op == "reshape":
        return reshape_sharding(s, h.operands[0].shape.dimensions, h.shape.dimensions)
    if op == "reduce" and len(h.operands) == 2:
        reduced = set(h.attr("dimensions", ()))
        return project_sharding(s, [d for d in range(h.operands[0].shape.rank) if d not in reduced])
    return None


# ----- backward: an operand's sharding from a user's ----------------------------------

def infer_operand_sharding(u, k, su, current):
    """The sharding of operand ``k`` of ``u`` that makes ``u``'s result cut
    by ``su`` (``current``: what is known of the other operands), or None."""
    op = u.opcode
    x = u.operands[k]
    if op == "tuple":
        return su.elements[k] if su.kind == "tuple" else None
    if su.kind not in ("tiled", "replicated") or not x.shape.is_array:
        return None
    if _elementwise(u) or (_is_sharding_op(u) and len(u.operands) == 1):
        return su
    if op in ("dot", "convolution") and len(u.operands) == 2:
        return spmd_dot.operand_sharding(u, k, su, current.get(id(u.operands[1 - k])))
    if not _cut(su):
        return REPLICATED if op in ("transpose", "broadcast", "reshape", "slice", "pad",
                                    "concatenate") and not (op == "pad" and k == 1) else None
    if op == "transpose":
        dims = list(u.attr("dimensions"))
        return project_sharding(su, [dims.index(i) for i in range(x.shape.rank)])
    if op == "broadcast":
        return project_sharding(su, list(u.attr("dimensions", ())))
    if op == "reshape":
        return reshape_sharding(su, u.shape.dimensions, x.shape.dimensions)
    if op in ("slice", "pad", "concatenate", "dynamic-slice", "dynamic-update-slice") and not (
            op == "pad" and k == 1) and x.shape.rank == u.shape.rank:
        kept = set(unchanged_dimensions(u))
        return project_sharding(su, [d if d in kept else None for d in range(x.shape.rank)])
    if op == "reduce" and len(u.operands) == 2 and k == 0:
        reduced = set(u.attr("dimensions", ()))
        kept = [d for d in range(x.shape.rank) if d not in reduced]
        return project_sharding(su, [kept.index(d) if d in kept else None
                                     for d in range(x.shape.rank)])
    return None


def fits(s, h):
    """Whether ``s`` may be written on ``h``: tiled or replicated, with
    tiles that divide ``h``'s dimensions evenly."""
    return _fits_shape(s, h.shape)


def _fits_shape(s, shape):
    if s is None or s.kind not in ("tiled", "replicated") or not shape.is_array:
        return False
    if not s.is_tiled:
        return True
    return len(s.tiles) == shape.rank and all(d % t == 0 for d, t in zip(shape.dimensions, s.tiles))


def _allowed_parameters(option, module):
    """Parameter number -> whether propagation may give it a sharding."""
    count = len(module.entry.parameters)
    if option is None:
        raw = module.header_attrs.get("allow_spmd_sharding_propagation_to_parameters")
        if raw is None:
            return [False] * count
        option = [v.strip() == "true" for v in str(getattr(raw, "text", raw)).strip("{}").split(",")]
    if isinstance(option, bool):
        return [option] * count
    option = [bool(v) for v in option]
    if len(option) == 1:
        return option * count
    if len(option) != count:
        raise InvalidArgumentError(f"allow_spmd_sharding_propagation_to_parameters has "
                                   f"{len(option)} values for {count} parameters")
    return option


def called_computations(h):
    """(role, computation) of what control flow ``h`` runs: a while's body
    and condition, a conditional's branches, a call's ``to_apply``."""
    if h.opcode == "while":
        return [("body", h.attr("body")), ("condition", h.attr("condition"))]
    if h.opcode == "call":
        return [("to_apply", h.attr("to_apply"))]
    if h.opcode == "conditional":
        if h.attr("branch_computations") is not None:
            return [("branch", c) for c in h.attr("branch_computations")]
        return [("branch", h.attr("true_computation")), ("branch", h.attr("false_computation"))]
    return []


def leaf_paths(shape, prefix=()):
    """The index paths of a (tuple) shape's arrays, in XLA's flattened order."""
    if not shape.is_tuple:
        return [prefix]
    return [p for i, e in enumerate(shape.tuple_shapes) for p in leaf_paths(e, prefix + (i,))]


def leaf_shape(shape, path):
    for i in path:
        shape = shape.tuple_shapes[i]
    return shape


def _key(h, path=()):
    return id(h) if not path else (id(h), path)


def _same_value(h):
    """(source, destination, leaf shape) for each array that ``h`` passes
    through unchanged (a tuple's elements, a get-tuple-element, a while's
    carried values through body and condition, a call's or conditional's
    operands into the parameters and root out): pairs whose shardings
    propagate as one value's, forward source to destination and back."""
    pairs = []

    def same(a, a_path, b, b_path, shape):
        pairs.extend((_key(a, a_path + q), _key(b, b_path + q), leaf_shape(shape, q))
                     for q in leaf_paths(shape))
    op = h.opcode
    if op == "tuple":
        for i, o in enumerate(h.operands):
            same(o, (), h, (i,), o.shape)
    elif op == "get-tuple-element":
        same(h.operands[0], (h.attr("index"),), h, (), h.shape)
    elif op == "while":
        body, cond = h.attr("body"), h.attr("condition")
        same(h.operands[0], (), h, (), h.shape)
        same(body.root_instruction, (), h, (), h.shape)
        same(h, (), body.parameter(0), (), h.shape)
        same(h, (), cond.parameter(0), (), h.shape)
    elif op == "call":
        comp = h.attr("to_apply")
        for o, prm in zip(h.operands, comp.parameters):
            same(o, (), prm, (), o.shape)
        same(comp.root_instruction, (), h, (), h.shape)
    elif op == "conditional":
        for k, (_, comp) in enumerate(called_computations(h)):
            o = h.operands[1 + k]
            same(o, (), comp.parameter(0), (), o.shape)
            same(comp.root_instruction, (), h, (), h.shape)
    return pairs


def _computations(module):
    """The entry and the computations its control flow runs (not reducers
    or comparators), callers first."""
    out, seen = [], set()
    stack = [module.entry]
    while stack:
        comp = stack.pop(0)
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        out.append(comp)
        for h in comp.instructions:
            stack.extend(c for _, c in called_computations(h))
    return out


class ShardingPropagation(HloPass):
    name = "sharding-propagation"

    def __init__(self, allow_spmd_sharding_propagation_to_parameters=None, num_partitions=None):
        self.allow_parameters = allow_spmd_sharding_propagation_to_parameters
        self.num_partitions = num_partitions

    def run(self, module):
        entry = module.entry
        if entry is None or _has_manual_regions(module):
            return False
        meshes = sdy.module_meshes(module)
        n = self.num_partitions or int(module.header_attrs.get("num_partitions", 1))
        allowed = _allowed_parameters(self.allow_parameters, module)
        comps = _computations(module)
        order = [h for c in comps for h in c.post_order()]
        current, writable, shapes = {}, set(), {}
        for h in order:
            written = _written(h, meshes)
            fixed = written is not None or (h.opcode == "parameter" and h.parent is entry
                                             and not allowed[h.parameter_number])
            for path in leaf_paths(h.shape):
                key, shape = _key(h, path), leaf_shape(h.shape, path)
                shapes[key] = shape
                if written is not None:
                    leaves = written.elements if written.kind == "tuple" else None
                    current[key] = leaves[leaf_paths(h.shape).index(path)] \
                        if leaves is not None and len(leaves) == len(leaf_paths(h.shape)) \
                        else written
                elif not fixed and shape.is_array and shape.rank > 0:
                    writable.add(key)
        users = {}
        for c in comps:
            users.update(c.users_map())
        plumbing = {id(h): _same_value(h) for h in order}
        inferred = {}

        def offer(key, candidate):
            if key not in writable or not _fits_shape(candidate, shapes[key]):
                return False
            old = current.get(key)
            if old is not None and tile_count(candidate) <= tile_count(old):
                return False
            current[key] = inferred[key] = candidate
            return True

        changed = True
        while changed:
            changed = False
            for h in order:
                for src, dst, _ in plumbing[id(h)]:
                    changed |= offer(dst, current.get(src))
                if id(h) in writable:
                    have = [current.get(id(o)) for o in h.operands]
                    changed |= offer(id(h), _forward(h, have, n))
            for h in reversed(order):
                for src, dst, _ in plumbing[id(h)]:
                    changed |= offer(src, current.get(dst))
                if id(h) not in writable:
                    continue
                candidates = []
                for u in users[id(h)]:
                    su = current.get(id(u))
                    if su is not None and u.opcode != "tuple":
                        candidates += [infer_operand_sharding(u, k, su, current)
                                       for k, o in enumerate(u.operands) if o is h]
                changed |= offer(id(h), _most_specific(c for c in candidates if fits(c, h)))
        for h in order:
            if h.shape.is_tuple:
                keys = [_key(h, q) for q in leaf_paths(h.shape)]
                if any(k in inferred for k in keys) and sharding_of(h) is None:
                    leaves = tuple(current.get(k) or REPLICATED for k in keys)
                    h.attrs["sharding"] = RawAttr(HloSharding("tuple", elements=leaves).to_text())
            elif id(h) in inferred:
                h.attrs["sharding"] = RawAttr(inferred[id(h)].to_text())
        return bool(inferred)
