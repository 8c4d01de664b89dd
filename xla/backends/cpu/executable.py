"""CpuExecutable: runs the JIT-compiled entry function on NumPy arrays.

The entry function takes a table with one pointer per buffer allocation
(``ir_emitter``). Per executable: the constant allocations (filled once from
the literals) and the temp arena (reused by every call, so calls are
serialized with a lock). Per call: the parameters (read in place when their
layout is row-major and they are 16-byte aligned, otherwise copied), and
fresh output allocations, from which the results are views (copies when a
result lives in a parameter or constant allocation).
"""
import threading

import numpy as np

from xla.backends.cpu.ir_emitter import literal_array, physical_bytes
from xla.backends.cpu.loop_emitter import major_to_minor
from xla.backends.interpreter.evaluator import _check_arg
from xla.errors import InvalidArgumentError

from xla._core import cpu_execute

ALIGN = 64


def aligned_bytes(n):
    """A zeroed uint8 array of ``n`` bytes starting on an ALIGN boundary."""
    raw = np.zeros(n + ALIGN, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + n]


def to_physical(array, shape):
    order = major_to_minor(shape)
    if order != list(range(shape.rank)):
        array = np.transpose(array, order)
    return np.ascontiguousarray(array)


def from_physical(flat, shape):
    order = major_to_minor(shape)
    physical = flat.reshape([shape.dimensions[d] for d in order])
    if order == list(range(shape.rank)):
        return physical
    return np.transpose(physical, np.argsort(order))


class CpuExecutable:
    platform = "cpu"

    def __init__(self, module, assignment, jit_module, ir_text):
        self.module = module
        self.assignment = assignment
        self.jit_module = jit_module
        self.ir_text = ir_text
        self.optimized_ir_text = jit_module.optimized_ir
        self._address = jit_module.address("entry")
        self._lock = threading.Lock()
        allocations = assignment.allocations
        self._num_allocations = len(allocations)
        self._persistent = {}  # allocation index -> uint8 array (constants, temp arena)
        self._parameters = {}  # allocation index -> (parameter number, shape index)
        self._outputs = []  # allocation indices allocated per call
        for alloc in allocations:
            if alloc.kind == "parameter":
                self._parameters[alloc.index] = (alloc.parameter_number, alloc.parameter_index)
            elif alloc.kind == "constant":
                memory = aligned_bytes(alloc.size)
                for b in alloc.buffers:
                    if b.shape.is_array and b.instruction.opcode == "constant":
                        data = physical_bytes(literal_array_at(b.instruction, b.index), b.shape)
                        memory[b.offset:b.offset + len(data)] = np.frombuffer(data, np.uint8)
                self._persistent[alloc.index] = memory
            elif alloc.kind == "preallocated-temp":
                self._persistent[alloc.index] = aligned_bytes(alloc.size)
            else:
                self._outputs.append(alloc.index)
        self._sizes = [a.size for a in allocations]

    @property
    def parameter_shapes(self):
        return [p.shape for p in self.module.entry.parameters]

    @property
    def result_shape(self):
        return self.module.entry.root_instruction.shape

    def execute(self, *args):
        """Runs the module on NumPy arrays; a tuple result comes back as a tuple."""
        entry = self.module.entry
        params = entry.parameters
        if len(args) != len(params):
            raise InvalidArgumentError(
                f"module {self.module.name} takes {len(params)} argument(s), got {len(args)}")
        checked = [_check_arg(a, p.shape, f"argument {i} ({p.name})")
                   for i, (a, p) in enumerate(zip(args, params))]
        memory = dict(self._persistent)
        for index, (number, shape_index) in self._parameters.items():
            value = checked[number]
            for i in shape_index or ():
                value = value[i]
            param_shape = params[number].shape.subshape(shape_index or ())
            if not param_shape.is_array:
                memory[index] = aligned_bytes(self._sizes[index])
                continue
            array = to_physical(np.asarray(value), param_shape)
            if array.ctypes.data % 16 or self.assignment.allocations[index].maybe_live_out:
                copy = aligned_bytes(array.nbytes)
                copy[:] = array.reshape(-1).view(np.uint8)
                array = copy
            memory[index] = array
        for index in self._outputs:
            memory[index] = aligned_bytes(self._sizes[index])
        table = [memory[i].ctypes.data if i in memory else 0 for i in range(self._num_allocations)]
        with self._lock:
            cpu_execute(self._address, table)
            root = entry.root_instruction
            return self._result(root, root.shape, (), memory)

    def _result(self, root, shape, index, memory):
        if shape.is_tuple:
            return tuple(self._result(root, s, index + (i,), memory)
                         for i, s in enumerate(shape.tuple_shapes))
        if not shape.is_array:
            from xla.backends.interpreter.registry import TOKEN
            return TOKEN
        buffer = self.assignment.buffer(root, index)
        alloc = buffer.allocation
        raw = memory[alloc.index]
        raw = raw.reshape(-1).view(np.uint8) if raw.dtype != np.uint8 else raw
        nbytes = buffer.shape.byte_size()
        flat = raw[buffer.offset:buffer.offset + nbytes].view(shape.dtype)
        value = from_physical(flat, shape)
        if alloc.index not in self._outputs or value.base is None:
            value = np.array(value)
        return value


def literal_array_at(instr, index):
    """The array at ``index`` of a (possibly tuple) constant."""
    if not index:
        return literal_array(instr)
    literal = instr.literal
    shape = instr.shape
    for i in index:
        literal, shape = literal[i], shape.tuple_shapes[i]
    from xla.hlo.ir import HloInstruction
    return literal_array(HloInstruction.create_constant(literal, shape))
