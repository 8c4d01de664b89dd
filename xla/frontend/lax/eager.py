"""Every ``xla.lax`` function called outside a trace runs as a small
``xla.jit`` program (on the default platform): NumPy arrays are its
arguments, everything else (Python scalars, shapes, functions) is static."""
import functools

import numpy as np

from xla.frontend import pytree, tracing
from xla.frontend.tracing import current_context
class _Static:
    """A static argument leaf as a jit cache key: by value when hashable,
    else by identity (the leaf is kept alive, so its id is not reused)."""

    __slots__ = ("value", "key")

    def __init__(self, value):
        try:
            hash(value)
            self.key = (type(value), value)
        except TypeError:
            self.key = ("id", id(value))
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Static) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


_EAGER = {}


def eager(fn):
    """``fn`` as is inside a trace; outside one, compiled and run with the
    NumPy array leaves of its arguments as the jitted function's arguments."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if current_context(required=False) is not None:
            return fn(*args, **kwargs)
        leaves, treedef = pytree.flatten((args, kwargs))
        dynamic = [isinstance(x, (np.ndarray, np.generic)) for x in leaves]
        arrays = tuple(x for x, d in zip(leaves, dynamic) if d)
        statics = tuple(None if d else _Static(x) for x, d in zip(leaves, dynamic))
        runner = _EAGER.get(fn)
        if runner is None:
            jit = tracing.table("jit")

            def run(arrays, statics, treedef):
                it = iter(arrays)
                a, kw = treedef.unflatten([next(it) if s is None else s.value for s in statics])
                return fn(*a, **kw)
            runner = _EAGER[fn] = jit(run, static_argnums=(1, 2))
        return runner(arrays, statics, treedef)
    return wrapper

