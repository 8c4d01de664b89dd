"""The repeated call of an ``xla.jit`` function (xla/frontend/jit.py): a
short key of the positional arguments (``fast_key``) and the per-signature
call plan it finds (``CallPlan``), which runs the executable's
``prepared_call`` (docs/frontend.md, "Caching and the signature")."""
import numpy as np

from xla import _core
from xla.frontend import pytree
from xla.frontend.lax import checks

_SCALAR_TYPES = (float, bool, complex)
# The parameter dtype of each Python scalar type in a fast key (signature.arg_spec's).
_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64),
                  float: np.dtype(np.float64), complex: np.dtype(np.complex128)}
# xla.jit's call plans in C++ (python/jit_call_bindings.cc); None where the
# extension predates them.
JitDispatch = getattr(_core, "JitDispatch", None)
_PreparedCall = getattr(_core, "PreparedCall", None)


class CallPlan:
    """How a repeated call of one fast-path signature runs (``fast_key``:
    positional NumPy arrays of given shapes and dtypes, Python scalars of
    given types, static arguments of given values), worked out once, when
    the signature is first compiled: the argument leaves (the non-static
    arguments), the scalars to convert to their parameter dtypes, the
    arguments updated in place, and the executable's ``prepared_call``,
    which trusts the key for the arguments' dtypes and shapes. A call then
    does only what depends on the arguments' values: the scalars'
    conversion, the aliasing check ``writable`` for the arguments
    written in place (when one fails, ``_run`` copies as before), the C++
    call (which checks contiguity and alignment) and the write-back;
    anything the prepared call declines (a non-contiguous array, hooks or
    a profile) goes through ``_run``, the general path.

    Where the prepared call is a C++ one (the CPU's), ``native`` is this
    plan for jit's ``JitDispatch`` (python/jit_call_bindings.cc), which
    does all of the above in one C++ call (matching the arguments against
    the key instead of building it); what it declines comes here."""

    __slots__ = ("jit", "entry", "specs", "dynamic", "scalars", "arrays", "in_place", "run",
                 "written", "n_outputs", "out_kind", "out_treedef", "errors", "native")

    def __init__(self, jit, entry, specs, args):
        self.jit, self.entry, self.specs = jit, entry, specs
        static = jit.static_argnums
        # Positions of the leaves in args (None: every argument is one).
        self.dynamic = [i for i in range(len(args)) if i not in static] if static else None
        leaves = args if self.dynamic is None else [args[i] for i in self.dynamic]
        self.scalars = tuple((k, specs[k].dtype) for k, a in enumerate(leaves)
                             if type(a) is not np.ndarray)
        self.arrays = tuple(k for k, a in enumerate(leaves) if type(a) is np.ndarray)
        self.in_place = entry.written_in_place
        # The key stands for the dtypes and shapes the executable checks no
        # more only where they are its parameters' (a big-endian array's
        # is not, though its spec is: _run converts it to a native copy,
        # and writes an update in place back into it).
        params = entry.executable.parameter_shapes
        exact = len(params) == len(specs) and all(
            p.is_array and p.dtype == s.dtype and tuple(p.dimensions) == tuple(s.shape)
            for p, s in zip(params, specs))
        exact = exact and all(leaves[k].dtype == specs[k].dtype for k in self.arrays)
        # A scalar updated in place (s += 1) is never written into, and an
        # output that is a view of an argument is made by _run.
        exact = exact and all(i in self.arrays for i in self.in_place) and not entry.views
        self.run = entry.executable.prepared_call(self.in_place) if exact else None
        self.written, self.n_outputs = entry.written, entry.n_outputs
        self.errors = entry.errors
        self.out_treedef = out = entry.out_treedef
        # How the user's outputs are rebuilt: one array, None, a flat tuple
        # of arrays, or the tree's unflatten.
        self.out_kind = "leaf" if out == pytree.LEAF else "none" if out.kind == "none" else \
            "flat" if out.kind == "tuple" and all(c == pytree.LEAF for c in out.children) else \
            "tree"
        self.native = self._native(args)

    def _native(self, args):
        """``JitDispatch.add``'s arguments for this plan: the same call in
        C++, which declines (to this plan's ``__call__``) whatever it does
        not do as this plan would; None where the executable's prepared
        call is not a C++ one, or a scalar's dtype or an argument written in
        place is not what the C++ plan handles, or the module has an error
        code to check (``lax/checks.py``: its hidden last output is read
        here, in ``_finish``)."""
        if JitDispatch is None or not isinstance(self.run, _PreparedCall) or self.errors:
            return None
        position = range(len(args)) if self.dynamic is None else self.dynamic
        params = [("static", type(a), a) for a in args]
        for k, i in enumerate(position):
            a, spec = args[i], self.specs[k]
            if type(a) is np.ndarray:
                params[i] = ("array", a.dtype, a.shape, a.nbytes)
            elif _SCALAR_DTYPES.get(type(a)) == spec.dtype:
                params[i] = ("scalar", type(a))
            else:
                return None
        if not all(k in self.arrays for k in self.written):
            return None
        return (self.run, params, [position[k] for k in self.in_place],
                [position[k] for k in self.written], self.n_outputs,
                ("leaf", "none", "flat", "tree").index(self.out_kind), self._finish)

    def __call__(self, args):
        leaves = args if self.dynamic is None else [args[i] for i in self.dynamic]
        run = self.run
        if run is not None:
            arrays = leaves
            if self.scalars:
                arrays = list(leaves)
                for k, dtype in self.scalars:
                    arrays[k] = np.array(arrays[k], dtype)
            if not self.in_place or \
                    len(writable(self.in_place, leaves, leaves)) == len(self.in_place):
                result = run(arrays)
                if result is not None:
                    return self._finish(leaves, result)
        return self.jit._run(self.entry, self.specs, leaves)


    def _finish(self, leaves, result):
        """``_write_back`` then ``_unflatten``, where the values of arguments
        updated in place were written into the caller's arrays."""
        n, kind = self.n_outputs, self.out_kind
        if self.errors:
            result = checks.checked_outputs(self.errors, result)
            if len(result) == 1 and kind == "leaf":
                result = result[0]
        if self.written:
            values = list(result) if isinstance(result, (tuple, list)) else [result]
            for index, value in zip(self.written, values[n:]):
                if value is not leaves[index]:
                    jit = self.jit
                    return jit._unflatten(self.entry, jit._write_back(self.entry, leaves, result))
            result = values[0] if kind == "leaf" else values[:n]
        if kind == "leaf":
            return result
        if kind == "none":
            return None
        if kind == "flat":
            return tuple(result)
        return self.out_treedef.unflatten([] if n == 0 else list(result))


def writable(written, leaves, arrays):
    """The leaves of ``written`` (xla.jit's arguments updated in place)
    whose caller's array the executable may write its new value into: the
    NumPy array itself was passed (not a conversion), writeable, and
    sharing no memory with another argument
    (which the computation may still read). Arrays that own their memory
    (no ``base``) and are distinct objects share none; views are checked
    with ``np.may_share_memory``."""
    out = []
    for i in written:
        a = leaves[i]
        if arrays[i] is not a or type(a) is not np.ndarray or not a.flags.writeable:
            continue
        owner = a.base is None
        for j, b in enumerate(leaves):
            if j != i and type(b) is np.ndarray and (
                    b is a or not (owner and b.base is None) and np.may_share_memory(a, b)):
                break
        else:
            out.append(i)
    return tuple(out)


def fast_key(args):
    """The fast path's key of positional arguments: (shape, dtype) of each
    NumPy array, the type of each Python scalar (a weak float64, int64,
    complex128 or bool parameter, whatever its value); None when another
    kind of argument needs the full key. Strides are not part of it: the
    executable's prepared call declines an array that is not C-contiguous,
    and the general path copies it."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.shape, a.dtype))
        elif t in _SCALAR_TYPES or t is int and -(1 << 63) <= a < (1 << 63):
            key.append(t)
        else:
            return None
    return tuple(key)


def fast_key_static(static, args):
    """``fast_key`` of a function with static arguments: those contribute
    (type, value), so values equal across types (1, 1.0, True) do not
    share a plan; None when one is unhashable (the full path reports it)."""
    statics = []
    for i in sorted(static):
        if i < len(args):
            a = args[i]
            try:
                hash(a)
            except TypeError:
                return None
            statics.append((type(a), a))
    rest = fast_key([a for i, a in enumerate(args) if i not in static])
    return None if rest is None else (len(args), tuple(statics), rest)
