"""``xla.autojit``: auto-clustering of unmodified programs.

``xla.autojit(fn)`` runs ``fn`` on traced values like ``xla.jit``, but where
``xla.jit`` would refuse (a data-dependent shape such as ``np.unique``, a
Python ``if`` on a value, ``float(t)``, a call into code that is not NumPy),
it *cuts*: the cluster traced so far is compiled and run, the offending
operation runs eagerly in NumPy on the concrete values, and tracing resumes
with a new cluster whose parameters are the values still alive. The result
equals running ``fn`` in plain NumPy. This is TensorFlow's auto-clustering
(``--tf_xla_auto_jit=2``) for Python: ``XLA_FLAGS=--xla_auto_jit=2`` makes
every ``xla.jit`` function cluster like this instead of raising.

Each cluster's executable is cached by its HLO text, so a function whose
control flow takes the same path compiles each cluster once per signature
(tracing itself runs on every call). Values alive at a cut are found
through the builder's ``live_tracers`` (weak references by id): a traced value that the
program still holds is an output of the cluster and a parameter of the next.

``fn.cluster_report()`` says which clusters formed, their sizes, and why each
cut happened (``--tf_xla_clustering_debug``'s analogue); with
``debug_dir`` (or ``--xla_auto_jit_debug_dir``) the report and a DOT graph of
the clusters are written per function.
"""
import functools
import os
import weakref

import numpy as np

from xla.errors import InvalidArgumentError
from xla.frontend import pytree, trace_context, tracing
from xla.frontend.builder import XlaBuilder
from xla.frontend.lax import checks
from xla.frontend.signature import arg_spec
from xla.frontend.trace_context import TraceContext
from xla.frontend.tracing import Tracer, to_shape


class ClusterRecord:
    """What one cluster was: size, inputs, outputs and why it ended."""

    def __init__(self, index, instructions, inputs, outputs, reason, location, compiled):
        self.index = index
        self.instructions = instructions
        self.inputs = inputs
        self.outputs = outputs
        self.reason = reason
        self.location = location
        self.compiled = compiled   # False when served by the cluster cache

    def __repr__(self):
        return (f"cluster {self.index}: {self.instructions} instructions, {self.inputs} inputs, "
                f"{self.outputs} outputs; cut: {self.reason}" + (f" at {self.location}" if self.location else ""))


class _Session:
    """One call of an autojit function: the current cluster and its inputs."""

    def __init__(self, owner):
        self.owner = owner
        self.records = []
        self.eager_ops = []
        self._new_cluster()

    def _new_cluster(self):
        n = len(self.records)
        builder = XlaBuilder(f"{self.owner.name}_cluster{n}")
        builder.live_tracers = weakref.WeakValueDictionary()
        self.ctx = TraceContext(builder)
        self.ctx.autojit = self
        checks.start(self.ctx)     # errors on values: raised at the cluster's cut
        self.values = []   # concrete value of parameter k

    def parameter(self, value, weak=False):
        """A new parameter of the current cluster holding ``value``."""
        value = np.asarray(value)
        b = self.ctx.builder
        op = b.parameter(len(self.values), to_shape(value.dtype, value.shape), f"in{len(self.values)}")
        self.values.append(value)
        return Tracer(op, weak=weak)

    def cut(self, reason, extra=()):
        """Compiles and runs the current cluster; every live value (and
        ``extra``) gets its concrete value, then becomes a parameter of a new
        cluster. Returns {id(tracer): value}."""
        b = self.ctx.builder
        # The cluster's error code (lax/checks.py) is computed with it and
        # read at once, not carried into the next cluster.
        error = self.ctx.error
        live = [t for t in list(b.live_tracers.values()) if t.op.builder is b and t is not error]
        seen = {id(t) for t in live}
        for t in extra:
            if id(t) not in seen:
                seen.add(id(t))
                live.append(t)
        values = {}
        computed, order = [], {}
        for t in live:
            instr = t.op.instr
            if instr.opcode == "parameter" and instr in b._parameters.values():
                values[id(t)] = self.values[instr.parameter_number]
            elif id(instr) not in order:
                order[id(instr)] = len(computed)
                computed.append(t)
        results = []
        compiled = False
        n_instr = 0
        if computed or error is not None:
            ops = [t.op for t in computed] + ([error.op] if error is not None else [])
            module = b.build_module(b.tuple(ops))
            n_instr = sum(len(c.instructions) for c in module.computations)
            exe, compiled = self.owner._executable(module)
            results = list(exe.execute(*self.values))
            if error is not None:
                results = list(checks.checked_outputs(self.ctx.error_kinds, results))
        for t in live:
            if id(t) not in values:
                values[id(t)] = results[order[id(t.op.instr)]]
        self.records.append(ClusterRecord(len(self.records), n_instr, len(self.values), len(computed),
                                          reason, trace_context.user_location(), compiled))
        # Rebase the live values onto the next cluster.
        stack = trace_context._stack()
        old_ctx = self.ctx
        self._new_cluster()
        index = stack.index(old_ctx)
        stack[index] = self.ctx
        for t in live:
            value = values[id(t)]
            new = self.parameter(value, t.weak)
            t.op = new.op
            self.ctx.builder.live_tracers[id(t)] = t
        return values

    def value_of(self, tracer, what):
        return self.cut(what, extra=[tracer])[id(tracer)]

    def eager(self, func, args, kwargs, what, why=None):
        """Runs ``func`` in NumPy on concrete values (a cut first); array
        results become parameters of the next cluster. ``why``: the reason
        it could not be traced (a TracingError, whose message without its
        location goes into the cut's reason: a data-dependent shape names
        itself in the cluster report)."""
        leaves, treedef = pytree.flatten((tuple(args), dict(kwargs)))
        tracers = [x for x in leaves if isinstance(x, Tracer)]
        reason = f"{what} runs eagerly"
        if why is not None:
            text = str(why)
            where = trace_context.user_location()
            if where and text.startswith(where + ": "):
                text = text[len(where) + 2:]
            reason += f" ({text.split(';')[0]})"
        values = self.cut(reason, extra=tracers)
        concrete = [values[id(x)] if isinstance(x, Tracer) else x for x in leaves]
        cargs, ckwargs = treedef.unflatten(concrete)
        self.eager_ops.append((what, trace_context.user_location()))
        result = func(*cargs, **ckwargs)
        out_leaves, out_treedef = pytree.flatten(result)
        wrapped = [self.parameter(v) if isinstance(v, (np.ndarray, np.generic)) else v for v in out_leaves]
        return out_treedef.unflatten(wrapped)


class AutoJitFunction:
    """The callable ``xla.autojit`` returns."""

    def __init__(self, fn, backend=None, debug_dir=None):
        from xla import runtime
        self.fn = fn
        self.platform = runtime.get_platform(backend) if backend else runtime.default_platform()
        self.backend = self.platform.name
        self.name = "".join(c if c.isalnum() or c == "_" else "_" for c in getattr(fn, "__name__", "fn"))
        self.debug_dir = debug_dir
        self._executables = {}
        self.compilations = 0
        self.last_records = []
        functools.update_wrapper(self, fn)

    def _executable(self, module):
        key = module.to_text()
        exe = self._executables.get(key)
        if exe is not None:
            return exe, False
        from xla.frontend.compilation import compile_module
        exe = compile_module(module, self.platform, {})
        self._executables[key] = exe
        self.compilations += 1
        return exe, True

    def __call__(self, *args, **kwargs):
        if tracing.current_context(required=False) is not None:
            return self.fn(*args, **kwargs)
        leaves, treedef = pytree.flatten((args, kwargs))
        session = _Session(self)
        inputs = []
        for i, x in enumerate(leaves):
            if isinstance(x, (np.ndarray, np.generic)) or type(x) in tracing.PYTHON_SCALARS:
                spec = arg_spec(x, f"argument leaf {i}")
                inputs.append(session.parameter(np.asarray(x, spec.dtype), spec.weak))
            else:
                inputs.append(x)   # not an array: passed through unchanged
        stack = trace_context._stack()
        stack.append(session.ctx)
        try:
            call_args, call_kwargs = treedef.unflatten(inputs)
            out = self.fn(*call_args, **call_kwargs)
            out_leaves, out_treedef = pytree.flatten(out)
            tracers = [x for x in out_leaves if isinstance(x, Tracer)]
            values = session.cut("end of function", extra=tracers)
        finally:
            stack.remove(session.ctx)
        result = [values[id(x)] if isinstance(x, Tracer) else x for x in out_leaves]
        self.last_records = session.records
        if self.debug_dir or _debug_dir_from_flags():
            self._write_report(self.debug_dir or _debug_dir_from_flags(), session)
        return out_treedef.unflatten(result)

    def cluster_report(self):
        """The clusters of the last call, one line each, and the eager ops between them."""
        lines = [f"xla.autojit {self.name}: {len(self.last_records)} clusters, "
                 f"{self.compilations} compilations so far"]
        lines += [f"  {r!r}" + ("" if r.compiled else " (cached)") for r in self.last_records]
        return "\n".join(lines)

    def _write_report(self, directory, session):
        try:
            os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, f"{self.name}.clusters.txt"), "w") as f:
                f.write(self.cluster_report() + "\n")
            with open(os.path.join(directory, f"{self.name}.clusters.dot"), "w") as f:
                f.write(_clusters_dot(self.name, session.records))
        except OSError as e:
            import warnings
            warnings.warn(f"xla.autojit: cannot write the cluster report to {directory}: {e}",
                          RuntimeWarning, stacklevel=3)


def _clusters_dot(name, records):
    lines = [f'digraph "{name}" {{', "  rankdir=TB;", '  node [shape=box, style="rounded,filled"];']
    for r in records:
        color = "#c6e2ff" if r.instructions else "#eeeeee"
        lines.append(f'  c{r.index} [label="cluster {r.index}\\n{r.instructions} instructions\\n'
                     f'{r.inputs} in / {r.outputs} out", fillcolor="{color}"];')
        if r.index + 1 < len(records):
            reason = r.reason.replace('"', "'")
            lines.append(f'  c{r.index} -> c{r.index + 1} [label="{reason}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _debug_dir_from_flags():
    try:
        from xla.debug_options import debug_options
    except ImportError:
        return None
    return getattr(debug_options(), "xla_auto_jit_debug_dir", None) or None


def autojit(fn=None, *, backend=None, debug_dir=None):
    """Auto-clusters ``fn`` (see the module docstring). Usable as a decorator."""
    if fn is None:
        return lambda f: AutoJitFunction(f, backend, debug_dir)
    if not callable(fn):
        raise InvalidArgumentError(f"xla.autojit needs a callable, got {type(fn).__name__}")
    return AutoJitFunction(fn, backend, debug_dir)
