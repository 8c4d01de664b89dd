"""``xla.numpy``'s namespace: ``__all__`` lists NumPy's top-level names
only (no ``np``, ``Tracer`` or the frontend's helpers), each importable, and
it agrees with the table ``np.f(tracer)`` dispatches through, so that
``xla.numpy.f`` and ``np.f`` on a traced array run the same code."""
import inspect

import numpy as np
import pytest

import xla
import xla.numpy as xnp
from xla.frontend import tracing
from xla.frontend.numpy import TOPICS
from xla.frontend.numpy._common import FUNCTIONS


def test_all_is_a_list_of_unique_public_names():
    assert isinstance(xnp.__all__, list)
    assert len(set(xnp.__all__)) == len(xnp.__all__)
    assert [n for n in xnp.__all__ if n.startswith("_")] == []


@pytest.mark.parametrize("name", xnp.__all__)
def test_every_name_is_numpy_s_and_importable(name):
    assert hasattr(np, name) and not inspect.ismodule(getattr(np, name)), \
        f"xla.numpy.{name} is not a top-level NumPy name"
    namespace = {}
    exec(f"from xla.numpy import {name}", namespace)
    assert callable(namespace[name])


def test_star_import_gives_exactly_all():
    namespace = {}
    exec("from xla.numpy import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(xnp.__all__)


def test_no_public_name_outside_all():
    """What a module imports to implement itself (np, Tracer, helpers) stays
    out of sight: a public attribute not in __all__ is a leak."""
    leaked = sorted(n for n in vars(xnp) if not n.startswith("_") and n not in xnp.__all__)
    assert leaked == []
    for name in ("np", "Tracer", "tracing", "builtins", "FUNCTIONS", "implements",
                 "normalize_axis", "dot_general", "reduce", "ufunc_method", "result_type"):
        assert not hasattr(xnp, name), name


def test_every_dispatched_numpy_function_is_exported_as_itself():
    """Each top-level NumPy function with an implementation in the table
    (``@implements``) is in __all__ under NumPy's name, and is that
    implementation: xla.numpy.f(x) and np.f(tracer) cannot diverge."""
    missing, different = [], []
    for func, impl in FUNCTIONS.items():
        name = getattr(func, "__name__", None)
        if name is None or getattr(np, name, None) is not func:
            continue            # np.linalg.*, np.fft.*: reached through numpy itself
        if name not in xnp.__all__:
            missing.append(name)
        elif getattr(xnp, name) is not impl:
            different.append(name)
    assert missing == [] and different == [], (missing, different)


def test_every_exported_numpy_function_with_a_table_row_is_that_row():
    for name in xnp.__all__:
        impl = FUNCTIONS.get(getattr(np, name))
        if impl is not None:
            assert getattr(xnp, name) is impl, name


def test_the_table_the_tracer_uses_is_the_package_s():
    table = tracing.table("numpy")
    assert table.FUNCTIONS is FUNCTIONS
    assert table.array is xnp.array and table.matmul is xnp.matmul and table.vecdot is xnp.vecdot
    registered = {impl.__module__ for impl in FUNCTIONS.values()}
    assert registered <= {m.__name__ for m in TOPICS}, registered - {m.__name__ for m in TOPICS}


def test_xla_numpy_names_trace():
    @xla.jit
    def f(x):
        a = xnp.array([x[0], x[1]])
        return xnp.concatenate([a, xnp.zeros(2)]) + xnp.broadcast_to(xnp.amax(x), (4,))

    x = np.array([1.0, 3.0, 2.0])
    np.testing.assert_allclose(f(x), np.array([4.0, 6.0, 3.0, 3.0]))


def test_a_second_implementation_of_a_numpy_function_is_refused():
    from xla.errors import InternalError
    from xla.frontend.numpy._common import implements
    with pytest.raises(InternalError, match="np.sum is implemented twice"):
        implements(np.sum)(lambda a: a)
    assert FUNCTIONS[np.sum] is xnp.sum


def test_topics_import_only_those_before_them():
    """The order the package's docstring states (test_layering forbids
    cycles; this keeps the stated order true)."""
    import ast
    import pathlib
    order = ["xla.frontend.numpy._common"] + [m.__name__ for m in TOPICS]
    wrong = []
    for i, name in enumerate(order):
        path = pathlib.Path(inspect.getfile(__import__(name, fromlist=["_"])))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("xla.frontend.numpy.") and node.module not in order[:i]:
                wrong.append(f"{name} imports {node.module}")
    assert wrong == []
