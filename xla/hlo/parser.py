"""Parser of XLA's HLO text format.

Accepts both styles XLA prints: the unoptimized text JAX hands to XLA
(``add.3 = f32[4]{0} add(Arg_0.1, Arg_0.1)``, no ``%``, no operand shapes,
``ENTRY main.4 {`` and ``} // main.4``) and XLA's optimized dumps
(``%add.3 = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %y)``, computation
signatures, the stack-frame tables). The style found is recorded in
``HloModule.print_options`` so that the printer writes the module back the
same way (see ``xla.hlo.printer``).

Attributes are parsed by kind (``xla.hlo.attributes.kind_of``); unknown ones
are kept verbatim as ``RawAttr``. Every malformed input raises
``HloParseError`` with a 1-based line and column; no other exception escapes.

The lexer is one regular expression that also swallows whitespace and
comments (``/*index=5*/``, ``// name``) in front of each token, so the token
stream is built in a single pass; the parser is recursive descent over it.
"""
import bisect
import re

import numpy as np

from xla.errors import HloParseError, ShapeError
from xla.hlo import opcodes
from xla.hlo.attributes import (ConvDimensionNumbers, PaddingDim, RawAttr, SliceDim, Window,
                                WindowDimension, kind_of)
from xla.hlo.ir import HloComputation, HloInstruction, HloModule
from xla.hlo.shape import Layout, Shape
from xla.gc_util import paused_gc
from xla.hlo.types import PrimitiveType, floats_from_text, from_text as _type_from_text

__all__ = ["parse_hlo_module", "parse_shape", "parse_literal", "STACK_FRAME_SECTIONS"]

# Sections of newer dumps between the header and the first computation.
STACK_FRAME_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")

# Header attributes with a typed value; every other one is kept as RawAttr.
_HEADER_INT_ATTRS = ("replica_count", "num_partitions")

# Token kinds (the regex group numbers below).
_EOF, _STR, _OP, _SHAPE, _GROUP, _ROW, _WORD, _PUNCT = 0, 2, 3, 4, 5, 6, 7, 8

# Group 1: whitespace and comments in front of the token (may be empty).
# Then one of: a string; '->' or '<='; a whole array shape ('f32[2,3]{1,0}',
# parsed once per distinct text); a brace group right after '=' with no
# nested braces and no '(' outside strings ('={op_name="x" ...}': one token,
# parsed by a child parser over its text when its attribute is typed; with
# '(' it may be a computation written inline, read token by token); a ROW, any other brace group
# on one line without nested braces, strings, '=' or '%' (a literal's
# innermost '{1, 2, 3}', converted by splitting its text); a word (names,
# numbers, keywords, '%name'; '-' belongs to a word unless it starts '->');
# or any other single non-space character. The coarse SHAPE, GROUP and ROW
# tokens keep the token count, and so the parse time, low. The fine regex
# (for child parsers) has none of them.
_PREFIX = r'((?:\s+|/\*.*?\*/|//[^\n]*+)*+)'
_STRING = r'("(?:[^"\\]|\\.)*")'   # may span lines, as in XLA
_TAIL = r'(%?(?:[A-Za-z0-9_.$+]|-(?!>))+)|(\S)|\Z)'
_TOKEN_RE = re.compile(
    _PREFIX + r'(?:' + _STRING + r'|(->|<=)'
    r'|([a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^{}\n]*\})?)'
    r'|(?<==)(\{(?:[^{}"\n(]|"(?:[^"\\\n]|\\.)*")*\})'
    r'|(\{[^{}"=%\n]*\})|' + _TAIL, re.S)
_FINE_TOKEN_RE = re.compile(
    _PREFIX + r'(?:' + _STRING + r'|(->|<=)|((?!))|((?!))|((?!))|' + _TAIL, re.S)
_SHAPE_CACHE = {}
# Opcodes whose result shape says what the operands do not: it must be written.
_NEEDS_SHAPE = frozenset("""all-gather all-gather-start bitcast bitcast-convert broadcast
collective-permute-start constant convert iota parameter custom-call infeed recv recv-done send
send-done outfeed reduce-scatter reshape rng rng-bit-generator stochastic-convert
dynamic-reshape""".split())
# Attributes XLA's parser requires (an instruction without one is a parse
# error there, reported at the opcode here).
_REQUIRED_ATTRS = {"scan": ("dimensions", "num_carries", "to_apply")}
# At most 40 digits: a longer integer fits no HLO type (and Python refuses to
# convert more than 4,300 digits).
_PLAIN_INT_LIST_RE = re.compile(r'\{[ \t]*(\d{1,40}(?:[ \t]*,[ \t]*\d{1,40})*)?[ \t]*\}\Z')
_INT_RE = re.compile(r'[-+]?(?:0[xX][0-9a-fA-F]{1,32}|\d{1,40})\Z')


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


def _unescape_c(body):
    """Undoes C escaping (XLA's CEscape) of the inside of a string literal."""
    if "\\" not in body:
        return body
    out = bytearray()
    i, n = 0, len(body)
    simple = {"n": 10, "t": 9, "r": 13, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8, "f": 12,
              "v": 11, "?": 63}
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        elif e == "x":
            j = i + 2
            while j < n and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j] or "0", 16) & 0xFF)
            i = j
        else:
            out += e.encode("utf-8")
            i += 2
    return out.decode("utf-8", errors="surrogateescape")


class _Parser:
    def __init__(self, text, filename=None, start=0, end=None, parent=None):
        self.text = text
        self.filename = filename
        self._line_starts = parent._line_starts if parent is not None else None
        self.parent = parent
        end = len(text) if end is None else end
        kinds, vals, starts, ends, nls = [], [], [], [], []
        add_kind, add_val, add_start, add_end, add_nl = (
            kinds.append, vals.append, starts.append, ends.append, nls.append)
        pos = start
        regex = _TOKEN_RE if parent is None else _FINE_TOKEN_RE
        for m in regex.finditer(text, start, end):
            ws_start, pos_end = m.span()
            if ws_start != pos:  # cannot happen: every non-space char is a token
                self.error_at(pos, "unexpected character")
            kind = m.lastindex
            if kind == 1 or kind is None:  # only whitespace and comments left
                break
            space, val = m.group(1, kind)
            tok_start = ws_start + len(space)
            if val == "/" and text.startswith("/*", tok_start):
                # The comment regex found no '*/' after it; stopping here keeps
                # the lexer linear (every later '/*' would scan to the end again).
                self.error_at(tok_start, "unterminated comment: '/*' without a closing '*/'")
            add_kind(kind)
            add_val(val)
            add_start(tok_start)
            add_end(pos_end)
            add_nl("\n" in space or tok_start == 0)
            pos = pos_end
        kinds.append(_EOF)
        vals.append("")
        starts.append(end)
        ends.append(end)
        nls.append(True)
        self.kinds, self.vals, self.starts, self.ends, self.nls = kinds, vals, starts, ends, nls
        self.pos = 0
        # Whether lists longer than 5 carried XLA's '/*index=5*/' comments:
        # {'shape': bool, 'operand': bool} once such a list was seen.
        self.index_comments = {}
        self.style_percent = None
        self.style_operand_shapes = None
        self.instr_index = {}  # id(instr) -> token index of its name
        self.fixups = []  # (instr, attr name, kind, [(computation name, token index)])
        self.inferred = []  # (instr, token index) whose result shape was left out
        self.inferred_ids = set()
        self.computations = {}
        self.inline_computations = []  # written inline, not yet in the module
        self.unnamed_computations = []  # written inline, to be named
        self.unnamed_instructions = []  # written as operands, named in their computation
        self.attrs_before_body = []

    # ----- errors ---------------------------------------------------------
    def _line_col(self, offset):
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
            if self.parent is not None:
                self.parent._line_starts = self._line_starts
        line = bisect.bisect_right(self._line_starts, offset)
        col = offset - self._line_starts[line - 1] + 1
        return line, col

    def error_at(self, offset, message):
        offset = min(max(offset, 0), len(self.text))
        line, col = self._line_col(offset)
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        source_line = self.text[start:end if end >= 0 else len(self.text)]
        raise HloParseError(message, line, col, source_line, self.filename)

    def error(self, message, index=None):
        index = self.pos if index is None else index
        self.error_at(self.starts[index], message)

    def describe(self, index=None):
        index = self.pos if index is None else index
        if self.kinds[index] == _EOF:
            if self.parent is not None:
                return f"'{self.text[self.starts[index]:self.starts[index] + 1]}'"
            return "end of file"
        val = self.vals[index]
        if "\n" in val:    # a quoted token spanning lines: its first line
            val = val.split("\n")[0] + "..."
        if len(val) > 40:
            val = val[:37] + "..."
        if val == '"':
            return "an unterminated string"
        return f"'{val}'"

    def expected(self, what, index=None):
        self.error(f"expected {what} but found {self.describe(index)}", index)

    # ----- token helpers ---------------------------------------------------
    def peek(self, k=0):
        return self.vals[self.pos + k] if self.pos + k < len(self.vals) else ""

    def kind(self, k=0):
        i = self.pos + k
        return self.kinds[i] if i < len(self.kinds) else _EOF

    def at(self, value):
        return self.vals[self.pos] == value and self.kinds[self.pos] != _STR

    def accept(self, value):
        if self.vals[self.pos] == value and self.kinds[self.pos] != _STR:
            self.pos += 1
            return True
        return False

    def expect(self, value):
        if self.vals[self.pos] == value and self.kinds[self.pos] != _STR:
            self.pos += 1
            return
        self.expected(f"'{value}'")

    def expect_word(self, what):
        if self.kinds[self.pos] != _WORD:
            self.expected(what)
        self.pos += 1
        return self.vals[self.pos - 1]

    def expect_name(self, what="a name"):
        """A name with or without '%'; returns (name, had_percent)."""
        if self.kinds[self.pos] != _WORD:
            self.expected(what)
        v = self.vals[self.pos]
        if v.startswith("%"):
            v = v[1:]
            if not v:
                self.expected(what)
            self.pos += 1
            return v, True
        self.pos += 1
        return v, False

    def expect_int(self, what="an integer"):
        if self.kinds[self.pos] != _WORD or not _INT_RE.match(self.vals[self.pos]):
            self.expected(what)
        self.pos += 1
        return int(self.vals[self.pos - 1], 0) if "x" in self.vals[self.pos - 1].lower() \
            else int(self.vals[self.pos - 1])

    def skip_balanced_value(self):
        """Skips an attribute value up to a ',' or line end at depth 0.

        Returns the exact source text of the value.
        """
        start_index = self.pos
        stack = []
        closers = {"{": "}", "(": ")", "[": "]"}
        while True:
            i = self.pos
            k = self.kinds[i]
            if k == _EOF:
                if stack:
                    open_index, want = stack[-1]
                    self.error(f"expected '{want}' to close this '{self.vals[open_index]}' "
                               f"but found end of file", open_index)
                break
            v = self.vals[i]
            if not stack:
                if i > start_index and (self.nls[i] or (k == _PUNCT and v == ",")):
                    break
                if k == _PUNCT and v in ")}]":
                    break
            elif self.nls[i] and (v == "ROOT" or (k == _WORD and self.kinds[i + 1] != _EOF
                                                   and self.vals[i + 1] == "=")):
                # Inside brackets a new line is white space, as in XLA's lexer
                # (values written across lines, e.g. a JSON backend_config),
                # but a line that starts an instruction means a bracket was
                # left open: say which.
                open_index, want = stack[-1]
                self.error(f"expected '{want}' to close this '{self.vals[open_index]}' "
                           f"before the next instruction", open_index)
            if k == _PUNCT:
                if v in closers:
                    stack.append((i, closers[v]))
                elif v in ")}]":
                    if v != stack[-1][1]:
                        self.expected(f"'{stack[-1][1]}'")
                    stack.pop()
            self.pos += 1
        if self.pos == start_index:
            self.expected("an attribute value")
        return self.text[self.starts[start_index]:self.ends[self.pos - 1]]

    def note_index_comments(self, what, open_index):
        seen = "/*index=" in self.text[self.starts[open_index]:self.ends[self.pos - 1]]
        root = self
        while root.parent is not None:
            root = root.parent
        root.index_comments[what] = root.index_comments.get(what, False) or seen

    def enter_group(self):
        """A parser for the value at the current token.

        A coarse GROUP or ROW token ('{...}') gets a child parser over its
        text (token positions stay absolute); otherwise this parser itself.
        """
        i = self.pos
        if self.kinds[i] != _GROUP and self.kinds[i] != _ROW:
            return self
        self.pos += 1
        child = _Parser(self.text, self.filename, self.starts[i], self.ends[i], parent=self)
        return child

    def leave_group(self, child):
        if child is not self and child.kinds[child.pos] != _EOF:
            child.expected("'}'")

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
                    child = _Parser(self.text, self.filename, self.starts[i], self.ends[i],
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

    # ----- module ------------------------------------------------------------
    def parse_module(self):
        opts = {}
        header_attrs = {}
        if not self.at("HloModule"):
            # As XLA's parser: a module may be written without its header
            # (just computations); it is named after its entry computation.
            starts_computation = self.at("ENTRY") or (
                self.kind() == _WORD and self.kinds[self.pos + 1] != _EOF
                and self.vals[self.pos + 1] in ("(", "{"))
            if not starts_computation:
                self.expected("'HloModule' or a computation")
            module = HloModule("module")
            module.header_attrs = header_attrs
            return self._parse_computations(module, opts, headerless=True)
        self.pos += 1
        name = self.expect_word("a module name")
        module = HloModule(name.lstrip("%").rstrip(":"))
        self.accept(":")   # the old header form, "HloModule name:"
        while self.accept(","):
            attr_index = self.pos
            attr_name = self.expect_word("a module attribute name")
            self.expect("=")
            if attr_name in header_attrs:
                self.error(f"duplicate module attribute '{attr_name}'", attr_index)
            value_index = self.pos
            text = self.skip_balanced_value()
            if attr_name == "is_scheduled":
                if text not in ("true", "false"):
                    self.expected("'true' or 'false'", value_index)
                value = text == "true"
            elif attr_name in _HEADER_INT_ATTRS and _INT_RE.match(text):
                value = int(text)
            else:
                value = RawAttr(text)
            header_attrs[attr_name] = value
        if self.kind() != _EOF and not self.nls[self.pos]:
            self.expected("',' or a new line after the module header")
        module.header_attrs = header_attrs

        # Stack-frame tables: a section name alone on its line, then lines
        # that start with a number.
        while (self.kind() == _WORD and self.peek() in STACK_FRAME_SECTIONS
               and self.nls[self.pos + 1] and self.kinds[self.pos + 1] == _WORD
               and self.vals[self.pos + 1][:1].isdigit()):
            section = self.vals[self.pos]
            self.pos += 1
            lines = []
            while self.kind() == _WORD and self.nls[self.pos] and self.peek()[:1].isdigit():
                start = self.starts[self.pos]
                self.pos += 1
                while not self.nls[self.pos]:
                    self.pos += 1
                lines.append(self.text[start:self.ends[self.pos - 1]])
            module.extra_sections.append((section, lines))

        return self._parse_computations(module, opts)

    def _parse_computations(self, module, opts, headerless=False):
        comp_percent = None
        signature = None
        signature_layouts = False
        closing_comments = None
        entry = None
        while self.kind() != _EOF:
            comp, style = self.parse_computation(module)
            if comp_percent is None:
                comp_percent = style["percent"]
                signature = style["signature"]
            signature_layouts = signature_layouts or style["signature_layouts"]
            if closing_comments is None:
                closing_comments = style["comment"]
            if comp.is_entry:
                if entry is not None:
                    self.error(f"computation '{comp.name}' is marked ENTRY but "
                               f"'{entry.name}' already is", style["index"])
                entry = comp
            for inner in self.inline_computations:   # called from ``comp``: first
                module.add_computation(inner)
            self.unnamed_computations.extend(self.inline_computations)
            self.inline_computations = []
            module.add_computation(comp)
        if not module.computations:
            self.expected("a computation")
        for inner in self.unnamed_computations:
            base, n = inner.name, 0
            while f"{base}.{n}" in self.computations:
                n += 1
            inner.name = f"{base}.{n}"
            self.computations[inner.name] = inner
        self._make_names_unique(module)
        if entry is None:
            entry = module.computations[-1]
        module.set_entry(entry)
        if headerless:
            module.name = entry.name

        for instr, attr_name, kind, refs in self.fixups:
            comps = []
            for ref_name, offset in refs:
                comp = self.computations.get(ref_name)
                if comp is None:
                    self.error_at(offset, f"unknown computation '%{ref_name}'")
                comps.append(comp)
            instr.attrs[attr_name] = comps[0] if kind == "computation" else tuple(comps)

        self._infer_shapes()
        percent = self.style_percent if self.style_percent is not None else comp_percent
        opts["percent"] = bool(percent)
        opts["operand_shapes"] = bool(self.style_operand_shapes)
        opts["signature"] = bool(signature)
        opts["signature_layouts"] = signature_layouts
        opts["closing_comment"] = bool(closing_comments)
        opts["index_comments"] = self.index_comments.get("shape", True)
        opts["operand_index_comments"] = self.index_comments.get(
            "operand", opts["index_comments"] if "shape" in self.index_comments else True)
        tail = self.text[self.ends[-2]:] if len(self.kinds) > 1 else ""
        if closing_comments:
            tail = re.sub(r"\A[ \t]*//[^\n]*", "", tail)
        opts["trailing"] = tail if not tail.strip() else "\n"
        if self.attrs_before_body:
            opts["attrs_before_body"] = frozenset(self.attrs_before_body)
        module.print_options = opts
        return module

    def _make_names_unique(self, module):
        """As XLA: names are scoped to their computation when read, and an
        instruction whose name an earlier computation already has is renamed
        on insertion into the module (``p0`` -> ``p0.1``); names the text
        gave are kept before those given to instructions written as operands."""
        generated = {id(i) for i in self.unnamed_instructions}
        taken = set()
        clashes = []
        for comp in module.computations:
            for instr in comp.instructions:
                if id(instr) in generated:
                    continue
                if instr.name in taken:
                    clashes.append(instr)
                else:
                    taken.add(instr.name)
        for instr in clashes + self.unnamed_instructions:
            if instr.name in taken:
                base = re.sub(r"\.[0-9]+$", "", instr.name)
                n = 1
                while f"{base}.{n}" in taken:
                    n += 1
                instr.name = f"{base}.{n}"
            taken.add(instr.name)

    def _infer_shapes(self):
        """The result shapes left out, from the operands' (in dependency order)."""
        from xla.hlo import shape_inference
        pending = list(self.inferred)
        waiting = {id(i) for i, _ in pending}
        while pending:
            later = []
            for instr, index in pending:
                if any(id(o) in waiting for o in instr.operands if o is not None):
                    later.append((instr, index))
                    continue
                if instr.opcode in ("dot", "ragged-dot", "scaled-dot", "convolution"):
                    # No preferred element type: the lhs's.
                    instr.shape = Shape.array(instr.operands[0].shape.element_type, ())
                try:
                    shape = shape_inference.infer_shape(instr)
                except ShapeError as e:
                    self.error(f"cannot infer the result shape of {instr.opcode}: {e}", index)
                instr.shape = shape
                waiting.discard(id(instr))
            if len(later) == len(pending):
                instr, index = later[0]
                self.error(f"cannot infer the result shape of {instr.opcode}: its operands' "
                           "shapes depend on it", index)
            pending = later

    def parse_computation(self, module):
        start_index = self.pos
        is_entry = self.accept("ENTRY")
        name_index = self.pos
        name, percent = self.expect_name("a computation name")
        if name in self.computations:
            self.error(f"duplicate computation name '{name}'", name_index)
        style = {"percent": percent, "signature": False, "signature_layouts": False,
                 "comment": False, "index": start_index}
        if self.at("("):
            style["signature"] = True
            self.pos += 1
            if not self.accept(")"):
                while True:
                    self.expect_name("a parameter name")
                    self.expect(":")
                    s = self.parse_shape()
                    if _has_layout(s):
                        style["signature_layouts"] = True
                    if self.accept(")"):
                        break
                    if not self.at(","):
                        self.expected("',' or ')' in the computation's parameter list")
                    self.pos += 1
            self.expect("->")
            s = self.parse_shape()
            if _has_layout(s):
                style["signature_layouts"] = True
        extra_attrs = {}
        before_body = False
        while self.accept(","):
            attr_name = self.expect_word("a computation attribute name")
            self.expect("=")
            extra_attrs[attr_name] = RawAttr(self.skip_balanced_value())
            before_body = True
        if self.kinds[self.pos] == _ROW and not self.vals[self.pos][1:-1].strip():
            self.error(f"computation '{name}' has no instructions")
        if not self.at("{"):
            self.expected("'{' to start the body of computation '" + name + "'"
                          if style["signature"] or extra_attrs else "'(' or '{' after the computation name")
        open_index = self.pos
        self.pos += 1
        comp = HloComputation(name, is_entry=is_entry)
        self.computations[name] = comp
        self.parse_body(comp, open_index)
        close_end = self.ends[self.pos - 1]
        # JAX's text ends a computation with '} // name'.
        m = re.compile(r"[ \t]*//[ \t]*(\S+)").match(self.text, close_end)
        if m and m.group(1) == name:
            style["comment"] = True
        while self.kind() == _PUNCT and self.at(",") and not self.nls[self.pos]:
            self.pos += 1
            attr_name = self.expect_word("a computation attribute name")
            self.expect("=")
            extra_attrs[attr_name] = RawAttr(self.skip_balanced_value())
        comp.extra_attrs = extra_attrs
        if before_body:
            self.attrs_before_body.append(name)
        return comp, style

    def parse_body(self, comp, open_index):
        instrs = {}
        root = None
        # (instr, operand position or 'control', name, token index, compact
        # get-tuple-element indices)
        forward = []
        unnamed = []  # instructions written as operands
        while True:
            if self.at("}"):
                self.pos += 1
                break
            if self.kind() == _EOF:
                self.error(f"expected '}}' to close computation '{comp.name}' but found end of file",
                           open_index)
            # (A computation written inline in an attribute has its own.)
            self.nested = nested = []
            instr, is_root, name_index = self.parse_instruction(instrs, forward)
            for inner in nested:
                comp.add_instruction(inner)
                unnamed.append(inner)
            if instr.name in instrs:
                self.error(f"duplicate instruction name '{instr.name}' in computation '{comp.name}'",
                           name_index)
            instrs[instr.name] = instr
            comp.add_instruction(instr)
            if is_root:
                if root is not None:
                    self.error(f"computation '{comp.name}' has more than one ROOT instruction",
                               name_index - 1)
                root = instr
        if not comp.instructions:
            self.error(f"computation '{comp.name}' has no instructions", self.pos - 1)
        for inner in unnamed:
            n = 0
            while f"{inner.opcode}.{n}" in instrs:
                n += 1
            inner.name = f"{inner.opcode}.{n}"
            instrs[inner.name] = inner
        self.unnamed_instructions.extend(unnamed)
        numbers = {}
        for instr in comp.instructions:
            if instr.opcode == "parameter":
                if instr.parameter_number in numbers:
                    self.error(f"parameter number {instr.parameter_number} is used by both "
                               f"'{numbers[instr.parameter_number]}' and '{instr.name}'",
                               self.instr_index[id(instr)])
                numbers[instr.parameter_number] = instr.name
        if forward:
            elements = {}  # (id(tuple), index) -> its compact get-tuple-element
            for instr, where, ref, offset, indices in forward:
                target = instrs.get(ref)
                if target is None:
                    what = "control predecessor" if where == "control" else "operand"
                    self.error_at(offset, f"unknown instruction '%{ref}' used as {what}")
                if where == "control":
                    preds = list(instr.attrs["control-predecessors"])
                    preds[preds.index(ref)] = target
                    instr.attrs["control-predecessors"] = tuple(preds)
                else:
                    written = ref
                    for index, index_token in indices:
                        target = self._tuple_element(comp, instrs, elements, target, index,
                                                     index_token, written)
                        written += f"#{index}"
                    instr.operands[where] = target
            cyclic = _make_topological(comp)
            if cyclic is not None:
                self.error(f"instruction '{cyclic.name}' depends on itself (a cycle through its "
                           f"operands or control predecessors)", self.instr_index[id(cyclic)])
        comp.root_instruction = root if root is not None else comp.instructions[-1]

    def parse_tuple_indices(self):
        """The indices of a compact get-tuple-element operand, as XLA's
        compact_gte printing writes it: ``p0#1`` is element 1 of ``p0`` and
        ``p0#1#0`` element 0 of that. Returns ((index, token index), ...)."""
        indices = []
        while self.at("#"):
            self.pos += 1
            index_token = self.pos
            index = self.expect_int("a tuple index after '#'")
            if index < 0:
                self.error(f"a tuple index after '#' must be non-negative, got {index}", index_token)
            indices.append((index, index_token))
        return tuple(indices)

    def _tuple_element(self, comp, instrs, elements, target, index, index_token, written):
        """The get-tuple-element a compact ``target#index`` operand stands
        for: one per tuple and index in the computation, named
        ``<tuple>_<index>`` (made unique), placed before its first user."""
        key = (id(target), index)
        element = elements.get(key)
        if element is not None:
            return element
        inferred = id(target) in self.inferred_ids
        if inferred:  # the tuple's shape is known only once inferred
            shape = Shape.tuple(())
        else:
            if not target.shape.is_tuple:
                self.error(f"'{written}#{index}' takes a tuple element but '{written}' has shape "
                           f"{target.shape.to_text(False)}, not a tuple", index_token)
            n = len(target.shape.tuple_shapes)
            if index >= n:
                self.error(f"tuple index {index} is out of range: '{written}' has shape "
                           f"{target.shape.to_text(False)} with {n} element{'s' * (n != 1)}",
                           index_token)
            shape = target.shape.tuple_shapes[index]
        name = base = f"{target.name}_{index}"
        n = 1
        while name in instrs:
            name = f"{base}.{n}"
            n += 1
        element = HloInstruction("get-tuple-element", shape, [target], name=name,
                                 attrs={"index": index})
        instrs[name] = element
        comp.add_instruction(element)
        elements[key] = element
        self.instr_index[id(element)] = index_token
        self.unnamed_instructions.append(element)  # names from the text come first
        if inferred:
            self.inferred.append((element, index_token))
            self.inferred_ids.add(id(element))
        return element

    def parse_instruction(self, instrs, forward):
        is_root = self.accept("ROOT")
        name_index = self.pos
        if self.kind() != _WORD:
            self.expected("an instruction name" + ("" if is_root else " or '}'"))
        name, percent = self.expect_name("an instruction name")
        if self.style_percent is None:
            self.style_percent = percent
        self.expect("=")
        inferred = False
        if not self.at_shape():
            if self.kind() == _WORD and self.peek(1) == "(" and _is_opcode(self.peek()) \
                    and self.peek() not in _NEEDS_SHAPE:
                # As XLA: a result shape left out is inferred (after parsing,
                # when operands and called computations are known).
                inferred = True
            elif self.kind() == _WORD and self.peek(1) == "(":
                self.expected("the instruction's result shape")
            elif self.kind() == _WORD:
                self.parse_shape()  # reports the bad element type
            if not inferred:
                self.expected("a shape")
        shape = Shape.tuple(()) if inferred else self.parse_shape()
        instr = self.parse_rhs(name, shape, name_index, instrs, forward, inferred)
        if self.kind() != _EOF and not self.nls[self.pos] and not self.at("}") and not (
                self.at("ROOT") or (self.kind() == _WORD and self.peek(1) == "=")):
            # (Another instruction may follow on the same line, as XLA allows.)
            self.expected("',' or a new line after the instruction")
        return instr, is_root, name_index

    def parse_rhs(self, name, shape, name_index, instrs, forward, inferred=False, nested=False):
        """What follows an instruction's shape: opcode, operands and (unless
        ``nested``, an instruction written as an operand) attributes."""
        opcode_index = self.pos
        opcode = self.expect_word("an opcode")
        if not _is_opcode(opcode):
            self.error(f"unknown opcode '{opcode}'", opcode_index)
        open_index = self.pos
        self.expect("(")
        operands = []
        pending = []  # operands defined later in the computation
        literal = None
        parameter_number = None
        if opcode == "parameter":
            parameter_number = self.expect_int("a parameter number")
            if parameter_number < 0:
                self.error("parameter numbers must be non-negative", self.pos - 1)
            self.expect(")")
        elif opcode == "constant":
            if self.at_shape() and not self.at("("):
                self.parse_shape()  # old style 'constant(f32[] 1)': the shape is redundant
            literal = self.parse_literal(shape)
            if not self.at(")"):
                self.expected("')' after the constant's value")
            self.pos += 1
        else:
            if not self.accept(")"):
                while True:
                    if self.at_shape():
                        operand_shape = self.parse_shape()
                        if self.kind() == _WORD and self.peek(1) == "(" and not _is_opcode(self.peek()):
                            self.error(f"unknown opcode '{self.peek()}'", self.pos)
                        if self.kind() == _WORD and self.peek(1) == "(":
                            # An instruction written as an operand, as XLA
                            # allows ('add(f32[] parameter(0), f32[] constant(1))'):
                            # it comes first in the computation, under a name
                            # given once the computation is read.
                            inner = self.parse_rhs(None, operand_shape, self.pos, instrs,
                                                   forward, nested=True)
                            self.nested.append(inner)
                            operands.append(inner)
                            if self.accept(")"):
                                break
                            if not self.at(","):
                                self.expected("',' or ')' after an operand")
                            self.pos += 1
                            continue
                        if self.style_operand_shapes is None:
                            self.style_operand_shapes = True
                    elif self.style_operand_shapes is None:
                        self.style_operand_shapes = False
                    ref_offset = self.starts[self.pos]
                    ref, _ = self.expect_name("an operand name")
                    indices = self.parse_tuple_indices() if self.at("#") else ()
                    target = None if indices else instrs.get(ref)
                    if target is None:
                        pending.append((len(operands), ref, ref_offset, indices))
                    operands.append(target)
                    if self.accept(")"):
                        break
                    if not self.at(","):
                        self.expected("',' or ')' after an operand")
                    self.pos += 1
                if len(operands) > 5:
                    self.note_index_comments("operand", open_index)
        instr = HloInstruction(opcode, shape, operands, name=name, literal=literal,
                               parameter_number=parameter_number)
        self.instr_index[id(instr)] = name_index
        if inferred:
            self.inferred.append((instr, name_index))
            self.inferred_ids.add(id(instr))
        for where, ref, index, indices in pending:
            forward.append((instr, where, ref, index, indices))
        while self.at(",") and not nested:
            self.pos += 1
            self.parse_attribute(instr, instrs, forward)
        for attr in () if nested else _REQUIRED_ATTRS.get(opcode, ()):
            if attr not in instr.attrs:
                self.error(f"attribute {attr} is expected but not seen", opcode_index)
        return instr

    # ----- attributes -------------------------------------------------------------
    def parse_attribute(self, instr, instrs, forward):
        name_index = self.pos
        if self.kind() != _WORD or self.peek().startswith("%"):
            self.expected("an attribute name")
        name = self.vals[self.pos]
        self.pos += 1
        self.expect("=")
        if name in instr.attrs:
            self.error(f"duplicate attribute '{name}'", name_index)
        kind = kind_of(name)
        value_index = self.pos
        if kind == "raw" or (name == "slice_sizes" and self.at("{") and self.peek(1).startswith("{")):
            # (collective-permute's in-place form has one list per pair.)
            value = RawAttr(self.skip_balanced_value())
        elif kind == "dims":
            value = self.plain_int_list()
            if value is None:
                p = self.enter_group()
                value = p.parse_int_list("{", "}")
                self.leave_group(p)
        elif kind == "int":
            value = self.expect_int(f"an integer value for '{name}'")
        elif kind == "bool":
            v = self.peek()
            if v not in ("true", "false") or self.kind() != _WORD:
                self.expected(f"'true' or 'false' for '{name}'")
            self.pos += 1
            value = v == "true"
        elif kind == "enum":
            value = self.expect_word(f"a value for '{name}'")
            if value.startswith("%") or value[:1] in "-+0123456789":
                self.expected(f"a value for '{name}'", value_index)
        elif kind == "string":
            if self.kind() != _STR:
                self.expected(f"a string for '{name}'")
            value = _unescape_c(self.vals[self.pos][1:-1])
            self.pos += 1
        elif kind == "slice":
            p = self.enter_group()
            value = p.parse_slice()
            self.leave_group(p)
        elif kind == "padding":
            value = self.parse_padding()
        elif kind == "window":
            p = self.enter_group()
            value = p.parse_window()
            self.leave_group(p)
        elif kind == "dim_labels":
            value = self.parse_dim_labels()
        elif kind == "computation" and self.at("{"):
            # Written inline, as XLA allows ('to_apply={ ... }'): a computation
            # of its own, named once the module is read.
            open_index = self.pos
            self.pos += 1
            value = HloComputation(f"{instr.opcode}.{name}")
            self.parse_body(value, open_index)
            self.inline_computations.append(value)
        elif kind == "computation":
            ref, _ = self.expect_name(f"a computation name for '{name}'")
            comp = self.computations.get(ref)
            if comp is None:
                self.fixups.append((instr, name, kind, [(ref, self.starts[value_index])]))
            value = comp
        elif kind == "computations":
            p = self.enter_group()
            refs = p.parse_name_list(f"a computation name in '{name}'")
            self.leave_group(p)
            comps = [self.computations.get(r) for r, _ in refs]
            if any(c is None for c in comps):
                self.fixups.append((instr, name, kind, refs))
            value = tuple(comps)
        elif kind == "instructions":
            p = self.enter_group()
            refs = p.parse_name_list(f"an instruction name in '{name}'")
            self.leave_group(p)
            preds = []
            for ref, offset in refs:
                target = instrs.get(ref)
                if target is None:
                    forward.append((instr, "control", ref, offset, ()))
                    target = ref
                preds.append(target)
            value = tuple(preds)
        else:  # a kind this parser does not know: keep the text
            value = RawAttr(self.skip_balanced_value())
        instr.attrs[name] = value

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

    def at_adjacent(self):
        """Whether the current token follows the previous one without a space."""
        return self.starts[self.pos] == self.ends[self.pos - 1]

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


def _has_layout(shape):
    if shape.is_tuple:
        return any(_has_layout(s) for s in shape.tuple_shapes)
    return shape.layout is not None and (shape.rank > 0 or bool(shape.layout.extra))


_ASYNC_SUFFIXES = ("-start", "-update", "-done")


def _is_opcode(opcode):
    if opcode in opcodes.ALL_OPCODES:
        return True
    # XLA's syntax sugar for async ops: 'custom-call-start', 'add-done'...
    for suffix in _ASYNC_SUFFIXES:
        if opcode.endswith(suffix):
            base = opcode[:-len(suffix)]
            return base in opcodes.ALL_OPCODES
    return False


def _make_topological(comp):
    """Reorders comp.instructions so operands come first, keeping text order otherwise.

    Returns an instruction on a dependency cycle, or None.
    """
    order = comp.instructions
    index = {id(i): k for k, i in enumerate(order)}
    done = set()
    active = set()
    out = []
    for start in order:
        if id(start) in done:
            continue
        stack = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                active.discard(id(node))
                done.add(id(node))
                out.append(node)
                continue
            if id(node) in done:
                continue
            if id(node) in active:
                return node
            active.add(id(node))
            stack.append((node, True))
            preds = [p for p in list(node.operands) + list(node.control_predecessors)
                     if isinstance(p, HloInstruction) and id(p) in index and id(p) not in done]
            for p in sorted(preds, key=lambda p: -index[id(p)]):
                if id(p) in active:
                    return p
                stack.append((p, False))
    comp.instructions = out
    return None


def parse_hlo_module(text, filename=None):
    """Parses HLO module text; raises HloParseError on malformed input."""
    if not isinstance(text, str):
        raise TypeError("parse_hlo_module expects text (str)")
    parser = _Parser(text, filename)
    try:
        with paused_gc():
            return parser.parse_module()
    except HloParseError:
        raise
    except RecursionError:
        parser.error("input is nested too deeply")


def parse_shape(text):
    """Parses one shape, e.g. ``f32[2,3]{1,0}`` or ``(f32[], s32[4])``."""
    parser = _Parser(text)
    try:
        shape = parser.parse_shape()
    except RecursionError:
        parser.error("shape is nested too deeply")
    if parser.kind() != _EOF:
        parser.expected("end of the shape")
    return shape


def parse_literal(text, shape):
    """Parses a literal (the inside of ``constant(...)``) of the given shape."""
    if isinstance(shape, str):
        shape = parse_shape(shape)
    parser = _Parser(text)
    try:
        value = parser.parse_literal(shape)
    except RecursionError:
        parser.error("literal is nested too deeply")
    if parser.kind() != _EOF:
        parser.expected("end of the literal")
    return value
