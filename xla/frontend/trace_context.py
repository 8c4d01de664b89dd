"""Trace contexts: the stack of nested traces (a jitted function, and the
loop bodies and branches traced inside it), the user's file and line that
errors and the HLO's metadata name, and the tables through which traced
values reach the modules built on them.

Traces nest (loop bodies, branches): ``TraceContext`` keeps a stack, and a
Tracer of an enclosing trace used inside a nested one is *captured*: the
nested context's ``capture`` turns it into a value of the inner computation
(``xla.frontend.lax`` threads captures through as extra operands).

The traced values themselves (``Tracer``) are ``xla.frontend.tracing``'s,
which imports this module; this one imports nothing of it.
"""
import os
import sys
import threading

import numpy as np

from xla.errors import InternalError, InvalidArgumentError, TracingError
from xla.frontend.builder import XlaBuilder

# The modules built on this one that a Tracer dispatches to (ufuncs:
# __array_ufunc__; numpy: __array_function__; indexing: __getitem__ and
# .at), and those they reach back into (masked_slice, jit), install
# themselves here when imported (xla.frontend.jit imports them all, and
# ``table`` imports it the first time a table is missing), so that no
# frontend module imports one that imports it back.
_TABLES = {}


def install_table(name, value):
    """Makes ``value`` (a module or function) what ``table(name)`` returns."""
    _TABLES[name] = value


def table(name):
    """The installed ``name`` (see ``install_table``)."""
    try:
        return _TABLES[name]
    except KeyError:
        pass
    # A program that imported one frontend module directly (``from
    # xla.frontend.autojit import autojit``) has not loaded the others yet:
    # the jit module imports every module that installs a table.
    import importlib
    importlib.import_module("xla.frontend.jit")
    try:
        return _TABLES[name]
    except KeyError:
        raise InternalError(f"xla.frontend.{name} is not installed") from None

class _Local(threading.local):
    """This thread's stack of trace contexts (an attribute every thread
    has: ``tracing_active`` is on xla.jit's call path, and looking up a
    missing attribute of a threading.local costs ~0.7 us)."""

    def __init__(self):
        self.stack = []


_local = _Local()

# Files of these packages are not "the user's line" in error messages.
_INTERNAL_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                       for m in (sys.modules["xla"], np))


_internal_files = {}   # co_filename -> whether it is inside xla/ or numpy/ (or frozen)


def _is_internal(filename):
    internal = _internal_files.get(filename)
    if internal is None:
        internal = _internal_files[filename] = (
            os.path.abspath(filename).startswith(_INTERNAL_DIRS) or filename.startswith("<frozen"))
    return internal


def user_location(skip_internal=True):
    """``file:line`` of the innermost frame outside xla/ and numpy/, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<frozen") and not (skip_internal and _is_internal(filename)):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def user_frame():
    """``(file, line)`` of the innermost frame outside xla/ and numpy/, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_internal(filename):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def located(message):
    """``message`` prefixed with the user's file and line."""
    where = user_location()
    return f"{where}: {message}" if where else message


def tracing_error(message):
    return TracingError(located(message))


# ----- trace contexts ------------------------------------------------------------

class TraceContext:
    """One level of tracing: the builder ops go to, and how outer values enter."""

    def __init__(self, builder, parent=None, capture=None):
        self.builder = builder
        self.parent = parent
        self._capture = capture
        self.captured = {}   # id(outer XlaOp instr) -> (outer Tracer, inner Tracer)
        # id(outer Tracer) -> (outer Tracer, inner Tracer): the loop or branch
        # operands and the parameters that stand for them here (see
        # ``current_array``); ``view_reads``: the ids of those parameters
        # a view read through them.
        self.aliases = {}
        self.view_reads = set()
        # Errors on values (lax/checks.py): whether error_if registers here,
        # the int32 code of the first that failed (None: none registered),
        # and, on a top-level trace, the (class, message) each code stands for.
        self.checked = False
        self.error = None
        self.error_kinds = None

    def capture(self, tracer):
        """The value of ``tracer`` (from an enclosing trace) inside this one."""
        key = id(tracer.op.instr)
        hit = self.captured.get(key)
        if hit is not None:
            return hit[1]
        if self._capture is None:
            raise tracing_error(
                "a traced value from another trace is used here (it escaped from an earlier "
                "xla.jit trace or from a loop or branch body; return it instead of storing it)")
        if tracer.op.builder is not self.parent.builder:
            tracer = self.parent.capture(tracer)
        inner = self._through_operand(tracer)
        if inner is not None:
            self.captured[key] = (tracer, inner)
            return inner
        inner = self._capture(tracer)
        if tracer._affine is not None and inner._affine is None:
            inner._affine = tracer._affine   # an outer loop index keeps its range inside
            inner._residue = tracer._residue
        self.captured[key] = (tracer, inner)
        return inner

    def _through_operand(self, tracer):
        """A view (x[1:], x[i], or a view of one: x[1:][::2]) of an array
        this body has as an operand: the same view of the body's parameter,
        which follows the body's updates of it (None for other values)."""
        follow = tracer._follow
        if follow is None:
            return None
        hit = self.aliases.get(id(follow[0]))
        if hit is not None and hit[0] is follow[0]:
            self.view_reads.add(id(hit[1]))
            array = hit[1]
        else:
            array = self._through_operand(follow[0])
            if array is None:
                return None
        with self:
            return array[follow[1]]

    def current_array(self, tracer):
        """The array that stands for ``tracer`` (an array of this trace or of
        an enclosing one) here: inside a loop or branch body an operand is a
        parameter, which the body updates in place (``x[0] = 5`` in the body
        writes the parameter, not the outer array). ``tracer`` itself when it
        is not an operand of the bodies in between (an enclosing value the
        body reads, captured when used). A view taken outside the body (a
        masked slice, masked_slice.py) reads its array through this, so it
        sees the body's updates as NumPy's view would; each parameter read
        so is recorded in ``view_reads``."""
        chain, ctx = [], self
        while ctx is not None and ctx.builder is not tracer.op.builder:
            chain.append(ctx)
            ctx = ctx.parent
        if ctx is None:
            return tracer
        for c in reversed(chain):
            hit = c.aliases.get(id(tracer))
            if hit is None or hit[0] is not tracer:
                return tracer
            tracer = hit[1]
            c.view_reads.add(id(tracer))
        return tracer

    def __enter__(self):
        stack = _stack()
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False


def _stack():
    return _local.stack


def current_context(required=True):
    stack = _stack()
    if not stack:
        if required:
            raise InvalidArgumentError("no trace is active: call this inside a function under xla.jit")
        return None
    return stack[-1]


def inactive_checks():
    """``tracing_active()`` is False while each (object, attribute) of
    this list is falsy: the same check, for C++ (xla.jit's JitDispatch)."""
    return [(_local, "stack")]


def tracing_active():
    """Whether a trace is active on this thread (``current_context`` is not
    None): jit's per-call check."""
    return bool(_local.stack)


def current_builder():
    return current_context().builder


def new_trace(name):
    """A fresh top-level trace context with a new builder."""
    b = XlaBuilder(name)
    b._state.locate = user_frame
    return TraceContext(b)
