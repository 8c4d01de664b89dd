"""The user-facing transformations: ``vjp``, ``grad``, ``value_and_grad``, ``jvp``."""

import functools

import numpy as np

from xla.errors import InvalidArgumentError
from xla.frontend import pytree, tracing
from xla.frontend.tracing import Tracer, as_tracer, current_context, tracing_error
from xla.frontend.autodiff.backward import backward_pass
from xla.frontend.autodiff.table import G


# ----- the user-facing transformations --------------------------------------------------

def _fresh(t):
    """A new instruction standing for input ``t``, so that only uses through
    it are differentiated (closures over ``t`` itself are constants)."""
    b = current_context().builder
    return Tracer(b.add_instruction("copy", (t.op,)), weak=t.weak)


def _check_float(t, what):
    if t.dtype.kind not in "fc":
        raise tracing_error(f"{what} requires float inputs; got {t.dtype} (integer and boolean "
                            "inputs have no gradient: make them float or pass them as other arguments)")


def _vjp_traced(fn, primals, has_aux):
    """Inside a trace: runs fn on fresh stand-ins of ``primals`` (a list of
    pytrees) and returns (out, vjp_fn, aux)."""
    leaves_list, treedefs, fresh_args = [], [], []
    for p in primals:
        leaves, treedef = pytree.flatten(p)
        fresh = []
        for leaf in leaves:
            t = as_tracer(leaf)
            _check_float(t, "differentiation")
            fresh.append(_fresh(t))
        leaves_list.append(fresh)
        treedefs.append(treedef)
        fresh_args.append(treedef.unflatten(fresh))
    result = fn(*fresh_args)
    if has_aux:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise InvalidArgumentError("has_aux=True needs the function to return (output, aux)")
        out, aux = result
    else:
        out, aux = result, None
    out_leaves, out_treedef = pytree.flatten(out)
    out_tracers = [as_tracer(x) for x in out_leaves]
    builder = current_context().builder

    def vjp_fn(cotangent):
        ct_leaves, ct_treedef = pytree.flatten(cotangent)
        if ct_treedef != out_treedef:
            raise InvalidArgumentError(f"cotangent structure {ct_treedef} does not match the output "
                                       f"structure {out_treedef}")
        cts = []
        for o, c in zip(out_tracers, ct_leaves):
            c = as_tracer(c)
            if c.shape != o.shape:
                raise InvalidArgumentError(f"cotangent shape {c.shape} does not match output shape {o.shape}")
            cts.append(tracing.convert(c, o.dtype).op)
        inputs = [t.op.instr for leaves in leaves_list for t in leaves]
        results = backward_pass(builder, inputs, [o.op.instr for o in out_tracers], cts)
        flat = []
        for t, r in zip((t for leaves in leaves_list for t in leaves), results):
            flat.append(Tracer(r) if r is not None else
                        Tracer(G(builder).zeros(t.op.shape)))
        out_cts, k = [], 0
        for leaves, treedef in zip(leaves_list, treedefs):
            out_cts.append(treedef.unflatten(flat[k:k + len(leaves)]))
            k += len(leaves)
        return tuple(out_cts)

    return out, vjp_fn, aux


def _in_trace():
    return tracing.current_context(required=False) is not None


def vjp(fn, *primals, has_aux=False):
    """``(out, vjp_fn)`` (and ``aux`` with has_aux): ``vjp_fn(ct)`` returns one
    cotangent per primal. Outside a trace both run compiled."""
    if _in_trace():
        out, vjp_fn, aux = _vjp_traced(fn, list(primals), has_aux)
        return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)
    from xla.frontend.jit import jit

    def forward(*ps):
        out, _, aux = _vjp_traced(fn, list(ps), has_aux)
        return (out, aux) if has_aux else out

    result = jit(forward)(*primals)
    out, aux = result if has_aux else (result, None)
    back = jit(lambda ps, ct: _vjp_traced(fn, list(ps), has_aux)[1](ct))

    def vjp_fn(ct):
        return back(tuple(primals), ct)

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def value_and_grad(fn, argnums=0, has_aux=False):
    """A function returning ``(fn(*args), gradient)`` (``((value, aux), grad)``
    with has_aux); the output must be a real scalar."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def traced(*args, **kwargs):
        for n in nums:
            if n >= len(args):
                raise InvalidArgumentError(f"argnums {n} is out of range for {len(args)} positional "
                                           "arguments")
        diff = [args[n] for n in nums]

        def partial_fn(*dargs):
            full = list(args)
            for n, d in zip(nums, dargs):
                full[n] = d
            return fn(*full, **kwargs)

        out, vjp_fn, aux = _vjp_traced(partial_fn, diff, has_aux)
        t = as_tracer(out) if not isinstance(out, Tracer) else out
        if t.shape != () or t.dtype.kind != "f":
            raise tracing_error(f"grad requires a real scalar output, got {t.dtype}{list(t.shape)} "
                                "(use xla.vjp for other outputs)")
        grads = vjp_fn(tracing.full((), 1, t.dtype))
        grad_value = grads[0] if single else tuple(grads)
        return ((out, aux), grad_value) if has_aux else (out, grad_value)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _in_trace():
            return traced(*args, **kwargs)
        if wrapper.compiled is None:
            from xla.frontend.jit import jit
            wrapper.compiled = jit(traced)
        return wrapper.compiled(*args, **kwargs)

    wrapper.compiled = None   # compiled on first use outside a trace
    return wrapper


def grad(fn, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``fn`` with respect to argument(s) ``argnums``."""
    vg = value_and_grad(fn, argnums, has_aux)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def jvp(fn, primals, tangents):
    """``(fn(*primals), J @ tangents)``: forward mode, derived by
    differentiating the (linear) VJP once more."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise InvalidArgumentError("jvp needs as many tangents as primals")

    def traced(ps, ts):
        out, vjp_fn, _ = _vjp_traced(fn, list(ps), False)
        out_leaves, out_treedef = pytree.flatten(out)
        zeros_ct = out_treedef.unflatten([tracing.full(as_tracer(o).shape, 0, as_tracer(o).dtype)
                                          for o in out_leaves])

        def pullback_dot(ct):
            cts = vjp_fn(ct)
            total = None
            for c, t in zip(pytree.tree_leaves(cts), pytree.tree_leaves(ts)):
                term = np.sum(np.multiply(c, t))
                total = term if total is None else total + term
            return total

        _, inner_vjp, _ = _vjp_traced(pullback_dot, [zeros_ct], False)
        (tangent_out,) = inner_vjp(tracing.full((), 1, _scalar_dtype(out_leaves)))
        return out, tangent_out

    if _in_trace():
        return traced(primals, tangents)
    from xla.frontend.jit import jit
    return jit(traced)(primals, tangents)


def _scalar_dtype(leaves):
    dts = [as_tracer(x).dtype for x in leaves]
    return np.result_type(*dts) if dts else np.float32
