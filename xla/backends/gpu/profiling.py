"""GPU executions under ``xla.profiler``: every kernel launch, library call
(cuBLAS, cuFFT), collective and device copy timed on the device.

While the profiler records (``xla.profiler.trace`` or
``--xla_hlo_profile``), an execution runs its thunks through a
``TimedDevice``: the device with each operation between two timestamps. On
a CUDA device they are events recorded on the stream (the GPU's own clock;
the host goes on queueing), read after the execution synchronizes and
placed on the host's timeline from a first event recorded when the stream
was idle; on the emulator, where a launch runs to completion before it
returns, the host's clock. Command buffers (CUDA graphs) are not replayed
while profiling, so that each kernel is seen on its own, as XLA does.

Each span is an instruction event (name, opcode, bytes, FLOPs: the same
costs the CPU's instrumentation records), on a timeline row of its own
(``"<device> stream"``), nested in the execution's span, so
``Profile.summary()`` and the Chrome trace treat both backends alike.
"""
import contextlib
import time

from xla.runtime import profiler


class TimedDevice:
    """``device`` with its launches, library calls and copies timed; every
    other attribute is the device's own."""

    def __init__(self, device, module, assignment):
        self._device = device
        self._module = module.name
        self._costs = {}
        for comp in module.computations:
            for h in comp.instructions:
                self._costs[h.name] = h
        self._assignment = assignment
        self._spans = []       # (instruction name, begin mark, end mark)
        self._events = not getattr(device, "emulated", True)
        self._host_start = time.perf_counter_ns()
        if self._events:
            device.synchronize()
            self._host_start = time.perf_counter_ns()
            self._origin = device.context.record_event()

    def __getattr__(self, name):
        return getattr(self._device, name)

    def _mark(self):
        return self._device.context.record_event() if self._events else time.perf_counter_ns()

    @contextlib.contextmanager
    def span(self, instruction, nbytes=0):
        """Times what the block enqueues as ``instruction`` (None: a copy of
        ``nbytes``; a collective's span holds its host staging and rendezvous)."""
        begin = self._mark()
        yield
        self._spans.append((instruction, begin, self._mark(), nbytes))

    def launch(self, kernel, thunk, pointers):
        with self.span(thunk.instruction):
            self._device.launch(kernel, thunk, pointers)

    def gemm(self, thunk, *operands):
        with self.span(thunk.instruction):
            self._device.gemm(thunk, *operands)

    def fft(self, thunk, *operands):
        with self.span(thunk.instruction):
            self._device.fft(thunk, *operands)

    def copy(self, dst, src):
        with self.span(None, 2 * dst.nbytes):
            self._device.copy(dst, src)

    def finish(self):
        """Waits for the device and records the execution and every span."""
        self._device.synchronize()
        end = time.perf_counter_ns()
        track = f"{self._device} stream"
        if self._events:
            ctx = self._device.context
            at = lambda event: self._host_start + int(ctx.elapsed_ms(self._origin, event) * 1e6)
        else:
            at = lambda mark: mark
        for instruction, begin, stop, copied in self._spans:
            if instruction is None:      # a copy between thunks (loop state, arguments)
                name, opcode, nbytes, flops = "copy", "copy", copied, 0
            else:
                h = self._costs.get(instruction)
                name, opcode = instruction, (h.opcode if h is not None else "?")
                nbytes, flops = (profiler.instruction_cost(h, self._assignment)
                                 if h is not None and self._assignment.has_buffers(h) else (0, 0))
            profiler.record_instruction(self._module, name, opcode, nbytes, flops,
                                        at(begin), at(stop), track)
        if self._events:
            last = max([at(s) for _, _, s, _ in self._spans], default=end)
            end = max(end, last)
            for _, begin, stop, _ in self._spans:
                ctx.destroy_event(begin)
                ctx.destroy_event(stop)
            ctx.destroy_event(self._origin)
        profiler.record_execution(self._module, self._host_start, end)
