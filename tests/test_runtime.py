"""xla.runtime: the registry, buffers, transfers and the pass options a
backend configures its pipeline with (the platform-neutral behaviour is in
tests/conformance.py)."""
import numpy as np
import pytest

import xla
from xla import runtime
from xla.errors import InvalidArgumentError
from xla.runtime import registry
from xla.service.pass_registry import make_pass


def test_unknown_platform_names_the_available_ones():
    with pytest.raises(InvalidArgumentError, match=r"unknown platform 'tpu'; available: .*cpu.*interpreter"):
        runtime.get_platform("tpu")
    with pytest.raises(InvalidArgumentError, match="unknown backend 'tpu'"):
        xla.jit(lambda x: x, backend="tpu")


class _Toy(runtime.Platform):
    name = "toy"
    capabilities = runtime.Capabilities(host_buffers=True)

    def compiler(self):
        return runtime.get_platform("interpreter").compiler()


def test_register_and_unregister_a_platform():
    registry.register_platform("toy", _Toy)
    try:
        assert "toy" in xla.available_platforms()
        assert runtime.get_platform("toy") is runtime.get_platform("toy")
        with pytest.raises(InvalidArgumentError, match="already registered"):
            registry.register_platform("toy", _Toy)
    finally:
        registry.unregister_platform("toy")
    assert "toy" not in xla.available_platforms()
    with pytest.raises(InvalidArgumentError, match="built in"):
        registry.unregister_platform("cpu")


def test_a_platform_that_cannot_load_is_a_clear_error():
    registry.register_platform("broken", "no_such_module.anywhere:Platform")
    registry.register_platform("misnamed", _Toy)
    try:
        with pytest.raises(InvalidArgumentError, match="platform 'broken' .* cannot be loaded"):
            runtime.get_platform("broken")
        with pytest.raises(InvalidArgumentError, match="registered as 'misnamed' calls itself 'toy'"):
            runtime.get_platform("misnamed")
        assert runtime.get_platform("cpu").name == "cpu"   # the others are unaffected
    finally:
        registry.unregister_platform("broken")
        registry.unregister_platform("misnamed")


def test_a_builtin_platform_does_not_read_the_entry_points():
    # No entry point can replace a built-in platform, so compiling for one
    # never imports importlib.metadata (30-40 ms of a first compile).
    import subprocess
    import sys
    code = """if True:
        import sys
        import xla
        m = xla.parse_hlo_module("HloModule m\\nENTRY e {\\n  ROOT p = f32[2] parameter(0)\\n}\\n")
        xla.compile(m, "cpu")
        xla.compile(m, "interpreter")
        print("importlib.metadata" in sys.modules)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False"
    assert "cpu" in xla.available_platforms()   # listing them does read the entry points


def test_compiling_hlo_imports_no_frontend_absl_or_ml_dtypes():
    # ``import xla`` and a compile of an f32 module on the cpu leave out what
    # they do not use (docs/compile_time.md): the frontends
    # (loaded on first use of xla.jit etc.), absl (XLA_FLAGS unset),
    # ml_dtypes (no narrow type), ctypes.util's ldconfig; a narrow type
    # then loads ml_dtypes.
    import subprocess
    import sys
    code = """if True:
        import os, sys
        os.environ.pop("XLA_FLAGS", None)
        import xla
        m = xla.parse_hlo_module("HloModule m\\nENTRY e {\\n  p = f32[2] parameter(0)\\n"
                                 "  ROOT a = f32[2] add(p, p)\\n}\\n")
        xla.compile(m, "cpu")
        loaded = [n for n in ("xla.frontend", "absl", "ml_dtypes", "ctypes.util") if n in sys.modules]
        from xla.hlo.types import PrimitiveType
        print(loaded, PrimitiveType.BF16.dtype, "ml_dtypes" in sys.modules, xla.jit.__name__)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "[] bfloat16 True jit", out.stdout + out.stderr


def test_device_put_copies_and_keeps_containers():
    x = np.arange(4, dtype=np.float32)
    tree = xla.device_put({"a": x, "b": (x, [x])})
    assert isinstance(tree["a"], runtime.HostBuffer) and isinstance(tree["b"][1], list)
    x[0] = 100   # the buffer owns a copy
    assert tree["a"].to_numpy()[0] == 0
    view = tree["a"].to_numpy()
    assert not view.flags.writeable
    assert tree["a"].device is xla.devices("cpu")[0]
    same = xla.device_put(tree["a"], "cpu")
    assert same is tree["a"]
    other = xla.device_put(tree["a"], "interpreter")
    assert other is not tree["a"] and other.device.platform.name == "interpreter"
    with pytest.raises(InvalidArgumentError, match="not an array"):
        xla.device_put(object())
    with pytest.raises(InvalidArgumentError, match="not a Device or platform name"):
        xla.device_put(x, 3)


def test_buffer_lifecycle():
    b = xla.device_put(np.float32([1, 2, 3]))
    assert (b.shape, b.dtype, b.ndim, b.size, b.nbytes, len(b)) == ((3,), np.float32, 1, 3, 12, 3)
    assert b.block_until_ready() is b
    np.testing.assert_array_equal(np.asarray(b, dtype=np.float64), [1.0, 2.0, 3.0])
    b.delete()
    assert b.is_deleted() and "deleted" in repr(b)
    with pytest.raises(InvalidArgumentError, match="deleted or donated"):
        np.asarray(b)


def test_executable_without_execute_is_reported():
    class Empty(runtime.Executable):
        pass
    exe = Empty(xla.parse_hlo_module("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}"))
    with pytest.raises(NotImplementedError, match="neither execute nor execute_buffers"):
        exe.execute(np.float32(1))


def test_passes_take_options_and_reject_unknown_ones():
    fusion = make_pass("fusion", multi_output=False, max_depth=7)
    assert fusion.policy.max_depth == 7 and fusion.options["multi_output"] is False
    with pytest.raises(InvalidArgumentError, match="fusion: unknown option"):
        make_pass("fusion", max_deph=7)
    with pytest.raises(InvalidArgumentError, match="pass 'dce' does not take options"):
        make_pass("dce", aggressive=True)


def test_the_cpu_pipeline_uses_the_cpu_fusion_policy():
    from xla.backends.cpu.fusion_policy import CPU_FUSION_POLICY
    pipeline = runtime.get_compiler("cpu").pipeline()
    fusions = [p for p in pipeline.passes if getattr(p, "name", None) == "fusion"]
    assert len(fusions) == 1 and fusions[0].policy == CPU_FUSION_POLICY
    names = [p.name for p in pipeline.passes]
    assert names[:3] == ["sub-byte-size-removal", "async-to-sync", "custom-fusion-inliner"]
    assert names[-1] == "hlo-memory-scheduler"
    assert names.index("layout-assignment") < names.index("fusion") < names.index("copy-insertion")
