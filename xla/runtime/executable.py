"""Compiler and Executable: the interfaces a backend implements (XLA's
``Compiler`` and ``Executable``; PJRT's ``Compile`` and ``Execute``).

``Compiler.compile(module, hooks=None, **options)`` takes ownership of the
module (it optimizes it in place) and returns an ``Executable``.
``Compiler.pipeline(**options)`` is the HLO pass pipeline it runs (what
``hlo_opt --platform=NAME`` runs). ``hooks`` (``CompileHooks``) are how a
caller observes compilation without the compiler knowing who asks: the
dumper (``--xla_dump_to``) sets ``pass_hook``.

``Executable.execute_buffers(buffers, donated=()) -> [Buffer]`` runs on
device buffers and returns the result's leaves as buffers, in the order of
the result's tuple tree (PJRT's untupled outputs). ``execute(*arrays)`` is
the host convenience: NumPy arrays in, NumPy arrays (nested tuples for a
tuple result) out. A backend implements one of the two and the base class
derives the other. ``dump_artifacts()`` is what ``--xla_dump_to`` writes
besides the HLO; ``execute_hooks`` are called after each execution with
(arguments, result) (snapshots, ``--xla_dump_hlo_snapshots``).
"""
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo.values import flatten_result


@dataclass
class CompileHooks:
    """What a caller of ``Compiler.compile`` observes.

    pass_hook: called by the pass pipeline after each pass (see
        ``HloPassPipeline.dump_hook``), e.g. to dump the module between passes.
    """
    pass_hook: Optional[Callable] = None


class Compiler:
    """The interface a backend's compiler implements."""

    platform = None   # the platform's name

    def pipeline(self, **options):
        """The HLO pass pipeline ``compile`` runs (an ``HloPassPipeline``);
        ``options`` are the pipeline's (``verify``, ``disabled_passes``,
        ``dump_hook``, ``allow_mixed_precision``)."""
        raise NotImplementedError

    def compile(self, module, hooks=None, **options):
        """An Executable for ``module`` (optimized in place). ``options`` are
        the backend's; the cpu, gpu and interpreter take
        ``allow_mixed_precision`` (the verifier's option, after which the
        module's mixed floating-point precisions are made explicit
        converts)."""
        raise NotImplementedError


class Executable:
    """The interface a backend's executables implement.

    Attributes: ``module`` (the optimized HloModule), ``platform`` (name),
    ``device`` (where it runs), ``from_disk_cache`` (its native code came
    from the persistent cache), ``execute_hooks``.
    """

    platform = None
    device = None
    from_disk_cache = False

    def __init__(self, module, device=None):
        self.module = module
        if device is not None:
            self.device = device
        self.execute_hooks = []

    @property
    def parameter_shapes(self):
        return [p.shape for p in self.module.entry.parameters]

    @property
    def result_shape(self):
        return self.module.entry.root_instruction.shape

    def dump_artifacts(self):
        """File suffix -> text or bytes, written by ``--xla_dump_to`` next
        to the optimized module (e.g. ``ir-with-opt.ll``, ``ptx``)."""
        return {}

    def for_device(self, ordinal):
        """The executable device ``ordinal`` of a replicated run uses (see
        ``collectives.ReplicatedExecutable``): this one where executions are
        independent of each other (the default), a copy with its own
        per-execution state otherwise."""
        return self

    def add_execute_hook(self, hook):
        """``hook(args, result)`` runs after each ``execute``."""
        self.execute_hooks.append(hook)

    def prepared_call(self, donated=()):
        """A lean callable for the repeated calls of a caller that has checked
        the arguments' types itself (``xla.jit``'s per-signature call plan),
        or None where this executable has none (the default).

        ``call(args)`` takes a sequence of NumPy arrays that the caller
        guarantees are of exactly the parameters' dtypes and shapes (the
        arrays of ``donated``, parameter numbers given up as in ``execute``,
        included) and returns what ``execute(*args, donated=donated)``
        would, or None, having run nothing, where this call must go through
        ``execute`` instead (an array that is not C-contiguous or aligned,
        a donated one that is read-only, hooks or a profile active)."""
        return None

    # ----- running: a backend implements execute or execute_buffers --------------
    def execute(self, *args, donated=()):
        """Runs on NumPy arrays (or buffers), returns NumPy arrays; a tuple
        result is a tuple. This default moves the arguments to the device,
        runs ``execute_buffers`` and reads the results back."""
        if type(self).execute_buffers is Executable.execute_buffers:
            raise NotImplementedError(f"{type(self).__name__} implements neither execute nor "
                                      "execute_buffers")
        from xla.hlo.evaluator.registry import Token
        from xla.runtime.buffer import Buffer
        device = self.device
        buffers = [a if isinstance(a, Token) or _on(a, device) else device.put(a) for a in args]
        out = self.execute_buffers(buffers, donated=donated)
        leaves = iter([b.to_numpy() if isinstance(b, Buffer) else b for b in out])
        result = _nest(self.result_shape, leaves)
        for hook in self.execute_hooks:
            hook(args, result)
        return result

    def execute_buffers(self, buffers, donated=()):
        """Runs on buffers of ``self.device``; returns the result leaves as
        buffers. This default (for host-memory platforms) runs ``execute``
        on the buffers' arrays. ``donated``: parameter numbers whose buffers
        the caller gives up; they are deleted."""
        if type(self).execute is Executable.execute:
            raise NotImplementedError(f"{type(self).__name__} implements neither execute nor "
                                      "execute_buffers")
        arrays = []
        for i, b in enumerate(buffers):
            if hasattr(b, "array"):
                b.check_live(f"argument {i}")
                arrays.append(b.array)
            else:
                arrays.append(b)
        result = self.execute(*arrays, donated=donated) if donated else self.execute(*arrays)
        for i in donated:
            if hasattr(buffers[i], "mark_donated"):
                buffers[i].mark_donated()
        from xla.runtime.buffer import HostBuffer
        return [HostBuffer(leaf, self.device) for leaf in flatten_result(result)]


def _on(value, device):
    from xla.runtime.buffer import Buffer
    if isinstance(value, Buffer):
        if value.device is not device:
            raise InvalidArgumentError(
                f"argument on {value.device} passed to an executable on {device}; move it with "
                "xla.device_put(value, device)")
        return True
    return False


def _nest(shape, leaves):
    if shape.is_tuple:
        return tuple(_nest(s, leaves) for s in shape.tuple_shapes)
    return next(leaves)


def as_numpy(value):
    """A NumPy array for a buffer or array-like (tuples stay tuples)."""
    if isinstance(value, tuple):
        return tuple(as_numpy(v) for v in value)
    return np.asarray(value)
