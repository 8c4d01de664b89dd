"""Error types, one per kind of failure (see shared/GUIDE.md, "Errors").

Each is raised where the fact is known and printed cleanly at the edge
(command-line tools, ``jit``) without a Python traceback.
"""
import re


class XlaError(Exception):
    """Base class of every error this package raises on purpose."""


# What str.splitlines() breaks lines at.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _escape(match):
    return repr(match.group())[1:-1]


class HloParseError(XlaError):
    """Malformed HLO text. Carries the 1-based line and column."""

    def __init__(self, message, line, column, source_line=None, filename=None):
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        self.filename = filename
        where = f"{filename}:" if filename else ""
        # Three lines whatever the input holds: line breaks inside the
        # message (a quoted token spanning lines) are escaped, and those
        # inside the source line (\r, form feeds...) become spaces, which
        # keeps the caret under its column.
        text = f"{where}{line}:{column}: error: {_LINE_BREAKS.sub(_escape, message)}"
        if source_line is not None:
            shown = _LINE_BREAKS.sub(" ", source_line.rstrip("\n"))
            text += "\n" + shown + "\n" + " " * max(column - 1, 0) + "^"
        super().__init__(text)


class ShapeError(XlaError):
    """Shape inference failed: operand shapes or attributes do not fit the op."""


class VerifierError(XlaError):
    """The module breaks an invariant; the message names the instruction."""


class UnimplementedError(XlaError):
    """An op (or a form of it) a backend does not support; names op and backend."""


class InvalidArgumentError(XlaError):
    """Bad arguments at run time (wrong count, shape or dtype of inputs)."""


class TracingError(InvalidArgumentError):
    """``xla.jit`` cannot compile the function whole (must-compile semantics):
    a data-dependent shape, a Python branch on a traced value, an unsupported
    NumPy function. The message starts with the user's file and line."""


class InternalError(XlaError):
    """A failure of the compiler itself (e.g. a code-generation worker
    process that died), not of the user's program."""


class ResourceExhaustedError(XlaError):
    """Not enough memory for what a module asks: a buffer, an argument or
    an intermediate value too large to allocate (XLA's RESOURCE_EXHAUSTED)."""


class DeadlineExceededError(XlaError):
    """An execution ran past its ``timeout`` and was stopped."""
