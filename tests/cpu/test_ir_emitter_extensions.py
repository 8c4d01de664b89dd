"""The CPU emitter's extensions (emit_*.py) load only for modules that need
them (ir_emitter.EXTENSION_OPCODES): each check runs in a fresh process,
where nothing has loaded them yet."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_extension_opcodes_list_every_row_the_extensions_register():
    result = _run("""
import json
import xla.backends.cpu.compiler  # noqa: F401 - the core emitters and their tables
from xla.backends.cpu import ir_emitter
from xla.backends.cpu.element_generator import GENERATORS
tables = (ir_emitter.INSTRUCTION_EMITTERS, GENERATORS, ir_emitter.FUSION_ROOT_EMITTERS)
before = [set(t) for t in tables]
ir_emitter.load_extensions()
added = set()
for t, keys in zip(tables, before):
    added |= set(t) - keys
print(json.dumps({"added": sorted(added), "listed": sorted(ir_emitter.EXTENSION_OPCODES)}))
""")
    assert result["added"], "the extensions registered nothing: the test no longer sees them"
    missing = sorted(set(result["added"]) - set(result["listed"]))
    assert not missing, f"add {missing} to ir_emitter.EXTENSION_OPCODES"


_SEED = '''HloModule seed
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[1024] parameter(0)
  y = f32[1024] parameter(1)
  z = f32[1024] parameter(2)
  m = f32[1024] multiply(y, z)
  s = f32[1024] add(x, m)
  c = f32[] constant(0)
  ROOT r = f32[] reduce(s, c), dimensions={0}, to_apply=add
}
'''

_SORT = '''HloModule sorted
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[8] parameter(0)
  ROOT s = f32[8] sort(x), dimensions={0}, to_apply=less
}
'''


def test_a_module_without_extension_opcodes_compiles_without_loading_them():
    result = _run(f"""
import json, sys
import numpy as np
import xla
x = np.linspace(-1, 1, 1024, dtype=np.float32)
exe = xla.compile(xla.parse_hlo_module({_SEED!r}), "cpu")
seed = float(np.asarray(exe.execute(x, x, x)))
loaded_after_seed = sorted(m for m in sys.modules if m.startswith("xla.backends.cpu.emit_"))
v = np.array([3, -1, 2, 0.5, 7, -4, 1, 0], np.float32)
out = np.asarray(xla.compile(xla.parse_hlo_module({_SORT!r}), "cpu").execute(v))
loaded_after_sort = sorted(m for m in sys.modules if m.startswith("xla.backends.cpu.emit_"))
print(json.dumps({{"seed": seed, "expected": float(np.sum(x.astype(np.float64) * (1 + x))),
                   "after_seed": loaded_after_seed, "after_sort": loaded_after_sort,
                   "sorted": out.tolist(), "expected_sorted": np.sort(v).tolist()}}))
""")
    assert result["after_seed"] == []
    assert abs(result["seed"] - result["expected"]) <= 1e-4 * abs(result["expected"])
    assert "xla.backends.cpu.emit_sort" in result["after_sort"]
    assert result["sorted"] == result["expected_sorted"]
