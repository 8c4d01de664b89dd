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
unspecified in NumPy). Functions the jitted one calls are traced as written
(their own globals), and a function that assigns module globals keeps doing
so on the real module's dictionary only if it is not the jitted one itself
(its globals are a copy while it is traced).
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


def for_tracing(fn):
    """``fn`` with the numpy module in its globals replaced by the stand-in
    (``fn`` itself when it is not a plain function or does not use numpy)."""
    global _module
    if not isinstance(fn, types.FunctionType):
        return fn
    names = [k for k, v in fn.__globals__.items() if v is np]
    if not names:
        return fn
    if _module is None:
        _module = _stand_in()
    globals_ = dict(fn.__globals__)
    for k in names:
        globals_[k] = _module
    copy = types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__dict__.update(fn.__dict__)
    return copy
