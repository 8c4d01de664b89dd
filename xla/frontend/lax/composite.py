"""``composite``, as ``jax.lax.composite``: an operation with a name that
backends may know, and a decomposition into plain HLO that every backend
can run.

``composite(decomposition, name, version=0)(*operands, **attributes)``
traces ``decomposition(*operands, **attributes)`` into a computation and
emits, as XLA's composite calls are written::

    r = (...) call(a, ...), to_apply=<decomposition>, is_composite=true,
        frontend_attributes={composite.name="xla.eigh",
                             composite.attributes={lower = true},
                             composite.version="0"}

A backend that implements ``name`` replaces the call by its own code (the
CPU backend's ``linalg-composite-rewriter`` calls its LAPACK-like runtime
for ``xla.eigh`` and ``xla.svd``); the others inline the decomposition with
every other call (``call-inliner``). The two must agree to rounding: the
name and attributes are a contract, which the decomposition defines.

Operands are arrays; the decomposition returns an array or a tuple of
arrays and may not use traced values of the enclosing function (pass them
as operands). Attributes are Python bools, ints and strings, written as an
MLIR dictionary (``true``, ``3 : i64``, ``"text"``).
"""
import numpy as np

from xla.frontend.lax.subcomputation import flatten_values, no_capture
from xla.frontend.trace_context import TraceContext, current_context, tracing_error
from xla.frontend.tracing import Tracer, as_tracer
from xla.hlo.attributes import RawAttr


def _attribute_text(value):
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return f"{int(value)} : i64"
    if isinstance(value, str) and '"' not in value and "\\" not in value:
        return f'"{value}"'
    raise tracing_error(f"composite attribute {value!r}: bools, ints and plain strings only")


def attributes_text(attributes):
    """``{a = true, b = 3 : i64}``: ``attributes`` as an MLIR dictionary."""
    return "{" + ", ".join(f"{k} = {_attribute_text(v)}" for k, v in sorted(attributes.items())) + "}"


def composite(decomposition, name, version=0):
    """A function emitting ``name`` (decomposed by ``decomposition``) as a
    composite call; see the module docstring."""
    if not isinstance(name, str) or not name or '"' in name:
        raise tracing_error(f"composite name {name!r} must be a non-empty plain string")

    def call(*operands, **attributes):
        ctx = current_context()
        ops = [as_tracer(o) for o in operands]
        b = ctx.builder
        sub = b.sub_builder(name.replace(".", "_"))
        params = [Tracer(sub.parameter(i, t.op.shape, f"p{i}"), weak=t.weak)
                  for i, t in enumerate(ops)]
        with TraceContext(sub, ctx, no_capture(f"the decomposition of composite {name}")):
            out, treedef = flatten_values(decomposition(*params, **attributes),
                                          f"the decomposition of composite {name}")
            single = treedef.kind == "leaf"
            root = out[0].op if single else sub.tuple([t.op for t in out])
        comp = sub.build(root)
        op = b.call(comp, [t.op for t in ops])
        op.instr.attrs["is_composite"] = RawAttr("true")
        op.instr.attrs["frontend_attributes"] = RawAttr(
            f'{{composite.attributes={attributes_text(attributes)},'
            f'composite.name="{name}",composite.version="{int(version)}"}}')
        if single:
            return Tracer(op, weak=out[0].weak)
        return treedef.unflatten([Tracer(b.get_tuple_element(op, i), weak=t.weak)
                                  for i, t in enumerate(out)])

    return call
