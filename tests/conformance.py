"""Conformance suites every platform passes: jit, donation and the JAX corpus.

A backend's tests subclass these with ``platform = "name"`` (tests/
test_conformance.py for the built-in platforms, tests/example_backend/ for
an out-of-tree one). What a platform may do differently is read from its
``Capabilities``, never from its name: where memory is host memory results
are NumPy arrays, elsewhere ``runtime.Buffer``s on the device; where
donation is supported a donated buffer is deleted, elsewhere it survives.
"""
import numpy as np
import pytest

import xla
from xla import runtime
from xla.errors import InvalidArgumentError

from test_corpus_interpreter import FILES, _ids, check_against_jax


class PlatformSuite:
    platform = None

    @property
    def caps(self):
        return runtime.get_platform(self.platform).capabilities

    @property
    def device(self):
        return runtime.get_platform(self.platform).default_device()

    def jit(self, fn, **kwargs):
        return xla.jit(fn, backend=self.platform, **kwargs)

    def check_result_kind(self, value):
        if self.caps.host_buffers:
            assert isinstance(value, np.ndarray), type(value)
        else:
            assert isinstance(value, runtime.Buffer) and value.device is self.device, value


class JitConformance(PlatformSuite):
    def test_seed_example_matches_numpy(self):
        f = self.jit(lambda x, y, z: np.sum(x + y * z))
        x, y, z = (np.arange(12, dtype=np.float32).reshape(3, 4) * k for k in (1.0, 0.5, -2.0))
        out = f(x, y, z)
        self.check_result_kind(out)
        np.testing.assert_allclose(np.asarray(out), np.sum(x + y * z), rtol=1e-6)

    def test_pytree_results(self):
        f = self.jit(lambda p: {"sum": p["a"] + p["b"], "prod": (p["a"] * p["b"],)})
        a, b = np.float32([1, 2, 3]), np.float32([4, 5, 6])
        out = f({"a": a, "b": b})
        self.check_result_kind(out["sum"])
        np.testing.assert_array_equal(np.asarray(out["sum"]), a + b)
        np.testing.assert_array_equal(np.asarray(out["prod"][0]), a * b)

    def test_device_put_arguments_and_chained_calls(self):
        f = self.jit(lambda x: x * 2 + 1)
        x = np.arange(6, dtype=np.int32)
        b = xla.device_put(x, self.device)
        assert isinstance(b, runtime.Buffer) and b.device is self.device
        assert b.shape == (6,) and b.dtype == np.int32
        once = f(b)
        twice = f(once)
        self.check_result_kind(twice)
        np.testing.assert_array_equal(np.asarray(twice), (x * 2 + 1) * 2 + 1)
        np.testing.assert_array_equal(b.to_numpy(), x)   # not given up

    def test_same_signature_compiles_once(self):
        f = self.jit(lambda x: x - 1)
        for _ in range(3):
            f(np.zeros(4, np.float32))
        f(xla.device_put(np.zeros(4, np.float32), self.device))
        info = f.cache_info()
        assert info.compilations == 1 and info.misses == 1, info

    def test_deleted_buffer_is_an_error(self):
        f = self.jit(lambda x: x + 1)
        b = xla.device_put(np.ones(3, np.float32), self.device)
        b.delete()
        assert b.is_deleted()
        with pytest.raises(InvalidArgumentError, match="deleted or donated"):
            f(b)
        with pytest.raises(InvalidArgumentError, match="deleted or donated"):
            b.to_numpy()

    def test_compile_and_execute_module(self):
        text = """HloModule add
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT t = (f32[4], f32[4]) tuple(add(x, y), multiply(x, y))
}"""
        exe = xla.compile(text.replace("add(x, y), multiply(x, y)", "s, p").replace(
            "  ROOT", "  s = f32[4] add(x, y)\n  p = f32[4] multiply(x, y)\n  ROOT"), self.platform)
        assert exe.platform == self.platform
        x, y = np.float32([1, 2, 3, 4]), np.float32([2, 2, 2, 2])
        s, p = exe.execute(x, y)
        np.testing.assert_array_equal(s, x + y)
        np.testing.assert_array_equal(p, x * y)
        outs = exe.execute_buffers([xla.device_put(x, exe.device), xla.device_put(y, exe.device)])
        assert len(outs) == 2 and all(isinstance(o, runtime.Buffer) for o in outs)
        np.testing.assert_array_equal(np.asarray(outs[1]), x * y)


class DonationConformance(PlatformSuite):
    def test_donated_buffer(self):
        f = self.jit(lambda x, y: x + y, donate_argnums=0)
        x, y = np.float32([1, 2, 3]), np.float32([10, 20, 30])
        b = xla.device_put(x, self.device)
        out = f(b, y)
        np.testing.assert_array_equal(np.asarray(out), x + y)
        if self.caps.donation:
            assert b.is_deleted()
            with pytest.raises(InvalidArgumentError, match="deleted or donated"):
                f(b, y)
        else:
            np.testing.assert_array_equal(b.to_numpy(), x)
        np.testing.assert_array_equal(y, [10, 20, 30])

    def test_donated_numpy_array(self):
        f = self.jit(lambda x, y: x * y, donate_argnums=(0,))
        x, y = np.float32([1, 2, 3]), np.float32([4, 5, 6])
        out = f(x, y)
        np.testing.assert_array_equal(np.asarray(out), np.float32([4, 10, 18]))
        np.testing.assert_array_equal(y, [4, 5, 6])
        if self.caps.host_buffers and self.caps.donation:
            assert out is x   # written in place into the donated array

    def test_argument_passed_twice_is_not_given_up(self):
        f = self.jit(lambda x, y: x + y, donate_argnums=0)
        b = xla.device_put(np.float32([1, 2]), self.device)
        out = f(b, b)
        np.testing.assert_array_equal(np.asarray(out), [2, 4])
        assert not b.is_deleted()
        np.testing.assert_array_equal(b.to_numpy(), [1, 2])

    def test_donated_training_step(self):
        def step(params, x):
            grad = {k: v * x.sum() for k, v in params.items()}
            return {k: params[k] - 0.1 * grad[k] for k in params}
        f = self.jit(step, donate_argnums=0)
        x = np.float32([0.5, 0.25])
        params = {"w": np.float32([1, 2, 3]), "b": np.float32([4])}
        expected = {k: v.copy() for k, v in params.items()}
        state = {k: xla.device_put(v, self.device) for k, v in params.items()}
        for _ in range(3):
            state = f(state, x)
            expected = {k: v - np.float32(0.1) * (v * x.sum()) for k, v in expected.items()}
        for k in expected:
            np.testing.assert_allclose(np.asarray(state[k]), expected[k], rtol=1e-6)


class CorpusConformance(PlatformSuite):
    """Every module of tests/corpus against JAX's results."""

    @pytest.mark.parametrize("path", FILES or [None], ids=_ids(FILES))
    def test_corpus_module(self, path):
        check_against_jax(path, lambda module, args: xla.compile(module, self.platform).execute(*args))
