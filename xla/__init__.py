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

from xla.version import __version__  # noqa: E402

# The frontends and the public submodules are imported on first use (PEP 562):
# a program that only parses and compiles HLO does not pay for tracing,
# autodiff and the NumPy frontend at ``import xla``.
_LAZY = {
    "XlaBuilder": "xla.frontend.builder", "XlaOp": "xla.frontend.builder",
    "grad": "xla.frontend.autodiff", "jvp": "xla.frontend.autodiff",
    "value_and_grad": "xla.frontend.autodiff", "vjp": "xla.frontend.autodiff",
    "jit": "xla.frontend.jit", "autojit": "xla.frontend.autojit", "pmap": "xla.frontend.parallel",
    "profiler": "xla.runtime.profiler",
}
_SUBMODULES = ("distributed", "lax", "numpy", "random", "sharding")


def __getattr__(name):
    import importlib
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        value = module if name == "profiler" else getattr(module, name)
    elif name in _SUBMODULES:
        value = importlib.import_module("xla." + name)
    else:
        raise AttributeError(f"module 'xla' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))

__all__ = [
    "HloComputation", "HloInstruction", "HloModule", "HloParseError", "InvalidArgumentError",
    "Layout", "PrimitiveType", "Shape", "ShapeError", "UnimplementedError", "VerifierError",
    "XlaBuilder", "XlaError", "XlaOp", "autojit", "available_platforms", "device_put", "devices", "distributed", "from_dlpack", "grad", "jit", "jvp", "lax", "numpy", "pmap", "profiler", "random", "sharding",
    "value_and_grad", "vjp", "compile", "module_to_text", "parse_hlo_module",
    "parse_shape", "verify_module",
]
