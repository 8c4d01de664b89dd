"""XlaBuilder: build HLO computations op by op.

Every op checks its operands and infers its result shape with the same rules
the verifier uses (``xla.hlo.shape_inference``), so a mistake is reported at
the call that made it, as a ShapeError naming the op::

    b = XlaBuilder("seed")
    x = b.parameter(0, Shape.array("f32", [16]), "x")
    y = b.parameter(1, Shape.array("f32", [16]), "y")
    s = b.reduce(b.add(x, y), b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [0])
    module = b.build_module(s)          # then xla.compile(module, backend=...)

Operands of elementwise ops must have equal shapes, as in HLO (NumPy-style
broadcasting is the frontend's business: ``broadcast_in_dim`` first).
Computations that ops call (reducers, loop bodies, branches) are built with
``sub_builder``; they live in the same module. ``add_instruction`` is the
generic form every named op goes through, so any opcode the IR knows can be
built, with attributes spelled as in HLO text (``xla.hlo.attributes``).
"""
import itertools

import numpy as np

from xla.errors import InvalidArgumentError, ShapeError
from xla.hlo.attributes import PaddingDim, RawAttr, SliceDim
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
from xla.hlo.shape import Shape
from xla.hlo.shape_inference import infer_shape
from xla.hlo.types import PrimitiveType, from_dtype, from_text


def element_type(t):
    """A PrimitiveType from a PrimitiveType, its text name ('f32') or a NumPy dtype."""
    if isinstance(t, PrimitiveType):
        return t
    if isinstance(t, str):
        et = from_text(t)
        if et is not None:
            return et
    try:
        et = from_dtype(np.dtype(t))
    except TypeError:
        et = None
    if et is None:
        raise InvalidArgumentError(f"no HLO element type for {t!r}")
    return et


class XlaOp:
    """A handle to an instruction being built; ``shape`` is its inferred Shape."""

    __slots__ = ("builder", "instr")

    def __init__(self, builder, instr):
        self.builder = builder
        self.instr = instr

    @property
    def shape(self):
        return self.instr.shape

    @property
    def dims(self):
        return self.instr.shape.dimensions

    @property
    def element_type(self):
        return self.instr.shape.element_type

    @property
    def dtype(self):
        return self.instr.shape.element_type.dtype

    def __repr__(self):
        return f"<XlaOp {self.instr.name}: {self.instr.shape}>"


_metadata_cache = {}


def _metadata(op_name, source_file, source_line):
    """``{op_name="..." source_file="..." source_line=N}``, XLA's OpMetadata
    text (one object per distinct text: instructions share it)."""
    key = (op_name, source_file, source_line)
    attr = _metadata_cache.get(key)
    if attr is None:
        def quoted(text):
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        attr = RawAttr(f"{{op_name={quoted(op_name)} source_file={quoted(source_file)} "
                       f"source_line={int(source_line)}}}")
        if len(_metadata_cache) < 100_000:
            _metadata_cache[key] = attr
    return attr


class _ModuleState:
    """What sub-builders of one module share: the module and a name counter."""

    def __init__(self, name):
        self.module = HloModule(name)
        self.counter = itertools.count(1)
        self.computation_names = set()
        self.instruction_names = set()
        # Set by a trace: () -> (file, line) of the user's code, or None;
        # each instruction added gets it as its metadata, as JAX records it.
        self.locate = None

    def unique(self, name):
        """``name`` if no instruction has it yet, else ``name.N``."""
        if name in self.instruction_names:
            name = f"{name}.{next(self.counter)}"
        self.instruction_names.add(name)
        return name


_UNARY = """abs ceil cosine exponential exponential-minus-one floor imag is-finite log
log-plus-one logistic negate not popcnt real round-nearest-afz round-nearest-even rsqrt
sign sine sqrt cbrt tan tanh erf count-leading-zeros acos acosh asin asinh atanh cosh sinh""".split()
_BINARY = """add subtract multiply divide maximum minimum power remainder atan2 and or xor
shift-left shift-right-arithmetic shift-right-logical complex mulhi""".split()


class XlaBuilder:
    """Builds one computation; ``build`` finishes it, ``build_module`` makes it the entry."""

    def __init__(self, name, *, _state=None):
        self._state = _state or _ModuleState(name)
        self.name = self._unique_computation_name(name)
        self._instructions = []
        self._parameters = {}
        self._built = None
        self.live_tracers = None   # id -> Tracer (weak values) under xla.autojit (see xla.frontend.autojit)

    # ----- plumbing ---------------------------------------------------------------
    @property
    def module(self):
        return self._state.module

    def _unique_computation_name(self, name):
        names = self._state.computation_names
        candidate, n = name, 1
        while candidate in names:
            n += 1
            candidate = f"{name}.{n}"
        names.add(candidate)
        return candidate

    def sub_builder(self, name):
        """A builder for a computation of the same module (a reducer, a loop body...)."""
        return XlaBuilder(name, _state=self._state)

    def _check(self, operands):
        out = []
        for op in operands:
            if not isinstance(op, XlaOp):
                raise InvalidArgumentError(f"expected an XlaOp, got {type(op).__name__}")
            if op.builder is not self:
                raise InvalidArgumentError(
                    f"{op.instr.name} belongs to computation {op.builder.name}, not {self.name}")
            out.append(op.instr)
        return out

    def _check_open(self):
        if self._built is not None:
            raise InvalidArgumentError(f"computation {self.name} is already built")

    def add_instruction(self, opcode, operands=(), shape=None, **attrs):
        """Adds ``opcode`` with ``operands`` (XlaOps) and attributes named as in
        HLO text (Python identifiers: ``control_predecessors`` for dashes is not
        needed by any op built here). ``shape`` is needed only where HLO
        declares it (broadcast, reshape, iota, parameter, custom-call) or
        carries the result type (convert, dot, convolution); otherwise it is
        inferred. Raises ShapeError naming the op when operands don't fit.
        """
        self._check_open()
        instrs = self._check(operands)
        declared = shape if shape is not None else Shape.scalar(
            instrs[0].shape.element_type if instrs and instrs[0].shape.is_array else PrimitiveType.F32)
        name = self._state.unique(f"{opcode}.{next(self._state.counter)}")
        if self._state.locate is not None and "metadata" not in attrs:
            where = self._state.locate()
            if where is not None:
                attrs["metadata"] = _metadata(f"{self._state.module.name}/{opcode}", *where)
        instr = HloInstruction(opcode, declared, instrs, name=name, attrs=attrs)
        try:
            inferred = infer_shape(instr)
        except ShapeError as e:
            shapes = ", ".join(str(o.shape) for o in instrs)
            raise ShapeError(f"{opcode}({shapes}): {e}") from None
        instr.shape = inferred.with_default_layout() if not inferred.is_tuple else _tuple_layout(inferred)
        self._instructions.append(instr)
        return XlaOp(self, instr)

    # ----- leaves -----------------------------------------------------------------
    def parameter(self, number, shape, name=None):
        self._check_open()
        if number in self._parameters:
            raise InvalidArgumentError(f"parameter {number} of {self.name} is already defined")
        shape = shape.with_default_layout() if shape.is_array else _tuple_layout(shape)
        instr = HloInstruction.create_parameter(number, shape, self._state.unique(name or f"p{number}"))
        self._parameters[number] = instr
        self._instructions.append(instr)
        return XlaOp(self, instr)

    def constant(self, value, dtype=None):
        """A constant from a NumPy array or scalar (``dtype`` converts it first)."""
        self._check_open()
        value = np.asarray(value, dtype=dtype)
        et = element_type(value.dtype)
        instr = HloInstruction.create_constant(value, Shape.array(et, value.shape),
                                               name=self._state.unique(f"constant.{next(self._state.counter)}"))
        self._instructions.append(instr)
        return XlaOp(self, instr)

    def iota(self, element_type_, dims, iota_dimension):
        return self.add_instruction("iota", (), Shape.array(element_type(element_type_), dims),
                                    iota_dimension=iota_dimension)

    # ----- elementwise ------------------------------------------------------------
    def unary(self, opcode, x):
        if opcode not in _UNARY:
            raise InvalidArgumentError(f"{opcode} is not a unary elementwise op")
        return self.add_instruction(opcode, (x,))

    def binary(self, opcode, x, y):
        if opcode not in _BINARY:
            raise InvalidArgumentError(f"{opcode} is not a binary elementwise op")
        return self.add_instruction(opcode, (x, y))

    def compare(self, x, y, direction, comparison_type=None):
        attrs = {"direction": direction}
        if comparison_type is not None:
            attrs["type"] = comparison_type
        return self.add_instruction("compare", (x, y), **attrs)

    def select(self, pred, on_true, on_false):
        return self.add_instruction("select", (pred, on_true, on_false))

    def clamp(self, lo, x, hi):
        return self.add_instruction("clamp", (lo, x, hi))

    def convert(self, x, new_type):
        return self.add_instruction("convert", (x,), Shape.scalar(element_type(new_type)))

    def bitcast_convert(self, x, new_type, dims=None):
        et = element_type(new_type)
        return self.add_instruction("bitcast-convert", (x,),
                                    Shape.array(et, x.dims if dims is None else dims))

    def reduce_precision(self, x, exponent_bits, mantissa_bits):
        return self.add_instruction("reduce-precision", (x,), exponent_bits=exponent_bits,
                                    mantissa_bits=mantissa_bits)

    # ----- shapes -----------------------------------------------------------------
    def broadcast_in_dim(self, x, dims, broadcast_dimensions):
        """Operand dim i becomes output dim ``broadcast_dimensions[i]`` (HLO broadcast)."""
        return self.add_instruction("broadcast", (x,), Shape.array(x.element_type, dims),
                                    dimensions=tuple(broadcast_dimensions))

    def reshape(self, x, dims):
        return self.add_instruction("reshape", (x,), Shape.array(x.element_type, dims))

    def transpose(self, x, permutation):
        return self.add_instruction("transpose", (x,), dimensions=tuple(permutation))

    def slice(self, x, starts, limits, strides=None):
        strides = strides or (1,) * len(starts)
        return self.add_instruction("slice", (x,), slice=tuple(
            SliceDim(int(a), int(b), int(s)) for a, b, s in zip(starts, limits, strides)))

    def dynamic_slice(self, x, start_indices, slice_sizes):
        return self.add_instruction("dynamic-slice", (x, *start_indices),
                                    dynamic_slice_sizes=tuple(slice_sizes))

    def dynamic_update_slice(self, x, update, start_indices):
        return self.add_instruction("dynamic-update-slice", (x, update, *start_indices))

    def concatenate(self, operands, dimension):
        return self.add_instruction("concatenate", tuple(operands), dimensions=(dimension,))

    def pad(self, x, padding_value, padding):
        """``padding``: one (low, high, interior) per dimension."""
        return self.add_instruction("pad", (x, padding_value),
                                    padding=tuple(PaddingDim(*p) for p in padding))

    def reverse(self, x, dimensions):
        return self.add_instruction("reverse", (x,), dimensions=tuple(dimensions))

    def fft(self, x, fft_type, fft_length):
        """FFT, IFFT, RFFT or IRFFT over the last len(fft_length) dimensions."""
        return self.add_instruction("fft", (x,), fft_type=fft_type,
                                    fft_length=tuple(int(n) for n in fft_length))

    def tuple(self, elements):
        return self.add_instruction("tuple", tuple(elements))

    def get_tuple_element(self, t, index):
        return self.add_instruction("get-tuple-element", (t,), index=index)

    # ----- reductions, contractions -----------------------------------------------
    def reduce(self, operands, init_values, computation, dimensions):
        """Variadic when ``operands`` is a list (the result is then a tuple)."""
        ops = list(operands) if isinstance(operands, (list, tuple)) else [operands]
        inits = list(init_values) if isinstance(init_values, (list, tuple)) else [init_values]
        return self.add_instruction("reduce", (*ops, *inits), dimensions=tuple(dimensions),
                                    to_apply=computation)

    def reduce_window(self, operands, init_values, computation, window):
        ops = list(operands) if isinstance(operands, (list, tuple)) else [operands]
        inits = list(init_values) if isinstance(init_values, (list, tuple)) else [init_values]
        return self.add_instruction("reduce-window", (*ops, *inits), window=window,
                                    to_apply=computation)

    def select_and_scatter(self, operand, source, init_value, window, select, scatter):
        return self.add_instruction("select-and-scatter", (operand, source, init_value),
                                    window=window, select=select, scatter=scatter)

    def dot_general(self, lhs, rhs, lhs_contracting_dims, rhs_contracting_dims,
                    lhs_batch_dims=(), rhs_batch_dims=(), preferred_element_type=None):
        attrs = {}
        if lhs_batch_dims:
            attrs["lhs_batch_dims"] = tuple(lhs_batch_dims)
        attrs["lhs_contracting_dims"] = tuple(lhs_contracting_dims)
        if rhs_batch_dims:
            attrs["rhs_batch_dims"] = tuple(rhs_batch_dims)
        attrs["rhs_contracting_dims"] = tuple(rhs_contracting_dims)
        et = element_type(preferred_element_type) if preferred_element_type is not None \
            else lhs.element_type
        return self.add_instruction("dot", (lhs, rhs), Shape.scalar(et), **attrs)

    def convolution(self, lhs, rhs, window, dim_labels, feature_group_count=1,
                    batch_group_count=1, preferred_element_type=None):
        attrs = {"window": window, "dim_labels": dim_labels}
        if feature_group_count != 1:
            attrs["feature_group_count"] = feature_group_count
        if batch_group_count != 1:
            attrs["batch_group_count"] = batch_group_count
        et = element_type(preferred_element_type) if preferred_element_type is not None \
            else lhs.element_type
        return self.add_instruction("convolution", (lhs, rhs), Shape.scalar(et), **attrs)

    # ----- data movement ----------------------------------------------------------
    def gather(self, operand, start_indices, offset_dims, collapsed_slice_dims, start_index_map,
               index_vector_dim, slice_sizes, operand_batching_dims=(), start_indices_batching_dims=(),
               indices_are_sorted=False):
        attrs = {"offset_dims": tuple(offset_dims), "collapsed_slice_dims": tuple(collapsed_slice_dims)}
        if operand_batching_dims:
            attrs["operand_batching_dims"] = tuple(operand_batching_dims)
            attrs["start_indices_batching_dims"] = tuple(start_indices_batching_dims)
        attrs.update(start_index_map=tuple(start_index_map), index_vector_dim=index_vector_dim,
                     slice_sizes=tuple(slice_sizes))
        if indices_are_sorted:
            attrs["indices_are_sorted"] = True
        return self.add_instruction("gather", (operand, start_indices), **attrs)

    def scatter(self, operands, scatter_indices, updates, computation, update_window_dims,
                inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim,
                input_batching_dims=(), scatter_indices_batching_dims=(),
                indices_are_sorted=False, unique_indices=False):
        ops = list(operands) if isinstance(operands, (list, tuple)) else [operands]
        ups = list(updates) if isinstance(updates, (list, tuple)) else [updates]
        attrs = {"update_window_dims": tuple(update_window_dims),
                 "inserted_window_dims": tuple(inserted_window_dims)}
        if input_batching_dims:
            attrs["input_batching_dims"] = tuple(input_batching_dims)
            attrs["scatter_indices_batching_dims"] = tuple(scatter_indices_batching_dims)
        attrs.update(scatter_dims_to_operand_dims=tuple(scatter_dims_to_operand_dims),
                     index_vector_dim=index_vector_dim)
        if indices_are_sorted:
            attrs["indices_are_sorted"] = True
        if unique_indices:
            attrs["unique_indices"] = True
        attrs["to_apply"] = computation
        return self.add_instruction("scatter", (*ops, scatter_indices, *ups), **attrs)

    def sort(self, operands, comparator, dimension, is_stable=False):
        ops = list(operands) if isinstance(operands, (list, tuple)) else [operands]
        attrs = {"dimensions": (dimension,)}
        if is_stable:
            attrs["is_stable"] = True
        attrs["to_apply"] = comparator
        return self.add_instruction("sort", tuple(ops), **attrs)

    # ----- control flow -----------------------------------------------------------
    def while_loop(self, condition, body, init):
        return self.add_instruction("while", (init,), condition=condition, body=body)

    def conditional(self, branch_index, branch_computations, branch_operands):
        ops = (branch_index, *branch_operands)
        if branch_index.element_type is PrimitiveType.PRED and len(branch_computations) == 2:
            return self.add_instruction("conditional", ops, true_computation=branch_computations[0],
                                        false_computation=branch_computations[1])
        return self.add_instruction("conditional", ops, branch_computations=tuple(branch_computations))

    def call(self, computation, operands):
        return self.add_instruction("call", tuple(operands), to_apply=computation)

    def map(self, operands, computation, dimensions):
        return self.add_instruction("map", tuple(operands), dimensions=tuple(dimensions),
                                    to_apply=computation)

    def rng_bit_generator(self, state, shape, algorithm="rng_default"):
        out = Shape.tuple([state.shape.without_layout(), shape])
        return self.add_instruction("rng-bit-generator", (state,), out, algorithm=algorithm)

    def custom_call(self, target, operands, shape, **attrs):
        return self.add_instruction("custom-call", tuple(operands), shape,
                                    custom_call_target=target, **attrs)

    # ----- computations -------------------------------------------------------------
    def scalar_computation(self, opcode, element_type_):
        """A two-parameter computation applying binary ``opcode`` to scalars of
        ``element_type_`` (the reducer of a sum, max, ...); one per (op, type)."""
        et = element_type(element_type_)
        cache = self._state.__dict__.setdefault("scalar_computations", {})
        key = (opcode, et)
        if key not in cache:
            sub = self.sub_builder(f"{opcode.replace('-', '_')}.{et.text}")
            a = sub.parameter(0, Shape.scalar(et), "lhs")
            b = sub.parameter(1, Shape.scalar(et), "rhs")
            cache[key] = sub.build(sub.binary(opcode, a, b))
        return cache[key]

    def build(self, root=None):
        """Finishes the computation (root: the last op added unless given) and
        adds it to the module; returns the HloComputation."""
        if self._built is not None:
            return self._built
        if root is None:
            if not self._instructions:
                raise InvalidArgumentError(f"computation {self.name} has no instructions")
            root_instr = self._instructions[-1]
        else:
            root_instr = self._check([root])[0]
        numbers = sorted(self._parameters)
        if numbers != list(range(len(numbers))):
            raise InvalidArgumentError(f"parameters of {self.name} are not numbered 0..n-1: {numbers}")
        comp = HloComputation(self.name, root=root_instr)
        live = _reachable(root_instr) | set(map(id, self._parameters.values()))
        for instr in self._instructions:
            if id(instr) in live:
                comp.add_instruction(instr)
        self.module.add_computation(comp)
        self._built = comp
        return comp

    def build_module(self, root=None):
        """Builds this computation as the entry of its module and returns the module."""
        comp = self.build(root)
        self.module.set_entry(comp)
        return self.module


def _reachable(root):
    seen, stack = set(), [root]
    while stack:
        instr = stack.pop()
        if id(instr) in seen:
            continue
        seen.add(id(instr))
        stack.extend(instr.operands)
        stack.extend(instr.control_predecessors)
    return seen


def _tuple_layout(shape):
    if shape.is_tuple:
        return Shape.tuple([_tuple_layout(s) for s in shape.tuple_shapes])
    return shape.with_default_layout() if shape.is_array else shape
