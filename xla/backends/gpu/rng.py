"""Random numbers on the GPU: rng-bit-generator, rng and
rng-get-and-update-state, with the CPU backend's semantics
(``xla/backends/cpu/emit_rng.py``, which defines them):

- rng-bit-generator: bit-exact with the interpreter (Threefry-2x32,
  Philox-4x32): one thread per counter (``BitGeneratorPlan.emit_counter``),
  then a one-thread kernel writing the new state.
- rng: Philox-4x32-10 with the fixed key, counter ``(c + e, 0)`` for element
  ``e`` (row-major) of one execution, ``c`` a 64-bit counter the executable
  keeps in device memory (0 when it is loaded on the device), advanced by the
  element count after each execution of the instruction by a one-thread
  kernel. As on the CPU, values depend only on the sequence of rng
  executions of one executable (they are implementation-defined in XLA).
- rng-get-and-update-state: a 128-bit state in device memory (0 when
  loaded); a one-thread kernel returns the old value as u64[2] and adds
  ``delta``.

State that lives across executions is a *persistent* slice of a kernel
thunk: zero-filled once per device, like a constant.
"""
from xla.backends.cpu import loop_emitter as le
from xla.backends.cpu.emit_rng import (BitGeneratorPlan, check_rng, emit_state_update,
                                       rng_element, state_update_delta)
from xla.backends.cpu.kernels import Slice
from xla.backends.cpu.llvm_types import load_element
from xla.backends.cpu.loop_emitter import I64, i64
from xla.backends.gpu.kernels import Kernel, KernelThunk, finish_kernel, unsupported


def emit_rng_bit_generator(emitter, h, name):
    a = emitter.assignment
    plan = BitGeneratorPlan(h, unsupported)
    (state_op,) = h.operands
    in_key = Slice(a.buffer(state_op, ())).key
    state_key = Slice(a.buffer(h, (0,))).key
    out_key = Slice(a.buffer(h, (1,))).key
    if out_key == in_key:
        raise unsupported(h, "output sharing the state's buffer")
    thunks = []
    if plan.counters:
        keys = [in_key, out_key]
        kernel = Kernel(name, keys, h)
        prologue = plan.emit_prologue(kernel.b, kernel.ptrs[in_key])

        def counter(b, i):
            plan.emit_counter(b, prologue, kernel.ptrs[out_key], i)
        thunks.append(KernelThunk(name, finish_kernel(kernel, h, plan.counters, counter), keys,
                                  plan.counters, h.name))
    keys = list(dict.fromkeys([in_key, state_key]))
    kernel = Kernel(f"{name}_state", keys, h)
    text = finish_kernel(kernel, h, 1, lambda b, _: plan.emit_new_state(
        b, kernel.ptrs[in_key], kernel.ptrs[state_key]))
    thunks.append(KernelThunk(kernel.module.name, text, keys, 1, h.name))
    return thunks


def emit_rng(emitter, h, name):
    a = emitter.assignment
    check_rng(h, unsupported)
    shape = h.shape
    et = shape.element_type
    n = shape.num_elements()
    if n == 0:
        return []
    counter = (("persistent", f"{name}_counter"), 0)
    lo_key, hi_key = (Slice(a.buffer(o, ())).key for o in h.operands)
    out_key = Slice(a.buffer(h, ())).key
    keys = list(dict.fromkeys([lo_key, hi_key, out_key, counter]))
    kernel = Kernel(name, keys, h)

    def body(b, i):
        lo = load_element(b, kernel.ptrs[lo_key], et)
        hi = load_element(b, kernel.ptrs[hi_key], et)
        base = b.load(kernel.ptrs[counter], typ=I64)
        index = le.delinearize(b, i, list(shape.dimensions), le.major_to_minor(shape))
        rng_element(b, h, lo, hi, base, index, kernel.ptrs[out_key])
    first = KernelThunk(name, finish_kernel(kernel, h, n, body), keys, n, h.name,
                        persistent={counter[0]: 8})
    advance = Kernel(f"{name}_advance", [counter], h)

    def add(b, _):
        ptr = advance.ptrs[counter]
        b.store(b.add(b.load(ptr, typ=I64), i64(n)), ptr)
    second = KernelThunk(advance.module.name, finish_kernel(advance, h, 1, add), [counter], 1,
                         h.name)
    return [first, second]


def emit_rng_get_and_update_state(emitter, h, name):
    delta = state_update_delta(h, unsupported)
    state = (("persistent", f"{name}_state"), 0)
    out_key = Slice(emitter.assignment.buffer(h, ())).key
    keys = [out_key, state]
    kernel = Kernel(name, keys, h)
    text = finish_kernel(kernel, h, 1, lambda b, _: emit_state_update(
        b, h, delta, kernel.ptrs[state], kernel.ptrs[out_key]))
    return [KernelThunk(name, text, keys, 1, h.name, persistent={state[0]: 16})]
