"""Lexer of XLA's HLO text format: the token stream, token helpers, and
errors with their line and column.

The lexer is one regular expression that also swallows whitespace and
comments (``/*index=5*/``, ``// name``) in front of each token, so the token
stream is built in a single pass. ``HloLexer`` holds that stream and the
helpers a recursive-descent parser reads it with (``peek``, ``accept``,
``expect_int``, ...); every malformed input is reported through ``error``
as ``HloParseError`` with a 1-based line and column. The parsers built on it:
``xla.hlo.value_parser`` (shapes, attribute values, literals) and
``xla.hlo.parser`` (modules, computations, instructions).
"""
import bisect
import re

from xla.errors import HloParseError

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
_INT_RE = re.compile(r'[-+]?(?:0[xX][0-9a-fA-F]{1,32}|\d{1,40})\Z')


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


class HloLexer:
    """The tokens of a text (or of a span of it, for a child lexer over one
    coarse GROUP or ROW token), and the position of the next one."""

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

        A coarse GROUP or ROW token ('{...}') gets a child parser (of this
        parser's class) over its text (token positions stay absolute);
        otherwise this parser itself.
        """
        i = self.pos
        if self.kinds[i] != _GROUP and self.kinds[i] != _ROW:
            return self
        self.pos += 1
        child = type(self)(self.text, self.filename, self.starts[i], self.ends[i], parent=self)
        return child

    def leave_group(self, child):
        if child is not self and child.kinds[child.pos] != _EOF:
            child.expected("'}'")

    def at_adjacent(self):
        """Whether the current token follows the previous one without a space."""
        return self.starts[self.pos] == self.ends[self.pos - 1]
