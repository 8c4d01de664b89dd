"""Graph views of HLO modules: Graphviz DOT and a self-contained HTML page.

``module_to_dot(module)`` writes one cluster per computation (the entry
first); a fusion instruction is drawn as a cluster holding its fused
computation, with the fusion's operands feeding the fused parameters, and
instructions that call computations (while, conditional, call, reduce...)
point to them with dashed edges. Node colours follow the spirit of XLA's
``hlo_graph_dumper``: parameters orange, constants grey, dots and
convolutions blue, reductions green, data movement yellow, control flow
purple, the root bold.

``module_to_html(module)`` lays the same graph out in Python (a layered
layout: longest-path layers, then barycentric ordering with the members of
one fusion kept together) and writes an HTML page with the drawing as
inline SVG and a little inline JavaScript: hover or click a node to see its
full HLO text and metadata; drag to pan, wheel to zoom. Nothing is loaded
from the network. Each computation that is not fused is drawn as its own
section. Layout is linear in the number of edges plus a sort per layer, so
the largest corpus modules (~3000 instructions) render in well under a
second.

Both register themselves as dump formats (``--xla_dump_hlo_as_dot``,
``--xla_dump_hlo_as_html``) and are ``hlo_opt --format=dot|html``.
"""
import html
import json

from xla.hlo.opcodes import ELEMENTWISE

_CATEGORY_COLORS = {
    "parameter": ("#ffcc80", "#e65100"),
    "constant": ("#e0e0e0", "#616161"),
    "dot": ("#90caf9", "#0d47a1"),
    "reduce": ("#a5d6a7", "#1b5e20"),
    "movement": ("#fff59d", "#827717"),
    "control": ("#ce93d8", "#4a148c"),
    "tuple": ("#ffffff", "#9e9e9e"),
    "elementwise": ("#ffffff", "#424242"),
    "other": ("#f5f5f5", "#424242"),
}
_DOT_OPS = {"dot", "convolution", "custom-call", "fft", "cholesky", "triangular-solve"}
_REDUCE_OPS = {"reduce", "reduce-window", "select-and-scatter", "all-reduce", "reduce-scatter"}
_MOVEMENT_OPS = {"broadcast", "reshape", "transpose", "slice", "dynamic-slice",
                 "dynamic-update-slice", "concatenate", "pad", "reverse", "gather", "scatter",
                 "copy", "bitcast", "iota", "sort"}
_CONTROL_OPS = {"while", "conditional", "call", "fusion"}


def category(instr):
    op = instr.opcode
    if op == "parameter":
        return "parameter"
    if op == "constant":
        return "constant"
    if op in _DOT_OPS:
        return "dot"
    if op in _REDUCE_OPS:
        return "reduce"
    if op in _MOVEMENT_OPS:
        return "movement"
    if op in _CONTROL_OPS:
        return "control"
    if op in ("tuple", "get-tuple-element"):
        return "tuple"
    if op in ELEMENTWISE:
        return "elementwise"
    return "other"


def _fusion_kind(instr):
    kind = instr.attrs.get("kind")
    return f" ({kind})" if kind else ""


def _label(instr):
    extra = _fusion_kind(instr) if instr.opcode == "fusion" else ""
    if instr.opcode == "constant" and instr.shape.is_array and instr.shape.num_elements() == 1 \
            and instr.literal is not None:
        extra = f" {instr.literal.reshape(-1)[0]}"
    return f"{instr.opcode}{extra}", instr.name, instr.shape.to_text(print_layout=False)


def _shape_text(instr):
    return instr.shape.to_text(print_layout=False)


# ----- DOT ---------------------------------------------------------------------------------

def _dot_escape(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


def module_to_dot(module, computation=None):
    """Graphviz DOT text for ``module`` (or one of its computations)."""
    lines = [f'digraph "{_dot_escape(module.name)}" {{',
             "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8, color="#757575"];']
    comps = [computation] if computation is not None else _drawn_computations(module)
    ids = {}

    def node_id(instr):
        key = id(instr)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
        return ids[key]

    calls = []

    def emit_computation(comp, indent, fused_in=None):
        pad = "  " * indent
        lines.append(f'{pad}subgraph "cluster_{_dot_escape(comp.name)}" {{')
        style = 'style="rounded,filled"; fillcolor="#fafafa"' if fused_in is None else \
            'style="rounded,filled"; fillcolor="#eceff1"'
        label = comp.name if fused_in is None else f"{fused_in.name}{_fusion_kind(fused_in)}"
        lines.append(f'{pad}  label="{_dot_escape(label)}"; {style}; fontname="Helvetica";')
        for instr in comp.instructions:
            if instr.opcode == "fusion":
                emit_computation(instr.attr("calls"), indent + 1, fused_in=instr)
                continue
            fill, border = _CATEGORY_COLORS[category(instr)]
            op, name, shape = _label(instr)
            width = "2.5" if instr is comp.root_instruction else "1"
            lines.append(f'{pad}  {node_id(instr)} [label="{_dot_escape(op)}\\n{_dot_escape(name)}\\n'
                         f'{_dot_escape(shape)}", fillcolor="{fill}", color="{border}", '
                         f'penwidth={width}];')
            for callee in instr.called_computations:
                calls.append((instr, callee))
        lines.append(f"{pad}}}")

    for comp in comps:
        emit_computation(comp, 1)

    def source(instr):
        # A fusion's value is its fused root; a fused parameter is the fusion operand.
        while instr.opcode == "fusion":
            instr = instr.attr("calls").root_instruction
        return instr

    fused_param_source = {}
    for comp in comps:
        for instr in _all_with_fused(comp):
            if instr.opcode == "fusion":
                fused = instr.attr("calls")
                for p in fused.parameters:
                    fused_param_source[id(p)] = instr.operands[p.parameter_number]
    for comp in comps:
        for instr in _all_with_fused(comp):
            if instr.opcode == "fusion":
                continue
            for operand in instr.operands:
                src = source(operand)
                lines.append(f'  {node_id(src)} -> {node_id(instr)} [label="{_dot_escape(_shape_text(operand))}"];')
            if instr.opcode == "parameter" and id(instr) in fused_param_source:
                src = source(fused_param_source[id(instr)])
                lines.append(f'  {node_id(src)} -> {node_id(instr)} [style=dotted];')
    drawn = {id(c) for c in comps}
    for instr, callee in calls:
        if id(callee) in drawn and instr.opcode != "fusion":
            lines.append(f'  {node_id(instr)} -> {node_id(callee.root_instruction)} '
                         f'[style=dashed, color="#8e24aa", label="{_dot_escape(callee.name)}", '
                         f'constraint=false];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _all_with_fused(comp):
    for instr in comp.instructions:
        yield instr
        if instr.opcode == "fusion":
            yield from _all_with_fused(instr.attr("calls"))


def _drawn_computations(module):
    """Computations drawn on their own: all but fused ones, the entry first."""
    fused = set()
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "fusion":
                fused.add(id(instr.attr("calls")))
    comps = [c for c in module.computations if id(c) not in fused]
    if module.entry is not None and module.entry in comps:
        comps.remove(module.entry)
        comps.insert(0, module.entry)
    return comps


# ----- layout -------------------------------------------------------------------------------

NODE_H = 44
LAYER_GAP = 46
NODE_GAP = 18
CHAR_W = 6.6


def _layout(comp):
    """Positions for ``comp``'s instructions; each fusion is a box (a
    cluster) laid out recursively from its fused computation and placed as
    one node.

    Returns (nodes, edges, clusters, width, height): nodes are dicts with
    absolute x, y, w, h and the instruction; edges (src, dst, label) between
    node indices; clusters (fusion instruction, x, y, w, h).
    """
    nodes, clusters, edges = [], [], []
    index = {}

    def place(c, x0, y0, depth):
        """Lays ``c`` out with its top-left at (x0, y0); returns (w, h)."""
        items = []   # [instr, w, h, inner] per instruction
        for instr in c.instructions:
            if instr.opcode == "fusion":
                items.append([instr, 0.0, 0.0, instr.attr("calls")])
            else:
                op, name, shape = _label(instr)
                items.append([instr, max(len(op), len(name), len(shape)) * CHAR_W + 16, NODE_H, None])
        # Sizes of fusion boxes: lay them out once at the origin to measure.
        for item in items:
            if item[3] is not None:
                w, h = _measure(item[3], depth + 1)
                item[1], item[2] = w + 16, h + 24
        pos = {id(item[0]): k for k, item in enumerate(items)}
        layer = [0] * len(items)
        for k, item in enumerate(items):
            preds = [pos[id(o)] for o in item[0].operands if id(o) in pos]
            layer[k] = 1 + max((layer[p] for p in preds), default=-1)
        layers = {}
        for k in range(len(items)):
            layers.setdefault(layer[k], []).append(k)
        centers = {}
        y = y0
        width = 0.0
        for d in sorted(layers):
            members = layers[d]

            def bary(k):
                preds = [pos[id(o)] for o in items[k][0].operands if id(o) in pos]
                return sum(centers[p] for p in preds) / len(preds) if preds else float(k)

            members.sort(key=bary)
            x = x0
            row_h = max(items[k][2] for k in members)
            for k in members:
                instr, w, h, inner = items[k]
                centers[k] = x + w / 2
                if inner is None:
                    index[id(instr)] = len(nodes)
                    nodes.append({"instr": instr, "x": x, "y": y, "w": w, "h": h})
                else:
                    clusters.append((instr, x, y, w, h))
                    place(inner, x + 8, y + 18, depth + 1)
                x += w + NODE_GAP
            width = max(width, x - x0)
            y += row_h + LAYER_GAP
        return width, y - y0

    def value_node(instr):
        while instr.opcode == "fusion":
            instr = instr.attr("calls").root_instruction
        return index.get(id(instr))

    w, h = place(comp, 10.0, 10.0, 0)
    # Edges: operands into instructions; a fusion's operands into its fused parameters.
    for instr in _all_with_fused(comp):
        if instr.opcode == "fusion":
            for p in instr.attr("calls").parameters:
                operand = instr.operands[p.parameter_number]
                src, dst = value_node(operand), index.get(id(p))
                if src is not None and dst is not None:
                    edges.append((src, dst, _shape_text(operand)))
            continue
        dst = index.get(id(instr))
        for operand in instr.operands:
            src = value_node(operand)
            if src is not None and dst is not None:
                edges.append((src, dst, _shape_text(operand)))
    return nodes, edges, clusters, w + 20, h + 20


_measure_cache = {}


def _measure(comp, depth):
    """Width and height of ``comp``'s layout (fusions nest)."""
    key = id(comp)
    if key not in _measure_cache:
        nodes, _, clusters, w, h = _layout(comp)
        _measure_cache[key] = (w - 20, h - 20)
    return _measure_cache[key]


# ----- HTML ---------------------------------------------------------------------------------

_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 0; background: #ffffff; color: #212121; }
header { padding: 8px 14px; background: #263238; color: #eceff1; }
header h1 { font-size: 16px; margin: 0; }
header p { margin: 2px 0 0 0; font-size: 12px; color: #b0bec5; }
section { border-top: 1px solid #cfd8dc; }
section h2 { font-size: 13px; margin: 6px 14px; color: #37474f; }
.view { overflow: hidden; cursor: grab; border: 1px solid #eceff1; margin: 0 14px 10px 14px; }
svg text { font-size: 10px; pointer-events: none; }
svg .node rect { stroke-width: 1.2; }
svg .node.root rect { stroke-width: 3; }
svg .node:hover rect, svg .node.selected rect { stroke: #d50000; stroke-width: 2.5; }
svg .edge { stroke: #90a4ae; fill: none; stroke-width: 1; }
svg .elabel { font-size: 8px; fill: #78909c; }
svg .cluster { fill: #eceff1; stroke: #90a4ae; stroke-dasharray: 4 2; }
svg .clabel { font-size: 9px; fill: #455a64; font-weight: bold; }
#details { position: fixed; right: 10px; bottom: 10px; width: 46%; max-height: 40%; overflow: auto;
           background: #fffde7; border: 1px solid #f9a825; padding: 8px; font-family: monospace;
           font-size: 11px; white-space: pre-wrap; display: none; }
"""

_SCRIPT = """
(function () {
  var details = document.getElementById('details');
  var selected = null;
  function show(node) {
    details.style.display = 'block';
    details.textContent = node.getAttribute('data-hlo');
  }
  document.querySelectorAll('.node').forEach(function (node) {
    node.addEventListener('mouseenter', function () { if (!selected) show(node); });
    node.addEventListener('click', function (e) {
      if (selected) selected.classList.remove('selected');
      selected = node; node.classList.add('selected'); show(node); e.stopPropagation();
    });
  });
  document.querySelectorAll('.view').forEach(function (view) {
    var svg = view.querySelector('svg'), g = svg.querySelector('g.zoom');
    var s = 1, tx = 0, ty = 0, drag = null;
    function apply() { g.setAttribute('transform', 'translate(' + tx + ',' + ty + ') scale(' + s + ')'); }
    view.addEventListener('wheel', function (e) {
      e.preventDefault(); var f = e.deltaY < 0 ? 1.15 : 1 / 1.15; s *= f; apply();
    });
    view.addEventListener('mousedown', function (e) { drag = [e.clientX - tx, e.clientY - ty]; });
    window.addEventListener('mouseup', function () { drag = null; });
    window.addEventListener('mousemove', function (e) {
      if (drag) { tx = e.clientX - drag[0]; ty = e.clientY - drag[1]; apply(); }
    });
  });
})();
"""


def _svg_for(comp, max_view_height=1400):
    nodes, edges, clusters, width, height = _layout(comp)
    out = []
    view_h = min(height, max_view_height)
    out.append(f'<div class="view" style="height:{view_h:.0f}px">')
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(width, 200):.0f}" '
               f'height="{height:.0f}"><g class="zoom">')
    for fusion, x0, y0, w, h in clusters:
        out.append(f'<rect class="cluster" x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" '
                   f'height="{h:.1f}" rx="8"/>')
        out.append(f'<text class="clabel" x="{x0 + 6:.1f}" y="{y0 + 12:.1f}">'
                   f'{html.escape(fusion.name + _fusion_kind(fusion))}</text>')
    for src, dst, label in edges:
        a, b = nodes[src], nodes[dst]
        x1, y1 = a["x"] + a["w"] / 2, a["y"] + a["h"]
        x2, y2 = b["x"] + b["w"] / 2, b["y"]
        mid = (y1 + y2) / 2
        out.append(f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} '
                   f'{x2:.1f},{y2:.1f}"/>')
        out.append(f'<text class="elabel" x="{(x1 + x2) / 2 + 3:.1f}" y="{mid:.1f}">'
                   f'{html.escape(label)}</text>')
    for node in nodes:
        instr = node["instr"]
        fill, border = _CATEGORY_COLORS[category(instr)]
        op, name, shape = _label(instr)
        root = " root" if instr.parent is comp and instr is comp.root_instruction else ""
        text = instr.to_text()
        out.append(f'<g class="node{root}" data-hlo="{html.escape(text, quote=True)}">'
                   f'<rect x="{node["x"]:.1f}" y="{node["y"]:.1f}" width="{node["w"]:.1f}" '
                   f'height="{node["h"]}" rx="6" fill="{fill}" stroke="{border}"/>')
        for k, line in enumerate((op, name, shape)):
            weight = ' font-weight="bold"' if k == 0 else ""
            out.append(f'<text x="{node["x"] + 8:.1f}" y="{node["y"] + 13 + 12 * k:.1f}"{weight}>'
                       f'{html.escape(line)}</text>')
        out.append("</g>")
    out.append("</g></svg></div>")
    return "\n".join(out)


def module_to_html(module):
    """A self-contained HTML page drawing ``module`` (see the module docstring)."""
    _measure_cache.clear()   # keyed by id(): valid for one module at a time
    try:
        return _module_to_html(module)
    finally:
        _measure_cache.clear()


def _module_to_html(module):
    comps = _drawn_computations(module)
    n = sum(1 for _ in module.all_instructions())
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(module.name)}</title>", f"<style>{_STYLE}</style></head><body>",
             f"<header><h1>HloModule {html.escape(module.name)}</h1>"
             f"<p>{n} instructions in {len(module.computations)} computations; fusions are drawn "
             "as shaded boxes; hover or click an instruction for its HLO; drag to pan, wheel to "
             "zoom.</p></header>"]
    for comp in comps:
        kind = "ENTRY " if comp is module.entry else ""
        parts.append(f"<section><h2>{kind}{html.escape(comp.name)} "
                     f"({len(comp.instructions)} instructions)</h2>")
        parts.append(_svg_for(comp))
        parts.append("</section>")
    parts.append('<div id="details"></div>')
    parts.append(f"<script>{_SCRIPT}</script>")
    parts.append(f'<script type="application/json" id="module-summary">'
                 f'{html.escape(json.dumps({"name": module.name, "instructions": n}))}</script>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# Dump formats (``--xla_dump_hlo_as_dot``, ``--xla_dump_hlo_as_html``):
# file suffix -> renderer, read by ``xla/service/dump.py``.
DUMP_FORMATS = {"dot": module_to_dot, "html": module_to_html}
