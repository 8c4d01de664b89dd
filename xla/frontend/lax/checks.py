"""Errors on values, raised after the compiled call: ``error_if``, as JAX's
``checkify`` does it, but without the user asking.

NumPy raises on some values (``np.linalg.solve`` of a singular matrix:
``LinAlgError("Singular matrix")``); compiled code cannot raise. An
operation that must, registers a traced predicate of its own results with
the exception's class and message (``error_if``). Each trace context holds
``error``: an int32 scalar, 0 while no predicate registered in it has
held, else the code of the first that did, in program order (NumPy would
have stopped there). Codes number the (class, message) pairs of the
top-level trace (``error_kinds``, 1-based), so a module's text does not
depend on what else the process traced.

Loops and branches (``control_flow.py``) carry their bodies' codes out: a
hidden int32 element of the loop state (a ``while`` whose trip count is not
known also stops once it is nonzero, as NumPy would have; a loop of known
trip count runs on), and a hidden last result of a ``conditional``. A
``while`` condition has no result to carry a code in: where it registers,
it is evaluated before the loop and at the end of the body instead, and the
loop state carries its outcome (``control_flow.while_loop``). At the
end of an ``xla.jit`` or ``xla.pmap`` trace (or of an ``xla.autojit``
cluster) the code is a hidden last output of the module, and the wrapper
raises ``error_kinds[code - 1]`` after the call, before writing arguments
updated in place back (docs/frontend.md, "Errors on values").

Only contexts that carry codes out check (``checked``): those traces and
the loops and branches in them. Elsewhere (composite decompositions,
reducers, ``scan``'s probe traces)
``error_if`` registers nothing and the values are what the operation
computes (NaN, infinities). A function that registers nothing gets no
extra output, state element or instruction.
"""
import numpy as np

from xla.frontend.trace_context import current_context
from xla.frontend.tracing import as_tracer


def _root(ctx):
    while ctx.parent is not None:
        ctx = ctx.parent
    return ctx


def start(ctx):
    """Makes ``ctx`` (a top-level trace) one that checks: ``error_if`` in it
    and in the loops and branches traced in it registers."""
    ctx.checked = True
    ctx.error_kinds = []


def inherit(sub_ctx):
    """A loop body's or branch's context checks where its parent does; its
    code (``sub_ctx.error``) is the caller's to carry out."""
    sub_ctx.checked = sub_ctx.parent.checked
    return sub_ctx


def error_if(failed, error_class, message):
    """At run time, when any element of ``failed`` (a traced bool array)
    holds and no earlier check failed, the jitted call raises
    ``error_class(message)``."""
    ctx = current_context()
    if not ctx.checked:
        return
    failed = as_tracer(failed)
    if failed.ndim:
        failed = np.any(failed)
    kinds = _root(ctx).error_kinds
    kind = (error_class, message)
    if kind not in kinds:
        kinds.append(kind)
    code = np.int32(kinds.index(kind) + 1)
    merge(ctx, np.where(failed, code, np.int32(0)))


def merge(ctx, code):
    """``ctx``'s code after ``code`` (an int32 scalar of ``ctx``'s trace,
    computed after everything ``ctx.error`` covers): the earlier one wins."""
    if ctx.error is None:
        ctx.error = code
    else:
        ctx.error = np.where(ctx.error != 0, ctx.error, code)


def checked_outputs(kinds, outputs):
    """A module's ``outputs`` (a tuple or list) less its hidden error code
    (the last); raises the error the code stands for among ``kinds`` (the
    top-level trace's ``error_kinds``) where it is not 0."""
    code = outputs[-1]
    if type(code) is not np.ndarray:
        code = np.asarray(code)          # a device's buffer
    if code:
        error_class, message = kinds[int(code) - 1]
        raise error_class(message)
    return outputs[:-1]
