"""DOT and HTML graph views: structure, self-containment, hlo_opt --format."""
import os
import re
import subprocess
import sys
import time

import xla
from xla.hlo import graph_views
from xla.tools.hlo_opt import optimize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "corpus")


def _optimized(name):
    m = xla.parse_hlo_module(open(os.path.join(CORPUS, name + ".hlo")).read())
    optimize(m, "cpu")
    return m


def _all(module):
    return list(module.all_instructions())


def test_dot_has_a_node_per_instruction_and_an_edge_per_operand():
    m = _optimized("layernorm")
    dot = graph_views.module_to_dot(m)
    assert dot.startswith('digraph "') and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}")
    nodes = re.findall(r"^\s*(n\d+) \[label=", dot, re.M)
    not_fusion = [i for i in _all(m) if i.opcode != "fusion"]
    assert len(nodes) == len(set(nodes)) == len(not_fusion)
    labels = dot
    for instr in not_fusion:
        assert f"\\n{instr.name}\\n" in labels, instr.name
    edges = re.findall(r"^\s*n\d+ -> n\d+ \[label=", dot, re.M)
    expected = sum(len(i.operands) for i in not_fusion) + sum(
        len(i.operands) for i in _all(m) if i.opcode == "fusion")
    fused_params = sum(1 for i in _all(m) if i.opcode == "fusion")
    assert len(edges) + dot.count("style=dotted") >= expected - fused_params
    fusions = [i for i in _all(m) if i.opcode == "fusion"]
    assert fusions
    for f in fusions:
        assert re.search(rf'subgraph "cluster_{re.escape(f.attr("calls").name)}"', dot)


def test_html_is_self_contained_and_names_every_instruction():
    m = _optimized("attention")
    page = graph_views.module_to_html(m)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    for instr in _all(m):
        # Fusions are cluster labels "name (kind)"; the rest are node lines.
        assert (f">{instr.name} (" if instr.opcode == "fusion" else f">{instr.name}<") in page, instr.name
    assert page.count('class="cluster"') == sum(1 for i in _all(m) if i.opcode == "fusion")
    assert 'data-hlo="' in page


def test_largest_corpus_module_renders_quickly():
    path = max((os.path.join(CORPUS, f) for f in os.listdir(CORPUS) if f.endswith(".hlo")), key=os.path.getsize)
    m = xla.parse_hlo_module(open(path).read())
    start = time.perf_counter()
    page = graph_views.module_to_html(m)
    dot = graph_views.module_to_dot(m)
    elapsed = time.perf_counter() - start
    assert len(_all(m)) > 1000
    assert elapsed < 30, elapsed   # generous bound: a hang, not a benchmark
    assert page.count('class="node') >= len([i for i in _all(m) if i.opcode != "fusion"]) - 1
    assert dot.count(" -> ") > 1000


def test_hlo_opt_format_flag(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    tool = os.path.join(ROOT, "tools", "hlo_opt.py")
    src = os.path.join(CORPUS, "softmax_rows.hlo") if os.path.exists(os.path.join(CORPUS, "softmax_rows.hlo")) \
        else os.path.join(CORPUS, "layernorm.hlo")
    dot = subprocess.run([sys.executable, tool, "--platform=cpu", "--format=dot", src], env=env,
                         capture_output=True, text=True, timeout=120)
    assert dot.returncode == 0, dot.stderr
    assert dot.stdout.startswith("digraph")
    out = tmp_path / "g.html"
    html = subprocess.run([sys.executable, tool, "--platform=cpu", "--format=html", f"--output={out}",
                           f"--dump_to={tmp_path / 'passes'}", src], env=env, capture_output=True, text=True,
                          timeout=120)
    assert html.returncode == 0, html.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    per_pass = os.listdir(tmp_path / "passes")
    assert any(".after_fusion.before_" in n for n in per_pass)
    assert any(n.endswith("before_optimizations.txt") for n in per_pass)
    bad = subprocess.run([sys.executable, tool, "--format=svg", src], env=env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "format" in bad.stderr
