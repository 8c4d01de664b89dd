"""The source rewrite behind ``xla/frontend/control_flow.py``: a jitted
function's AST, its ``for i in range(...)``, ``while`` and ``if``
statements (and builtin ``max``/``min`` calls, and conditional
expressions ``a if c else b``) turned into calls of the runtime helpers
(``_xla_cf.for_range``, ``while_stmt``, ``if_stmt``, ``extremum``,
``if_exp``) with the bodies as nested functions of the loop's state, and
compiled with the original file name and line numbers.

What a statement carries (``_Names``): every name its body assigns or
updates in place (``x[idx] = v``, ``x += v``, ``out=x``, ``np.add.at(x,
...)``, ``x.fill(...)``), the names read after it (so temporaries are not
carried out of a loop), whether it appends to a list (Python effects: the
loop stays Python) and what keeps it Python (``return``/``break``/
``continue`` of its own, ``yield``, ``global``, ``del``, ``locals()``,
zero-argument ``super()``...). Generated nodes take the location of the
statement they replace. Last, every call but the runtime's own and the
builtins that act on their caller's frame becomes ``_xla_cf.call(f, ...)``
(``_Calls``), so the runtime can convert the user functions it reaches. A
lambda is rewritten from its line when it is the only lambda of its
arguments there.
"""
import ast
import collections
import inspect
import textwrap
import types

_PREFIX = "_xla_"        # names the rewrite introduces (one underscore: no name mangling)
RUNTIME = "_xla_cf"      # the global through which rewritten code reaches the runtime

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


def _store_context(target):
    """Marks an assignment target parsed as an expression as stored to."""
    for n in ast.walk(target):
        if isinstance(n, (ast.Name, ast.Tuple, ast.List)):
            n.ctx = ast.Store()


_RETURN = "_return_value_xla"    # carried like a user name (no _xla_ prefix)


def _returns(stmts):
    """Whether ``stmts`` hold a ``return`` (not counting nested functions)."""
    v = _Jumps()
    for st in stmts:
        v.visit(st)
    return v.found == "return" or any(
        isinstance(n, ast.Return) for st in stmts for n in _walk_same_scope(st))


def _walk_same_scope(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def _single_exit(stmts):
    """``stmts`` (a function body) with early returns from top-level ``if``
    statements folded in, so the body has one ``return`` at its end and the
    ``if`` can become a conditional: ``if c: A; return x`` followed by ``B;
    return y`` is ``if c: A; r = x else: B; r = y`` then ``return r``. An
    ``else`` that returns is the code after the ``if``. None when the body
    is not of that form (a return inside a loop, a path that falls off the
    end)."""
    for j, st in enumerate(stmts):
        if not isinstance(st, ast.If) or not _returns([st]):
            if isinstance(st, ast.Return) and j != len(stmts) - 1:
                return None
            if not isinstance(st, (ast.If, ast.Return)) and _returns([st]):
                return None        # a return in a loop, with or try
            continue
        rest = stmts[j + 1:]
        if _returns(st.orelse):
            # The else returns: it is the code after an if without else.
            flat = stmts[:j] + [ast.If(st.test, st.body, [])] + st.orelse + rest
            _locate_like(flat[j], st)
            return _single_exit(flat)
        body = st.body
        if not body or not isinstance(body[-1], ast.Return) or _returns(body[:-1]):
            return None
        tail = _single_exit(st.orelse + rest)
        if tail is None or not tail or not isinstance(tail[-1], ast.Return):
            return None
        def assign(ret):
            value = ret.value if ret.value is not None else ast.Constant(None)
            a = ast.Assign([ast.Name(_RETURN, ast.Store())], value)
            return ast.copy_location(a, ret)
        new_if = ast.If(st.test, body[:-1] + [assign(body[-1])], tail[:-1] + [assign(tail[-1])])
        _locate_like(new_if, st)
        ret = ast.copy_location(ast.Return(ast.Name(_RETURN, ast.Load())), tail[-1])
        return stmts[:j] + [new_if, ret]
    return stmts if stmts and isinstance(stmts[-1], ast.Return) else None


def _locate_like(node, like):
    ast.copy_location(node, like)
    node.end_lineno, node.end_col_offset = like.end_lineno, like.end_col_offset


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
        return _parse_expr(f"{RUNTIME}.pack(locals(), {tuple(names)!r})")

    @staticmethod
    def _unpack(names, source):
        """``(a, b) = source`` and unbinding whatever came back undefined."""
        if not names:
            return [ast.Expr(_parse_expr(source))]
        lhs = "(" + ", ".join(names) + ",)"
        stmts = _parse(f"{lhs} = {source}")
        for n in names:
            stmts += _parse(f"if {n} is {RUNTIME}.UNDEFINED:\n    del {n}")
        return stmts

    def _function(self, name, params, names, body, returns=True):
        args = ", ".join(params)
        fn = _parse(f"def {name}({args}):\n    pass")[0]
        fn.body = (self._unpack(names, f"{RUNTIME}.state({params[-1]}, {len(names)})")
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
        node.test = ast.Call(func=_parse_expr(f"{RUNTIME}.python_test"),
                             args=[node.test, ast.Constant(reason)], keywords=[])
        _fill([node.test], node.test.args[0])
        return node

    def _for(self, node):
        it = node.iter
        names = _names(node.body)
        ops = _op_count(node.body)
        is_range = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and
                    it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3 and
                    not any(isinstance(a, ast.Starred) for a in it.args))
        is_enumerate = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and
                        it.func.id == "enumerate" and len(it.args) == 1 and not it.keywords and
                        not isinstance(it.args[0], ast.Starred))
        is_zip = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and
                  it.func.id == "zip" and len(it.args) >= 1 and not it.keywords and
                  not any(isinstance(a, ast.Starred) for a in it.args))
        target_names = [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
        reason = None
        if is_range and not isinstance(node.target, ast.Name):
            reason = "its target is not a name"
        elif not all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.expr_context))
                     for n in ast.walk(node.target)):
            reason = "its target is not names"
        elif node.orelse:
            reason = "it has an else clause"
        else:
            jump = _jump(node.body)
            reason = (f"its body contains `{jump}`" if jump else self._blocked(names, "body"))
        carried = [n for n in names.stored if n not in target_names and not n.startswith(_PREFIX)]
        live = self._live(carried, node)
        node.body = self.block(node.body)
        node.orelse = self.block(node.orelse)
        if reason:
            return [node]
        where = f"{self.filename}:{node.lineno}"
        body = self._fresh("for_body")
        result = self._fresh("result")
        if is_range:
            target = node.target.id
            fn = self._function(body, [target, f"{_PREFIX}state"], carried, node.body)
            call = ast.Call(
                func=_parse_expr(f"{RUNTIME}.for_range"),
                args=[it.func, ast.Tuple(it.args, ast.Load()), ast.Name(body, ast.Load()),
                      self._pack(carried + [target]),
                      ast.Constant((tuple(carried), tuple(live), target, where,
                                    names.python_effects, ops))],
                keywords=[])
            out = [fn, ast.Assign([ast.Name(result, ast.Store())], call)]
            out += self._unpack(carried + [target], result)
            return _fill(out, node)
        # for <target> in <iterable> / enumerate(<iterable>): rows of a traced
        # array become a range loop over its first axis (for_iter).
        item = self._fresh("item")
        bind = ast.Assign([node.target], ast.Name(item, ast.Load()))
        fn = self._function(body, [item, f"{_PREFIX}state"], carried, [bind] + node.body)
        call = ast.Call(
            func=_parse_expr(f"{RUNTIME}.for_iter"),
            args=[it.func if is_enumerate or is_zip else ast.Constant(None),
                  it.args[0] if is_enumerate else ast.Tuple(it.args, ast.Load()) if is_zip else it,
                  ast.Name(body, ast.Load()),
                  self._pack(carried),
                  ast.Constant((tuple(carried), tuple(live), where, names.python_effects, ops,
                                "enumerate" if is_enumerate else "zip" if is_zip else None))],
            keywords=[])
        out = [fn, ast.Assign([ast.Name(result, ast.Store())], call)]
        out += self._unpack(carried, f"{result}[:-1]")
        last = _parse(f"if {result}[-1] is not {RUNTIME}.UNDEFINED:\n    pass")[0]
        target = _unlocated(ast.parse(ast.unparse(node.target), mode="eval").body)
        _store_context(target)
        last.body = [ast.Assign([target], _parse_expr(f"{result}[-1]"))]
        out.append(last)
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
            func=_parse_expr(f"{RUNTIME}.while_stmt"),
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
        live = self._live([n for n in names.stored if not n.startswith(_PREFIX)], node)
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
            func=_parse_expr(f"{RUNTIME}.if_stmt"),
            args=[ast.Name(test, ast.Load()), ast.Name(then, ast.Load()),
                  ast.Name(orelse, ast.Load()), self._pack(carried),
                  ast.Constant((tuple(carried), f"{self.filename}:{node.lineno}", tuple(live)))],
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
            call = ast.Call(func=_parse_expr(f"{RUNTIME}.extremum"),
                            args=[ast.Name(f.id, ast.Load()), ast.Constant(f.id == "max")] + node.args,
                            keywords=[])
            return _fill([call], node)[0]
        return node



# Calls a conditional expression's branch may make and stay pure (both
# branches are evaluated when the condition is traced): NumPy's and math's
# functions (not their random generators) and array methods that only read.
_PURE_MODULES = {"np", "numpy", "math", "jnp"}
_PURE_METHODS = {"sum", "mean", "max", "min", "prod", "any", "all", "std", "var", "reshape",
                 "astype", "transpose", "dot", "copy", "squeeze", "ravel", "flatten", "clip",
                 "round", "conj", "cumsum", "argmax", "argmin", "swapaxes"}


def _pure_expression(node):
    """Whether evaluating expression ``node`` has no effect but its value:
    no assignment expression, yield, await or lambda, and calls only of
    ``_PURE_MODULES``' functions (``np.sqrt``, ``np.linalg.norm``; not
    ``np.random``) and ``_PURE_METHODS``."""
    for n in ast.walk(node):
        if isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)):
            return False
        if isinstance(n, ast.Call):
            f, chain = n.func, []
            while isinstance(f, ast.Attribute):
                chain.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name) and f.id in _PURE_MODULES and chain and "random" not in chain:
                continue
            if isinstance(n.func, ast.Attribute) and n.func.attr in _PURE_METHODS and \
                    not any(k.arg == "out" for k in n.keywords):
                continue
            return False
    return True


class _IfExps(ast.NodeTransformer):
    """``a if c else b`` becomes ``_xla_cf.if_exp(c, lambda: a, lambda: b,
    pure, "file:line")``: Python's choice when ``c`` is a Python value; with
    a traced ``c``, both branches and a select when both are pure
    expressions (``_pure_expression``), else an error naming the line."""

    def __init__(self, filename):
        self.filename = filename

    def visit_IfExp(self, node):
        self.generic_visit(node)
        pure = _pure_expression(node.body) and _pure_expression(node.orelse)

        def thunk(expr):
            return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                 kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                 defaults=[]), body=expr)
        call = ast.Call(func=_parse_expr(f"{RUNTIME}.if_exp"),
                        args=[node.test, thunk(node.body), thunk(node.orelse), ast.Constant(pure),
                              ast.Constant(f"{self.filename}:{node.lineno}")], keywords=[])
        return _fill([call], node)[0]


# Builtins that read or act on their caller's frame: called where they are,
# never through the runtime's ``call``.
_FRAME_BUILTINS = {"locals", "vars", "globals", "dir", "eval", "exec", "super", "breakpoint"}


def _runtime_call(node):
    f = node.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == RUNTIME


def _converted_call(node):
    """Whether the rewrite routes call ``node`` through ``_xla_cf.call``."""
    f = node.func
    return not _runtime_call(node) and not (isinstance(f, ast.Name) and f.id in _FRAME_BUILTINS)


class _Calls(ast.NodeTransformer):
    """``f(args)`` becomes ``_xla_cf.call(f, args)``, so a plain user function
    the converted one calls is converted too (AutoGraph's converted_call);
    the runtime calls anything else as it is. Runs after the statements are
    rewritten, so it skips the runtime's own calls and the frame builtins
    (``locals()`` in ``pack``). Nested functions and lambdas are included:
    they are defined by the converted code."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if not _converted_call(node):
            return node
        call = ast.Call(func=_parse_expr(f"{RUNTIME}.call"), args=[node.func] + node.args,
                        keywords=node.keywords)
        return _fill([call], node)[0]


_converted = {}    # code object -> (code, reason): one rewrite per function


def rewritten_code(fn):
    """``(code, None)``: the rewritten code object of plain function ``fn``
    (once per code object), or ``(None, reason)`` when it is not rewritten."""
    if fn.__code__ not in _converted:
        try:
            _converted[fn.__code__] = _rewrite(fn)
        except Exception as e:   # noqa: BLE001 - a function the rewrite cannot take is traced as written
            _converted[fn.__code__] = (None, f"the rewrite failed ({type(e).__name__}: {e})")
    return _converted[fn.__code__]


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
    if code.co_name == "<lambda>":
        node = _lambda_node(tree, code, code.co_firstlineno - first)
        if node is None:
            return None, "its lambda is not the only one of its arguments on its line"
    elif not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != fn.__name__:
        return None, "its source is not a def statement"
    else:
        node = tree.body[0]
    if not any(isinstance(n, (ast.For, ast.While, ast.If, ast.IfExp)) or
               isinstance(n, ast.Call) and _converted_call(n) for n in ast.walk(node)):
        return None, "no control flow and no calls"
    mangled = any(isinstance(n, (ast.Name, ast.Attribute)) and
                  (getattr(n, "id", None) or getattr(n, "attr", "")).startswith("__") and
                  not (getattr(n, "id", None) or getattr(n, "attr", "")).endswith("__")
                  for n in ast.walk(node))
    if mangled:
        return None, "it uses private (name-mangled) names"
    if "__class__" in code.co_freevars or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" and
            not n.args for n in ast.walk(node)):
        return None, "it uses zero-argument super() (its class cell)"
    ast.increment_lineno(tree, first)     # the file's line numbers, in errors too
    if isinstance(node, ast.Lambda):
        node = _Calls().visit(_IfExps(code.co_filename).visit(_Builtins().visit(node)))
        statement = _fill([ast.Assign([ast.Name(f"{_PREFIX}lambda", ast.Store())], node)], node)[0]
    else:
        statement = node = _rewrite_def(node, code)
    # Compiled inside a function that binds the original's free variables,
    # so they stay free variables (closure cells) of the rewritten code.
    free = code.co_freevars
    tree.body = [statement]
    if free:
        outer = _parse("def _xla_outer():\n    pass")[0]
        outer.body = [_parse(f"{v} = None")[0] for v in free] + [statement]
        tree.body = _fill([outer], node)
    try:
        module = compile(tree, code.co_filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        return None, f"the rewrite does not compile ({e})"
    new = _find_code(module, code.co_name)
    if new is None:
        return None, "the rewritten function was not found"
    if not set(new.co_freevars) <= set(free):
        return None, "the rewrite reads names the original does not"
    return new, None


def _lambda_node(tree, code, line):
    """The one lambda of ``code``'s arguments starting at ``line`` of ``tree``
    (None when there is none, or several)."""
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount +
                              bool(code.co_flags & inspect.CO_VARARGS) +
                              bool(code.co_flags & inspect.CO_VARKEYWORDS)]
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Lambda) and n.lineno == line:
            a = n.args
            names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + \
                [x.arg for x in (a.vararg, a.kwarg) if x is not None]
            if sorted(names) == sorted(params):
                found.append(n)
    return found[0] if len(found) == 1 else None


def _rewrite_def(node, code):
    """The statements of def ``node`` rewritten, its calls routed through the runtime."""
    loads = _loads(node)
    node.decorator_list = []
    node = _IfExps(code.co_filename).visit(_Builtins().visit(node))
    # Early returns from top-level ifs folded into one return (a traced
    # condition can then be a conditional); the body as written otherwise.
    if any(isinstance(st, ast.If) and _returns([st]) for st in node.body):
        folded = _single_exit(list(node.body))
        if folded is not None:
            node.body = folded
            ast.fix_missing_locations(node)
            loads = _loads(node)
    node.body = _Rewriter(loads, code.co_filename).block(node.body)
    return _Calls().visit(node)


def _find_code(module_code, name):
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
