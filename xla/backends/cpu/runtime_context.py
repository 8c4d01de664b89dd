"""The runtime functions the code being compiled may call.

The CPU compiler sets them for a whole compilation (``compiling_with``):
the passes that choose what the runtime computes (``strided_gemm``'s
blocked walks, ``dot_addend_fusion``) and IR emission must agree. Outside a
compilation (``hlo_opt --platform=cpu``, a pass run alone) they are this
process's C++ runtime's, as the JIT would compile."""
import contextlib
import contextvars

_compiling = contextvars.ContextVar("xla_cpu_runtime_symbols", default=None)
_process = None
_process_names = None


def process_symbols():
    """The C++ runtime's functions (name -> address), read once; empty
    when the extension has none."""
    global _process
    if _process is None:
        from xla import _core
        get = getattr(_core, "cpu_runtime_symbols", None)
        _process = dict(get()) if get is not None else {}
    return _process


def symbols():
    """The names of the runtime functions the code may call: the
    compilation's, else the process runtime's."""
    global _process_names
    names = _compiling.get()
    if names is None:
        if _process_names is None:
            _process_names = frozenset(process_symbols())
        names = _process_names
    return names


@contextlib.contextmanager
def compiling_with(names):
    """While active, ``symbols()`` is ``names``."""
    token = _compiling.set(frozenset(names))
    try:
        yield
    finally:
        _compiling.reset(token)
