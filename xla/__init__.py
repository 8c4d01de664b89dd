"""A compiler for linear algebra in the spirit of XLA.

The public surface so far::

    import xla
    module = xla.parse_hlo_module(text)        # XLA's HLO text format
    xla.verify_module(module)                  # invariants, shapes
    exe = xla.compile(module, "interpreter")   # a platform from xla.runtime's registry
    result = exe.execute(*numpy_arrays)
    buf = xla.device_put(array, xla.devices("cpu")[0])   # an xla.runtime.Buffer

    @xla.jit                                   # plain NumPy code, traced and compiled
    def model_fn(x, y, z):
        return np.sum(x + y * z)
"""
from xla.errors import (HloParseError, InvalidArgumentError, ShapeError, UnimplementedError,
                        VerifierError, XlaError)
from xla.hlo import HloComputation, HloInstruction, HloModule, Layout, PrimitiveType, Shape
from xla.hlo.parser import parse_hlo_module, parse_shape
from xla.hlo.printer import module_to_text
from xla.hlo.verifier import verify_module
from xla.runtime import available_platforms, compile, device_put, devices, from_dlpack
from xla.frontend.builder import XlaBuilder, XlaOp
from xla.frontend.autodiff import grad, jvp, value_and_grad, vjp
from xla.frontend.jit import jit
from xla.frontend.autojit import autojit
from xla.frontend.parallel import pmap
from xla import distributed, lax, numpy, random, sharding  # noqa: E402  (public submodules)
from xla.runtime import profiler  # noqa: E402

from xla.version import __version__  # noqa: E402

__all__ = [
    "HloComputation", "HloInstruction", "HloModule", "HloParseError", "InvalidArgumentError",
    "Layout", "PrimitiveType", "Shape", "ShapeError", "UnimplementedError", "VerifierError",
    "XlaBuilder", "XlaError", "XlaOp", "autojit", "available_platforms", "device_put", "devices", "distributed", "from_dlpack", "grad", "jit", "jvp", "lax", "numpy", "pmap", "profiler", "random", "sharding",
    "value_and_grad", "vjp", "compile", "module_to_text", "parse_hlo_module",
    "parse_shape", "verify_module",
]
