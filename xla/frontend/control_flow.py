"""Python control flow over traced arrays, converted to HLO control flow.

``xla.jit`` traces a function by running it on Tracers, so a Python loop
runs once per iteration (``for t in range(800)`` becomes 800 copies of its
body) and an ``if``/``while`` on a traced value cannot run at all. As
TensorFlow's AutoGraph does, the function's source is rewritten (its AST,
once per code object; ``control_flow_rewrite.py``) before the first trace:

- ``for i in range(...)`` becomes ``for_range(range, args, body, state)``,
  the body a nested function of the loop index and the loop's state (every
  name the body assigns, or updates in place with ``x[idx] = v``,
  ``x += v``, ``out=x``, ``np.add.at(x, ...)``); ``for x in arr`` (and
  ``enumerate(arr)``) becomes ``for_iter``, a range loop over the rows of a
  traced array;
- ``while test:`` becomes ``while_stmt(cond, body, state)``;
- ``if test: ... else: ...`` becomes ``if_stmt(test, then, orelse, state)``;
- ``max(a, b)``/``min(a, b)`` become ``extremum``.

At trace time these helpers decide. A condition that is a Python value
runs its branch or loop as Python would (every ``if`` on a shape or a
static argument stays exact Python). A traced condition becomes an HLO
``conditional`` or ``while``. A ``range`` loop becomes one HLO ``while``
when it involves traced values and is long (more than 8 iterations,
``xla.jit(unroll=...)``, and more than 256 source operations in all), with
``i`` a traced integer that carries its range (so ``x[i:i + k]`` is a
dynamic-slice and ``x[:i]`` a masked window, ``masked_slice.py``);
otherwise it unrolls. A loop that cannot be one ``while`` (a shape or
dtype that changes, a list or ``None`` in its state, a use of an
index-bounded slice a masked window does not support) is unrolled when its
trip count is known, after one try; a loop over traced bounds names the
reason in an error. Arrays a body updates in place are updated in the
array the loop started from (``_Identity``), as NumPy would.

Statements containing ``return``, ``break``, ``continue`` (of the loop
itself), ``yield``, ``global``/``nonlocal``, zero-argument ``super()`` or
``locals()`` stay Python; a traced condition there is an error naming the
line. Functions whose source cannot be read (``exec``, the REPL) are
traced as they are. The rewritten code keeps the original file name and
line numbers, so errors and the HLO's metadata point at the user's lines.

Every call in rewritten code goes through ``_Runtime.call`` (AutoGraph's
converted_call), which converts a user's function (not xla's, NumPy's, the
standard library's or an installed package's; ``_user_function``) before
calling it, so a helper's loops and branches are converted too; the rest
is called as it is.
"""
import builtins
import dis
import functools
import math
import operator
import os
import sysconfig
import types
import warnings

import numpy as np

from xla.errors import TracingError, XlaError
from xla.frontend import trace_context, tracing
from xla.frontend.control_flow_rewrite import RUNTIME, rewritten_code
from xla.frontend.traced_creation import stand_in_globals
from xla.frontend.tracing import Tracer

DEFAULT_UNROLL = 8        # loops of at most this many iterations are unrolled
UNROLLED_OPERATIONS = 256  # ... and loops whose iterations hold at most this many operations
_WARN_UNROLLED = 64       # a fallback unrolling longer than this warns
_UNROLL_BY_MODULUS = 8    # a loop taking its index modulo c may run c iterations per while step
# What a loop body that cannot be one while loop raises: the loop is unrolled.
_RETRIED = (XlaError, LookupError, NameError, TypeError, ValueError, ArithmeticError)


class _Undefined:
    """The value of a name not bound (yet): never escapes a rewritten function
    (names holding it are deleted again)."""

    def __repr__(self):
        return "<undefined>"


UNDEFINED = _Undefined()


def convert(fn, unroll=None):
    """``fn`` with its control flow rewritten, and the user functions it
    calls converted in turn as they are called (``fn`` itself where it
    cannot be rewritten)."""
    return _Runtime(unroll).function(fn)


def conversion_status(fn):
    """None when ``fn``'s control flow is converted, else why it is not."""
    if not isinstance(fn, types.FunctionType):
        return "not a Python function"
    return rewritten_code(fn)[1]

# ----- at trace time ----------------------------------------------------------------------

def _choosable(v):
    """What a traced ``if`` can choose between: arrays and numbers, and tuples
    or lists of them (a function's result)."""
    if isinstance(v, (tuple, list)):
        return len(v) > 0 and all(_choosable(e) for e in v)
    return _carryable(v)


def _carryable(v):
    return isinstance(v, (Tracer, np.ndarray, np.generic, bool, int, float, complex)) and \
        not (isinstance(v, np.ndarray) and v.dtype == object)


def _warn_at(where, message):
    """A UserWarning attributed to ``where`` (``file:line`` of the loop), so
    it shows the user's line, not this module's."""
    filename, _, line = where.rpartition(":")
    warnings.warn_explicit(f"{where}: {message}", UserWarning, filename, int(line))


def _loop_error(where, message):
    """An error at ``where``, the ``file:line`` of the statement."""
    return TracingError(f"{where}: {message}")


class _Runtime:
    """What rewritten code calls; one per conversion (it holds the options)."""

    UNDEFINED = UNDEFINED

    def __init__(self, unroll):
        self._module_globals = {}    # id(module globals) -> the copy rewritten code runs with
        self._keep = []
        self._active = {}            # code object -> calls of it in progress
        self._recursive = set()      # code objects that called themselves
        # By default a loop also unrolls when all its iterations together
        # are a few hundred operations (a convolution's taps): fusion then
        # combines them, where a while loop would run one slice at a time.
        self.budget = UNROLLED_OPERATIONS if unroll is None else -1
        if unroll is None:
            unroll = DEFAULT_UNROLL
        self.threshold = (float("inf") if unroll is True else -1 if unroll is False
                          else operator.index(unroll))

    def function(self, fn):
        """``fn`` rewritten (a plain function, or a method of one), running
        with this runtime and with NumPy's creation functions making traced
        arrays (``traced_creation.py``); ``fn`` itself when it cannot be."""
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            converted = self.function(fn.__func__)
            return fn if converted is fn.__func__ else types.MethodType(converted, fn.__self__)
        if not isinstance(fn, types.FunctionType):
            return fn
        code = fn.__code__
        new, _ = rewritten_code(fn)
        if new is None:
            return fn
        closure = None
        if new.co_freevars:
            cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
            closure = tuple(cells[v] for v in new.co_freevars)
        out = types.FunctionType(new, self._globals(fn.__globals__), fn.__name__,
                                 fn.__defaults__, closure)
        out.__kwdefaults__ = fn.__kwdefaults__
        out.__dict__.update(fn.__dict__)
        out.__qualname__ = fn.__qualname__
        return out

    def _globals(self, module_globals):
        """The globals rewritten code runs with: a copy of its module's (one
        per module and trace), with this runtime in ``_xla_cf`` and the NumPy
        stand-in for the ``numpy`` module. Functions defined by rewritten
        code already have them."""
        copy = self._module_globals.get(id(module_globals))
        if copy is None:
            copy = stand_in_globals(module_globals)
            copy[RUNTIME] = self
            self._module_globals[id(module_globals)] = copy
            self._module_globals[id(copy)] = copy
            self._keep.append(module_globals)     # the ids stay those dictionaries'
        return copy

    def call(self, fn, /, *args, **kwargs):
        """What rewritten code calls in place of ``fn(*args, **kwargs)``: a
        user function (``_user_function``), or the ``__call__`` of an object
        of a user's class, is converted first, and recursion into it needs
        nothing more (one rewrite per code object, cached); anything else
        (builtins, NumPy, xla, classes, a function that assigns module
        globals) is called as it is."""
        if isinstance(fn, functools.partial):
            return self.call(fn.func, *fn.args, *args, **{**fn.keywords, **kwargs})
        if not isinstance(fn, (types.FunctionType, types.MethodType, type)) and \
                isinstance(getattr(type(fn), "__call__", None), types.FunctionType):
            fn = types.MethodType(type(fn).__call__, fn)      # a callable object: its __call__
        plain = fn.__func__ if isinstance(fn, types.MethodType) else fn
        if not isinstance(plain, types.FunctionType) or not _user_function(plain.__code__):
            return fn(*args, **kwargs)
        code = plain.__code__
        depth = self._active.get(code, 0)
        if depth:
            self._recursive.add(code)
        self._active[code] = depth + 1
        try:
            return self.function(fn)(*args, **kwargs)
        except RecursionError:
            if depth or code not in self._recursive:
                raise
            raise TracingError(
                f"{code.co_filename}:{code.co_firstlineno}: `{plain.__qualname__}` calls itself "
                "past Python's recursion limit while traced; an `if` on a traced value traces "
                "both branches, so a recursion that stops on a traced condition never stops: "
                "write it as a loop") from None
        finally:
            self._active[code] = depth

    @staticmethod
    def pack(frame_locals, names):
        return tuple(frame_locals.get(n, UNDEFINED) for n in names)

    @staticmethod
    def state(values, n):
        if not isinstance(values, tuple) or len(values) != n:
            raise AssertionError("control flow state of the wrong length")
        return values

    @staticmethod
    def extremum(fn, is_max, *args):
        """Python's ``max``/``min`` of two or more values; with a traced one,
        the same choice made by a select."""
        if fn is not (builtins.max if is_max else builtins.min) or \
                not any(isinstance(a, Tracer) for a in args):
            return fn(*args)
        best = args[0]
        for a in args[1:]:
            better = (a > best) if is_max else (a < best)
            best = np.where(better, a, best)
        return best

    @staticmethod
    def if_exp(test, then, orelse, pure, where):
        """``then() if test else orelse()``. With a traced ``test``, both
        branches are evaluated and one is selected, which is Python's value
        when the branches are pure expressions and both arrays of one shape
        and dtype, or both Python numbers of one type (the result is then as
        weak as they are); anything else is an error naming the line, never
        a value Python would not give."""
        if not isinstance(test, Tracer):
            return then() if test else orelse()
        if not pure:
            raise _loop_error(where, "a conditional expression (a if c else b) on a traced value "
                                     "evaluates both branches under xla.jit, and a branch here "
                                     "calls a function that may have effects: use an if "
                                     "statement, or np.where")
        c = _scalar_bool(test, where)
        a, b = then(), orelse()
        numbers = (bool, int, float, complex)
        if isinstance(a, numbers) and isinstance(b, numbers) and type(a) is type(b):
            return Tracer(np.where(c, a, b).op, weak=True)
        arrays = all(isinstance(v, (Tracer, np.ndarray, np.generic)) for v in (a, b))
        if not arrays or (np.shape(a), np.dtype(a.dtype)) != (np.shape(b), np.dtype(b.dtype)):
            def text(v):
                if isinstance(v, (Tracer, np.ndarray, np.generic)):
                    return f"{np.dtype(v.dtype)}{list(np.shape(v))}"
                return type(v).__name__
            raise _loop_error(where, f"the branches of a conditional expression on a traced value "
                                     f"are {text(a)} and {text(b)}: its value would depend on the "
                                     "branch taken; give both one shape and dtype, or use "
                                     "np.where")
        return np.where(c, a, b)

    @staticmethod
    def python_test(value, reason):
        if isinstance(value, Tracer):
            raise tracing.tracing_error(
                f"the truth value of a traced array is not known while compiling, and {reason}; "
                "rewrite it without them, or use xla.lax.cond / xla.lax.while_loop / np.where")
        return value

    # -- for i in range(...) --------------------------------------------------------------
    def for_range(self, range_fn, args, body, state, info):
        names, live, target, lineno, python_effects, ops = info
        if range_fn is not builtins.range:         # a local or global named range: plain Python
            return self._python_for(range_fn(*args), body, state)
        start, stop, step = ((0, args[0], 1) if len(args) == 1 else
                             (args[0], args[1], 1) if len(args) == 2 else args)
        traced_bounds = any(isinstance(v, Tracer) for v in (start, stop, step))
        if not traced_bounds:
            r = range(operator.index(start), operator.index(stop), operator.index(step))
            values = state[:-1]
            small = len(r) * ops <= self.budget     # unrolled, a few hundred operations
            if len(r) <= self.threshold or small or python_effects or \
                    not any(isinstance(v, Tracer) for v in values) and not _reads_traced(body):
                return self._python_for(r, body, state)
            saved = _snapshot(values)
            ctx = tracing.current_context()
            error = ctx.error
            try:
                return self._converted_for(r, body, state, names, live, lineno)
            except _RETRIED as e:
                # Unrolled from the start: the arrays get back the values the
                # loop started from (a peeled first iteration, or the while
                # loop written back before a failing Python tail, may have
                # updated them in place, and would otherwise run twice), and
                # so does the error code (lax/checks.py).
                _restore(saved)
                ctx.error = error
                reason = str(e).splitlines()[0]
            if len(r) > _WARN_UNROLLED:
                _warn_at(lineno, f"the loop of {len(r)} iterations is unrolled, not compiled as "
                                 f"one HLO while loop: {reason}")
            return self._python_for(r, body, state)
        return self._traced_for(start, stop, step, body, state, names, live, lineno)

    # -- for x in <iterable> ----------------------------------------------------------
    def for_iter(self, enumerate_fn, iterable, body, state, info):
        """``for target in iterable`` (or ``enumerate(iterable)``, or
        ``zip(a, b, ...)``, whose arguments come as a tuple): over traced
        arrays (of one length, for zip), a range loop over their first axis
        whose body binds the row (and the index); over anything else,
        Python's loop. Returns the state and the last item (UNDEFINED when
        there was none)."""
        names, live, lineno, python_effects, ops, kind = info
        zipped = kind == "zip" and enumerate_fn is builtins.zip
        enumerated = kind == "enumerate" and enumerate_fn is builtins.enumerate
        if kind == "zip" and not zipped:          # a local or global named zip: call it
            iterable = enumerate_fn(*iterable)
        elif kind == "enumerate" and not enumerated:
            iterable = enumerate_fn(iterable)
        arrays = iterable if zipped else (iterable,)
        rows = (all(isinstance(a, Tracer) and a.ndim > 0 for a in arrays) and
                len({a.shape[0] for a in arrays}) == 1)
        if not rows:
            values, last = tuple(state), UNDEFINED
            source = zip(*iterable) if zipped else enumerate(iterable) if enumerated else iterable
            for last in source:
                values = tuple(body(last, values))
            return values + (last,)
        n = arrays[0].shape[0]

        def item(i):
            if zipped:
                return tuple(a[i] for a in arrays)
            return (i, iterable[i]) if enumerated else iterable[i]

        def by_index(i, values):
            return body(item(i), values)

        out = self.for_range(builtins.range, (n,), by_index,
                             tuple(state) + (UNDEFINED,),
                             (names, live, None, lineno, python_effects, ops))
        index = out[-1]
        return tuple(out[:-1]) + ((UNDEFINED,) if index is UNDEFINED else (item(index),))

    @staticmethod
    def _python_for(iterable, body, state):
        values, index = state[:-1], state[-1]
        for index in iterable:
            values = body(index, values)
        return tuple(values) + (index,)

    def _converted_for(self, r, body, state, names, live, lineno):
        values = list(state[:-1])
        # A list, dict or other object in the state: unrolled at once (a
        # peeled iteration could change it in place, and the unrolled loop
        # would then run that iteration twice).
        other = [n for n, v in zip(names, values)
                 if not _carryable(v) and v is not UNDEFINED and v is not None]
        if other:
            raise _loop_error(lineno, f"`{other[0]}` holds a "
                                      f"{type(values[names.index(other[0])]).__name__}, which a "
                                      "while loop cannot carry")
        peel = any(not _carryable(v) and not (v is UNDEFINED and n not in live)
                   for n, v in zip(names, values))
        if peel:
            # One iteration in Python binds the loop's temporaries (and
            # replaces a None it starts from); the rest is one while loop.
            values = list(body(r[0], tuple(values)))
            r = r[1:]
            # (a name still unbound, the target of an inner loop that did not
            # run, is left unbound after the loop)
            bad = [n for n, v in zip(names, values) if not _carryable(v) and v is not UNDEFINED]
            if bad:
                raise _loop_error(lineno, f"`{bad[0]}` holds a {type(values[names.index(bad[0])]).__name__}, "
                                          "which a while loop cannot carry")
            if not r:
                return tuple(values) + (r.start - r.step,)
        try:
            out = self._static_while(r, body, values, names, lineno)
        except UnboundLocalError:
            if peel:
                raise
            values = list(body(r[0], tuple(values)))
            r = r[1:]
            if not r:
                return tuple(values) + (r.start - r.step,)
            out = self._static_while(r, body, values, names, lineno)
        return tuple(out) + (r[-1],)

    def _static_while(self, r, body, values, names, lineno):
        """The loop over ``r`` as one while loop. When that fails after the
        body took the index modulo small ints (``s = i % 2`` then
        ``x[s::2]``, a slice whose size depends on ``s``), it is retried
        unrolled by their least common multiple ``c`` (again while new moduli
        appear, up to 8): each iteration of the while runs ``c`` copies of the
        body, in which ``i % c`` is a Python int; the last ``len(r) % c``
        iterations run in Python."""
        moduli, by = set(), 1
        ctx = tracing.current_context()
        error = ctx.error
        while True:
            head = r[:len(r) - len(r) % by]
            try:
                out = self._while_range(head.start, head.stop, head.step, len(head), body, values,
                                        names, lineno, moduli=moduli, by=by)
                break
            except UnboundLocalError:
                raise
            except _RETRIED:
                ctx.error = error      # the abandoned loop's code (lax/checks.py) is not kept
                wider = math.lcm(by, *moduli)
                if wider == by or wider > _UNROLL_BY_MODULUS or len(r) < 2 * wider:
                    raise
                by = wider
        for i in r[len(head):]:
            out = list(body(i, tuple(out)))
        return out

    def _traced_for(self, start, stop, step, body, state, names, live, lineno):
        values = list(state[:-1])
        for n, v in zip(names, values):
            if v is UNDEFINED and n in live:
                raise _loop_error(lineno, f"`{n}` is assigned in the loop, whose bounds are traced "
                                          "(it becomes an HLO while loop), and read after it: "
                                          "assign it before the loop")
            if v is not UNDEFINED and not _carryable(v):
                raise _loop_error(lineno, f"`{n}` holds a {type(v).__name__}, which the loop over "
                                          "traced bounds (an HLO while loop) cannot carry")
        try:
            out = self._while_range(start, stop, step, None, body, values, names, lineno)
        except UnboundLocalError as e:
            raise _loop_error(lineno, f"{e}: in the loop over traced bounds (an HLO while loop), "
                                      "a value read before it is assigned must be assigned "
                                      "before the loop") from None
        # The index after the loop: its last value (start - step if none ran).
        s, e_, st = (tracing.as_tracer(v) for v in (start, stop, step))
        trip = np.maximum((e_ - s + st - np.sign(st)) // st, 0)
        last = s + (trip - 1) * st
        before = state[-1]
        if before is not UNDEFINED and _carryable(before):
            last = np.where(trip > 0, last, before)    # no iteration: Python keeps the old value
        return tuple(out) + (last,)

    def _while_range(self, start, stop, step, trip, body, values, names, lineno, moduli=None,
                     by=1):
        """One while loop; with ``by`` > 1 (static bounds, ``trip`` a
        multiple of it), each iteration runs ``by`` copies of the body, the
        index of each knowing its residue modulo ``by``. ``moduli`` collects
        the moduli the body takes of the index."""
        from xla.frontend import lax
        carried = [k for k, v in enumerate(values) if v is not UNDEFINED]
        index = _index_tracer(start, stop, step)
        init = (index, [values[k] for k in carried])
        positive = None if isinstance(step, Tracer) else step > 0

        def cond(c):
            i = c[0]
            if positive is None:
                return (step > 0) & (i < stop) | (step < 0) & (i > stop)
            return i < stop if positive else i > stop

        identity = _Identity(names, carried, lineno)

        if not any(isinstance(v, Tracer) for v in (start, stop, step)) and trip:
            last = start + (trip - by) * step
            bounds = (min(start, last), max(start, last))
        else:
            bounds = _traced_bounds(start, stop, step)

        def loop_body(c):
            i, vals = c
            if bounds is not None:
                i._affine = (i, 0) + bounds
            i._moduli = moduli
            full = [UNDEFINED] * len(values)
            for k, v in zip(carried, vals):
                full[k] = v
            ops = identity.before(vals)
            out = tuple(full)
            for k in range(by):
                ik = i if k == 0 else i + k * step
                if by > 1:
                    ik._residue = (by, (start + k * step) % by)
                out = body(ik, out)
            identity.after(vals, ops, out, "the loop body")
            return i + by * step, [out[k] for k in carried]

        _, out_vals = lax.while_loop(cond, loop_body, init,
                                     _trip_count=None if trip is None else trip // by)
        return identity.result(values, out_vals)

    # -- while test: ----------------------------------------------------------------------
    def while_stmt(self, cond, body, state, info):
        names, live, lineno = info
        while True:
            test = cond(state)
            if isinstance(test, Tracer):
                break
            if not test:
                return state
            state = body(state)
        from xla.frontend import lax
        values = list(state)
        for n, v in zip(names, values):
            if v is UNDEFINED and n in live:
                raise _loop_error(lineno, f"`{n}` is assigned in the `while` loop, whose condition is "
                                          "traced (an HLO while loop), and read after it: assign it "
                                          "before the loop")
            if v is not UNDEFINED and not _carryable(v):
                raise _loop_error(lineno, f"`{n}` holds a {type(v).__name__}, which the `while` loop "
                                          "on a traced condition (an HLO while loop) cannot carry")
        carried = [k for k, v in enumerate(values) if v is not UNDEFINED]

        def full(vals):
            out = [UNDEFINED] * len(values)
            for k, v in zip(carried, vals):
                out[k] = v
            return tuple(out)

        def cond_fn(vals):
            return _scalar_bool(cond(full(vals)), lineno)

        identity = _Identity(names, carried, lineno)

        def body_fn(vals):
            ops = identity.before(vals)
            out = body(full(vals))
            identity.after(vals, ops, out, "the loop body")
            return [out[k] for k in carried]

        try:
            out = lax.while_loop(cond_fn, body_fn, [values[k] for k in carried])
        except UnboundLocalError as e:
            raise _loop_error(lineno, f"{e}: in the `while` loop on a traced condition (an HLO "
                                      "while loop), a value read before it is assigned must be "
                                      "assigned before the loop") from None
        return tuple(identity.result(values, out))

    # -- if test: -------------------------------------------------------------------------
    def if_stmt(self, test, then, orelse, state, info):
        names, lineno, live = info
        if not isinstance(test, Tracer):
            return then(state) if test else orelse(state)
        from xla.frontend import lax
        pred = _scalar_bool(test, lineno)
        values = list(state)
        inputs = [k for k, v in enumerate(values) if _carryable(v)]
        # A branch's temporaries (unbound before, never read after): dropped.
        dropped = {k for k, (n, v) in enumerate(zip(names, values)) if v is UNDEFINED and n not in live}
        kinds, inplace = {}, {}

        def branch(fn, which):
            def run(*vals):
                full = list(values)
                for k, v in zip(inputs, vals):
                    full[k] = v
                ops = [v.op for v in vals]
                out = fn(tuple(full))
                kinds[which] = out
                for k, v, op in zip(inputs, vals, ops):
                    inplace.setdefault(k, []).append(
                        "same" if out[k] is v and v.op is op else
                        "inplace" if out[k] is v else "rebound" if v.op is op else "mixed")
                return [out[k] if _choosable(out[k]) and k not in dropped else None
                        for k in range(len(values))]
            return run

        try:
            out = lax.cond(pred, branch(then, 0), branch(orelse, 1), *[values[k] for k in inputs])
        except tracing.ShapeError:
            if len(kinds) < 2:
                raise
            for k, n in enumerate(names):
                a, b = kinds[0][k], kinds[1][k]
                if k not in dropped and _choosable(a) != _choosable(b):
                    which = "the `if` branch" if _choosable(a) else "the `else` branch"
                    raise _loop_error(lineno, f"`{n}` is assigned an array only in {which} of the "
                                              "`if` on a traced value (an HLO conditional); assign "
                                              "it before the `if` or in both branches") from None
            raise
        result = []
        for k, n in enumerate(names):
            a, b = kinds[0][k], kinds[1][k]
            if k in dropped:
                result.append(UNDEFINED)
                continue
            how = set(inplace.get(k, ()))
            if how & {"inplace", "mixed"} and how - {"inplace", "same"}:
                raise _loop_error(lineno, f"`{n}` is updated in place in one branch of the `if` on a "
                                          "traced value and rebound in the other (so which array "
                                          "later updates change depends on the condition): update "
                                          "it in place in both, or rebind it in both")
            if _carryable(a) and "inplace" in how and isinstance(values[k], Tracer):
                values[k]._assign(out[k], f"the `if` at {lineno}")
                result.append(values[k])
            elif _choosable(a):
                result.append(out[k])
            elif a is b:
                result.append(a)
            else:
                raise _loop_error(lineno, f"`{n}` is set to a {type(a).__name__} or a "
                                          f"{type(b).__name__} by the `if` on a traced value (an "
                                          "HLO conditional), which chooses only arrays")
        return tuple(result)


def _snapshot(values):
    """The traced arrays among ``values`` and the arrays they view, with their
    current values (an update in place replaces ``op``; see ``_restore``)."""
    saved = []

    def followers(v):
        # The views that follow it (v = x[1:], x[i]) and theirs: an update
        # of x gives them new values too (Tracer._mark_follower).
        for f in (r() for r in (v._followers or ())):
            if f is not None:
                saved.append((f, f.op))
                followers(f)
    for v in values:
        while isinstance(v, Tracer):
            saved.append((v, v.op))
            followers(v)
            v = v._base if v._follow is None else v._follow[0]
    return saved


def _restore(saved):
    for tracer, op in saved:
        tracer.op = op


class _Identity:
    """Whether a loop body updates each carried array in place (returns the
    very object it got, changed) or rebinds its name: an update in place is
    applied to the array the loop started from, so other names for it (the
    caller's argument) see it, as in NumPy."""

    def __init__(self, names, carried, lineno):
        self.names, self.carried, self.lineno = names, carried, lineno
        self.inplace = {}

    @staticmethod
    def before(vals):
        return [v.op for v in vals]

    def after(self, vals, ops, out, where):
        for k, v, op in zip(self.carried, vals, ops):
            o = out[k]
            if o is UNDEFINED or not _carryable(o):
                raise _loop_error(self.lineno, f"`{self.names[k]}` is "
                                  + ("deleted" if o is UNDEFINED else f"set to a {type(o).__name__}")
                                  + f" in {where}, which a while loop cannot carry")
            if o is v:
                self.inplace[k] = v.op is not op
            elif v.op is not op:
                raise _loop_error(self.lineno, f"`{self.names[k]}` is updated in place and then "
                                  f"rebound in {where}, which one while loop cannot express")
            else:
                self.inplace[k] = False

    def result(self, values, outs):
        result = [UNDEFINED] * len(values)
        for k, v in zip(self.carried, outs):
            if self.inplace.get(k) and isinstance(values[k], Tracer):
                values[k]._assign(v, f"the loop at {self.lineno}")
                v = values[k]
            result[k] = v
        return result


_user_code = {}   # code object -> whether calls of its functions from rewritten code convert them
_LIBRARY_DIRS = tuple(os.path.abspath(d) + os.sep for d in {
    sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _user_function(code):
    """Whether a function of ``code`` is the user's own: not xla's, NumPy's,
    the standard library's or an installed package's, and assigning no
    module globals (a converted function runs with a copy of them)."""
    user = _user_code.get(code)
    if user is None:
        filename = code.co_filename
        user = _user_code[code] = not (
            trace_context._is_internal(filename) or os.path.abspath(filename).startswith(_LIBRARY_DIRS)
            or any(i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for i in dis.get_instructions(code)))
    return user


def _scalar_bool(test, lineno):
    t = tracing.as_tracer(test)
    if t.shape != ():
        if int(np.prod(t.shape)) != 1:
            raise _loop_error(lineno, f"the truth value of a traced array of shape {t.shape} is "
                                      "ambiguous (as in NumPy): use .any() or .all()")
        t = t.reshape(())
    return t if t.dtype == np.bool_ else t != 0


def _traced_bounds(start, stop, step):
    """A range the index of ``range(start, stop)`` (step 1) keeps to when the
    bounds are Python ints or offsets of outer loop indices whose ranges are
    known (``for j in range(i)``: ``0 <= j <= max(i) - 1``); None otherwise.
    (A superset of the values it takes: enough to prove a slice stays inside
    its array.)"""
    if isinstance(step, Tracer) or step != 1:
        return None
    ends = []
    for v in (start, stop):
        if isinstance(v, Tracer):
            if v._affine is None:
                return None
            _, offset, lo, hi = v._affine
            ends.append((lo + offset, hi + offset))
        else:
            ends.append((operator.index(v), operator.index(v)))
    lo, hi = ends[0][0], ends[1][1] - 1
    return (lo, max(lo, hi))


def _index_tracer(start, stop, step):
    """The loop index: a weak integer (it promotes as a Python int does), of
    the bounds' type when they are traced."""
    traced = [v for v in (start, stop, step) if isinstance(v, Tracer)]
    if traced:
        dtype = tracing.result_type(*traced)
        if dtype.kind not in "iu":
            raise TracingError(f"range() bounds must be integers, got {dtype}")
        return tracing.convert(tracing.as_tracer(start), dtype)
    return tracing.as_tracer(operator.index(start))


def _reads_traced(body):
    """Whether the loop body reads a traced value from its enclosing scopes."""
    for cell in body.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if isinstance(v, Tracer):
            return True
        if isinstance(v, (tuple, list)) and any(isinstance(e, Tracer) for e in v):
            return True
    return False
