"""The HTML graph view, rendered by headless Chromium, draws a graph.

Chromium comes from Debian (`make setup` installs it); the screenshot is
decoded with a small PNG reader (zlib only) and checked for the node colours
the view uses and for enough drawn pixels.
"""
import os
import shutil
import struct
import subprocess
import zlib

import xla
from xla.hlo import graph_views
from xla.tools.hlo_opt import optimize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def _hex(color):
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def test_chromium_draws_the_graph(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is not installed: run `make setup`"
    m = xla.parse_hlo_module(open(os.path.join(ROOT, "tests", "corpus", "layernorm.hlo")).read())
    optimize(m, "cpu")
    page = tmp_path / "graph.html"
    page.write_text(graph_views.module_to_html(m))
    shot = tmp_path / "shot.png"
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HOME=str(tmp_path)))
    assert shot.exists(), proc.stderr[-2000:]
    width, height, rows = read_png(shot)
    assert (width, height) == (1200, 900)
    counts = {}
    for row in rows:
        for px in row:
            counts[px] = counts.get(px, 0) + 1
    background = max(counts, key=counts.get)
    drawn = width * height - counts[background]
    assert drawn > 0.05 * width * height
    # Node fills of the categories present in this module show up as areas.
    present = {graph_views.category(i) for i in m.all_instructions() if i.opcode != "fusion"}
    for cat in present & {"parameter", "reduce", "movement", "constant"}:
        fill = _hex(graph_views._CATEGORY_COLORS[cat][0])
        assert counts.get(fill, 0) > 200, (cat, fill)
    assert counts.get(_hex("#263238"), 0) > 1000   # the header bar
