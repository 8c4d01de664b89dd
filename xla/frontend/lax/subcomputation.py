"""Tracing a Python function (a loop body, a branch, a reducer) into a
sub-computation: the state tuple several sub-computations share and the
outer values they capture, and matching what a function returned against
the leaves expected (dtype promotion of weak leaves, errors that name the
leaf)."""
import numpy as np

from xla.errors import ShapeError
from xla.frontend import pytree, tracing
from xla.frontend.tracing import Tracer, as_tracer, convert, tracing_error
from xla.hlo.shape import Shape


class SharedState:
    """The state tuple of a loop (or the operand tuple of branches) shared by
    several sub-computations: fixed leading elements, then captured values,
    appended as tracing finds them (every sub-computation's parameter grows)."""

    def __init__(self, outer_ctx, fixed_shapes):
        self.outer = outer_ctx
        self.shapes = list(fixed_shapes)
        self.n_fixed = len(fixed_shapes)
        self.captured = []          # outer Tracers, in state order
        self.index_of = {}          # id(outer instr) -> state index
        self.params = []            # parameter XlaOps of every sub-computation

    def tuple_shape(self):
        return Shape.tuple(self.shapes)

    def new_param(self, sub):
        p = sub.parameter(0, self.tuple_shape(), "state")
        self.params.append(p)
        return p

    def append(self, outer):
        """A new element of the state, initially ``outer`` (a Tracer of the
        enclosing trace) and never shared with a capture: its index."""
        self.shapes.append(outer.op.shape)
        self.captured.append(outer)
        for p in self.params:
            p.instr.shape = self.tuple_shape()
        return len(self.shapes) - 1

    def capture_into(self, sub, param):
        def capture(outer):
            key = id(outer.op.instr)
            if key not in self.index_of:
                self.index_of[key] = len(self.shapes)
                self.shapes.append(outer.op.shape)
                self.captured.append(outer)
                for p in self.params:
                    p.instr.shape = self.tuple_shape()
            return Tracer(sub.get_tuple_element(param, self.index_of[key]), weak=outer.weak)
        return capture


def no_capture(what):
    def capture(outer):
        raise tracing_error(f"{what} cannot use traced values of the enclosing function (it is a "
                            "computation on scalars); pass them as operands instead")
    return capture


def flatten_values(tree, what):
    leaves, treedef = pytree.flatten(tree)
    tracers = []
    for i, leaf in enumerate(leaves):
        try:
            tracers.append(as_tracer(leaf))
        except Exception:
            raise tracing_error(f"{what}: {leaf_name(treedef, i)} is a {type(leaf).__name__}, "
                                "not an array") from None
    return tracers, treedef


def _leaf_paths(treedef, prefix=""):
    if treedef.kind == "leaf":
        return [prefix]
    out = []
    for i, child in enumerate(treedef.children):
        if treedef.kind == "dict":
            step = f"[{treedef.meta[i]!r}]"
        elif treedef.kind == "namedtuple":
            step = f".{treedef.meta._fields[i]}"
        else:
            step = f"[{i}]"
        out += _leaf_paths(child, prefix + step)
    return out


def leaf_name(treedef, i):
    """``leaf 1 (['h'])``: the index among the leaves and where it sits."""
    paths = _leaf_paths(treedef)
    path = paths[i] if i < len(paths) else ""
    return f"leaf {i} ({path})" if path else f"leaf {i}"


def type_text(t):
    return f"{t.dtype}{list(t.shape)}" + (" (weak)" if getattr(t, "weak", False) else "")


class Promote(Exception):
    """A weakly typed carry leaf must change dtype; ``owner`` is the list of
    expected leaves it refers to (nested loops each catch only their own)."""

    def __init__(self, owner, index, dtype, weak):
        super().__init__(f"promote leaf {index} to {dtype}")
        self.owner, self.index, self.dtype, self.weak = owner, index, dtype, weak


def match(what, expected_treedef, expected, got_tree, promote=False, owner=None):
    """Flattens ``got_tree`` and converts it to the expected leaf types; a
    clear ShapeError names the first difference. With ``promote``, a weak
    expected leaf that the value would promote raises ``Promote`` for
    ``owner`` (default: ``expected``)."""
    got, treedef = flatten_values(got_tree, what)
    if treedef != expected_treedef:
        raise ShapeError((
            f"{what} has structure {treedef}, expected {expected_treedef} (the structure of the "
            "initial value)" if promote else
            f"{what} has structure {treedef}, expected {expected_treedef}"))
    out = []
    for i, (e, g) in enumerate(zip(expected, got)):
        name = leaf_name(treedef, i)
        if g.shape != e.shape:
            raise ShapeError((
                f"{what}: {name} has shape {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"))
        if g.dtype != e.dtype:
            if promote and e.weak:
                target = tracing.result_type(e, g)
                if target != e.dtype:
                    raise Promote(expected if owner is None else owner, i, target, g.weak)
            if g.weak:
                g = retyped(g, e.dtype, True)
            else:
                raise ShapeError((
                    f"{what}: {name} has dtype {g.dtype}, expected {e.dtype} (convert it with "
                    ".astype)"))
        out.append(g)
    return out


def retyped(t, dtype, weak):
    return Tracer(convert(t, dtype).op, weak=weak)


class Spec:
    """The type of an expected leaf (shape, dtype; never weak)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.weak = tuple(shape), np.dtype(dtype), False

