"""XLA_FLAGS parsing: names, values, errors, overrides."""
import os
import subprocess
import sys

import pytest

from xla import debug_options as d
from xla.errors import InvalidArgumentError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_flags_parse_into_the_options_object():
    o = d.parse_flags("--xla_dump_to=/tmp/x --xla_dump_hlo_as_html --xla_disable_hlo_passes=cse,dce "
                      "--xla_backend_optimization_level=1 --noxla_cpu_multi_thread_eigen "
                      "--xla_dump_max_hlo_modules=3")
    assert o.xla_dump_to == "/tmp/x" and o.xla_dump_hlo_as_html and not o.xla_dump_hlo_as_dot
    assert o.xla_disable_hlo_passes == ("cse", "dce")
    assert o.xla_backend_optimization_level == 1
    assert o.xla_cpu_multi_thread_eigen is False
    assert o.xla_dump_max_hlo_modules == 3
    assert d.parse_flags("").xla_dump_to == ""


def test_unknown_flag_names_itself_and_suggests():
    with pytest.raises(InvalidArgumentError) as e:
        d.parse_flags("--xla_dump_hlo_as_txt")
    assert "--xla_dump_hlo_as_txt" in str(e.value)
    assert "did you mean --xla_dump_hlo_as_text" in str(e.value)


@pytest.mark.parametrize("flag", ["--xla_backend_optimization_level=fast", "--xla_dump_max_hlo_modules=many",
                                  "--xla_backend_optimization_level=9", "--xla_dump_hlo_as_text=maybe",
                                  "--xla_dump_to", "--xla_cpu_num_threads=-2", "--xla_dump_hlo_module_re=(",
                                  "--xla_dump_hlo_pass_re=[a", "--xla_dump_hlo_pipeline_re=*x"])
def test_bad_values_name_the_flag(flag):
    name = flag.lstrip("-").split("=")[0]
    with pytest.raises(InvalidArgumentError, match="--" + name):
        d.parse_flags(flag)


def test_override_checks_values_too():
    with pytest.raises(InvalidArgumentError, match="--xla_dump_hlo_pass_re"):
        with d.override(xla_dump_hlo_pass_re="(unclosed"):
            pass


def test_override_is_scoped():
    before = d.debug_options()
    with d.override(xla_dump_to="/somewhere", xla_dump_hlo_as_dot=True) as o:
        assert d.debug_options() is o and o.xla_dump_to == "/somewhere"
    assert d.debug_options() == before
    with pytest.raises(InvalidArgumentError, match="xla_dump_too"):
        with d.override(xla_dump_too="/x"):
            pass


def test_xla_flags_environment_is_read_by_every_entry_point(tmp_path):
    code = ("import numpy as np, xla\n"
            "xla.jit(lambda x: x * 2)(np.ones(3))\n")
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={tmp_path}",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert any(f.endswith("before_optimizations.txt") for f in os.listdir(tmp_path))
    env["XLA_FLAGS"] = "--xla_dump_tu=/x"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "unknown XLA flag --xla_dump_tu" in proc.stderr


def test_split_xla_flags_for_tools():
    xla_flags, rest = d.split_xla_flags(["--platform=cpu", "--xla_dump_to=/d", "--noxla_cpu_enable_fast_math",
                                         "m.hlo"])
    assert xla_flags == ["--xla_dump_to=/d", "--noxla_cpu_enable_fast_math"]
    assert rest == ["--platform=cpu", "m.hlo"]


def test_options_reach_the_cpu_compiler():
    import numpy as np
    import xla
    from xla.backends.cpu.compiler import CpuCompiler, with_fast_math
    with d.override(xla_backend_optimization_level=1, xla_cpu_enable_fast_math=True,
                    xla_disable_hlo_passes=("fusion",)):
        c = CpuCompiler()
        assert c.opt_level == 1 and c.fast_math and c.disabled_passes == ("fusion",)
        m = xla.parse_hlo_module(open(os.path.join(ROOT, "examples", "fma_reduce.hlo")).read())
        exe = xla.compile(m, "cpu")
        assert not any(i.opcode == "fusion" for i in exe.module.all_instructions())
        args = [np.arange(8, dtype=np.float32)] * 3
        np.testing.assert_allclose(exe.execute(*args), np.sum(args[0] + args[1] * args[2]), rtol=1e-6)
    assert "fadd fast float" in with_fast_math("%1 = fadd float %a, %b")
    assert with_fast_math("%1 = fadd fast float %a, %b").count("fast") == 1


def test_thread_options_size_the_cpu_runtime_pool():
    from xla import _core
    from xla.backends.cpu.compiler import CpuCompiler
    default = _core.cpu_runtime_num_threads()
    try:
        with d.override(xla_cpu_num_threads=3):
            CpuCompiler()
            assert _core.cpu_runtime_num_threads() == 3
        with d.override(xla_cpu_multi_thread_eigen=False, xla_cpu_num_threads=3):
            CpuCompiler()
            assert _core.cpu_runtime_num_threads() == 1
        CpuCompiler()   # the defaults again: the default pool
        assert _core.cpu_runtime_num_threads() == default
    finally:
        _core.set_cpu_runtime_num_threads(0)


def test_pipeline_re_and_list_flags_parse():
    o = d.parse_flags(["--xla_dump_hlo_pipeline_re=simp", "--xla_disable_hlo_passes=algsimp"])
    assert o.xla_dump_hlo_pipeline_re == "simp" and o.xla_disable_hlo_passes == ("algsimp",)
    with pytest.raises(InvalidArgumentError, match="did you mean --xla_dump_hlo_pipeline_re"):
        d.parse_flags("--xla_dump_hlo_pipline_re=x")


def test_compile_takes_debug_options(tmp_path):
    import numpy as np
    import xla
    from xla import runtime
    from xla.backends.cpu.compiler import CpuCompiler
    text = open(os.path.join(ROOT, "examples", "fma_reduce.hlo")).read()
    exe = xla.compile(xla.parse_hlo_module(text), "cpu",
                      debug_options=f"--xla_dump_to={tmp_path} --xla_disable_hlo_passes=fusion")
    assert not any(i.opcode == "fusion" for i in exe.module.all_instructions())
    assert any(n.endswith("cpu_after_optimizations.txt") for n in os.listdir(tmp_path))
    assert d.debug_options().xla_dump_to != str(tmp_path)   # only for that compilation
    # A compiler made before follows the options of the compilation that uses it.
    compiler = CpuCompiler()
    exe = runtime.compile(xla.parse_hlo_module(text), "cpu", compiler=compiler,
                           debug_options={"xla_backend_optimization_level": 0})
    assert exe.jit_module.opt_level == 0
    args = [np.arange(8, dtype=np.float32)] * 3
    np.testing.assert_allclose(exe.execute(*args), np.sum(args[0] + args[1] * args[2]), rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="xla_dump_hlo_as_txt"):
        xla.compile(xla.parse_hlo_module(text), "cpu", debug_options="--xla_dump_hlo_as_txt")
    with pytest.raises(InvalidArgumentError, match="xla_dump_too"):
        xla.compile(xla.parse_hlo_module(text), "cpu", debug_options={"xla_dump_too": "x"})
