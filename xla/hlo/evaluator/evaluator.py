"""The HLO evaluator: runs a module instruction by instruction on NumPy arrays.

Each opcode's semantics is one handler in the registry (see registry.py
for the handler contract); this file only walks computations. Handlers
live in elementwise.py, data_movement.py, control_flow.py and every
``ops_*.py`` of this folder, all imported on first use.

``call_elementwise`` evaluates a scalar computation (a reducer, comparator
or map function) on whole same-shaped arrays at once: every instruction of
the computation sees arrays where its shape says scalar, so elementwise
handlers broadcast and shape-only ops on scalars pass values through.
"""
import importlib
import os

import numpy as np

from xla.hlo.evaluator.registry import HANDLERS, TOKEN, Token
from xla.errors import InvalidArgumentError, ResourceExhaustedError, UnimplementedError, XlaError

_CORE_MODULES = ("elementwise", "data_movement", "control_flow")
_loaded = False


def load_handlers():
    """Imports every handler module of this folder (once)."""
    global _loaded
    if _loaded:
        return
    package = __name__.rsplit(".", 1)[0]
    names = list(_CORE_MODULES)
    here = os.path.dirname(os.path.abspath(__file__))
    names += sorted(f[:-3] for f in os.listdir(here) if f.startswith("ops_") and f.endswith(".py"))
    for name in names:
        importlib.import_module(f"{package}.{name}")
    _loaded = True


# Ops that only rearrange elements: on a rank-0 result in elementwise mode
# they pass their (array) operand through unchanged.
_SHAPE_ONLY = frozenset(["reshape", "bitcast", "broadcast", "transpose", "copy", "slice",
                         "reverse", "dynamic-slice", "concatenate"])


def _live_post_order(comp):
    """Instructions the root depends on (operands and control predecessors),
    operands first."""
    order = []
    visited = set()
    root = comp.root_instruction
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for pred in reversed(list(node.operands) + list(node.control_predecessors)):
            if id(pred) not in visited:
                stack.append((pred, False))
    return order


def _check_arg(value, shape, where):
    """value converted to the parameter's type; InvalidArgumentError if it does not fit."""
    if shape.is_tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
            raise InvalidArgumentError(f"{where}: expected a tuple of {len(shape.tuple_shapes)} "
                                       f"elements for shape {shape}, got {type(value).__name__}")
        return tuple(_check_arg(v, s, f"{where}[{i}]")
                     for i, (v, s) in enumerate(zip(value, shape.tuple_shapes)))
    if shape.is_token:
        return TOKEN
    if not shape.is_array:
        raise InvalidArgumentError(f"{where}: cannot pass a value of shape {shape}")
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype != shape.dtype:
            raise InvalidArgumentError(
                f"{where}: expected element type {shape.element_type} ({shape.dtype}), got {array.dtype}")
    else:
        try:
            array = np.asarray(value, dtype=shape.dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise InvalidArgumentError(f"{where}: cannot convert {type(value).__name__} to {shape}: {e}") from None
    dims = shape.dimensions
    ok = array.ndim == len(dims) and all(
        (a <= d if dyn else a == d) or (dyn and d < 0)
        for a, d, dyn in zip(array.shape, dims, shape.dynamic))
    if not ok:
        raise InvalidArgumentError(
            f"{where}: expected shape {shape.to_text(print_layout=False)}, got dimensions {list(array.shape)}")
    return array


def _shape_matches(value, shape):
    if shape.is_tuple:
        return isinstance(value, tuple) and len(value) == len(shape.tuple_shapes)
    if shape.is_token:
        return True
    if not shape.is_array:
        return True
    return isinstance(value, np.ndarray)


class Evaluator:
    """Evaluates HloModules and computations; handlers receive it as ``ctx``."""

    def __init__(self, device=None):
        """``device``: a ``DeviceContext`` (ops_collectives.py) when the
        module runs on several devices: which one this is, and how to
        exchange values with the others. None: one device."""
        load_handlers()
        self.device = device
        self.collective_counts = {}   # instruction name -> executions (rendezvous keys)
        self._orders = {}
        self._elementwise_depth = 0
        self._constant_cache = {}
        # The arguments of the computation being evaluated (read by the
        # parameter handler).
        self.arguments = []

    # ----- public API ---------------------------------------------------------
    def evaluate(self, module, args):
        """Runs the entry computation of ``module`` on ``args`` (a sequence)."""
        entry = module.entry
        if entry is None:
            raise InvalidArgumentError(f"module {module.name} has no entry computation")
        args = list(args)
        params = entry.parameters
        if len(args) != len(params):
            raise InvalidArgumentError(
                f"module {module.name} takes {len(params)} argument(s), got {len(args)}")
        checked = [_check_arg(a, p.shape, f"argument {i} ({p.name})")
                   for i, (a, p) in enumerate(zip(args, params))]
        return self.call(entry, checked)

    def call(self, computation, args):
        """Evaluates ``computation`` on argument values; returns the root's value."""
        if len(args) != computation.num_parameters:
            raise InvalidArgumentError(
                f"computation {computation.name} takes {computation.num_parameters} "
                f"argument(s), got {len(args)}")
        order = self._orders.get(computation)
        if order is None:
            order = self._orders[computation] = _live_post_order(computation)
        values = {}
        elementwise = self._elementwise_depth > 0
        saved, self.arguments = self.arguments, list(args)
        try:
            with np.errstate(all="ignore"):
                for instr in order:
                    operands = [values[id(o)] for o in instr.operands]
                    if elementwise and instr.opcode in _SHAPE_ONLY and instr.shape.is_array \
                            and instr.shape.rank == 0:
                        value = self._pass_through(instr, operands[0])
                    else:
                        value = self._dispatch(instr, operands, elementwise)
                    values[id(instr)] = value
        finally:
            self.arguments = saved
        return values[id(computation.root_instruction)]

    def call_elementwise(self, computation, arrays):
        """Evaluates a scalar computation elementwise over same-shaped arrays.

        ``arrays`` holds one array per parameter; the result is an array (or
        a tuple of arrays for a tuple-shaped root) of the arrays' shape, with
        the element types of the computation's result.
        """
        arrays = [np.asarray(a) for a in arrays]
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        self._elementwise_depth += 1
        try:
            out = self.call(computation, arrays)
        finally:
            self._elementwise_depth -= 1
        return self._fit(out, computation.root_instruction.shape, shape)

    # ----- internals ------------------------------------------------------
    @staticmethod
    def _pass_through(instr, value):
        """A shape-only op on scalars in elementwise mode: the value itself
        (a bitcast to another element type of the same width reinterprets it)."""
        value = np.asarray(value)
        dtype = instr.shape.dtype
        if value.dtype != dtype:
            if instr.opcode == "bitcast" and value.dtype.itemsize == dtype.itemsize:
                return value.view(dtype)
            return value.astype(dtype)
        return value

    def _fit(self, value, shape, dims):
        if shape.is_tuple:
            return tuple(self._fit(v, s, dims) for v, s in zip(value, shape.tuple_shapes))
        if not shape.is_array:
            return value
        value = np.asarray(value)
        if value.dtype != shape.dtype:
            value = value.astype(shape.dtype)
        if value.shape != tuple(dims):
            value = np.asarray(np.broadcast_to(value, dims), order="C")
        return value

    def _dispatch(self, instr, operands, elementwise):
        handler = HANDLERS.get(instr.opcode)
        if handler is None:
            raise UnimplementedError(
                f"opcode {instr.opcode!r} is not implemented by the interpreter "
                f"(instruction {instr.name})")
        try:
            value = handler(instr, operands, self)
        except MemoryError:
            raise ResourceExhaustedError(
                f"interpreter: not enough memory for {instr.name} ({instr.shape.to_text(False)})"
            ) from None
        if not elementwise and instr.opcode != "parameter":
            value = self._conform(value, instr.shape, instr)
        return value

    def _conform(self, value, shape, instr):
        """Checks a handler's value against the instruction shape (registry contract)."""
        if shape.is_tuple:
            if not isinstance(value, (tuple, list)) or len(value) != len(shape.tuple_shapes):
                raise XlaError(f"interpreter: {instr.opcode} handler returned {type(value).__name__} "
                               f"for tuple shape {shape} ({instr.name})")
            return tuple(self._conform(v, s, instr) for v, s in zip(value, shape.tuple_shapes))
        if shape.is_token:
            return value if isinstance(value, Token) else TOKEN
        if not shape.is_array:
            return value
        value = np.asarray(value)
        if value.dtype != shape.dtype:
            value = value.astype(shape.dtype)
        if value.shape != shape.dimensions:
            if not shape.is_dynamic:
                raise XlaError(f"interpreter: {instr.opcode} handler returned dimensions "
                               f"{list(value.shape)} for shape {shape} ({instr.name})")
        return value
