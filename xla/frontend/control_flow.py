"""Python control flow over traced arrays, converted to HLO control flow.

``xla.jit`` traces a function by running it on Tracers, so a Python loop
runs once per iteration (``for t in range(800)`` becomes 800 copies of its
body) and an ``if``/``while`` on a traced value cannot run at all. As
TensorFlow's AutoGraph does, the function's source is rewritten (its AST,
once per code object) before the first trace:

- ``for i in range(...)`` becomes ``for_range(range, args, body, state)``,
  the body a nested function of the loop index and the loop's state (every
  name the body assigns, or updates in place with ``x[idx] = v``,
  ``x += v``, ``out=x``, ``np.add.at(x, ...)``);
- ``while test:`` becomes ``while_stmt(cond, body, state)``;
- ``if test: ... else: ...`` becomes ``if_stmt(test, then, orelse, state)``.

At trace time these helpers decide. A condition that is a Python value
runs its branch or loop as Python would (every ``if`` on a shape or a
static argument stays exact Python). A traced condition becomes an HLO
``conditional`` or ``while``. A ``range`` loop becomes one HLO ``while``
when it involves traced values and runs more than the unroll threshold
(8 iterations; ``xla.jit(unroll=...)``), with ``i`` a traced integer;
otherwise it unrolls. A loop that cannot be one ``while`` (its body slices
with ``i`` as a bound, changes a value's shape or dtype, keeps a list or
``None`` in its state) is unrolled when its trip count is known, after one
try; a loop over traced bounds names the reason in an error.

Statements containing ``return``, ``break``, ``continue`` (of the loop
itself), ``yield``, ``global``/``nonlocal``, zero-argument ``super()`` or
``locals()`` stay Python; a traced condition there is an error naming the
line. Functions whose source cannot be read (lambdas, ``exec``) are traced
as they are. The rewritten code keeps the original file name and line
numbers, so errors and the HLO's metadata point at the user's lines.
"""

import ast
import builtins
import collections
import inspect
import operator
import textwrap
import types
import warnings

import numpy as np

from xla.errors import TracingError, XlaError
from xla.frontend import tracing
from xla.frontend.tracing import Tracer

DEFAULT_UNROLL = 8        # loops of at most this many iterations are unrolled
UNROLLED_OPERATIONS = 256  # ... and loops whose iterations hold at most this many operations
_WARN_UNROLLED = 64       # a fallback unrolling longer than this warns

_PREFIX = "_xla_"        # names the rewrite introduces (one underscore: no name mangling)
_RUNTIME = "_xla_cf"


class _Undefined:
    """The value of a name not bound (yet): never escapes a rewritten function
    (names holding it are deleted again)."""

    def __repr__(self):
        return "<undefined>"


UNDEFINED = _Undefined()


# ----- the rewrite ------------------------------------------------------------------------

_MUTATING_FUNCTIONS = {"at", "copyto", "put", "place", "putmask", "fill_diagonal"}
_MUTATING_METHODS = {"fill", "sort", "partition", "itemset", "put", "resize", "setfield"}
_LIST_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "add",
                 "setdefault", "popitem", "discard"}


def _root_name(node):
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Names(ast.NodeVisitor):
    """What a list of statements binds, updates in place and reads, not looking
    into nested scopes (whose own names are theirs) except for what they read."""

    def __init__(self):
        self.stored, self.loaded = {}, set()
        self.python_effects = False    # list.append and friends: state the loop cannot carry
        self.blockers = set()          # what keeps the statements Python

    def _store(self, name):
        if name is not None:
            self.stored.setdefault(name, None)

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._store(node.id)
            if isinstance(node.ctx, ast.Del):
                self.blockers.add("del")
        else:
            self.loaded.add(node.id)

    def _target(self, t):
        if isinstance(t, (ast.Subscript, ast.Attribute)):
            self._store(_root_name(t))
        self.visit(t)

    def visit_Assign(self, node):
        for t in node.targets:
            self._target(t)
        self.visit(node.value)

    def visit_AugAssign(self, node):
        self._target(node.target)
        if isinstance(node.target, ast.Name):
            self.loaded.add(node.target.id)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        self._target(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Attribute):
            if f.attr in _MUTATING_FUNCTIONS and node.args:
                self._store(_root_name(node.args[0]))
            if f.attr in _MUTATING_METHODS:
                self._store(_root_name(f.value))
            if f.attr in _LIST_METHODS:
                self.python_effects = True
        for kw in node.keywords:
            if kw.arg == "out":
                for v in (kw.value.elts if isinstance(kw.value, ast.Tuple) else [kw.value]):
                    self._store(_root_name(v))
        if isinstance(f, ast.Name) and f.id in ("locals", "vars", "eval", "exec") or \
                (isinstance(f, ast.Name) and f.id == "super" and not node.args):
            self.blockers.add(f"{f.id}()")
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self._store(node.target.id)
        self.visit(node.value)

    def visit_Global(self, node):
        self.blockers.add("global")

    def visit_Nonlocal(self, node):
        self.blockers.add("nonlocal")

    def visit_Yield(self, node):
        self.blockers.add("yield")

    visit_YieldFrom = visit_Yield

    def visit_Await(self, node):
        self.blockers.add("await")

    def _scope(self, node, args=None):
        inner = _Names()
        for n in (node.body if isinstance(node.body, list) else [node.body]):
            inner.visit(n)
        bound = set(inner.stored)
        if args is not None:
            bound |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        self.loaded |= inner.loaded - bound
        self.blockers |= inner.blockers & {"locals()", "vars()", "eval()", "exec()", "super()"}
        self.python_effects |= inner.python_effects

    def visit_FunctionDef(self, node):
        self._store(node.name)
        for d in node.decorator_list + node.args.defaults + \
                [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)
        self._scope(node, node.args)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._scope(node, node.args)

    def visit_ClassDef(self, node):
        self._store(node.name)
        self.blockers.add("class")

    def _comprehension(self, node):
        inner = _Names()
        for g in node.generators:
            inner.visit(g.iter)
            for c in g.ifs:
                inner.visit(c)
            inner.visit(g.target)
        for e in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
            inner.visit(e)
        targets = set()
        for g in node.generators:
            targets |= {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.loaded |= inner.loaded - targets
        for name in inner.stored:        # walrus targets bind in the enclosing scope
            if name not in targets:
                self._store(name)
        self.python_effects |= inner.python_effects

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Import(self, node):
        for a in node.names:
            self._store((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        self._store(node.name)
        self.generic_visit(node)


def _names(stmts):
    v = _Names()
    for s in stmts:
        v.visit(s)
    return v


class _Jumps(ast.NodeVisitor):
    """``return`` anywhere, ``break``/``continue`` of the statement itself
    (not of a loop inside it), not looking into nested functions."""

    def __init__(self):
        self.found = None
        self.depth = 0

    def visit_Return(self, node):
        self.found = self.found or "return"

    def visit_Break(self, node):
        if self.depth == 0:
            self.found = self.found or "break"

    def visit_Continue(self, node):
        if self.depth == 0:
            self.found = self.found or "continue"

    def _loop(self, node):
        self.depth += 1
        for s in node.body:
            self.visit(s)
        self.depth -= 1
        for s in node.orelse:
            self.visit(s)

    visit_For = visit_While = visit_AsyncFor = _loop

    def visit_FunctionDef(self, node):
        pass

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


def _jump(stmts):
    v = _Jumps()
    for s in stmts:
        v.visit(s)
    return v.found


_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _unlocated(tree):
    """A parsed template without locations (``_fill`` gives it the user's)."""
    for n in ast.walk(tree):
        for a in _LOCATION:
            if hasattr(n, a):
                delattr(n, a)
    return tree


def _fill(stmts, node):
    """Gives every generated node without a location that of ``node``, the
    statement it replaces (the user's own nodes keep theirs)."""
    def visit(n):
        if isinstance(n, (ast.stmt, ast.expr, ast.excepthandler, ast.arg, ast.keyword)) and \
                getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset = node.lineno, node.col_offset
            n.end_lineno, n.end_col_offset = node.end_lineno, node.end_col_offset
        for child in ast.iter_child_nodes(n):
            visit(child)
    for s in stmts:
        visit(s)
    return stmts


def _loads(node):
    """How many times each name is read in ``node`` (AugAssign targets too)."""
    return collections.Counter(
        [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)] +
        [n.target.id for n in ast.walk(node)
         if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)])


_OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript, ast.Compare, ast.AugAssign)


def _op_count(stmts):
    """The operations one iteration of a loop body runs, roughly (calls,
    operators, indexing), counted in its source; a body with a loop of its
    own counts as large (its trip count is not known here)."""
    count = 0
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
                return 1 << 30
            count += isinstance(n, _OPERATIONS)
    return max(count, 1)


def _parse_expr(text):
    return _unlocated(ast.parse(text, mode="eval").body)


def _parse(text):
    return _unlocated(ast.parse(text)).body


class _Rewriter:
    """Rewrites one function's statements. ``live``: the names the function
    reads anywhere, so a loop's temporaries it never reads later need not be
    carried out of the loop."""

    def __init__(self, function_loads, filename):
        self.count = 0
        self.filename = filename
        self.function_loads = function_loads     # Counter: name -> loads in the function

    def _live(self, carried, node):
        """The carried names read outside ``node`` (after it, or before it in
        an enclosing loop): the loop must hand them back."""
        inside = _loads(node)
        return [n for n in carried if self.function_loads[n] > inside[n]]

    def _fresh(self, kind):
        self.count += 1
        return f"{_PREFIX}{kind}{self.count}"

    def block(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, node):
        if isinstance(node, ast.For):
            return self._for(node)
        if isinstance(node, ast.While):
            return self._while(node)
        if isinstance(node, ast.If):
            return self._if(node)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.With, ast.Try)) and isinstance(getattr(node, field, None), list):
                setattr(node, field, self.block(getattr(node, field)))
        if isinstance(node, ast.Try):
            for h in node.handlers:
                h.body = self.block(h.body)
        return [node]

    # The pieces every converted statement shares.
    @staticmethod
    def _pack(names):
        return _parse_expr(f"{_RUNTIME}.pack(locals(), {tuple(names)!r})")

    @staticmethod
    def _unpack(names, source):
        """``(a, b) = source`` and unbinding whatever came back undefined."""
        if not names:
            return [ast.Expr(_parse_expr(source))]
        lhs = "(" + ", ".join(names) + ",)"
        stmts = _parse(f"{lhs} = {source}")
        for n in names:
            stmts += _parse(f"if {n} is {_RUNTIME}.UNDEFINED:\n    del {n}")
        return stmts

    def _function(self, name, params, names, body, returns=True):
        args = ", ".join(params)
        fn = _parse(f"def {name}({args}):\n    pass")[0]
        fn.body = (self._unpack(names, f"{_RUNTIME}.state({params[-1]}, {len(names)})")
                   if names else []) + body
        if returns:
            fn.body.append(ast.Return(self._pack(names)))
        return fn

    def _blocked(self, names, what):
        for b in ("yield", "await", "global", "nonlocal", "del", "class", "locals()", "vars()",
                  "eval()", "exec()", "super()"):
            if b in names.blockers:
                return f"its {what} uses {b}"
        return None

    def _python_test(self, node, reason):
        """The statement stays Python; a traced test is an error saying why."""
        node.test = ast.Call(func=_parse_expr(f"{_RUNTIME}.python_test"),
                             args=[node.test, ast.Constant(reason)], keywords=[])
        _fill([node.test], node.test.args[0])
        return node

    def _for(self, node):
        it = node.iter
        names = _names(node.body)
        reason = None
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and not it.keywords and 1 <= len(it.args) <= 3
                and not any(isinstance(a, ast.Starred) for a in it.args)):
            reason = "not over range()"
        elif not isinstance(node.target, ast.Name):
            reason = "its target is not a name"
        elif node.orelse:
            reason = "it has an else clause"
        else:
            jump = _jump(node.body)
            reason = (f"its body contains `{jump}`" if jump else self._blocked(names, "body"))
        target = getattr(node.target, "id", None)
        carried = [n for n in names.stored if n != target and not n.startswith(_PREFIX)]
        live = self._live(carried, node)
        node.body = self.block(node.body)
        node.orelse = self.block(node.orelse)
        if reason:
            return [node]
        body = self._fresh("for_body")
        fn = self._function(body, [target, f"{_PREFIX}state"], carried, node.body)
        call = ast.Call(
            func=_parse_expr(f"{_RUNTIME}.for_range"),
            args=[it.func, ast.Tuple(it.args, ast.Load()), ast.Name(body, ast.Load()),
                  self._pack(carried + [target]),
                  ast.Constant((tuple(carried), tuple(live), target,
                                f"{self.filename}:{node.lineno}", names.python_effects,
                                _op_count(node.body)))],
            keywords=[])
        result = self._fresh("result")
        out = [fn, ast.Assign([ast.Name(result, ast.Store())], call)]
        out += self._unpack(carried + [target], result)
        return _fill(out, node)

    def _while(self, node):
        names = _names(node.body)
        jump = _jump(node.body)
        reason = (f"its body contains `{jump}`" if jump else
                  "it has an else clause" if node.orelse else self._blocked(names, "body"))
        test_names = _names([ast.Expr(node.test)])
        reason = reason or self._blocked(test_names, "condition")
        if test_names.stored:
            reason = reason or "its condition assigns (:=)"
        carried = [n for n in names.stored if not n.startswith(_PREFIX)]
        live = self._live(carried, node)
        node.body = self.block(node.body)
        node.orelse = self.block(node.orelse)
        if reason:
            return [self._python_test(node, f"the `while` at line {node.lineno} stays a Python "
                                            f"loop: {reason}")]
        cond, body = self._fresh("while_cond"), self._fresh("while_body")
        cond_fn = self._function(cond, [f"{_PREFIX}state"], carried, [ast.Return(node.test)],
                                 returns=False)
        body_fn = self._function(body, [f"{_PREFIX}state"], carried, node.body)
        call = ast.Call(
            func=_parse_expr(f"{_RUNTIME}.while_stmt"),
            args=[ast.Name(cond, ast.Load()), ast.Name(body, ast.Load()), self._pack(carried),
                  ast.Constant((tuple(carried), tuple(live), f"{self.filename}:{node.lineno}"))],
            keywords=[])
        result = self._fresh("result")
        return _fill([cond_fn, body_fn, ast.Assign([ast.Name(result, ast.Store())], call)] +
                     self._unpack(carried, result), node)

    def _if(self, node):
        names = _names(node.body + node.orelse)
        jump = _jump(node.body + node.orelse)
        reason = f"a branch contains `{jump}`" if jump else self._blocked(names, "branches")
        node.body = self.block(node.body)
        node.orelse = self.block(node.orelse)
        if reason:
            return [self._python_test(node, f"the `if` at line {node.lineno} stays a Python "
                                            f"branch: {reason}")]
        carried = [n for n in names.stored if not n.startswith(_PREFIX)]
        test, then, orelse = self._fresh("test"), self._fresh("then"), self._fresh("else")
        then_fn = self._function(then, [f"{_PREFIX}state"], carried, node.body or [ast.Pass()])
        else_fn = self._function(orelse, [f"{_PREFIX}state"], carried, node.orelse or [ast.Pass()])
        call = ast.Call(
            func=_parse_expr(f"{_RUNTIME}.if_stmt"),
            args=[ast.Name(test, ast.Load()), ast.Name(then, ast.Load()),
                  ast.Name(orelse, ast.Load()), self._pack(carried),
                  ast.Constant((tuple(carried), f"{self.filename}:{node.lineno}"))],
            keywords=[])
        result = self._fresh("result")
        return _fill([ast.Assign([ast.Name(test, ast.Store())], node.test), then_fn, else_fn,
                      ast.Assign([ast.Name(result, ast.Store())], call)]
                     + self._unpack(carried, result), node)


class _Builtins(ast.NodeTransformer):
    """``max(a, b, ...)`` and ``min(a, b, ...)`` of two or more positional
    arguments go through the runtime, which keeps Python's semantics (the
    first of equal values, ``b > a`` decides) with traced values (a Python
    comparison of Tracers has no truth value)."""

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("max", "min") and len(node.args) >= 2 and \
                not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
            call = ast.Call(func=_parse_expr(f"{_RUNTIME}.extremum"),
                            args=[ast.Name(f.id, ast.Load()), ast.Constant(f.id == "max")] + node.args,
                            keywords=[])
            return _fill([call], node)[0]
        return node


_converted = {}    # code object -> (code, reason): one rewrite per function


def _rewrite(fn):
    """The rewritten code object of ``fn``, or None with the reason."""
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None, "a generator or coroutine"
    if hasattr(fn, "__wrapped__"):
        return None, "a wrapper (it has __wrapped__)"
    try:
        lines, first = inspect.findsource(code)
    except (OSError, TypeError):
        return None, "its source is not available"
    source = textwrap.dedent("".join(inspect.getblock(lines[first:])))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, "its source does not parse on its own"
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != fn.__name__:
        return None, "its source is not a def statement"
    node = tree.body[0]
    if not any(isinstance(n, (ast.For, ast.While, ast.If)) or
               isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("max", "min")
               for n in ast.walk(node)):
        return None, "no control flow"
    mangled = any(isinstance(n, (ast.Name, ast.Attribute)) and
                  (getattr(n, "id", None) or getattr(n, "attr", "")).startswith("__") and
                  not (getattr(n, "id", None) or getattr(n, "attr", "")).endswith("__")
                  for n in ast.walk(node))
    if mangled:
        return None, "it uses private (name-mangled) names"
    loads = _loads(node)
    node.decorator_list = []
    ast.increment_lineno(tree, first)     # the file's line numbers, in errors too
    node = _Builtins().visit(node)
    node.body = _Rewriter(loads, code.co_filename).block(node.body)
    # Compiled inside a function that binds the original's free variables,
    # so they stay free variables (closure cells) of the rewritten code.
    free = code.co_freevars
    if free:
        outer = _parse("def _xla_outer():\n    pass")[0]
        outer.body = [_parse(f"{v} = None")[0] for v in free] + [node]
        tree.body = _fill([outer], node)
    try:
        module = compile(tree, code.co_filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        return None, f"the rewrite does not compile ({e})"
    new = _find_code(module, code.co_name, code.co_firstlineno, free)
    if new is None:
        return None, "the rewritten function was not found"
    if not set(new.co_freevars) <= set(free):
        return None, "the rewrite reads names the original does not"
    return new, None


def _find_code(module_code, name, firstlineno, free):
    stack = [module_code]
    while stack:
        c = stack.pop()
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                if k.co_name == name and k.co_qualname.rsplit(".", 1)[-1] == name and \
                        not k.co_name.startswith(_PREFIX):
                    return k
                if k.co_name == "_xla_outer":
                    stack.append(k)
    return None


def convert(fn, unroll=None):
    """``fn`` with its control flow rewritten (``fn`` itself where it cannot
    be, or ``unroll`` is True and it has no traced conditions to convert:
    plain tracing is then the same)."""
    if not isinstance(fn, types.FunctionType):
        return fn
    code = fn.__code__
    if code not in _converted:
        _converted[code] = _rewrite(fn)
    new, _ = _converted[code]
    if new is None:
        return fn
    globals_ = dict(fn.__globals__)
    globals_[_RUNTIME] = _Runtime(unroll)
    closure = None
    if new.co_freevars:
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        closure = tuple(cells[v] for v in new.co_freevars)
    out = types.FunctionType(new, globals_, fn.__name__, fn.__defaults__, closure)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__dict__.update(fn.__dict__)
    out.__qualname__ = fn.__qualname__
    return out


def conversion_status(fn):
    """None when ``fn``'s control flow is converted, else why it is not."""
    if not isinstance(fn, types.FunctionType):
        return "not a Python function"
    if fn.__code__ not in _converted:
        _converted[fn.__code__] = _rewrite(fn)
    return _converted[fn.__code__][1]


# ----- at trace time ----------------------------------------------------------------------

def _carryable(v):
    return isinstance(v, (Tracer, np.ndarray, np.generic, bool, int, float, complex)) and \
        not (isinstance(v, np.ndarray) and v.dtype == object)


def _loop_error(where, message):
    """An error at ``where``, the ``file:line`` of the statement."""
    return TracingError(f"{where}: {message}")


class _Runtime:
    """What rewritten code calls; one per conversion (it holds the options)."""

    UNDEFINED = UNDEFINED

    def __init__(self, unroll):
        # By default a loop also unrolls when all its iterations together
        # are a few hundred operations (a convolution's taps): fusion then
        # combines them, where a while loop would run one slice at a time.
        self.budget = UNROLLED_OPERATIONS if unroll is None else -1
        if unroll is None:
            unroll = DEFAULT_UNROLL
        self.threshold = (float("inf") if unroll is True else -1 if unroll is False
                          else operator.index(unroll))

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
            try:
                return self._converted_for(r, body, state, names, live, lineno)
            except (XlaError, LookupError, NameError, TypeError, ValueError, ArithmeticError) as e:
                reason = str(e).splitlines()[0]
            if len(r) > _WARN_UNROLLED:
                warnings.warn(f"{lineno}: the loop of {len(r)} iterations is unrolled, not "
                              f"compiled as one HLO while loop: {reason}", stacklevel=3)
            return self._python_for(r, body, state)
        return self._traced_for(start, stop, step, body, state, names, live, lineno)

    @staticmethod
    def _python_for(iterable, body, state):
        values, index = state[:-1], state[-1]
        for index in iterable:
            values = body(index, values)
        return tuple(values) + (index,)

    def _converted_for(self, r, body, state, names, live, lineno):
        values = list(state[:-1])
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
            out = self._while_range(r.start, r.stop, r.step, len(r), body, values, names, lineno)
        except UnboundLocalError:
            if peel:
                raise
            values = list(body(r[0], tuple(values)))
            r = r[1:]
            if not r:
                return tuple(values) + (r.start - r.step,)
            out = self._while_range(r.start, r.stop, r.step, len(r), body, values, names, lineno)
        return tuple(out) + (r[-1],)

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
        return tuple(out) + (s + (trip - 1) * st,)

    def _while_range(self, start, stop, step, trip, body, values, names, lineno):
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
            last = start + (trip - 1) * step
            bounds = (min(start, last), max(start, last))
        else:
            bounds = None

        def loop_body(c):
            i, vals = c
            if bounds is not None:
                i._affine = (i, 0) + bounds
            full = [UNDEFINED] * len(values)
            for k, v in zip(carried, vals):
                full[k] = v
            ops = identity.before(vals)
            out = body(i, tuple(full))
            identity.after(vals, ops, out, "the loop body")
            return i + step, [out[k] for k in carried]

        _, out_vals = lax.while_loop(cond, loop_body, init, _trip_count=trip)
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
        names, lineno = info
        if not isinstance(test, Tracer):
            return then(state) if test else orelse(state)
        from xla.frontend import lax
        pred = _scalar_bool(test, lineno)
        values = list(state)
        inputs = [k for k, v in enumerate(values) if _carryable(v)]
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
                return [out[k] if _carryable(out[k]) else None for k in range(len(values))]
            return run

        try:
            out = lax.cond(pred, branch(then, 0), branch(orelse, 1), *[values[k] for k in inputs])
        except tracing.ShapeError:
            if len(kinds) < 2:
                raise
            for k, n in enumerate(names):
                a, b = kinds[0][k], kinds[1][k]
                if _carryable(a) != _carryable(b):
                    which = "the `if` branch" if _carryable(a) else "the `else` branch"
                    raise _loop_error(lineno, f"`{n}` is assigned an array only in {which} of the "
                                              "`if` on a traced value (an HLO conditional); assign "
                                              "it before the `if` or in both branches") from None
            raise
        result = []
        for k, n in enumerate(names):
            a, b = kinds[0][k], kinds[1][k]
            how = set(inplace.get(k, ()))
            if how & {"inplace", "mixed"} and how - {"inplace", "same"}:
                raise _loop_error(lineno, f"`{n}` is updated in place in one branch of the `if` on a "
                                          "traced value and rebound in the other (so which array "
                                          "later updates change depends on the condition): update "
                                          "it in place in both, or rebind it in both")
            if _carryable(a) and "inplace" in how and isinstance(values[k], Tracer):
                values[k]._assign(out[k], f"the `if` at {lineno}")
                result.append(values[k])
            elif _carryable(a):
                result.append(out[k])
            elif a is b:
                result.append(a)
            else:
                raise _loop_error(lineno, f"`{n}` is set to a {type(a).__name__} or a "
                                          f"{type(b).__name__} by the `if` on a traced value (an "
                                          "HLO conditional), which chooses only arrays")
        return tuple(result)


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


def _scalar_bool(test, lineno):
    t = tracing.as_tracer(test)
    if t.shape != ():
        if int(np.prod(t.shape)) != 1:
            raise _loop_error(lineno, f"the truth value of a traced array of shape {t.shape} is "
                                      "ambiguous (as in NumPy): use .any() or .all()")
        t = t.reshape(())
    return t if t.dtype == np.bool_ else t != 0


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
