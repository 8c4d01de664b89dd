"""Kernels as separate LLVM modules, named by their fingerprint.

The IR emitter (``ir_emitter.Kernel``) writes each kernel's code into an
LLVM module of its own in which every name is local and canonical: the
kernel function is ``@"xla.kernel"`` until it is named, its constants are
``@const``, ``@const.1``, ..., and nothing in the text depends on the HLO
instruction it came from or on the buffers it will run on (the driver's
wrapper loads those from the buffer table and passes them in). Two kernels
that compute the same function of their arguments, with the same shapes,
layouts and argument alignments, therefore print to the same text. The
fingerprint is the SHA-256 of that text, and the kernel's symbol is
``xla_k_<first 24 hex digits>``: an unrolled 100-layer network has the
kernels of one layer, not 100 copies, and the fingerprint is the key of the
compiled-kernel caches (``kernel_compiler``).

An ``EmittedModule`` is what the IR emitter produces for one HloModule: the
*driver* module (the entry function, the kernels' table wrappers, row
groups, control flow, library calls: the executable's sequence of steps)
which declares the kernels by symbol, and the distinct kernel modules.
"""
import hashlib

import numpy as np
from llvmlite import ir

from xla.hlo.attributes import kind_of
from xla.hlo.printer import attr_to_text, shape_to_text

KERNEL_PREFIX = "xla_k_"


class KernelSet:
    """The distinct kernels of one module, by symbol, and their declarations
    in the driver module."""

    def __init__(self, driver):
        self.driver = driver
        self.texts = {}          # symbol -> LLVM IR text of the kernel's module
        self.declarations = {}   # symbol -> ir.Function declared in the driver
        self.emitted = 0         # kernels emitted, before deduplication
        self.on_new = None       # called with (symbol, text) for each new kernel

    def add(self, kernel):
        """Fingerprints a finished ``ir_emitter.Kernel`` and returns the
        driver's declaration of it."""
        from xla.backends.cpu.ir_emitter import KERNEL_PLACEHOLDER
        text = str(kernel.module)
        symbol = KERNEL_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:24]
        self.emitted += 1
        if symbol not in self.texts:
            text = self.texts[symbol] = text.replace(f'@"{KERNEL_PLACEHOLDER}"', f'@"{symbol}"')
            if self.on_new is not None:
                self.on_new(symbol, text)
        decl = self.declarations.get(symbol)
        if decl is None:
            decl = ir.Function(self.driver, kernel.impl_type, symbol)
            decl.attributes.add("nounwind")
            for arg, align in zip(decl.args, kernel.arg_attributes):
                arg.add_attribute("noalias")
                arg.add_attribute("nonnull")
                arg.attributes.align = align
            self.declarations[symbol] = decl
        return decl


class EmittedModule:
    """The driver module (an llvmlite ``ir.Module``) and the kernel modules'
    texts (``{symbol: text}``) of one HloModule. ``driver_needs_optimization``:
    the driver holds loops of its own (sort, linear algebra), not only calls."""

    def __init__(self, driver, kernels, driver_needs_optimization=False):
        self.driver = driver
        self.driver_needs_optimization = driver_needs_optimization
        self.kernels = kernels.texts
        self.kernels_emitted = kernels.emitted
        self._driver_text = None

    @property
    def driver_text(self):
        if self._driver_text is None:
            self._driver_text = str(self.driver)
        return self._driver_text

    def text(self):
        """Every module's IR, the driver's first (``ir-no-opt.ll``)."""
        parts = [self.driver_text]
        for symbol in sorted(self.kernels):
            parts.append(f"; ----- kernel {symbol}\n" + self.kernels[symbol])
        return "\n".join(parts)

    def link(self, driver_text=None, transform=None, context=None):
        """One ``llvmlite.binding`` module with the driver and every kernel,
        the kernels made internal (so LLVM may inline them, as in an
        ahead-of-time object, which exports the entry point only).
        ``transform`` rewrites each text first (e.g. fast math)."""
        import llvmlite.binding as llvm
        transform = transform or (lambda t: t)
        text = transform(driver_text if driver_text is not None else self.driver_text)
        mod = llvm.parse_assembly(text, context=context) if context else llvm.parse_assembly(text)
        for symbol in sorted(self.kernels):
            kernel_text = transform(self.kernels[symbol])
            other = (llvm.parse_assembly(kernel_text, context=context) if context
                     else llvm.parse_assembly(kernel_text))
            mod.link_in(other)
        for symbol in self.kernels:
            fn = mod.get_function(symbol)
            fn.linkage = llvm.Linkage.internal
        return mod


# Attributes that never change the code a kernel computes.
_IGNORED_ATTRIBUTES = frozenset(["metadata", "frontend_attributes", "statistics_viz",
                                 "origin", "sharding"])


class HloFingerprints:
    """Structural fingerprints of HLO instructions, for emitting identical
    kernels once: two instructions have the same fingerprint when they have
    the same opcode, shapes with layouts, operand shapes, attributes
    (metadata aside), constant values and, for called computations (fused
    computations, reducers), the same fingerprint of every instruction in
    the same order. Names never matter."""

    def __init__(self):
        self._computations = {}

    def instruction(self, h):
        """The fingerprint of ``h`` and what it calls, with its operands'
        shapes (not their values)."""
        ops = "|".join(shape_to_text(o.shape) for o in h.operands)
        return self._line(h, ops) + "#" + ops

    def computation(self, comp):
        key = self._computations.get(id(comp))
        if key is None:
            position = {id(x): i for i, x in enumerate(comp.instructions)}
            lines = [self._line(x, ",".join(str(position[id(o)]) for o in x.operands))
                     for x in comp.instructions]
            lines.append(f"root={position[id(comp.root_instruction)]}")
            key = hashlib.sha256("\n".join(lines).encode()).hexdigest()
            self._computations[id(comp)] = (key, comp)   # comp kept alive: ids stay unique
            return key
        return key[0]

    def _line(self, x, operands):
        parts = [x.opcode, shape_to_text(x.shape), operands]
        if x.opcode == "parameter":
            parts.append(str(x.parameter_number))
        elif x.opcode == "constant":
            value = np.ascontiguousarray(np.asarray(x.literal)) if x.literal is not None else None
            parts.append("none" if value is None else
                         f"{value.dtype}{value.shape}" + hashlib.sha256(value.tobytes()).hexdigest())
        for name, value in x.attrs.items():
            if name in _IGNORED_ATTRIBUTES:
                continue
            kind = kind_of(name)
            if kind == "computation":
                text = self.computation(value)
            elif kind == "computations":
                text = ",".join(self.computation(c) for c in value)
            else:
                text = attr_to_text(name, value)
            parts.append(f"{name}={text}")
        return ";".join(parts)
