"""Parsing of the values inside HLO instructions: shapes and layouts, typed
attribute values (integer lists, slices, paddings, windows, dim_labels) and
literals (the inside of ``constant(...)``).

``ValueParser`` extends the lexer (``xla.hlo.lexer``) with these readers;
``xla.hlo.parser`` builds modules, computations and instructions on it.
"""
import re

import numpy as np

from xla.hlo.attributes import ConvDimensionNumbers, PaddingDim, SliceDim, Window, WindowDimension
from xla.hlo.lexer import _EOF, _GROUP, _INT_RE, _PUNCT, _ROW, _SHAPE, _WORD, HloLexer
from xla.hlo.shape import Layout, Shape
from xla.hlo.types import PrimitiveType, floats_from_text, from_text as _type_from_text

_SHAPE_CACHE = {}
# At most 40 digits: a longer integer fits no HLO type (and Python refuses to
# convert more than 4,300 digits).
_PLAIN_INT_LIST_RE = re.compile(r'\{[ \t]*(\d{1,40}(?:[ \t]*,[ \t]*\d{1,40})*)?[ \t]*\}\Z')


# An array shape of static sizes with a plain layout ('f32[8,17]{1,0}'), as
# ``parse_shape`` reads it; anything else (dynamic sizes, spaces, layout
# extras, errors) goes through the parser.
_PLAIN_ARRAY_SHAPE_RE = re.compile(
    r'([a-z][a-z0-9]*)\[(\d{1,18}(?:,\d{1,18})*)?\](?:\{(\d{1,18}(?:,\d{1,18})*)?\})?\Z')


def _plain_array_shape(text):
    m = _PLAIN_ARRAY_SHAPE_RE.match(text)
    if m is None:
        return None
    type_text, dims_text, layout_text = m.groups()
    et = _type_from_text(type_text)
    if et is None or not et.is_array_type:
        return None
    dims = tuple(map(int, dims_text.split(","))) if dims_text else ()
    layout = None
    if layout_text is not None or text.endswith("{}"):
        minor_to_major = tuple(map(int, layout_text.split(","))) if layout_text else ()
        if minor_to_major and sorted(minor_to_major) != list(range(len(dims))):
            return None   # the parser reports it
        layout = Layout(minor_to_major)
    return Shape(et, dims, layout, (False,) * len(dims))


class ValueParser(HloLexer):
    """Reads the values of HLO text at the current token; each reader
    advances past its value or raises ``HloParseError`` where it stops."""

    # ----- shapes ------------------------------------------------------------
    def at_shape(self):
        k = self.kinds[self.pos]
        if k == _SHAPE:
            return True
        if k == _WORD:
            return (self.vals[self.pos + 1] in ("[", "(") and self.kinds[self.pos + 1] == _PUNCT
                    and (self.vals[self.pos] == "b" or self.vals[self.pos + 1] == "[")
                    and not self.vals[self.pos].startswith("%"))
        return k == _PUNCT and self.vals[self.pos] == "("

    def parse_shape(self):
        i = self.pos
        if self.kinds[i] == _SHAPE:
            text = self.vals[i]
            shape = _SHAPE_CACHE.get(text)
            if shape is None:
                shape = _plain_array_shape(text)
                if shape is None:
                    child = type(self)(self.text, self.filename, self.starts[i], self.ends[i],
                                       parent=self)
                    shape = child.parse_shape()
                    if child.kinds[child.pos] != _EOF:
                        child.expected("the end of the shape")
                if len(_SHAPE_CACHE) > 100000:
                    _SHAPE_CACHE.clear()
                _SHAPE_CACHE[text] = shape
            self.pos += 1
            return shape
        if self.kinds[i] == _PUNCT and self.vals[i] == "(":
            self.pos += 1
            elements = []
            if not self.accept(")"):
                while True:
                    elements.append(self.parse_shape())
                    if self.accept(")"):
                        break
                    if not self.at(","):
                        self.expected("',' or ')' in a tuple shape")
                    self.pos += 1
            if len(elements) > 5:
                self.note_index_comments("shape", i)
            return Shape.tuple(elements)
        if self.kinds[i] != _WORD:
            self.expected("a shape")
        if self.vals[i] == "b" and self.vals[i + 1] == "(" and self.kinds[i + 1] == _PUNCT:
            # A buffer shape, b(f32[4,16]): it holds one array shape.
            self.pos += 2
            inner_index = self.pos
            inner = self.parse_shape()
            if not inner.is_array:
                self.error(f"a buffer shape holds an array shape, not {inner.to_text()}",
                           inner_index)
            if not self.at(")"):
                self.expected("')' at the end of a buffer shape")
            self.pos += 1
            return Shape.buffer(inner)
        type_text = self.vals[i]
        et = _type_from_text(type_text)
        if et is None or et in (PrimitiveType.TUPLE, PrimitiveType.BUFFER):
            if self.vals[i + 1] == "[" or _looks_like_type(type_text):
                self.error(f"unknown element type '{type_text}'")
            self.expected("a shape")
        self.pos += 1
        self.expect("[")
        dims, dynamic = [], []
        if not self.accept("]"):
            while True:
                if self.accept("?"):
                    dims.append(-1)
                    dynamic.append(True)
                else:
                    dyn = self.accept("<=")
                    if not dyn and self.at("<"):  # '< =' written apart
                        self.pos += 1
                        self.expect("=")
                        dyn = True
                    d = self.expect_int("a dimension size")
                    if d < 0:
                        self.error("dimension sizes must be non-negative", self.pos - 1)
                    if d >= 2**63:
                        self.error(f"dimension size {d} does not fit in 64 bits", self.pos - 1)
                    dims.append(d)
                    dynamic.append(dyn)
                if self.accept("]"):
                    break
                if not self.at(","):
                    self.expected("',' or ']' in the dimensions of a shape")
                self.pos += 1
        layout = None
        # A layout is a '{' right after ']' (no space): the '{' of a
        # computation body after '-> f32[]' is always preceded by a space.
        j = self.pos
        if (self.kinds[j] == _PUNCT and self.vals[j] == "{"
                and self.starts[j] == self.ends[j - 1]):
            layout = self.parse_layout(len(dims))
        if not et.is_array_type:
            if dims:
                self.error(f"{et.text} shapes have no dimensions", i)
            return Shape(et)
        return Shape(et, dims, layout, dynamic)

    def parse_layout(self, rank):
        open_index = self.pos
        self.expect("{")
        minor_to_major = []
        extra = ""
        if not self.at("}") and not self.at(":"):
            while True:
                minor_to_major.append(self.expect_int("a dimension number in a layout"))
                if self.at("}") or self.at(":"):
                    break
                if not self.at(","):
                    self.expected("',' or '}' in a layout")
                self.pos += 1
        if self.accept(":"):
            start = self.pos
            depth = 0
            while True:
                k, v = self.kinds[self.pos], self.vals[self.pos]
                if k == _EOF:
                    self.error("expected '}' to close this layout but found end of file", open_index)
                if k == _PUNCT:
                    if v in "({[":
                        depth += 1
                    elif v in ")]":
                        depth -= 1
                    elif v == "}":
                        if depth == 0:
                            break
                        depth -= 1
                self.pos += 1
            extra = self.text[self.starts[start]:self.starts[self.pos]].strip() if self.pos > start else ""
        self.expect("}")
        if minor_to_major and len(minor_to_major) != rank:
            self.error(f"layout {{{','.join(map(str, minor_to_major))}}} has {len(minor_to_major)} "
                       f"dimensions but the shape has rank {rank}", open_index)
        if minor_to_major and sorted(minor_to_major) != list(range(rank)):
            self.error(f"layout {{{','.join(map(str, minor_to_major))}}} is not a permutation "
                       f"of 0..{rank - 1}", open_index)
        return Layout(minor_to_major, extra)

    # ----- attribute values ----------------------------------------------------
    def plain_int_list(self):
        """The value of a brace token holding only non-negative decimal
        integers ('{}', '{1,0}'), as ``parse_int_list`` reads it, without a
        child parser; None for any other text (comments, signs, hex, ...)."""
        i = self.pos
        if self.kinds[i] != _GROUP and self.kinds[i] != _ROW:
            return None
        m = _PLAIN_INT_LIST_RE.match(self.vals[i])
        if m is None:
            return None
        self.pos += 1
        body = m.group(1)
        return tuple(map(int, body.split(","))) if body else ()

    def parse_int_list(self, open_, close):
        self.expect(open_)
        values = []
        if self.accept(close):
            return tuple(values)
        while True:
            values.append(self.expect_int())
            if self.accept(close):
                return tuple(values)
            if not self.at(","):
                self.expected(f"',' or '{close}'")
            self.pos += 1

    def parse_name_list(self, what):
        self.expect("{")
        refs = []
        if self.accept("}"):
            return refs
        while True:
            offset = self.starts[self.pos]
            ref, _ = self.expect_name(what)
            refs.append((ref, offset))
            if self.accept("}"):
                return refs
            if not self.at(","):
                self.expected("',' or '}'")
            self.pos += 1

    def parse_slice(self):
        self.expect("{")
        dims = []
        if self.accept("}"):
            return ()
        while True:
            self.expect("[")
            nums = [self.expect_int("a slice bound")]
            while self.accept(":"):
                nums.append(self.expect_int("a slice bound"))
            if len(nums) not in (2, 3):
                self.error("a slice dimension is [start:limit] or [start:limit:stride]", self.pos - 1)
            self.expect("]")
            dims.append(SliceDim(*nums))
            if self.accept("}"):
                return tuple(dims)
            if not self.at(","):
                self.expected("',' or '}' in a slice")
            self.pos += 1

    def _int_fields(self, text, sep, index, what):
        try:
            values = [int(x) for x in text.split(sep)]
        except ValueError:
            self.error(f"malformed {what} '{text}'", index)
        for v in values:
            if not -(1 << 63) <= v < (1 << 63):   # XLA's fields are int64
                self.error(f"{what} value {v} is out of range for s64", index)
        return values

    def parse_padding(self):
        index = self.pos
        if self.kind() != _WORD:
            self.expected("a padding like 0_0x1_1")
        text = self.vals[self.pos]
        self.pos += 1
        dims = []
        for part in text.split("x"):
            fields = self._int_fields(part, "_", index, "padding")
            if len(fields) not in (2, 3):
                self.error(f"malformed padding '{text}': each dimension is low_high or "
                           f"low_high_interior", index)
            dims.append(PaddingDim(*fields))
        return tuple(dims)

    def parse_window(self):
        open_index = self.pos
        self.expect("{")
        fields = {}
        while not self.at("}"):
            key_index = self.pos
            key = self.expect_word("a window field (size, stride, pad, lhs_dilate, rhs_dilate, "
                                   "rhs_reversal)")
            if key not in ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"):
                self.error(f"unknown window field '{key}'", key_index)
            if key in fields:
                self.error(f"duplicate window field '{key}'", key_index)
            self.expect("=")
            value_index = self.pos
            if self.kind() != _WORD:
                self.expected(f"a value for window field '{key}'")
            text = self.vals[self.pos]
            self.pos += 1
            if key == "pad":
                parts = []
                for p in text.split("x"):
                    f = self._int_fields(p, "_", value_index, "window padding")
                    if len(f) != 2:
                        self.error(f"malformed window padding '{text}': each dimension is low_high",
                                   value_index)
                    parts.append(f)
            else:
                parts = self._int_fields(text, "x", value_index, f"window {key}")
            fields[key] = (parts, value_index)
        self.pos += 1
        if not fields:
            return Window(())
        if "size" not in fields:
            self.error("a window needs a size", open_index)
        n = len(fields["size"][0])
        for key, (parts, index) in fields.items():
            if len(parts) != n:
                self.error(f"window field '{key}' has {len(parts)} dimensions but size has {n}", index)

        def get(key, default):
            return fields[key][0] if key in fields else [default] * n
        pads = get("pad", [0, 0])
        dims = [WindowDimension(size=s, stride=st, padding_low=p[0], padding_high=p[1],
                                window_dilation=rd, base_dilation=ld, window_reversal=bool(rr))
                for s, st, p, ld, rd, rr in zip(get("size", 1), get("stride", 1), pads,
                                                get("lhs_dilate", 1), get("rhs_dilate", 1),
                                                get("rhs_reversal", 0))]
        return Window(dims)

    def parse_dim_labels(self):
        start = self.pos
        # '?' (a dimension the convolution does not use, as XLA's lexer
        # allows) is a token of its own: the labels are the adjacent tokens.
        if self.kind() != _WORD and not self.at("?"):
            self.expected("dim_labels like b01f_01io->b01f")
        self.pos += 1
        while (self.at("?") or self.kind() == _WORD) and self.at_adjacent():
            self.pos += 1
        if not self.at("->"):
            self.expected("'->' in dim_labels")
        self.pos += 1
        if self.kind() != _WORD and not self.at("?"):
            self.expected("the output labels of dim_labels")
        self.pos += 1
        while (self.at("?") or self.kind() == _WORD) and self.at_adjacent():
            self.pos += 1
        text = self.text[self.starts[start]:self.ends[self.pos - 1]]
        try:
            return ConvDimensionNumbers.from_text(text)
        except (ValueError, IndexError, KeyError) as e:
            self.error(f"bad dim_labels '{text}': {e}", start)

    # ----- literals ----------------------------------------------------------------
    def at_elided(self):
        if self.kinds[self.pos] == _ROW and self.vals[self.pos][1:-1].strip() == "...":
            self.pos += 1
            return True
        if self.at("{") and self.peek(1) == "..." and self.peek(2) == "}":
            self.pos += 3
            return True
        return False

    def parse_literal(self, shape):
        if shape.is_tuple:
            if self.at_elided():
                return None
            self.expect("(")
            values = []
            for k, sub in enumerate(shape.tuple_shapes):
                if k:
                    if not self.at(","):
                        self.expected(f"',' and {len(shape.tuple_shapes)} tuple elements in the constant")
                    self.pos += 1
                values.append(self.parse_literal(sub))
            if not self.at(")"):
                if self.at(","):
                    self.error(f"the constant has more elements than its tuple shape "
                               f"({len(shape.tuple_shapes)})")
                self.expected("')' to close the tuple constant")
            self.pos += 1
            return tuple(values)
        if not shape.is_array:
            self.error(f"a constant cannot have shape {shape}")
        if self.at_elided():
            return None
        et = shape.element_type
        if shape.rank == 0:
            p = self.enter_group()
            if p.at("{"):  # tolerate '{x}' for a scalar
                p.pos += 1
                v = p.parse_scalar(et)
                p.expect("}")
                self.leave_group(p)
            else:
                v = self.parse_scalar(et)
            return self.make_array([v], et, ())
        if any(d < 0 for d in shape.dimensions):
            self.error("a constant cannot have an unbounded dynamic shape")
        if not self.peek().startswith("{"):
            # As XLA: one scalar for an array constant fills it.
            v = self.parse_scalar(et)
            n = 1
            for d in shape.dimensions:
                n *= d
            return self.make_array([v] * n, et, shape.dimensions)
        flat = []
        self.parse_nested(shape.dimensions, 0, et, flat)
        return self.make_array(flat, et, shape.dimensions)

    def parse_nested(self, dims, depth, et, flat):
        open_index = self.pos
        if self.kinds[open_index] == _ROW:
            if depth == len(dims) - 1 and self.fast_row(dims[depth], et, flat):
                self.pos += 1
                return
            p = self.enter_group()  # the slow path also finds the exact error
            p.parse_nested(dims, depth, et, flat)
            self.leave_group(p)
            return
        if not self.at("{"):
            self.expected(f"'{{' for dimension {depth} of the constant")
        self.pos += 1
        n = dims[depth]
        last = depth == len(dims) - 1
        count = 0
        if not self.at("}"):
            while True:
                if last:
                    flat.append(self.parse_scalar(et))
                else:
                    self.parse_nested(dims, depth + 1, et, flat)
                count += 1
                if self.at("}"):
                    break
                if not self.at(","):
                    self.expected("',' or '}' in the constant")
                if count >= n:
                    self.error(f"too many elements in dimension {depth} of the constant: "
                               f"the shape says {n}")
                self.pos += 1
        if count != n:
            self.error(f"dimension {depth} of the constant has {count} elements but the shape "
                       f"says {n}", open_index)
        self.pos += 1

    def fast_row(self, n, et, flat):
        """Converts the innermost row '{1, 2, 3}' at the current ROW token.

        Returns False (appending nothing) when the row is not plain, so that
        the token-by-token path handles it and reports any error precisely.
        """
        if et.is_complex:
            return False
        inner = self.vals[self.pos][1:-1]
        items = inner.split(",") if inner.strip() else []
        if len(items) != n:
            return False
        try:
            if et.is_float:
                values = [float(x) for x in items]
                if any(x != x for x in values):  # 'nan(0x..)' and friends: slow path
                    if any(x.strip().lower() not in ("nan", "-nan", "+nan") for x, v in
                           zip(items, values) if v != v):
                        return False
            elif et.is_integer:
                try:
                    values = [int(x) for x in items]
                except ValueError:   # not plain integers: the slow path says where
                    return False
                lo, hi = _int_range(et)
                if values and (min(values) < lo or max(values) > hi):
                    return False
            elif et.is_pred:
                values = [_PRED_WORDS[x.strip()] for x in items]
            else:
                return False
        except (ValueError, KeyError):
            return False
        flat.extend(values)
        return True

    def parse_scalar(self, et):
        k = self.kinds[self.pos]
        if et.is_complex:
            if not self.at("("):
                self.expected("a complex value '(real, imag)'")
            self.pos += 1
            re_ = self.parse_float_text()
            self.expect(",")
            im = self.parse_float_text()
            self.expect(")")
            return complex(re_, im)
        if k != _WORD:
            self.expected(f"a {et.text} value")
        v = self.vals[self.pos]
        index = self.pos
        self.pos += 1
        if et.is_pred:
            if v in ("true", "1"):
                return True
            if v in ("false", "0"):
                return False
            self.expected("'true' or 'false'", index)
        if et.is_integer:
            if not _INT_RE.match(v):
                self.expected(f"an integer value of type {et.text}", index)
            n = int(v, 0) if "x" in v.lower() else int(v)
            info = _int_range(et)
            if et.kind == "u" and -(info[1] + 1) // 2 <= n < 0:
                # As XLA: a negative value of an unsigned type wraps (u64 -1 is 2^64 - 1).
                n += info[1] + 1
            if not info[0] <= n <= info[1]:
                self.error(f"value {v} is out of range for {et.text}", index)
            return n
        self.pos -= 1
        return self.parse_float_text()

    def parse_float_text(self):
        index = self.pos
        if self.kind() != _WORD:
            self.expected("a floating-point value")
        v = self.vals[self.pos]
        self.pos += 1
        low = v.lower()
        if low in ("nan", "+nan", "-nan"):
            x = float("nan")
            if self.at("(") and self.kinds[self.pos + 1] == _WORD and self.peek(2) == ")":
                self.pos += 3  # 'nan(0x...)': a payload this IR does not keep
            return -x if low.startswith("-") else x
        if low in ("inf", "+inf", "-inf", "infinity", "-infinity"):
            return float(low.replace("infinity", "inf"))
        try:
            if "0x" in low:
                return float.fromhex(v)
            return float(v)
        except ValueError:
            self.expected("a floating-point value", index)

    def make_array(self, flat, et, dims):
        try:
            if et.is_float:
                arr = floats_from_text(flat, et)
            elif et is PrimitiveType.U64:
                arr = np.array(flat, dtype=np.uint64)
            elif et.is_integer:
                arr = np.array(flat, dtype=np.int64).astype(et.dtype)
            else:
                arr = np.array(flat, dtype=et.dtype)
            return arr.reshape(dims)
        except (OverflowError, ValueError, TypeError) as e:  # pragma: no cover
            self.error(f"bad constant: {e}")


_PRED_WORDS = {"true": True, "false": False, "1": True, "0": False}


def _int_range(et):
    bits = et.bits
    if et.is_signed_integer:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


_TYPE_LIKE_RE = re.compile(r"(?:[sufc]\d+|f8\w*|bf\d+|pred\w*|token\w*)\Z")


def _looks_like_type(word):
    return bool(_TYPE_LIKE_RE.match(word))
