"""``xla.frontend.numpy``, the ufunc table (``xla/frontend/ufuncs.py``) and
indexing (``xla/frontend/indexing.py``) are clients of ``xla.lax``: they
build HLO only through lax's functions (and the Tracer and its operators,
``tracing``'s helpers and each other), never through the builder. Read from
the sources: none of these modules imports the builder or the IR, or names a
way to reach a builder (``current_builder``, ``current_context``,
``TraceContext``, a ``.builder`` attribute)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUMPY = ROOT / "xla" / "frontend" / "numpy"
LAX_CLIENTS = [ROOT / "xla" / "frontend" / "ufuncs.py", ROOT / "xla" / "frontend" / "indexing.py"]

# What these modules may import: lax, the Tracer and its helpers, indexing
# (x[idx] on a Tracer), the ufunc table, and the numpy package.
ALLOWED_MODULES = {"xla.errors", "xla.frontend.lax", "xla.frontend.tracing", "xla.frontend.indexing",
                   "xla.frontend.ufuncs"}
ALLOWED_FROM_FRONTEND = {"lax", "tracing", "indexing", "ufuncs", "numpy"}
# Ways to reach the builder, forbidden as names and attributes.
BUILDER_NAMES = {"current_builder", "current_context", "TraceContext", "XlaBuilder", "XlaOp",
                 "builder"}


def violations(source, filename="<source>"):
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if a.name.startswith("xla")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("xla"):
            if node.module == "xla.frontend":
                bad = [a.name for a in node.names if a.name not in ALLOWED_FROM_FRONTEND]
            elif node.module in ALLOWED_MODULES or node.module.startswith("xla.frontend.numpy"):
                bad = [a.name for a in node.names if a.name in BUILDER_NAMES]
            else:
                bad = [a.name for a in node.names]
            found += [f"{where}: from {node.module} import {name}" for name in bad]
        elif isinstance(node, ast.Name) and node.id in BUILDER_NAMES:
            found.append(f"{where}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in BUILDER_NAMES:
            found.append(f"{where}: .{node.attr}")
    return found


def test_numpy_ufunc_and_indexing_modules_build_hlo_only_through_lax():
    files = sorted(NUMPY.rglob("*.py")) + LAX_CLIENTS
    assert len(files) >= 12 and all(p.exists() for p in LAX_CLIENTS)
    found = []
    for path in files:
        found += violations(path.read_text(), str(path.relative_to(ROOT)))
    assert found == [], ("xla/frontend/numpy, ufuncs.py and indexing.py must build HLO through "
                         "xla.lax (add the primitive there, with JAX's signature), not the "
                         "builder:\n" + "\n".join(found))


def test_the_check_sees_each_way_to_the_builder():
    snippets = {
        "from xla.frontend.tracing import current_builder\nb = current_builder()": 2,
        "from xla.frontend import tracing\nb = tracing.current_builder()": 1,
        "def f(x):\n    return x.op.builder.pad(x.op, 0, [])": 1,
        "from xla.frontend.builder import element_type": 1,
        "from xla.hlo.shape import Shape": 1,
        "from xla.frontend import jit": 1,
        "from xla.frontend.ufuncs import _ordered_compare": 0,
        "from xla.frontend.masked_slice import masked_getitem": 1,
        "def row(x):\n    return current_builder().unary('exponential', x.op)": 1,
        "import xla.frontend.builder": 1,
        "from xla.frontend.tracing import TraceContext": 1,
        "from xla.frontend import lax, tracing\nfrom xla.frontend.numpy._common import implements\n"
        "y = lax.pad(x, 0.0, [(1, 1, 0)])": 0,
    }
    for source, n in snippets.items():
        assert len(violations(source)) == n, (source, violations(source))
