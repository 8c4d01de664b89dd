"""SPMD partitioning: a module annotated with shardings (``sharding={...}``,
``xla/hlo/sharding.py``) becomes the program each of ``num_partitions``
devices runs on its own tiles, with the collectives that connect them.

``partition(module, num_partitions)`` returns ``(partitioned module,
parameter shardings, result sharding)``. The partitioned entry computation
takes each parameter's local tile (``shard`` cuts a global array into them)
and returns each device's tile of the result (``unshard`` puts them back).
Devices are partitions (one replica; ``partition-id`` says which).

``ShardingPropagation`` (``sharding_propagation.py``) runs first and
writes the shardings that annotations imply, forward and backward. Then,
in post order, each instruction is partitioned from its operands' tiles
(below), and every written sharding is honoured, resharding the value if
needed (an instruction still without one keeps what its operands give).
An instruction with a written tiled sharding first cuts the operands it
holds whole to the tiles it needs of them (the operand shardings
propagation infers backward; a local dynamic-slice), so that a value
annotated only downstream of whole parameters is still computed on tiles.
Per instruction:

- parameter: its sharding (replicated without one); constants are
  replicated;
- elementwise ops: the first tiled operand's sharding; every operand is
  resharded to it; the op runs on the tiles;
- reduce (one operand): dimensions that stay keep their tiles; reduced
  dimensions that were cut are combined by an all-reduce with the same
  reducer after the local reduce;
- ``custom-call(x), custom_call_target="Sharding"``: x resharded to it;
- transpose, broadcast, reshape, slice, pad, concatenate
  (``spmd_shape_ops.py``): the tiles move with the dimensions (a broadcast
  with a written sharding broadcasts straight into its tiles); a reshape
  keeps them when the cut dimensions' tile boundaries survive (adding or
  removing size-1 dimensions, splitting or merging dimensions below a cut
  one: [8,6] cut 4 along rows reshapes to [8,2,3] or [2,4,6] locally);
  slice, pad and concatenate keep the tiling when they change only whole
  dimensions, dynamic-slice and dynamic-update-slice when they take the
  cut dimensions whole (their starts there become 0);
- dot and convolution (``spmd_dot.py``, as contractions): operands cut
  consistently along batch, free (convolution: input batch, kernel output
  feature) and contracting (input feature) dimensions run locally, an
  operand whole along a dimension the other cuts is cut locally to match,
  and cut contracting dimensions are summed by an all-reduce; the result is
  tiled along its batch and free dimensions. Inconsistent cuts gather the
  rhs, then the lhs, and retry;
- while, call, conditional (``spmd_control_flow.py``): the computations
  they run are partitioned too, each call site its own copy; a while
  carries its tiles in the sharding written on it (propagated), its body's
  root resharded to it;
- everything else (gather, scatter, sort, ...,
  and the cases above whose cuts do not survive: a slice of a cut
  dimension, a reshape across tile boundaries, a convolution cut along a
  spatial dimension, ...): operands are gathered whole (all-gather), the op
  runs unpartitioned on every device, and its result is replicated.
  Correct, not parallel.

Shardy's form (``xla/hlo/sdy.py``), as JAX writes shard_map and pmap: a
value without a classic sharding takes its ``xla.sdy.sharding``;
``xla.sdy.GlobalToLocalShape`` reshards its operands to its in_shardings
and hands on this device's tiles as *manual* values; instructions of
manual values (the call of the ``xla.sdy.manual_computation_body``, which
holds the per-device program JAX wrote) run as written on them;
``xla.sdy.LocalToGlobalShape`` declares its operands the tiles of values
sharded as its out_shardings; ``xla.sdy.FuncResultSharding`` and
``xla.sdy.ShardingConstraint`` reshard to their sharding. Bodies manual
over only some of the mesh axes are refused by name.

Resharding cuts locally, with a dynamic-slice at offsets read from a
constant table indexed by ``partition-id``, when each device's new tile
lies within the one it holds (replicated to tiled, or a finer tiling);
moves a cut from one dimension to another by one all-to-all when the same
devices cut the new dimension as many ways (within groups of the devices
that share the other dimensions' tiles); otherwise it gathers the value with one all-gather per cut dimension
(groups: the devices that differ only in that dimension's tile) and cuts
that. Dimensions that do not divide evenly by their tile count raise
UnimplementedError, as do shardings other than replicated and tiled
(maximal, manual) on anything but the root.
"""
import itertools

import numpy as np

from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo import opcodes
from xla.hlo.attributes import RawAttr
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
from xla.hlo.shape import Shape
from xla.hlo import sdy
from xla.hlo.sharding import (REPLICATED, HloSharding, local_dims, sharding_of, tile_coords,
                              tiled)
from xla.service import spmd_control_flow, spmd_dot, spmd_shape_ops
from xla.service.sharding_propagation import ShardingPropagation, fits, infer_operand_sharding
from xla.hlo.types import PrimitiveType


def shard(array, sharding, num_partitions):
    """The tile of ``array`` each device holds under ``sharding``."""
    array = np.asarray(array)
    if sharding is None or not sharding.is_tiled:
        return [array] * num_partitions
    local = local_dims(array.shape, sharding)
    out = []
    for d in range(num_partitions):
        index = sharding.tile_index(d)[:array.ndim]
        out.append(array[tuple(slice(i * n, (i + 1) * n) for i, n in zip(index, local))])
    return out


def unshard(tiles, sharding, dims):
    """The global array from each device's tile (replicated: device 0's)."""
    if sharding is None or not sharding.is_tiled:
        return np.asarray(tiles[0])
    first = np.asarray(tiles[0])
    out = np.empty(dims, first.dtype)
    local = local_dims(dims, sharding)
    for d, tile in enumerate(tiles):
        index = sharding.tile_index(d)[:len(dims)]
        out[tuple(slice(i * n, (i + 1) * n) for i, n in zip(index, local))] = tile
    return out


MANUAL = HloSharding("manual")


def _manual_like(shape):
    if shape.is_tuple:
        return HloSharding("tuple", elements=tuple(_manual_like(s) for s in shape.tuple_shapes))
    return MANUAL


def _is_manual(s):
    return s.kind == "manual" or (s.kind == "tuple" and any(_is_manual(e) for e in s.elements))


def shard_arguments(args, param_shardings, num_partitions, num_devices=None):
    """Per device (``num_devices``, default ``num_partitions``; replicas
    repeat the partitions), the tiles of global ``args`` it takes."""
    tiles = [shard(np.asarray(a), s, num_partitions) for a, s in zip(args, param_shardings)]
    return [[t[d % num_partitions] for t in tiles] for d in range(num_devices or num_partitions)]


def unshard_result(outs, result_sharding, shape):
    """The global result of ``shape`` from the partitions' results ``outs``
    (a tuple result: element by element)."""
    if shape.is_tuple:
        parts = result_sharding.elements if result_sharding.kind == "tuple" else \
            [result_sharding] * len(shape.tuple_shapes)
        return tuple(unshard([o[k] for o in outs], parts[k], s.dimensions)
                     for k, s in enumerate(shape.tuple_shapes))
    return unshard(outs, result_sharding, shape.dimensions)


class _Partitioner:
    def __init__(self, module, n, windowed_einsum_threshold_bytes=None):
        self.module = module
        self.n = n
        self.windowed_einsum_threshold_bytes = windowed_einsum_threshold_bytes
        self.meshes = sdy.module_meshes(module)
        for name, mesh in self.meshes.items():
            if mesh.size != n:
                raise InvalidArgumentError(f"mesh {name} has {mesh.size} devices; the module "
                                           f"runs on {n} partitions")
        self.instructions = []
        self.names = itertools.count()
        self.channel = itertools.count(1)
        self._pid = None
        self.param_shardings = None
        self.computations = []

    # ----- building ---------------------------------------------------------------
    def add(self, opcode, shape, operands=(), attrs=None, literal=None, parameter_number=None):
        instr = HloInstruction(opcode, shape, list(operands), name=f"{opcode}.spmd.{next(self.names)}",
                               attrs=attrs or {}, literal=literal, parameter_number=parameter_number)
        self.instructions.append(instr)
        return instr

    def array_shape(self, element_type, dims):
        return Shape.array(element_type, tuple(dims))

    def tile_shape(self, shape, sharding):
        """The shape of one tile of an array of ``shape`` under ``sharding``."""
        return self.array_shape(shape.element_type, local_dims(shape.dimensions, sharding))

    def all_reduce(self, value, groups, to_apply):
        text = "{" + ",".join("{" + ",".join(str(int(x)) for x in g) + "}" for g in groups) + "}"
        return self.add("all-reduce", value.shape, [value],
                        attrs={"channel_id": next(self.channel), "replica_groups": RawAttr(text),
                               "use_global_device_ids": True, "to_apply": to_apply})

    def partition_id(self):
        if self._pid is None:
            pid = self.add("partition-id", Shape.scalar(PrimitiveType.U32))
            self._pid = self.add("convert", Shape.scalar(PrimitiveType.S32), [pid])
        return self._pid

    def constant_s32(self, value):
        return self.add("constant", Shape.scalar(PrimitiveType.S32), literal=np.int32(value))

    def per_device(self, values):
        """An s32 scalar that is ``values[d]`` on device d (a constant table
        indexed by partition-id)."""
        c = self.add("constant", self.array_shape(PrimitiveType.S32, (self.n,)),
                     literal=np.asarray(values, np.int32).copy())
        one = self.add("dynamic-slice", self.array_shape(PrimitiveType.S32, (1,)),
                       [c, self.partition_id()], attrs={"dynamic_slice_sizes": (1,)})
        return self.add("reshape", Shape.scalar(PrimitiveType.S32), [one])

    # ----- resharding ---------------------------------------------------------------
    def gather(self, value, sharding, dims):
        """``value`` (a tile under ``sharding`` of an array of ``dims``) made whole."""
        if sharding is None or not sharding.is_tiled or sharding.is_replicated:
            return value
        devices = sharding.devices
        local = list(local_dims(dims, sharding))
        for k, t in enumerate(sharding.tiles):
            if t == 1:
                continue
            groups = np.moveaxis(devices, k, -1).reshape(-1, t)
            text = "{" + ",".join("{" + ",".join(str(int(x)) for x in g) + "}" for g in groups) + "}"
            local[k] *= t
            value = self.add("all-gather", self.array_shape(value.shape.element_type, local), [value],
                             attrs={"channel_id": next(self.channel), "replica_groups": RawAttr(text),
                                    "use_global_device_ids": True, "dimensions": (k,)})
        return value

    def cut(self, value, have, want, dims):
        """This device's tile under ``want`` cut from its tile under ``have``
        by a dynamic-slice (offsets from a table indexed by partition-id);
        None when some device's ``want`` tile does not lie within its
        ``have`` tile."""
        held, local = local_dims(dims, have), local_dims(dims, want)
        offsets = np.zeros((self.n, len(dims)), np.int32)
        for d in range(self.n):
            h, w = tile_coords(have, d, len(dims)), tile_coords(want, d, len(dims))
            for k in range(len(dims)):
                offsets[d, k] = w[k] * local[k] - h[k] * held[k]
                if offsets[d, k] < 0 or offsets[d, k] + local[k] > held[k]:
                    return None
        if held == local:
            return value
        starts = [self.per_device(offsets[:, k]) if offsets[:, k].any() else self.constant_s32(0)
                  for k in range(len(dims))]
        return self.add("dynamic-slice", self.array_shape(value.shape.element_type, local),
                        [value] + starts, attrs={"dynamic_slice_sizes": tuple(local)})

    def reshard(self, value, have, want, dims):
        """``value``, this device's tile under ``have``, as its tile under
        ``want``: cut locally when the new tile lies within the old one
        (replicated to tiled, or a finer tiling), else gathered and cut."""
        if _same(have, want):
            return value
        local = self.cut(value, have, want, dims)
        if local is not None:
            return local
        moved = self.all_to_all(value, have, want, dims)
        if moved is not None:
            return moved
        return self.cut(self.gather(value, have, dims), REPLICATED, want, dims)

    def all_to_all(self, value, have, want, dims):
        """``value`` moved from ``have`` (dimension a cut t ways) to ``want``
        (the same devices cutting dimension b t ways instead, the other cuts
        unchanged) by one all-to-all, as XLA's partitioner does: the local
        tile's dimension b split into (t, b/t), the t axis moved next to a,
        exchanged (piece i to the group's i-th device, received pieces in
        group order) and merged into a. None when the shardings differ
        otherwise."""
        if not (have.is_tiled and want.is_tiled) or have.replicate_last != want.replicate_last:
            return None
        rank = len(dims)
        ht, wt = have.tiles, want.tiles
        if len(ht) != rank or len(wt) != rank:
            return None
        diff = [k for k in range(rank) if ht[k] != wt[k]]
        if len(diff) != 2:
            return None
        a, b = diff if wt[diff[0]] == 1 else diff[::-1]
        t = ht[a]
        if wt[a] != 1 or ht[b] != 1 or wt[b] != t:
            return None
        groups = {}
        for d in range(self.n):
            h, w = have.tile_index(d), want.tile_index(d)
            rest = tuple(h[k] for k in range(len(h)) if k not in (a, b))
            if h[a] != w[b] or rest != tuple(w[k] for k in range(len(w)) if k not in (a, b)):
                return None
            groups.setdefault(rest, [None] * t)[h[a]] = d
        local = list(local_dims(dims, have))
        if local[b] % t:
            return None
        et = value.shape.element_type
        split = local[:b] + [t, local[b] // t] + local[b + 1:]
        x = self.add("reshape", self.array_shape(et, split), [value])
        a1 = a if a < b else a + 1
        axes = [k for k in range(rank + 1) if k != b]
        p = axes.index(a1)
        perm = axes[:p] + [b] + axes[p:]
        x = self.add("transpose", self.array_shape(et, [split[k] for k in perm]), [x],
                     attrs={"dimensions": tuple(perm)})
        text = "{" + ",".join("{" + ",".join(str(d) for d in g) + "}"
                              for g in groups.values()) + "}"
        x = self.add("all-to-all", x.shape, [x],
                     attrs={"channel_id": next(self.channel), "replica_groups": RawAttr(text),
                            "dimensions": (p,)})
        return self.add("reshape", self.tile_shape(Shape.array(et, tuple(dims)), want), [x])

    # ----- instructions -------------------------------------------------------------
    def run(self):
        entry = self.module.entry
        comp, shardings = self.computation(entry, entry.name, None)
        params = [shardings[id(p)] for p in entry.parameters]
        result_sharding = shardings[id(entry.root_instruction)]
        comp.is_entry = True
        out = HloModule(self.module.name, _callees(comp, self.computations) + [comp], entry=comp)
        out.header_attrs = {k: v for k, v in self.module.header_attrs.items()
                            if k not in ("entry_computation_layout",)}
        out.header_attrs["num_partitions"] = self.n
        return out, params, result_sharding

    def computation(self, comp, name, param_shardings):
        """``comp`` partitioned: (the new computation, each instruction's
        sharding by id). ``param_shardings`` (by parameter number; None in
        the entry, whose parameters take their written shardings) are the
        shardings the caller passes its operands in."""
        saved = self.instructions, self._pid, self.param_shardings
        self.instructions, self._pid, self.param_shardings = [], None, param_shardings
        try:
            done, shardings = {}, {}
            for h in comp.instructions:
                written = sharding_of(h) or self.sdy_sharding(h)
                if written is not None and written.kind not in ("replicated", "tiled", "tuple") \
                        and h is not comp.root_instruction:
                    raise UnimplementedError(f"spmd partitioning: sharding {written.to_text()} of "
                                             f"{h.name} (only replicated and tiled are supported)")
                value, s = self.instruction(h, done, shardings, written)
                if written is not None and written.kind in ("replicated", "tiled") \
                        and h.shape.is_array:
                    value = self.reshard(value, s, written, h.shape.dimensions)
                    s = written
                done[id(h)], shardings[id(h)] = value, s
            new = HloComputation(name, self.instructions, root=done[id(comp.root_instruction)])
        finally:
            self.instructions, self._pid, self.param_shardings = saved
        return new, shardings

    def subcomputation(self, name, param_shapes, build):
        """A new computation of the partitioned module: ``build(self,
        *parameters)`` adds its instructions (as ``add`` does) and returns
        its root."""
        saved = self.instructions, self._pid
        self.instructions, self._pid = [], None
        try:
            params = [self.add("parameter", shape, parameter_number=k)
                      for k, shape in enumerate(param_shapes)]
            comp = HloComputation(name, self.instructions, root=build(self, *params))
        finally:
            self.instructions, self._pid = saved
        self.computations.append(comp)
        return comp

    def computation_name(self, comp):
        taken = {c.name for c in self.computations} | {c.name for c in self.module.computations}
        k = 0
        while f"{comp.name}.spmd.{k}" in taken:
            k += 1
        return f"{comp.name}.spmd.{k}"

    def local_shape(self, shape, sharding):
        """The shape of one device's part of a (tuple) value of ``shape``."""
        if shape.is_tuple:
            return Shape.tuple([self.local_shape(e, element(sharding, i))
                                for i, e in enumerate(shape.tuple_shapes)])
        if not shape.is_array or sharding is None or not sharding.is_tiled:
            return shape
        return self.tile_shape(shape, sharding)

    def reshard_value(self, value, have, want, shape):
        """``reshard`` of a (tuple) value of ``shape``, element by element."""
        if not shape.is_tuple:
            if not shape.is_array or _same(have, want) or want.kind not in ("tiled", "replicated"):
                return value
            return self.reshard(value, have, want, shape.dimensions)
        if not _differs(have, want, shape):
            return value
        parts = [self.reshard_value(self.add("get-tuple-element", value.shape.tuple_shapes[i],
                                             [value], attrs={"index": i}),
                                    element(have, i), element(want, i), e)
                 for i, e in enumerate(shape.tuple_shapes)]
        return self.add("tuple", Shape.tuple([v.shape for v in parts]), parts)

    def sdy_sharding(self, h):
        """The sharding of a parameter in Shardy's form (None elsewhere: the
        sdy custom-calls carry the others)."""
        if h.opcode != "parameter" or not h.shape.is_array:
            return None
        text = sdy.attribute_dict(h.attr("frontend_attributes")).get("xla.sdy.sharding")
        return None if text is None else sdy.parse_sharding(text, self.meshes, h.shape.rank)

    def instruction(self, h, done, shardings, written):
        op = h.opcode
        operands = [done[id(o)] for o in h.operands]
        have = [shardings[id(o)] for o in h.operands]
        attrs = {k: v for k, v in h.attrs.items() if k != "sharding"}
        if op == "custom-call" and str(h.attr("custom_call_target", "")).startswith("xla.sdy."):
            return self.shardy(h, operands, have)
        if op == "custom-call" and str(h.attr("custom_call_target", "")) == "Sharding" \
                and len(operands) == 1 and h.shape.is_array and not _is_manual(have[0]):
            # An annotation: the value, resharded to it (by run, below).
            return operands[0], have[0]
        if any(_is_manual(s) for s in have):
            # Per-device code as written (a manual computation's call, or
            # what works on its results before they become global again).
            return self.add(op, h.shape, operands, attrs=attrs, literal=h.literal), \
                _manual_like(h.shape)
        if op == "parameter" and self.param_shardings is not None:
            s = self.param_shardings[h.parameter_number]
            return self.add("parameter", self.local_shape(h.shape, s), attrs=attrs,
                            parameter_number=h.parameter_number), s
        if op in spmd_control_flow.HANDLERS:
            return spmd_control_flow.HANDLERS[op](self, h, operands, have, attrs, written)
        if op == "parameter":
            s = written if written is not None and written.kind == "tiled" else REPLICATED
            dims = local_dims(h.shape.dimensions, s) if h.shape.is_array else None
            shape = self.array_shape(h.shape.element_type, dims) if dims is not None else h.shape
            return self.add("parameter", shape, attrs=attrs, parameter_number=h.parameter_number), s
        if op == "tuple":
            return self.add("tuple", Shape.tuple([v.shape for v in operands]), operands), \
                HloSharding("tuple", elements=tuple(have))
        if op == "get-tuple-element":
            s = element(have[0], h.attr("index"))
            t = operands[0].shape.tuple_shapes[h.attr("index")]
            return self.add(op, t, operands, attrs=attrs), s
        if not h.shape.is_array:
            return self.replicated(h, operands, have, attrs)
        if op in opcodes.ELEMENTWISE and op != "map" and all(
                o.shape.is_array and o.shape.dimensions == h.shape.dimensions for o in h.operands):
            target = written if written is not None and written.kind == "tiled" else next(
                (s for s in have if s.is_tiled and not s.is_replicated), REPLICATED)
            ops = [self.reshard(v, s, target, o.shape.dimensions)
                   for v, s, o in zip(operands, have, h.operands)]
            dims = local_dims(h.shape.dimensions, target)
            return self.add(op, self.array_shape(h.shape.element_type, dims), ops, attrs=attrs), target
        if written is not None and written.is_tiled and not written.is_replicated:
            if op == "broadcast":
                return spmd_shape_ops.broadcast_to(self, h, operands, have, attrs, written)
            operands, have = self.cut_whole_operands(h, operands, have, written)
        handler = _HANDLERS.get(op)
        result = handler(self, h, operands, have, attrs) if handler is not None else None
        if result is not None:
            return result
        return self.replicated(h, operands, have, attrs)

    def cut_whole_operands(self, h, operands, have, written):
        """``h``'s operands, those held whole cut locally (no communication)
        to the tiles ``h`` needs from them to give tiles cut by ``written``
        (the operand shardings ShardingPropagation infers from it)."""
        known = {id(o): s for o, s in zip(h.operands, have)}
        operands, have = list(operands), list(have)
        for k, o in enumerate(h.operands):
            if not o.shape.is_array or o.shape.rank == 0 or not have[k].is_replicated:
                continue
            want = infer_operand_sharding(h, k, written, known)
            if not fits(want, o) or want.is_replicated:
                continue
            value = self.cut(operands[k], have[k], want, o.shape.dimensions)
            if value is not None:
                operands[k], have[k], known[id(o)] = value, want, want
        return operands, have

    def shardy(self, h, operands, have):
        target = str(h.attr("custom_call_target"))
        attrs = sdy.attribute_dict(h.attr("frontend_attributes"))
        declared = list(h.shape.tuple_shapes) if h.shape.is_tuple else [h.shape]
        if target == sdy.GLOBAL_TO_LOCAL:
            manual = set(sdy.parse_manual_axes(attrs.get("xla.sdy.manual_axes", "#sdy<manual_axes{}>")))
            for name, mesh in self.meshes.items():
                if manual != {a for a, _ in mesh.axes}:
                    raise UnimplementedError(
                        f"spmd partitioning: {h.name} is manual over axes {sorted(manual)} of mesh "
                        f"{name} {[a for a, _ in mesh.axes]} (only bodies manual over every axis)")
            wanted = sdy.parse_sharding_per_value(attrs["xla.sdy.in_shardings"], self.meshes)
            values = [self.reshard(v, s, w, o.shape.dimensions)
                      for v, s, w, o in zip(operands, have, wanted, h.operands)]
            for v, d in zip(values, declared):
                if v.shape.dimensions != d.dimensions:
                    raise InvalidArgumentError(f"{h.name}: a local shape of {d.to_text()} for a tile "
                                               f"of {v.shape.to_text()}")
            if h.shape.is_tuple:
                return self.add("tuple", Shape.tuple([v.shape for v in values]), values), \
                    _manual_like(h.shape)
            return values[0], MANUAL
        if target == sdy.LOCAL_TO_GLOBAL:
            wanted = sdy.parse_sharding_per_value(attrs["xla.sdy.out_shardings"], self.meshes)
            for v, w, d in zip(operands, wanted, declared):
                if v.shape.dimensions != local_dims(d.dimensions, w):
                    raise InvalidArgumentError(f"{h.name}: a tile of {v.shape.to_text()} for "
                                               f"{d.to_text()} sharded as {w.to_text()}")
            if h.shape.is_tuple:
                return self.add("tuple", Shape.tuple([v.shape for v in operands]), operands), \
                    HloSharding("tuple", elements=tuple(wanted))
            return operands[0], wanted[0]
        if target in (sdy.FUNC_RESULT_SHARDING, sdy.SHARDING_CONSTRAINT) and len(operands) == 1 \
                and h.shape.is_array:
            text = attrs["xla.sdy.sharding"]
            (want,) = (sdy.parse_sharding_per_value(text, self.meshes)
                       if text.startswith("#sdy.sharding_per_value") else
                       [sdy.parse_sharding(text, self.meshes, h.shape.rank)])
            return self.reshard(operands[0], have[0], want, h.shape.dimensions), want
        raise UnimplementedError(f"spmd partitioning: custom-call {target} ({h.name})")

    def replicated(self, h, operands, have, attrs):
        ops = [self.gather(v, s, o.shape.dimensions) if o.shape.is_array else v
               for v, s, o in zip(operands, have, h.operands)]
        if any(o.shape.is_tuple and s.kind == "tuple" and any(e.is_tiled and not e.is_replicated
                                                              for e in s.elements)
               for o, s in zip(h.operands, have)):
            raise UnimplementedError(f"spmd partitioning: {h.opcode} {h.name} of a tuple with "
                                     "tiled elements")
        return self.add(h.opcode, h.shape, ops, attrs=attrs, literal=h.literal), REPLICATED

    def reduce(self, h, operands, have, attrs):
        if len(h.operands) != 2:
            return None
        x = h.operands[0]
        s = have[0]
        if not s.is_tiled or s.is_replicated or s.replicate_last:
            return None
        reduced = tuple(h.attr("dimensions", ()))
        kept = [d for d in range(x.shape.rank) if d not in reduced]
        init = self.gather(operands[1], have[1], h.operands[1].shape.dimensions)
        out_devices_shape = [s.tiles[d] for d in kept]
        moved = np.transpose(s.devices, kept + list(reduced))
        cut_reduced = int(np.prod([s.tiles[d] for d in reduced], dtype=np.int64))
        if cut_reduced > 1:
            groups = moved.reshape(-1, cut_reduced)
            keep_devices = groups[:, 0].reshape(out_devices_shape) if kept else groups[:, 0].reshape(())
        else:
            keep_devices = moved.reshape(out_devices_shape)
        local_out = [local_dims(x.shape.dimensions, s)[d] for d in kept]
        value = self.add("reduce", self.array_shape(h.shape.element_type, local_out),
                         [operands[0], init], attrs=attrs)
        if cut_reduced > 1:
            value = self.all_reduce(value, groups, h.attr("to_apply"))
            # Devices of a group hold the same result: the output is cut as the
            # kept dimensions are, replicated over the reduced ones.
            tiles_out = out_devices_shape
            devices = groups.reshape(tiles_out + [cut_reduced]) if kept else groups.reshape(1, -1)[0]
            if not kept:
                return value, REPLICATED
            return value, tiled(devices, replicate_last=True)
        return value, tiled(keep_devices) if kept else REPLICATED

    def add_reducer(self, element_type):
        name = f"spmd_add.{element_type.text}"
        for c in self.computations:
            if c.name == name:
                return c
        a = HloInstruction("parameter", Shape.scalar(element_type), name=f"{name}.a", parameter_number=0)
        b = HloInstruction("parameter", Shape.scalar(element_type), name=f"{name}.b", parameter_number=1)
        r = HloInstruction("add", Shape.scalar(element_type), [a, b], name=f"{name}.sum")
        comp = HloComputation(name, [a, b, r], root=r)
        self.computations.append(comp)
        return comp


_HANDLERS = {**spmd_shape_ops.HANDLERS, **spmd_dot.HANDLERS,
             "reduce": lambda p, *args: p.reduce(*args)}


def element(sharding, i):
    """The sharding of element ``i`` of a tuple value sharded by ``sharding``
    (a sharding other than a tuple's applies to every element)."""
    if sharding is None:
        return REPLICATED
    return sharding.elements[i] if sharding.kind == "tuple" else sharding


def _differs(have, want, shape):
    """Whether some array of a (tuple) value of ``shape`` is cut otherwise
    under ``want`` than under ``have``."""
    if shape.is_tuple:
        return any(_differs(element(have, i), element(want, i), e)
                   for i, e in enumerate(shape.tuple_shapes))
    return shape.is_array and want.kind in ("tiled", "replicated") and not _same(have, want)


def _callees(entry, made):
    """The computations the partitioned ``entry`` calls, callees first: the
    original module's reducers and comparators it still names, then those
    the partitioner ``made`` (in the order it made them)."""
    found, order = set(), []

    def visit(comp):
        for h in comp.instructions:
            for value in h.attrs.values():
                for c in (value if isinstance(value, (list, tuple)) else [value]):
                    if isinstance(c, HloComputation) and id(c) not in found:
                        found.add(id(c))
                        visit(c)
                        order.append(c)
    visit(entry)
    made_ids = {id(c) for c in made}
    return [c for c in order if id(c) not in made_ids] + [c for c in made if id(c) in found]


def _same(a, b):
    if a is None or b is None:
        return a is b
    if a.is_replicated and b.is_replicated:
        return True
    return a == b


def partition(module, num_partitions=None, allow_spmd_sharding_propagation_to_parameters=None,
              windowed_einsum_threshold_bytes=None):
    """(partitioned module, parameter shardings, result sharding); see the
    module docstring. ``module`` gets the shardings ShardingPropagation
    infers (``sharding_propagation.py``; parameters only where the option,
    or the module header's, allows). A dot that would gather an operand of
    at least ``windowed_einsum_threshold_bytes`` passes its tiles round a
    ring instead where it can (``spmd_windowed_dot.py``; None: never)."""
    n = num_partitions or int(module.header_attrs.get("num_partitions", 1))
    ShardingPropagation(allow_spmd_sharding_propagation_to_parameters, n).run(module)
    out, params, result = _Partitioner(module, n, windowed_einsum_threshold_bytes).run()
    return out, params, result
