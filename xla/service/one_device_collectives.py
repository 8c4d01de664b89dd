"""OneDeviceCollectives (``one-device-collectives``): in a module that runs
on one device (``replica_count`` and ``num_partitions`` both 1, the
defaults), every collective has one participant, and each becomes what it
then computes, as the interpreter runs it without devices:

* all-reduce, all-gather, reduce-scatter, all-to-all, collective-broadcast:
  their operand (a tuple of the operands when there are several);
* collective-permute: its operand when the pairs include {0,0}, zeros of
  its shape when no pair targets device 0; a pair from another device to
  device 0 is an error (there is no other device);
* replica-id and partition-id: the u32 constant 0.

Modules on several devices are left alone (the backend runs their
collectives, or names them as unsupported), and so is anything this rule
does not fit: an in-place collective-permute, an operand whose shape is
not the result's, async start/done pairs (``async-to-sync`` turns them
into the synchronous ops first). The GPU pipeline uses it (its collective
thunks would stage even a one-participant collective through the host);
the CPU runs collectives through its runtime.
"""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo import replica_groups
from xla.hlo.shape import Shape
from xla.hlo.types import PrimitiveType
from xla.service.pass_utils import OpExpanderPass

_IDENTITY = frozenset(["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                       "collective-broadcast"])


def one_device(module):
    attrs = module.header_attrs
    return int(attrs.get("replica_count", 1) or 1) == 1 and \
        int(attrs.get("num_partitions", 1) or 1) == 1


def _same_shapes(instr):
    results = instr.shape.tuple_shapes if instr.shape.is_tuple else [instr.shape]
    return len(results) == len(instr.operands) and all(
        r.is_array and o.shape.is_array and list(r.dimensions) == list(o.shape.dimensions)
        and r.element_type is o.shape.element_type for r, o in zip(results, instr.operands))


class OneDeviceCollectives(OpExpanderPass):
    name = "one-device-collectives"

    def run(self, module):
        if not one_device(module):
            return False
        return super().run(module)

    def matches(self, instr):
        if instr.opcode in ("replica-id", "partition-id"):
            return True
        if instr.opcode not in _IDENTITY and instr.opcode != "collective-permute":
            return False
        if instr.opcode == "collective-permute" and len(instr.operands) > 1 \
                and not instr.shape.is_tuple:
            return False    # in-place form
        return _same_shapes(instr)

    def expand(self, b, instr):
        if instr.opcode in ("replica-id", "partition-id"):
            return b.constant(0, PrimitiveType.U32)
        operands = list(instr.operands)
        if instr.opcode == "collective-permute":
            pairs = replica_groups.source_target_pairs(instr)
            if (0, 0) not in pairs:
                if any(t == 0 for _, t in pairs):
                    raise InvalidArgumentError(
                        f"collective-permute {instr.name} receives from another device, and the "
                        "module runs on one")
                operands = [b.add("broadcast", o.shape, [b.constant(np.zeros((), o.shape.dtype),
                                                                    o.shape.element_type)],
                                  dimensions=()) for o in operands]
        if not instr.shape.is_tuple:
            return operands[0]
        return b.add("tuple", Shape.tuple([o.shape for o in operands]), operands)
