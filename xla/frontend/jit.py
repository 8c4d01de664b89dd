"""``xla.jit``: trace a NumPy function into HLO, compile it, cache it.

::

    @xla.jit
    def model_fn(x, y, z):
        return np.sum(x + y * z)

The first call with a given signature (the argument pytree's structure, each
leaf's shape, dtype and weak-typedness, the values of static arguments, the
backend and options) traces ``model_fn`` on Tracers (``xla.frontend.tracing``),
builds an HLO module, compiles it and runs it; later calls with the same
signature reuse the executable. ``cache_info()`` counts hits, misses and
compilations, so a new shape recompiling is observable. A repeated call of
positional arrays, Python scalars and static arguments skips the pytree and
key work: its short key (``call_plan.fast_key``) finds a ``CallPlan`` made when the
signature compiled, which runs the executable's ``prepared_call``; where that
is a C++ one, the plans are tried first in C++ (``JitDispatch``), which
matches the arguments against each signature instead of building the key.

Must-compile: the whole function compiles or the call raises (TracingError
and ShapeError name the user's file and line); nothing falls back to NumPy.
A jitted function called inside another trace is inlined into it.

Platforms (``backend=``, default: ``xla.runtime``'s default platform) are
used through their interfaces only (``xla.runtime``): where the platform's
memory is host memory (``Capabilities.host_buffers``: cpu, interpreter),
NumPy arrays go in and come out without copies, and ``xla.device_put``
buffers are read in place. Elsewhere arguments become device buffers
(those already on the device are not copied) and results are
``runtime.Buffer``s that stay on the device until read (``np.asarray``),
so chained jitted calls never visit the host.

Donation (``donate_argnums``): each computed output is aliased in the module
header (``input_output_alias``) to a donated parameter of its shape and
dtype; a platform whose capabilities include ``donation`` writes it into the
donated argument's memory where buffer assignment finds it safe (the cpu
returns the donated NumPy array; a donated Buffer is deleted), and
otherwise copies (see docs/frontend.md).
"""
import functools
import inspect
import threading
from typing import NamedTuple

import numpy as np

from xla import runtime
from xla.errors import InvalidArgumentError, XlaError
from xla.runtime.transfer import foreign_to
from xla.hlo.attributes import RawAttr
from xla.hlo.ir import HloInstruction
# The tables a Tracer dispatches to install themselves in tracing when imported.
from xla.frontend import indexing, masked_slice, ufuncs  # noqa: F401
from xla.frontend import numpy as numpy_functions  # noqa: F401  (np stays NumPy)
from xla.frontend import pytree, trace_context, tracing
from xla.frontend.call_plan import CallPlan, JitDispatch, fast_key, fast_key_static, writable
from xla.frontend.lax import checks
from xla.frontend.signature import arg_spec
from xla.frontend.trace_context import new_trace
from xla.frontend.tracing import Tracer, as_tracer, to_shape

# jit's keyword options (beyond backend, static and donated arguments).
OPTIONS = {"disk_cache": "True/None: the persistent cache's default directory, False: off, "
                         "a path: that directory"}

# JitDispatch's answer where it ran nothing.
_MISS = object()
# Signatures a function's JitDispatch tries in turn (each rejected at its
# first differing argument); more take the Python plans' dict.
_MAX_NATIVE_PLANS = 8


class CacheInfo(NamedTuple):
    hits: int            # calls served by the in-memory cache
    misses: int          # calls that traced and compiled
    compilations: int    # modules compiled (LLVM run, or loaded from disk)
    currsize: int        # signatures in the in-memory cache
    disk_hits: int = 0   # compilations served by the persistent cache


def _locate(error):
    """The user's innermost frame in ``error``'s traceback, as ``file:line``."""
    tb = error.__traceback__
    where = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        import os
        if not os.path.abspath(filename).startswith(trace_context._INTERNAL_DIRS):
            where = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


class Lowered:
    """A traced function before compilation: its HLO module and signature."""

    def __init__(self, module, out_treedef, specs, partitioned=None):
        self.module = module
        self.out_treedef = out_treedef
        self.in_specs = specs
        self._partitioned = partitioned

    def as_hlo_text(self):
        return self.module.to_text()

    def partitioned_module(self):
        """Under shardings: the SPMD-partitioned module each device runs
        (what the jitted function compiles)."""
        if self._partitioned is None:
            raise InvalidArgumentError("partitioned_module: the function has no shardings")
        return self._partitioned()


class _Entry(NamedTuple):
    executable: object
    out_treedef: object
    n_outputs: int
    donated: tuple   # parameter numbers the executable may write outputs into
    sharded: object = None   # (parameter shardings, result sharding, result shape) under SPMD
    written: tuple = ()      # argument leaves updated in place (x += ...): extra outputs
    # The written leaves whose output the module aliases to their parameter
    # (input_output_alias): the caller's array is donated for it when it can
    # be written (the executable then writes the result into it).
    written_in_place: tuple = ()
    # Errors on values (lax/checks.py): the (class, message) each nonzero
    # code of the module's hidden last output stands for; () when it has none.
    errors: tuple = ()
    # User outputs that are views of an argument by static basic indexing
    # (``return x[1:]``): (output, argument leaf, indices); the call returns
    # that view of the caller's array, as NumPy does (_with_views).
    views: tuple = ()


class JitFunction:
    """The callable ``xla.jit`` returns."""

    def __init__(self, fn, backend=None, static_argnums=(), static_argnames=(), donate_argnums=(),
                 in_shardings=None, out_shardings=None, unroll=None, **options):
        if not callable(fn):
            raise TypeError(f"xla.jit needs a callable, got {type(fn).__name__}")
        if backend is None:
            self.platform = runtime.default_platform()
        elif backend not in runtime.available_platforms():
            raise InvalidArgumentError(f"xla.jit: unknown backend {backend!r}; available platforms: "
                                       f"{', '.join(runtime.available_platforms())}")
        else:
            self.platform = runtime.get_platform(backend)
        backend = self.platform.name
        self._host = self.platform.capabilities.host_buffers
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidArgumentError(f"xla.jit: unknown option(s) {', '.join(unknown)}; options are "
                                       + ", ".join(f"{k} ({v})" for k, v in OPTIONS.items()))
        if not (unroll is None or isinstance(unroll, bool) or
                isinstance(unroll, int) and unroll >= 0):
            raise InvalidArgumentError(f"xla.jit: unroll must be None, True, False or a "
                                       f"non-negative int, got {unroll!r}")
        self.fn = fn
        self.unroll = unroll
        self.backend = backend
        self.options = dict(options)
        self._signature = None
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError):
            pass
        static_argnums = _as_tuple(static_argnums)
        static_argnames = _as_tuple(static_argnames)
        # As in JAX, each of static_argnums/static_argnames implies the other
        # where the signature names the parameter.
        params = list(self._signature.parameters.values()) if self._signature else []
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        nums, names = set(static_argnums), set(static_argnames)
        for i in static_argnums:
            if not isinstance(i, int):
                raise InvalidArgumentError(f"static_argnums must be ints, got {i!r}")
            if i < len(positional) and positional[i].kind != positional[i].POSITIONAL_ONLY:
                names.add(positional[i].name)
        for name in static_argnames:
            if self._signature and name not in self._signature.parameters and not any(
                    p.kind == p.VAR_KEYWORD for p in params):
                raise InvalidArgumentError(f"static_argnames names {name!r}, which is not a parameter "
                                           f"of {getattr(fn, '__name__', fn)}")
            for i, p in enumerate(positional):
                if p.name == name:
                    nums.add(i)
        self.static_argnums = frozenset(nums)
        self.static_argnames = frozenset(names)
        for i in _as_tuple(donate_argnums):
            if not isinstance(i, int) or isinstance(i, bool) or i < 0:
                raise InvalidArgumentError(f"donate_argnums must be non-negative ints, got {i!r}")
        self.donate_argnums = frozenset(_as_tuple(donate_argnums))
        if self.donate_argnums & self.static_argnums:
            raise InvalidArgumentError("an argument cannot be both static and donated: "
                                       f"{sorted(self.donate_argnums & self.static_argnums)}")
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        if (in_shardings is not None or out_shardings is not None) and self.donate_argnums:
            raise InvalidArgumentError("donate_argnums with shardings is not supported yet")
        self._cache = {}
        # fast_key of positional arguments -> CallPlan, for calls with
        # positional NumPy arrays, Python scalars and static arguments only,
        # no donated ones, on a host platform.
        self._fast = {}
        self._fast_key = fast_key if not self.static_argnums else \
            functools.partial(fast_key_static, self.static_argnums)
        self._fast_options = None   # the debug options in force for _fast's entries
        # _fast's plans in C++ (CallPlan.native), tried first; _MISS where
        # none runs the call.
        self._native = JitDispatch(_MISS) if JitDispatch is not None else None
        self._native_call = self._native.caller if self._native is not None else None
        self._lock = threading.Lock()
        self._hits = self._misses = self._compilations = self._disk_hits = 0
        functools.update_wrapper(self, fn)

    # ----- cache ------------------------------------------------------------------
    def cache_info(self):
        return CacheInfo(self._hits, self._misses, self._compilations, len(self._cache),
                         self._disk_hits)

    def clear_cache(self):
        with self._lock:
            self._cache.clear()
            self._fast.clear()
            if self._native is not None:
                self._native.clear()

    # ----- calling ----------------------------------------------------------------
    def _split(self, args, kwargs):
        """(dynamic args with static ones replaced by None, statics key)."""
        dyn_args, statics = [], []
        for i, a in enumerate(args):
            if i in self.static_argnums:
                statics.append(("pos", i, _hashable(a, f"static argument {i}")))
                dyn_args.append(None)
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                statics.append(("kw", k, _hashable(v, f"static argument {k!r}")))
            else:
                dyn_kwargs[k] = v
        return dyn_args, dyn_kwargs, tuple(statics)

    def _normalize(self, args, kwargs):
        """Arguments named by keyword but positional in the signature move
        to their positions, so f(x, 2) and f(x, n=2) share a cache entry."""
        if self._signature is None or not kwargs:
            return args, kwargs
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{getattr(self.fn, '__name__', 'function')}(): {e}") from None
        return bound.args, bound.kwargs

    def _key(self, args, kwargs):
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, treedef = pytree.flatten((tuple(dyn_args), dyn_kwargs))
        # Arrays of other libraries (PyTorch, JAX...) through DLPack: no copy
        # on the CPU, nor on a GPU for tensors already on it.
        foreign = [i for i, x in enumerate(leaves) if hasattr(x, "__dlpack__")
                   and not isinstance(x, (np.ndarray, runtime.Buffer))]
        if foreign:
            device = self.platform.default_device()
            for i in foreign:
                leaves[i] = foreign_to(leaves[i], device)
        specs = tuple(arg_spec(x, f"argument leaf {i} of {getattr(self.fn, '__name__', 'fn')}")
                      for i, x in enumerate(leaves))
        donated = self._donated_leaves(dyn_args) if self.donate_argnums else ()
        # Last: the debug options in force (one object per value), so a call
        # under other flags (debug_options.override) compiles under them.
        return (treedef, specs, statics, self.backend, _hashable(self.options, "options"),
                donated, id(_options_in_force())), leaves

    def _donated_leaves(self, dyn_args):
        """Indices of the argument leaves that ``donate_argnums`` gives up."""
        name = getattr(self.fn, "__name__", "fn")
        for i in sorted(self.donate_argnums):
            if i >= len(dyn_args):
                raise InvalidArgumentError(
                    f"donate_argnums names argument {i} of {name}, which was called with "
                    f"{len(dyn_args)} positional argument(s)")
        donated, start = [], 0
        for i, a in enumerate(dyn_args):
            leaves, _ = pytree.flatten(a)
            if i in self.donate_argnums:
                for k, leaf in enumerate(leaves):
                    if not isinstance(leaf, (np.ndarray, runtime.Buffer)) and not hasattr(
                            leaf, "__dlpack__"):
                        where = f"argument {i}" + (f" (leaf {k})" if len(leaves) > 1 else "")
                        raise InvalidArgumentError(
                            f"donate_argnums: {where} of {name} is a {type(leaf).__name__}, not a "
                            "NumPy array or Buffer; only arrays can be donated")
                donated.extend(range(start, start + len(leaves)))
            start += len(leaves)
        return tuple(donated)

    def __call__(self, *args, **kwargs):
        if not kwargs:
            # The common call: positional NumPy arrays, Python scalars and
            # static arguments only, of a signature seen before: its plan
            # in C++ (which checks the trace and options state below
            # itself), else (declined, or none there) in Python.
            native = self._native_call
            if native is not None:
                result = native(args)
                if result is not _MISS:
                    self._hits += 1
                    return result
            if self._fast and self._fast_options is _options_in_force() and \
                    not trace_context.tracing_active():
                plan = self._fast.get(self._fast_key(args))
                if plan is not None:
                    self._hits += 1
                    return plan(args)
        if tracing.current_context(required=False) is not None:
            return self.fn(*args, **kwargs)   # inlined into the enclosing trace
        args, kwargs = self._normalize(args, kwargs)
        key, leaves = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key)
                if entry is None:
                    self._misses += 1
                    try:
                        entry = self._compile(args, kwargs, key)
                    except tracing.TracingError:
                        # --xla_auto_jit=2: what can't compile whole is auto-clustered.
                        from xla.debug_options import debug_options
                        if debug_options().xla_auto_jit < 2:
                            raise
                        from xla.frontend.autojit import AutoJitFunction
                        entry = AutoJitFunction(self.fn, self.platform.name)
                    self._cache[key] = entry
                else:
                    self._hits += 1
        else:
            self._hits += 1
        if not isinstance(entry, _Entry):
            return entry(*args, **kwargs)
        if self._host and not kwargs and not entry.donated and entry.sharded is None:
            fast = self._fast_key(args)
            if fast is not None:
                options = _options_in_force()
                if self._fast_options is not options:    # entries of other flags
                    self._fast, self._fast_options = {}, options
                    if self._native is not None:
                        self._native.clear()
                plan = self._fast[fast] = CallPlan(self, entry, key[1], args)
                if plan.native is not None and self._native is not None and \
                        len(self._native) < _MAX_NATIVE_PLANS:
                    from xla import debug_options
                    falsy, identical = debug_options.in_force_checks(options)
                    self._native.set_guards(falsy + trace_context.inactive_checks(), identical)
                    self._native.add(*plan.native)
        return self._run(entry, key[1], leaves)

    def lower(self, *args, **kwargs):
        """Traces without compiling; ``.as_hlo_text()`` shows the module."""
        args, kwargs = self._normalize(args, kwargs)
        key, _ = self._key(args, kwargs)
        module, out_treedef, _, _, _, _ = self._trace(args, kwargs, key)

        def partitioned():
            again, treedef, n, _, _, _ = self._trace(args, kwargs, key)
            return self._partition(again, treedef, n, key)[0]
        sharded = self.in_shardings is not None or self.out_shardings is not None or \
            module.constraint_mesh_sizes
        return Lowered(module, out_treedef, key[1], partitioned if sharded else None)

    def _trace(self, args, kwargs, key):
        treedef, specs = key[0], key[1]
        name = getattr(self.fn, "__name__", "jit_fn")
        name = "jit_" + "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        ctx = new_trace(name)
        checks.start(ctx)
        b = ctx.builder
        from xla.frontend import sharding as shd
        try:
            with ctx, shd.enclosing_mesh(self.in_shardings, self.out_shardings):
                params = [Tracer(b.parameter(i, to_shape(s.dtype, s.shape), f"Arg_{i}"), weak=s.weak)
                          for i, s in enumerate(specs)]
                dyn_args, dyn_kwargs = treedef.unflatten(params)
                call_args = [args[i] if i in self.static_argnums else a for i, a in enumerate(dyn_args)]
                call_kwargs = dict(dyn_kwargs)
                for k in self.static_argnames:
                    if k in kwargs:
                        call_kwargs[k] = kwargs[k]
                originals = [p.op for p in params]
                from xla.frontend.traced_creation import for_tracing
                from xla.frontend.control_flow import convert
                out = for_tracing(convert(self.fn, self.unroll))(*call_args, **call_kwargs)
                out_leaves, out_treedef = pytree.flatten(out)
                ops = []
                for i, leaf in enumerate(out_leaves):
                    if isinstance(leaf, Tracer):
                        if leaf.op.builder is not b:
                            raise tracing.tracing_error(
                                f"output {i} is a traced value of another trace (it escaped from a "
                                "loop or branch body)")
                        ops.append(leaf.op)
                    else:
                        try:
                            value = np.asarray(leaf)
                        except Exception:
                            value = None
                        if value is None or value.dtype == object:
                            raise InvalidArgumentError(
                                f"output {i} of {name} is a {type(leaf).__name__}, not an array")
                        ops.append(as_tracer(value).op)
        except XlaError as e:
            if getattr(e, "_located", False) or isinstance(e, tracing.TracingError):
                raise
            where = _locate(e)
            err = type(e)(f"{where}: {e}" if where else str(e))
            err._located = True
            # The traceback still runs through the user's frames.
            raise err.with_traceback(e.__traceback__) from None
        # Arguments updated in place (x += ...) are extra outputs, written
        # back into the caller's arrays after each call (_write_back).
        written = tuple(i for i, p in enumerate(params) if p.op is not originals[i])
        n_outputs = len(ops)
        ops += [params[i].op for i in written]
        # Checks registered (np.linalg.solve of a singular matrix...): their
        # code is a hidden last output (lax/checks.py).
        errors = tuple(ctx.error_kinds) if ctx.error is not None else ()
        single = len(ops) == 1 and out_treedef == pytree.LEAF and not errors
        root = ops[0] if single else b.tuple(ops + ([ctx.error.op] if errors else []))
        module = b.build_module(root)
        # with_sharding_constraint's meshes: the module is partitioned over them.
        module.constraint_mesh_sizes = list(shd.constraint_mesh_sizes(b))
        aliases = _output_aliases(ops, params, key[5], single)
        if self._host and self.platform.capabilities.donation and not errors:
            # An argument updated in place gets its new value in its own
            # memory where buffer assignment finds that safe (may-alias), so
            # no copy back is needed (_run donates it when it may be written).
            # Not where a check may fail: the caller's arrays then stay as
            # they were (_write_back runs after the check).
            taken = {p for _, p in aliases}
            aliases += [("" if single else str(n_outputs + k), i)
                        for k, i in enumerate(written) if i not in taken]
        if aliases:
            module.header_attrs["input_output_alias"] = RawAttr(
                "{ " + ", ".join(f"{{{out}}}: ({p}, {{}}, may-alias)" for out, p in aliases) + " }")
        views = []
        for j, leaf in enumerate(out_leaves):
            view = leaf.static_view_of() if isinstance(leaf, Tracer) else None
            if view is not None:
                k = next((i for i, p in enumerate(params) if p is view[0]), None)
                if k is not None:
                    views.append((j, k, view[1]))
        return module, out_treedef, n_outputs, written, errors, tuple(views)

    def _compile(self, args, kwargs, key):
        module, out_treedef, n, written, errors, views = self._trace(args, kwargs, key)
        if self.in_shardings is not None or self.out_shardings is not None or \
                module.constraint_mesh_sizes:
            if written:
                raise tracing.tracing_error("in-place updates of arguments (x += ...) under "
                                            "in_shardings/out_shardings are not supported yet")
            if errors:
                raise tracing.tracing_error(
                    "operations that raise on values (np.linalg.solve, inv, cholesky: "
                    f"{errors[0][1]!r}) under shardings are not supported yet")
            return self._compile_sharded(module, out_treedef, n, key)
        from xla.frontend.compilation import compile_module
        executable = compile_module(module, self.platform, self.options)
        self._compilations += 1
        if executable.from_disk_cache:
            self._disk_hits += 1
        aliased = "input_output_alias" in module.header_attrs and \
            self.platform.capabilities.donation
        donated = tuple(key[5]) if aliased else ()
        in_place = tuple(i for i in written if i not in donated) if aliased and self._host else ()
        # A donated argument's memory may hold an output: no views of it.
        views = tuple(v for v in views if v[1] not in donated) if self._host else ()
        return _Entry(executable, out_treedef, n, donated, None, written, in_place, errors, views)

    def _compile_sharded(self, module, out_treedef, n, key):
        """SPMD: the module annotated with the shardings, partitioned, and
        compiled for the mesh's devices (xla/frontend/sharding.py)."""
        partitioned, param_shardings, result_sharding, devices = \
            self._partition(module, out_treedef, n, key)
        executable = runtime.compile(partitioned, self.platform.name, num_partitions=devices)
        self._compilations += 1
        root_shape = module.entry.root_instruction.shape
        return _Entry(executable, out_treedef, n, (), (param_shardings, result_sharding, root_shape))

    def _partition(self, module, out_treedef, n, key):
        """(partitioned module, parameter shardings, result sharding, device
        count) of the traced ``module``, annotated with the shardings."""
        from xla.frontend import sharding as shd
        from xla.service.spmd_partitioner import partition
        entry = module.entry
        params = sorted(entry.parameters, key=lambda p: p.parameter_number)
        if self.donate_argnums:
            raise tracing.tracing_error("donate_argnums with with_sharding_constraint is not "
                                        "supported yet")
        sizes = set(module.constraint_mesh_sizes)
        if self.in_shardings is not None or self.out_shardings is not None:
            sizes.add(shd.mesh_size(self.in_shardings, self.out_shardings))
        if len(sizes) != 1:
            raise InvalidArgumentError(f"shardings on meshes of different sizes: {sorted(sizes)}")
        devices = sizes.pop()
        for p, s in zip(params, shd.hlo_shardings(self.in_shardings, [len(x.shape) for x in key[1]],
                                                  "in_shardings")):
            if s is not None:
                p.attrs["sharding"] = RawAttr(s.to_text())
        root = entry.root_instruction
        outs = list(root.operands) if n != 1 or root.opcode == "tuple" and out_treedef != pytree.LEAF \
            else [root]
        for k, (o, s) in enumerate(zip(outs, shd.hlo_shardings(
                self.out_shardings, [o.shape.rank for o in outs], "out_shardings"))):
            if s is None:
                continue
            if "sharding" not in o.attrs and o.opcode != "parameter":
                o.attrs["sharding"] = RawAttr(s.to_text())
                continue
            # A parameter or a constrained value keeps its own sharding; the
            # result is resharded after it.
            out = entry.add_instruction(HloInstruction(
                "custom-call", o.shape, [o], name=f"{o.name}.out_sharding.{k}",
                attrs={"custom_call_target": "Sharding", "sharding": RawAttr(s.to_text())}))
            if root is o:
                entry.root_instruction = root = out
            else:
                root.operands = [out if j == k else x for j, x in enumerate(root.operands)]
        return (*partition(module, devices), devices)

    def _run_sharded(self, entry, specs, leaves):
        from xla.service.spmd_partitioner import shard_arguments, unshard_result
        params, result, shape = entry.sharded
        exe = entry.executable
        arrays = [np.asarray(x, dtype=s.dtype) for x, s in zip(leaves, specs)]
        outs = exe.execute(shard_arguments(arrays, params, exe.num_devices))
        return self._unflatten(entry, unshard_result(outs, result, shape))

    def _run(self, entry, specs, leaves):
        if entry.sharded is not None:
            return self._run_sharded(entry, specs, leaves)
        if not self._host:
            return self._run_on_device(entry, specs, leaves)
        given_up = ()
        arrays = []
        for x, s in zip(leaves, specs):
            if isinstance(x, np.ndarray) and x.dtype == s.dtype:
                arrays.append(x)
            elif isinstance(x, runtime.HostBuffer) and x.device.platform is self.platform \
                    and x.dtype == s.dtype:
                x.check_live("argument")
                arrays.append(x.array)   # host memory: read in place
            else:
                arrays.append(np.asarray(x, dtype=s.dtype))
        if entry.donated:
            # An array passed twice (or a view of another argument) is read
            # while the output is written: it is copied, not given up.
            donated = tuple(i for i in entry.donated if not any(
                j != i and np.may_share_memory(arrays[i], arrays[j]) for j in range(len(arrays))))
            result = entry.executable.execute(*arrays, donated=donated)
            given_up = [leaves[i] for i in donated if isinstance(leaves[i], runtime.Buffer)]
            for b in given_up:
                b.mark_donated()
        elif entry.written_in_place:
            result = entry.executable.execute(*arrays, donated=writable(entry.written_in_place,
                                                                        leaves, arrays))
        else:
            result = entry.executable.execute(*arrays)
        if entry.errors:
            result = _checked(entry, result)
        if entry.written:
            result = self._write_back(entry, leaves, result)
        if entry.views:
            result = _with_views(entry, leaves, result)
        return self._unflatten(entry, result)

    def _run_on_device(self, entry, specs, leaves):
        """Arguments as buffers on the platform's device (those already there
        are not copied); the results stay there as Buffers."""
        executable = entry.executable
        device = executable.device
        buffers = []
        for x, s in zip(leaves, specs):
            if isinstance(x, runtime.Buffer) and x.device is device and x.dtype == s.dtype:
                x.check_live("argument")
                buffers.append(x)
            else:
                buffers.append(device.put(np.asarray(x, dtype=s.dtype)))
        donated = ()
        if entry.donated:
            # A buffer passed twice is read while the output is written: kept.
            donated = tuple(i for i in entry.donated if isinstance(leaves[i], runtime.Buffer)
                            and sum(b is buffers[i] for b in buffers) == 1)
        outs = executable.execute_buffers(buffers, donated=donated)
        if entry.errors:
            outs = checks.checked_outputs(entry.errors, outs)
        if entry.written:
            outs = list(self._write_back(entry, leaves, outs)) if entry.n_outputs != 1 or \
                entry.out_treedef != pytree.LEAF else [self._write_back(entry, leaves, outs)]
        if entry.out_treedef == pytree.LEAF:
            return outs[0]
        return entry.out_treedef.unflatten(list(outs))

    def _write_back(self, entry, leaves, result):
        """The user's outputs of ``result``; the values of arguments updated
        in place are copied into the caller's arrays, as NumPy would have
        updated them."""
        result = list(result) if isinstance(result, (tuple, list)) else [result]
        n = entry.n_outputs
        for index, value in zip(entry.written, result[n:]):
            target = leaves[index]
            if value is target or not isinstance(target, np.ndarray):
                # scalars and buffers are immutable: x += ... rebinds, as in
                # NumPy; the array itself: written in place by the executable
                continue
            if not target.flags.writeable:
                raise InvalidArgumentError(
                    f"{getattr(self.fn, '__name__', 'function')} updates argument leaf {index} in "
                    "place (x += ...), but the array it was given is read-only (NumPy would "
                    "raise too)")
            np.copyto(target, np.asarray(value), casting="unsafe")
        user = result[:n]
        if entry.out_treedef == pytree.LEAF and n == 1:
            return user[0]
        return tuple(user)

    @staticmethod
    def _unflatten(entry, result):
        if entry.out_treedef == pytree.LEAF:
            return result
        if entry.n_outputs == 0:
            return entry.out_treedef.unflatten([])
        return entry.out_treedef.unflatten(list(result))


def _checked(entry, result):
    """``result`` without the module's hidden error code, as the module
    would return it without one; raises the error the code stands for
    (lax/checks.py)."""
    result = checks.checked_outputs(entry.errors, result)
    if len(result) == 1 and entry.out_treedef == pytree.LEAF:
        return result[0]
    return tuple(result)


def _with_views(entry, leaves, result):
    """``result`` (the user's outputs) with each output that is a view of an
    argument by static basic indexing replaced by that view of the caller's
    array (after its update in place, if any, was written into it), as
    NumPy returns it: a later write into either shows in the other. Where
    the argument was no NumPy array (a list, a scalar, a subclass) or the
    view would be a scalar, the computed output stays."""
    single = entry.out_treedef == pytree.LEAF
    values = [result] if single else list(result)
    for j, i, indices in entry.views:
        view = leaves[i]
        if type(view) is not np.ndarray:      # a subclass (np.matrix) indexes its own way
            continue
        for index in indices:
            view = view[index]
        if type(view) is np.ndarray and view.shape == np.shape(values[j]):
            values[j] = view
    return values[0] if single else tuple(values)


def _output_aliases(ops, params, donated, single):
    """``input_output_alias`` entries [(output index, parameter number)]:
    an output that is a donated parameter keeps it; every other computed
    output takes the first unused donated parameter of its shape and type.
    The backend drops an alias it cannot honour safely (``may-alias``)."""
    if not donated:
        return []
    free, aliases, seen = list(donated), [], set()
    param_of = {id(params[p].op.instr): p for p in donated}
    for j, op in enumerate(ops):
        p = param_of.get(id(op.instr))
        if p is not None and p in free and id(op.instr) not in seen:
            aliases.append(("" if single else str(j), p))
            free.remove(p)
        seen.add(id(op.instr))
    seen = {id(params[p].op.instr) for p in donated}
    for j, op in enumerate(ops):
        if id(op.instr) in seen or op.instr.opcode in ("constant", "parameter") \
                or not op.shape.is_array:
            continue
        seen.add(id(op.instr))
        for p in free:
            s = params[p].op.shape
            if s.dimensions == op.shape.dimensions and s.element_type == op.shape.element_type:
                aliases.append(("" if single else str(j), p))
                free.remove(p)
                break
    return aliases


def _options_in_force():
    """``xla.debug_options.debug_options()`` (imported at the first call: a
    function's first trace, not ``import xla``)."""
    global _options_in_force
    from xla.debug_options import debug_options
    _options_in_force = debug_options
    return debug_options()


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def _hashable(value, what):
    try:
        hash(value)
        return value
    except TypeError:
        pass
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v, what)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_hashable(v, what) for v in value)
    if isinstance(value, np.ndarray):
        raise InvalidArgumentError(f"{what} is a NumPy array, which is not hashable; static "
                                   "arguments must be hashable (pass arrays as dynamic arguments)")
    raise InvalidArgumentError(f"{what} of type {type(value).__name__} is not hashable; static "
                               "arguments must be hashable")


def jit(fn=None, *, backend=None, static_argnums=(), static_argnames=(), donate_argnums=(),
        in_shardings=None, out_shardings=None, unroll=None, **options):
    """Compiles ``fn`` with XLA on first call per signature. Usable as
    ``@xla.jit`` or ``@xla.jit(backend=..., static_argnums=...)``.
    Python ``for``/``while``/``if`` over traced values become HLO control
    flow (xla/frontend/control_flow.py); ``unroll``: loops of at most this
    many iterations are unrolled (default 8; True: every loop with static
    bounds, False: none).
    ``in_shardings``/``out_shardings`` (``xla.sharding.NamedSharding``, one
    for every array or one per argument leaf / output): the function runs
    SPMD-partitioned over the mesh's devices (xla/frontend/sharding.py)."""
    if fn is None:
        return lambda f: JitFunction(f, backend, static_argnums, static_argnames, donate_argnums,
                                     in_shardings, out_shardings, unroll=unroll, **options)
    return JitFunction(fn, backend, static_argnums, static_argnames, donate_argnums,
                       in_shardings, out_shardings, unroll=unroll, **options)


tracing.install_table("jit", jit)   # lax runs its ops eagerly through it
