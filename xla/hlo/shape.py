"""Shapes: arrays (element type, dimensions, layout), tuples, tokens.

Text forms, as XLA prints them::

    f32[]                 scalar
    f32[2,3]{1,0}         array with a minor-to-major layout
    f32[<=8,3]            bounded dynamic dimension (bound 8)
    f32[2,3]{1,0:T(8,128)}  layout with tiling etc. (the part after ':' is kept verbatim)
    (f32[2]{0}, s32[])    tuple (nested tuples allowed)
    token[]
    b(f32[4,16]{1,0})     buffer of an array (XLA's buffer shape)
"""
import math
import re

import numpy as np

from xla.hlo.types import PrimitiveType, from_dtype


_ELEMENT_SIZE = re.compile(r"(?<![A-Za-z])E\((\d+)\)")


class Layout:
    """A minor-to-major dimension order, plus any extra layout text after ':'."""

    __slots__ = ("minor_to_major", "extra")

    def __init__(self, minor_to_major, extra=""):
        self.minor_to_major = tuple(int(d) for d in minor_to_major)
        self.extra = extra

    def __eq__(self, other):
        return (isinstance(other, Layout) and self.minor_to_major == other.minor_to_major
                and self.extra == other.extra)

    def __hash__(self):
        return hash((self.minor_to_major, self.extra))

    def __repr__(self):
        return f"Layout({self.to_text()})"

    def to_text(self):
        body = ",".join(str(d) for d in self.minor_to_major)
        if self.extra:
            body += ":" + self.extra
        return "{" + body + "}"

    @property
    def element_size_in_bits(self):
        """The E(n) of the layout text (``{0:E(4)}``: elements packed 4 bits
        each), or 0 when the layout has none (one element per byte or more)."""
        m = _ELEMENT_SIZE.search(self.extra) if self.extra else None
        return int(m.group(1)) if m else 0

    @staticmethod
    def row_major(rank):
        return Layout(tuple(range(rank - 1, -1, -1)))


class Shape:
    """An immutable HLO shape.

    For arrays: ``element_type``, ``dimensions`` (for a bounded dynamic
    dimension this is the bound), ``dynamic`` (one bool per dimension) and
    ``layout`` (a Layout or None when the text had none). An unbounded
    dynamic dimension (``?``) is stored as -1 with its dynamic flag set. For tuples:
    ``element_type is PrimitiveType.TUPLE`` and ``tuple_shapes``. For buffers:
    ``element_type is PrimitiveType.BUFFER`` and the one array shape it holds
    as ``tuple_shapes[0]`` (``buffer_shape``); a buffer is neither an array
    nor a tuple, and a leaf of a tuple.
    """

    __slots__ = ("element_type", "dimensions", "dynamic", "layout", "tuple_shapes", "_hash")

    def __init__(self, element_type, dimensions=(), layout=None, dynamic=None, tuple_shapes=()):
        if isinstance(element_type, str):
            from xla.hlo.types import from_text
            et = from_text(element_type)
            if et is None:
                raise ValueError(f"unknown element type {element_type!r}")
            element_type = et
        self.element_type = element_type
        self.dimensions = tuple(int(d) for d in dimensions)
        self.dynamic = tuple(bool(d) for d in dynamic) if dynamic is not None else (False,) * len(self.dimensions)
        if len(self.dynamic) != len(self.dimensions):
            raise ValueError("dynamic flags must match dimensions")
        self.layout = layout
        self.tuple_shapes = tuple(tuple_shapes)
        self._hash = None   # computed on first use (passes hash shapes in their keys)

    # ----- constructors -------------------------------------------------
    @staticmethod
    def array(element_type, dimensions, layout="default"):
        """An array shape; ``layout='default'`` gives row-major, None gives none."""
        dims = tuple(dimensions)
        if layout == "default":
            layout = Layout.row_major(len(dims))
        elif isinstance(layout, (tuple, list)):
            layout = Layout(layout)
        return Shape(element_type, dims, layout)

    @staticmethod
    def scalar(element_type):
        return Shape.array(element_type, ())

    @staticmethod
    def tuple(shapes):
        return Shape(PrimitiveType.TUPLE, tuple_shapes=shapes)

    @staticmethod
    def token():
        return Shape(PrimitiveType.TOKEN)

    @staticmethod
    def buffer(array_shape):
        """XLA's buffer shape ``b(f32[4,16])``: it holds one array shape."""
        if not array_shape.is_array:
            raise ValueError(f"a buffer holds an array shape, not {array_shape}")
        return Shape(PrimitiveType.BUFFER, tuple_shapes=(array_shape,))

    @staticmethod
    def from_array(value):
        value = np.asarray(value)
        return Shape.array(from_dtype(value.dtype), value.shape)

    # ----- predicates ---------------------------------------------------
    @property
    def is_tuple(self):
        return self.element_type is PrimitiveType.TUPLE

    @property
    def is_token(self):
        return self.element_type is PrimitiveType.TOKEN

    @property
    def is_buffer(self):
        return self.element_type is PrimitiveType.BUFFER

    @property
    def has_buffer(self):
        """Whether this shape is or holds (in a tuple) a buffer shape."""
        return self.is_buffer or any(s.has_buffer for s in self.tuple_shapes)

    @property
    def buffer_shape(self):
        """The array shape a buffer shape holds."""
        if not self.is_buffer:
            raise ValueError(f"shape {self} is not a buffer")
        return self.tuple_shapes[0]

    @property
    def is_array(self):
        return self.element_type.is_array_type

    @property
    def rank(self):
        return len(self.dimensions)

    @property
    def is_scalar(self):
        return self.is_array and not self.dimensions

    @property
    def is_dynamic(self):
        return any(self.dynamic) or any(s.is_dynamic for s in self.tuple_shapes)

    @property
    def dtype(self):
        """The NumPy dtype of the elements (arrays only)."""
        if not self.is_array:
            raise ValueError(f"shape {self} has no NumPy dtype")
        return self.element_type.dtype

    def num_elements(self):
        return math.prod(self.dimensions)

    def physical_minor_to_major(self):
        """The dimension numbers from the most minor to the most major in
        memory: the layout's, or row-major (the reverse of dimension order)
        where it has none of its rank."""
        layout = self.layout
        if layout is None or len(layout.minor_to_major) != self.rank:
            return tuple(range(self.rank))[::-1]
        return tuple(layout.minor_to_major)

    def is_row_major(self):
        """Whether the elements lie in memory in dimension order."""
        return self.physical_minor_to_major() == tuple(range(self.rank))[::-1]

    def byte_size(self):
        """Bytes of the array (arrays) or of the tuple's pointer table (tuples)."""
        if self.is_tuple:
            return 8 * len(self.tuple_shapes)
        if self.is_buffer:
            return self.buffer_shape.byte_size()
        if not self.is_array:
            return 0
        packed = self.layout.element_size_in_bits if self.layout is not None else 0
        if packed:  # as XLA's ShapeUtil::ByteSizeOfElements
            return (self.num_elements() * packed + 7) // 8
        return self.num_elements() * self.element_type.byte_size

    def leaves(self):
        """Non-tuple subshapes in depth-first order, with their index paths."""
        if not self.is_tuple:
            return [((), self)]
        out = []
        for i, s in enumerate(self.tuple_shapes):
            out.extend(((i,) + path, leaf) for path, leaf in s.leaves())
        return out

    def subshape(self, index):
        shape = self
        for i in index:
            shape = shape.tuple_shapes[i]
        return shape

    # ----- derived shapes ---------------------------------------------
    def with_element_type(self, element_type):
        return Shape(element_type, self.dimensions, self.layout, self.dynamic, self.tuple_shapes)

    def with_layout(self, layout):
        return Shape(self.element_type, self.dimensions, layout, self.dynamic, self.tuple_shapes)

    def without_layout(self):
        if self.is_tuple:
            return Shape.tuple([s.without_layout() for s in self.tuple_shapes])
        if self.is_buffer:
            return Shape.buffer(self.buffer_shape.without_layout())
        return Shape(self.element_type, self.dimensions, None, self.dynamic)

    def with_default_layout(self):
        if self.is_tuple:
            return Shape.tuple([s.with_default_layout() for s in self.tuple_shapes])
        if self.is_buffer:
            return Shape.buffer(self.buffer_shape.with_default_layout())
        if not self.is_array:
            return self
        return Shape(self.element_type, self.dimensions, Layout.row_major(self.rank), self.dynamic)

    # ----- comparison ---------------------------------------------------
    def compatible(self, other):
        """Equal ignoring layouts (XLA's ShapeUtil::Compatible)."""
        if self.element_type is not other.element_type:
            return False
        if self.is_tuple or self.is_buffer:
            return (len(self.tuple_shapes) == len(other.tuple_shapes) and
                    all(a.compatible(b) for a, b in zip(self.tuple_shapes, other.tuple_shapes)))
        return self.dimensions == other.dimensions and self.dynamic == other.dynamic

    def same_dimensions(self, other):
        return self.dimensions == other.dimensions

    def __eq__(self, other):
        if not isinstance(other, Shape):
            return NotImplemented
        return (self.element_type is other.element_type and self.dimensions == other.dimensions
                and self.dynamic == other.dynamic and self.layout == other.layout
                and self.tuple_shapes == other.tuple_shapes)

    def __getstate__(self):
        # The cached hash stays behind: string hashes differ between processes.
        return {k: getattr(self, k) for k in self.__slots__ if k != "_hash"}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)
        self._hash = None

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash((self.element_type, self.dimensions, self.dynamic, self.layout,
                                   self.tuple_shapes))
        return h

    # ----- text -----------------------------------------------------------
    def to_text(self, print_layout=True):
        if self.is_tuple:
            return "(" + ", ".join(s.to_text(print_layout) for s in self.tuple_shapes) + ")"
        if self.is_buffer:
            return "b(" + self.buffer_shape.to_text(print_layout) + ")"
        dims = ",".join("?" if (dyn and d < 0) else ("<=" if dyn else "") + str(d)
                        for d, dyn in zip(self.dimensions, self.dynamic))
        text = f"{self.element_type.text}[{dims}]"
        if print_layout and self.layout is not None and self.is_array:
            if self.rank > 0 or self.layout.extra:
                text += self.layout.to_text()
        return text

    def __str__(self):
        return self.to_text()

    def __repr__(self):
        return f"Shape({self.to_text()})"


def reshape_dimension_groups(in_dims, out_dims):
    """A reshape's dimensions as groups ([operand dims], [result dims]) whose
    sizes have equal products, each as small as possible, in order (one
    group when either side is empty or has a zero size): what a reshape
    merges and splits. The dynamic padder and the interpreter use them to
    give a reshape's dynamic result dimensions their sizes."""
    if 0 in in_dims or 0 in out_dims or not in_dims or not out_dims:
        return [(list(range(len(in_dims))), list(range(len(out_dims))))]
    groups, i, j = [], 0, 0
    while i < len(in_dims) and j < len(out_dims):
        ins, outs = [i], [j]
        a, c = in_dims[i], out_dims[j]
        i, j = i + 1, j + 1
        while a != c:
            if a < c:
                ins.append(i)
                a *= in_dims[i]
                i += 1
            else:
                outs.append(j)
                c *= out_dims[j]
                j += 1
        groups.append((ins, outs))
    groups[-1][0].extend(range(i, len(in_dims)))   # trailing dimensions of size 1
    groups[-1][1].extend(range(j, len(out_dims)))
    return groups


def reshape_result_sizes(operand_dims, held, result):
    """The sizes of a reshape's result (shape ``result``) for an operand of
    bounds ``operand_dims`` held at sizes ``held``: in each group of
    dimensions the reshape merges or splits (``reshape_dimension_groups``)
    whose elements do not fill the result's bounds, the one dynamic result
    dimension takes what they fill. ValueError when no such dimension is
    unique or the elements do not fill whole rows of it."""
    out = list(result.dimensions)
    for ins, outs in reshape_dimension_groups(operand_dims, out):
        count = math.prod(held[i] for i in ins)
        if count == math.prod(out[j] for j in outs):
            continue
        dynamic = [j for j in outs if result.dynamic[j]]
        rest = math.prod(out[j] for j in outs if j not in dynamic[:1])
        if len(dynamic) != 1 or (rest and count % rest):
            raise ValueError(
                f"the operand's dynamic sizes {list(held)} do not fill "
                f"{result.to_text(False)} (one dynamic result dimension per merged or split "
                "group of dimensions holds the size)")
        out[dynamic[0]] = count // rest if rest else 0
    return out
