"""The vault platform: everything a backend implements (docs/new_backend.md).

- ``VaultPlatform``: names the devices, states the capabilities, makes
  compilers and moves arrays onto a device.
- ``VaultBuffer``: an array in a device's memory (a handle into
  ``DeviceMemory``); reading it back is a counted copy.
- ``VaultCompiler``: the backend's own pipeline, then an executable.
- ``VaultExecutable``: runs on buffers (``execute_buffers``): loads the
  arguments from device memory, evaluates with the IR-level evaluator, and
  stores each result in device memory, in a donated argument's block where
  the module's ``input_output_alias`` says so.
"""
import numpy as np

from xla.errors import InvalidArgumentError
from xla.hlo.evaluator import Evaluator
from xla.hlo.evaluator.registry import TOKEN
from xla.hlo.values import flatten_result
from xla.hlo.verifier import verify_module
from xla.runtime import Buffer, Capabilities, Compiler, Device, Executable, Platform
from xla.service.copy_insertion import parse_input_output_alias
from xla.service.pipelines import default_pipeline

from xla_vault.memory import DeviceMemory


class VaultBuffer(Buffer):
    def __init__(self, handle, shape, dtype, device):
        super().__init__(shape, dtype, device)
        self.handle = handle

    def _read(self):
        return self.device.memory.read(self.handle, self.dtype, self.shape)

    def _free(self):
        self.device.memory.free(self.handle)


class VaultDevice(Device):
    def __init__(self, platform, id):
        super().__init__(platform, id, kind="vault")
        self.memory = DeviceMemory()


class VaultPlatform(Platform):
    name = "vault"
    capabilities = Capabilities(host_buffers=False, donation=True)

    def devices(self):
        if self._devices is None:
            self._devices = [VaultDevice(self, 0), VaultDevice(self, 1)]
        return list(self._devices)

    def compiler(self):
        return VaultCompiler(self.default_device())

    def transfer_to_device(self, array, device):
        self.check_device(device)
        if array.dtype == object:
            raise InvalidArgumentError("the vault holds arrays of numbers, not Python objects")
        handle = device.memory.allocate(array.nbytes)
        device.memory.write(handle, array)
        return VaultBuffer(handle, array.shape, array.dtype, device)


class VaultCompiler(Compiler):
    platform = "vault"

    def __init__(self, device):
        self.device = device

    def pipeline(self, **options):
        """The target-independent pipeline, the default fusion policy and scheduling."""
        return default_pipeline(**options)

    def compile(self, module, hooks=None):
        verify_module(module)
        pipeline = self.pipeline(dump_hook=hooks.pass_hook if hooks else None)
        pipeline.run(module)
        return VaultExecutable(module, self.device)


class VaultExecutable(Executable):
    platform = "vault"

    def __init__(self, module, device):
        super().__init__(module, device)
        # result leaf number -> parameter number it may be written into
        leaves = _leaf_indices(module.entry.root_instruction.shape)
        self._aliases = {leaves.index(out): param
                         for out, (param, param_index) in parse_input_output_alias(module).items()
                         if out in leaves and param_index == ()}

    def execute_buffers(self, buffers, donated=()):
        params = self.module.entry.parameters
        if len(buffers) != len(params):
            raise InvalidArgumentError(f"module {self.module.name} takes {len(params)} "
                                       f"argument(s), got {len(buffers)}")
        memory = self.device.memory
        args = []
        for i, (b, p) in enumerate(zip(buffers, params)):
            if b is TOKEN:
                args.append(TOKEN)
                continue
            if not isinstance(b, VaultBuffer) or b.device is not self.device:
                raise InvalidArgumentError(f"argument {i} is not a buffer on {self.device}")
            b.check_live(f"argument {i}")
            args.append(memory.load(b.handle, b.dtype, b.shape))
        result = Evaluator().evaluate(self.module, args)
        outs = []
        for k, leaf in enumerate(flatten_result(result)):
            if leaf is TOKEN:
                outs.append(TOKEN)
                continue
            leaf = np.asarray(leaf, order="C")
            target = self._aliases.get(k)
            if target is not None and target in donated and buffers[target].nbytes == leaf.nbytes \
                    and not buffers[target].is_deleted():
                handle = buffers[target].handle   # the donated block holds the result
                buffers[target].mark_donated()
            else:
                handle = memory.allocate(leaf.nbytes)
            memory.store(handle, leaf.tobytes())
            outs.append(VaultBuffer(handle, leaf.shape, leaf.dtype, self.device))
        return outs


def _leaf_indices(shape, index=()):
    if shape.is_tuple:
        return [leaf for i, s in enumerate(shape.tuple_shapes) for leaf in _leaf_indices(s, index + (i,))]
    return [index]
