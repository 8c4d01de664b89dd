"""The package's layering, read from its sources (every import, including
those inside functions): hlo < service < runtime < backends < frontend <
public API < tools, each module importing only from its own layer and
those to its left, and no two modules importing each other, directly or
through others (docs/new_backend.md, "Layers")."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Modules under no layer: they import nothing layered, and every layer may use them.
BASE = {"xla.errors", "xla.debug_options", "xla.gc_util", "xla.version", "xla._core"}
LAYERS = ["hlo", "service", "runtime", "backends", "frontend", "api", "tools"]
API = {"xla", "xla.lax", "xla.numpy", "xla.random", "xla.distributed", "xla.sharding"}


def modules():
    found = {}
    for path in (ROOT / "xla").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def import_graph():
    """module -> set of the xla modules it imports."""
    mods = modules()

    def resolve(name):
        if name == "xla._core" or name.startswith("xla._core."):
            return "xla._core"
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names if a.name.split(".")[0] == "xla")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] == "xla":
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    deps.add(resolve(full) if full in mods or full.startswith("xla._core")
                             else resolve(node.module))
        deps.discard(name)
        deps.discard("")
        graph[name] = deps
    return graph


def layer(module):
    if module in BASE:
        return None
    if module in API:
        return LAYERS.index("api")
    return LAYERS.index(module.split(".")[1])


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    unknown = [m for m in modules() if m not in BASE and m not in API
               and m.split(".")[1] not in LAYERS]
    assert unknown == [], f"modules outside every layer: {unknown}"


def test_imports_point_one_way():
    wrong = []
    for module, deps in sorted(import_graph().items()):
        here = layer(module)
        for dep in sorted(deps):
            there = layer(dep)
            if there is None:
                continue
            if here is None or there > here:
                wrong.append(f"{module} ({'base' if here is None else LAYERS[here]}) imports "
                             f"{dep} ({LAYERS[there]})")
    assert wrong == [], "imports against the layering:\n" + "\n".join(wrong)


def test_no_import_cycles_outside_the_frontend():
    outside = [c for c in cycles(import_graph()) if not all(m.startswith("xla.frontend.") for m in c)]
    assert outside == [], f"import cycles: {outside}"


def test_no_import_cycles_in_the_frontend():
    assert cycles(import_graph()) == []


def test_the_checks_see_a_violation():
    """The checks themselves: a made-up graph with a wrong-way import and a cycle."""
    graph = {"xla.hlo.a": {"xla.service.b"}, "xla.service.b": {"xla.hlo.a"}}
    assert cycles(graph) == [["xla.hlo.a", "xla.service.b"]]
    assert layer("xla.service.b") > layer("xla.hlo.a")
    assert layer("xla.errors") is None
