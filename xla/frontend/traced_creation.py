"""Arrays a jitted function creates are traced arrays, so that NumPy code that
fills them in place compiles as written::

    @xla.jit
    def kernel(x):
        out = np.zeros((n, m))      # a traced array here, not a NumPy array
        for i in range(n):
            out[i, :] = x[i] * 2    # x[idx] = v on a traced array (tracing.py)
        return out

NumPy's creation functions cannot see that a trace is running (they take no
array argument), so while ``xla.jit`` traces a plain Python function it runs
a copy of it whose module globals see, in place of the ``numpy`` module, a
stand-in that is ``numpy`` in every name but the creation functions
(``zeros``, ``ones``, ``empty``, ``full`` and their ``_like`` forms), which
make traced constants instead (``empty`` is zeros: its contents are
unspecified in NumPy). The user functions the jitted one calls see the
stand-in too when the control-flow conversion converts them
(``control_flow.py``: one copy of each module's globals per trace); a
function that assigns module globals is not converted, and keeps doing so
on the real module's dictionary unless it is the jitted one itself (its
globals are a copy while it is traced).
"""
import types

import numpy as np

_CREATION = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
             "full_like")


def _stand_in():
    from xla.frontend import tracing
    from xla.frontend.numpy import creation

    def traced(name):
        original = getattr(np, name)

        def create(*args, **kwargs):
            if tracing.current_context(required=False) is None:
                return original(*args, **kwargs)
            kwargs.pop("order", None)
            kwargs.pop("like", None)
            if name == "empty":
                return creation.zeros(*args, **kwargs)
            if name == "empty_like":
                return creation.zeros_like(*args, **kwargs)
            return getattr(creation, name)(*args, **kwargs)
        create.__name__ = name
        create.__doc__ = original.__doc__
        return create

    module = types.ModuleType("numpy")
    module.__dict__.update(np.__dict__)
    for name in _CREATION:
        setattr(module, name, traced(name))
    return module


_module = None


def stand_in_globals(module_globals):
    """A copy of ``module_globals`` with the stand-in in place of every name
    bound to the numpy module."""
    global _module
    copy = dict(module_globals)
    names = [k for k, v in module_globals.items() if v is np]
    if names and _module is None:
        _module = _stand_in()
    for k in names:
        copy[k] = _module
    return copy


def for_tracing(fn):
    """``fn`` with the numpy module in its globals replaced by the stand-in
    (``fn`` itself when it is not a plain function or does not use numpy)."""
    if not isinstance(fn, types.FunctionType) or not any(v is np for v in fn.__globals__.values()):
        return fn
    copy = types.FunctionType(fn.__code__, stand_in_globals(fn.__globals__), fn.__name__,
                              fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    return copy
