"""The calling convention of an entry computation with dynamic shapes, for
backends that run it padded (``dynamic-padder``).

``bind_dynamic_entry(module)`` rewrites the entry so that nothing crosses
its boundary dynamic, and returns a ``DynamicEntryBinding`` that converts
arguments and results between the caller's form and the rewritten entry's
(None when the entry needs no rewrite):

* each entry parameter of a dynamic shape becomes static at its bounds,
  followed by one new ``s32[]`` parameter per dynamic dimension (after all
  the original parameters) holding that dimension's size, and a chain of
  ``set-dimension-size`` giving the rest of the entry the dynamic shape it
  read before (XLA's ``DynamicParameterBinding``: a dynamic dimension bound
  to another parameter). The caller passes arrays of any size up to the
  bound (as the interpreter takes them); ``pad_arguments`` pads them with
  zeros and appends the sizes.
* the root becomes ``tuple(root, sizes..., checked values...)``: the
  ``get-dimension-size`` of each dynamic dimension of each leaf of the
  result, then the values the sizes of the module must satisfy (each
  ``set-dimension-size``'s size, each ``dynamic-reshape``'s sizes and its
  operand's, the operand sizes of each reshape of a dynamic operand, whose
  elements must fill whole rows of its dynamic result dimension). ``unpad_result`` checks those as the interpreter does
  (InvalidArgumentError with the interpreter's message) and returns the
  original result with each dynamic leaf sliced to its sizes: the caller
  gets arrays at their dynamic sizes, as from the interpreter (XLA returns
  the padded buffer with the sizes in its shape instead).

Refused (UnimplementedError): dynamic dimensions inside tuple parameters,
unbounded dimensions, and modules with ``input_output_alias`` (the result's
tuple indices change). The header's ``entry_computation_layout`` no longer
describes the entry and is dropped.
"""
import numpy as np

from xla.errors import InvalidArgumentError, UnimplementedError
from xla.hlo.ir import HloInstruction
from xla.hlo.shape import Shape, reshape_result_sizes
from xla.hlo.types import PrimitiveType

S32 = PrimitiveType.S32
_SCALAR = Shape.array(S32, (), layout=None)


def needs_binding(module):
    entry = module.entry
    return (any(p.shape.is_dynamic for p in entry.parameters)
            or entry.root_instruction.shape.is_dynamic
            or any(i.opcode in ("set-dimension-size", "dynamic-reshape")
                   for i in entry.instructions))


def _array_leaves(shape, index=()):
    if shape.is_tuple:
        for k, s in enumerate(shape.tuple_shapes):
            yield from _array_leaves(s, index + (k,))
    elif shape.is_array:
        yield index, shape


class DynamicEntryBinding:
    """What ``bind_dynamic_entry`` did, to convert arguments and results."""

    def __init__(self, parameter_shapes, result_shape):
        self.parameter_shapes = parameter_shapes   # the caller's (dynamic) ones
        self.result_shape = result_shape
        self.parameters = []    # (parameter number, [dimension...]), sizes appended in order
        self.result_sizes = []  # (leaf index, dimension), positions 1.. of the root tuple
        self.checks = []        # (opcode, name, bounds, number of values), after the sizes

    def pad_arguments(self, args):
        """The rewritten entry's arguments for the caller's ``args``."""
        from xla.hlo.evaluator.evaluator import _check_arg
        if len(args) != len(self.parameter_shapes):
            raise InvalidArgumentError(f"the module takes {len(self.parameter_shapes)} "
                                       f"argument(s), got {len(args)}")
        out = list(args)
        sizes = []
        for number, dims in self.parameters:
            shape = self.parameter_shapes[number]
            array = _check_arg(args[number], shape, f"argument {number}")
            widths = [(0, b - n) for n, b in zip(array.shape, shape.dimensions)]
            out[number] = np.pad(array, widths) if any(w for _, w in widths) else array
            sizes += [np.int32(array.shape[d]) for d in dims]
        return out + sizes

    def unpad_result(self, result):
        """The caller's result for the rewritten entry's ``result``."""
        value, rest = result[0], [int(np.asarray(v)) for v in result[1:]]
        sizes, checked = rest[:len(self.result_sizes)], rest[len(self.result_sizes):]
        for opcode, name, bounds, count in self.checks:
            values, checked = checked[:count], checked[count:]
            _check(opcode, name, bounds, values)
        by_leaf = {}
        for (index, d), n in zip(self.result_sizes, sizes):
            by_leaf.setdefault(index, {})[d] = n
        return _slice(value, self.result_shape, (), by_leaf)


def _check(opcode, name, bounds, values):
    """The interpreter's checks (xla/hlo/evaluator), with its messages."""
    if opcode == "set-dimension-size":
        (size,), (bound, d) = values, bounds
        if not 0 <= size <= bound:
            raise InvalidArgumentError(f"set-dimension-size {name}: size {size} is not within "
                                       f"the bound {bound} of dimension {d}")
        return
    if opcode == "reshape":
        operand_dims, result = bounds
        try:
            reshape_result_sizes(operand_dims, values, result)
        except ValueError as e:
            raise InvalidArgumentError(f"reshape {name}: {e}") from None
        return
    rank = len(bounds)
    sizes, operand_sizes = values[:rank], values[rank:]
    if any(not 0 <= s <= b for s, b in zip(sizes, bounds)):
        raise InvalidArgumentError(f"dynamic-reshape {name}: sizes {sizes} are not within the "
                                   f"result's bounds {list(bounds)}")
    if int(np.prod(sizes)) != int(np.prod(operand_sizes)):
        raise InvalidArgumentError(f"dynamic-reshape {name}: sizes {sizes} hold "
                                   f"{int(np.prod(sizes))} elements, the operand "
                                   f"{int(np.prod(operand_sizes))}")


def _slice(value, shape, index, by_leaf):
    if shape.is_tuple:
        return tuple(_slice(v, s, index + (k,), by_leaf)
                     for k, (v, s) in enumerate(zip(value, shape.tuple_shapes)))
    sizes = by_leaf.get(index)
    if not sizes:
        return value
    array = np.asarray(value)
    return np.array(array[tuple(slice(0, sizes.get(d, n)) for d, n in enumerate(array.shape))])


def bind_dynamic_entry(module):
    """Rewrites ``module``'s entry (see the module docstring); returns the
    DynamicEntryBinding, or None when the entry has nothing dynamic."""
    if not needs_binding(module):
        return None
    entry = module.entry
    if "input_output_alias" in module.header_attrs:
        raise UnimplementedError(f"module {module.name}: dynamic shapes with input_output_alias "
                                 "are not supported")
    params = entry.parameters
    root = entry.root_instruction
    binding = DynamicEntryBinding([p.shape for p in params], root.shape)
    for shape in [p.shape for p in params] + [root.shape]:
        for _, leaf in _array_leaves(shape):
            if any(d < 0 for d in leaf.dimensions):
                raise UnimplementedError(f"module {module.name}: unbounded dynamic dimension in "
                                         f"{leaf.to_text(False)} (dynamic shapes run with a "
                                         "bound, as f32[<=8])")
    module.header_attrs.pop("entry_computation_layout", None)

    def add(opcode, shape, operands, anchor=None, **attrs):
        instr = HloInstruction(opcode, shape, list(operands), name=module.unique_name(opcode),
                               attrs=attrs)
        if anchor is None:
            return entry.add_instruction(instr)
        return entry.insert_after(anchor, instr)

    checks = []
    for instr in entry.instructions:
        if instr.opcode == "set-dimension-size":
            (d,) = instr.attr("dimensions")
            checks.append((instr, (instr.shape.dimensions[d], d), [instr.operands[1]]))
        elif instr.opcode == "dynamic-reshape":
            x = instr.operands[0]
            operand_sizes = [add("get-dimension-size", _SCALAR, [x], dimensions=(i,))
                             for i in range(x.shape.rank)]
            checks.append((instr, instr.shape.dimensions,
                           list(instr.operands[1:]) + operand_sizes))
        elif instr.opcode == "reshape" and instr.operands[0].shape.is_dynamic:
            x = instr.operands[0]
            operand_sizes = [add("get-dimension-size", _SCALAR, [x], dimensions=(i,))
                             for i in range(x.shape.rank)]
            checks.append((instr, (x.shape.dimensions, instr.shape), operand_sizes))
    number = len(params)
    for p in params:
        if not p.shape.is_dynamic:
            continue
        if not p.shape.is_array:
            raise UnimplementedError(f"module {module.name}: parameter {p.name} has dynamic "
                                     "dimensions inside a tuple")
        dynamic_shape = p.shape
        dims = [d for d, dyn in enumerate(dynamic_shape.dynamic) if dyn]
        p.shape = Shape(dynamic_shape.element_type, dynamic_shape.dimensions, dynamic_shape.layout)
        users = list(p.users)
        value = p
        flags = [False] * dynamic_shape.rank
        anchor = p
        for d in dims:
            size = entry.add_instruction(HloInstruction.create_parameter(
                number, _SCALAR, name=module.unique_name(f"{p.name}_size_{d}")))
            number += 1
            flags[d] = True
            shape = Shape(dynamic_shape.element_type, dynamic_shape.dimensions,
                          dynamic_shape.layout, flags)
            value = anchor = add("set-dimension-size", shape, [value, size], anchor, dimensions=(d,))
        for user in users:
            user.operands = [value if o is p else o for o in user.operands]
        if root is p:
            root = value
        binding.parameters.append((p.parameter_number, dims))
    outputs = [root]
    for index, leaf in _array_leaves(root.shape):
        for d, dyn in enumerate(leaf.dynamic):
            if dyn:
                value = root
                for k in index:
                    value = add("get-tuple-element", value.shape.tuple_shapes[k], [value], index=k)
                outputs.append(add("get-dimension-size", _SCALAR, [value], dimensions=(d,)))
                binding.result_sizes.append((index, d))
    for instr, bounds, values in checks:
        outputs += values
        binding.checks.append((instr.opcode, instr.name, bounds, len(values)))
    entry.root_instruction = add("tuple", Shape.tuple([o.shape for o in outputs]), outputs)
    entry.sort_post_order()
    return binding
