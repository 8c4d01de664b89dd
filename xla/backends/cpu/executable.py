"""CpuExecutable: runs the JIT-compiled entry function on NumPy arrays.

The entry function takes a table with one pointer per buffer allocation
(``ir_emitter``). Per executable: the constant allocations (filled once from
the literals) and the temp arena (reused by every call, so calls are
serialized with a lock). Per call: the parameters (read in place when their
layout is row-major and they are 16-byte aligned, otherwise copied), and
fresh output allocations, from which the results are views (copies when a
result lives in a parameter or constant allocation); on the fast path
(``_FastPath``) those of 32 KiB or more come from a cache of buffers that
keeps their pages mapped between calls (``python/output_buffers.cc``).
"""
import contextlib
import os
import signal
import threading
import time

import numpy as np

from xla.backends.cpu.ir_emitter import literal_array, physical_bytes
from xla.backends.cpu.loop_emitter import major_to_minor
from xla.hlo.evaluator.evaluator import _check_arg
from xla.errors import InvalidArgumentError
from xla.runtime import Executable, profiler
from xla.runtime.compile import copy_args

from xla._core import ExecutableState, cpu_execute

try:
    from xla._core import PreparedCpuCall
except ImportError:   # an extension built before it: prepared_call's call is Python
    PreparedCpuCall = None

try:
    # Results of 32 KiB or more from a cache of buffers, whose pages stay
    # mapped from call to call (python/output_buffers.cc).
    from xla._core import CPU_OUTPUT_CACHE_MIN_BYTES as CACHED_OUTPUT_BYTES
    from xla._core import cpu_output_array
except ImportError:   # an extension built before it
    CACHED_OUTPUT_BYTES, cpu_output_array = None, None


def _allocator(shape, dtype):
    """What allocates a fast-path result of ``shape`` and ``dtype``:
    ``np.empty``, or the output buffer cache's allocator where the array
    takes at least CACHED_OUTPUT_BYTES."""
    if cpu_output_array is None or \
            int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize < CACHED_OUTPUT_BYTES:
        return np.empty
    return cpu_output_array

ALIGN = 64


def aligned_bytes(n):
    """A zeroed uint8 array of ``n`` bytes starting on an ALIGN boundary."""
    try:
        raw = np.zeros(n + ALIGN, dtype=np.uint8)
    except MemoryError:
        from xla.errors import ResourceExhaustedError
        raise ResourceExhaustedError(f"cpu: cannot allocate a buffer of {n:,} bytes") from None
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + n]


def to_physical(array, shape):
    order = major_to_minor(shape)
    if order != list(range(shape.rank)):
        array = np.transpose(array, order)
    return np.ascontiguousarray(array)


def from_physical(flat, shape):
    order = major_to_minor(shape)
    physical = flat.reshape([shape.dimensions[d] for d in order])
    if order == list(range(shape.rank)):
        return physical
    return np.transpose(physical, np.argsort(order))


class CpuExecutable(Executable):
    platform = "cpu"

    compile_timings = None    # stage -> seconds, and kernel counts (CpuCompiler.compile)
    kernel_opt_level = 3      # the LLVM opt level the kernels were compiled at
    kernel_skip = 0           # and the passes left out (jit.SKIP_*)
    pass_timings = None       # HLO pass name -> seconds
    # A DynamicEntryBinding (xla/service/dynamic_entry.py) when the module
    # had dynamic parameters or results: arguments are padded to their
    # bounds and the result sliced to its dynamic sizes around each call.
    dynamic_binding = None

    def __init__(self, module, assignment, jit_module, emitted=None, kernel_objects=None,
                 transform=None, device=None):
        """``jit_module`` runs the driver (``entry``); ``emitted`` is the
        ``kernels.EmittedModule`` it came from (None when loaded from the
        persistent cache), ``kernel_objects`` the kernels' native code by
        symbol (empty when they were compiled into the driver's module),
        ``transform`` what was applied to each IR text before compiling."""
        if device is None:
            from xla.runtime import get_platform
            device = get_platform("cpu").default_device()
        super().__init__(module, device)
        self.assignment = assignment
        self.jit_module = jit_module
        self.emitted = emitted
        self.kernel_objects = dict(kernel_objects or {})
        self._transform = transform or (lambda text: text)
        self._ir_text = None
        self._optimized_ir_text = None
        self._address = jit_module.address("entry")
        self._lock = threading.Lock()
        allocations = assignment.allocations
        self._num_allocations = len(allocations)
        self._persistent = {}  # allocation index -> uint8 array (constants, temp arena)
        self._parameters = {}  # allocation index -> (parameter number, shape index)
        self._outputs = []  # allocation indices allocated per call
        for alloc in allocations:
            if alloc.kind == "parameter":
                self._parameters[alloc.index] = (alloc.parameter_number, alloc.parameter_index)
            elif alloc.kind == "constant":
                memory = aligned_bytes(alloc.size)
                for b in alloc.buffers:
                    if b.shape.is_array and b.instruction.opcode == "constant":
                        data = physical_bytes(literal_array_at(b.instruction, b.index), b.shape)
                        memory[b.offset:b.offset + len(data)] = np.frombuffer(data, np.uint8)
                self._persistent[alloc.index] = memory
            elif alloc.kind == "preallocated-temp":
                self._persistent[alloc.index] = aligned_bytes(alloc.size)
            else:
                self._outputs.append(alloc.index)
        self._sizes = [a.size for a in allocations]
        # The cancel flag while loops test (the table's last entry; see
        # execute's timeout): an i32, 0 while the execution may go on.
        self._cancel = aligned_bytes(4)
        self._loops = any(i.opcode == "while" for i in module.all_instructions())
        from xla.backends.cpu import collectives
        # Collectives report failures after the call (collectives.take_error).
        self._collectives = collectives.has_collectives(module)
        self._fast = None if self._collectives else _FastPath.build(self)
        self._device_copy_args = (module, assignment, jit_module, emitted, kernel_objects, transform)

    @property
    def parameter_shapes(self):
        if self.dynamic_binding is not None:
            return list(self.dynamic_binding.parameter_shapes)
        return super().parameter_shapes

    @property
    def result_shape(self):
        if self.dynamic_binding is not None:
            return self.dynamic_binding.result_shape
        return super().result_shape

    @property
    def ir_text(self):
        """The LLVM IR before optimization: the driver module, then each
        distinct kernel's module (None when loaded from the cache)."""
        if self._ir_text is None and self.emitted is not None:
            self._ir_text = self._transform(self.emitted.text())
        return self._ir_text

    @property
    def optimized_ir_text(self):
        """The optimized LLVM IR of the driver and the kernels (kernels
        compiled separately are optimized again here, for reading)."""
        if self._optimized_ir_text is None and self.jit_module.optimized_ir is not None:
            from xla.backends.cpu import jit
            from xla.backends.cpu.kernel_compiler import kernel_skip
            parts = [self.jit_module.optimized_ir]
            if self.kernel_objects and self.emitted is not None:
                for symbol in sorted(self.kernel_objects):
                    text = self.emitted.kernels[symbol]
                    parts.append(jit.optimized_ir(self._transform(text), self.kernel_opt_level,
                                                  kernel_skip(text, self.kernel_skip)))
            self._optimized_ir_text = "\n".join(parts)
        return self._optimized_ir_text

    def for_device(self, ordinal):
        """A copy with its own constants, temporaries and lock, sharing the
        compiled code (devices of a replicated run execute concurrently)."""
        exe = CpuExecutable(*self._device_copy_args, device=self.device)
        exe.kernel_opt_level = self.kernel_opt_level
        exe.kernel_skip = self.kernel_skip
        exe.dynamic_binding = self.dynamic_binding
        exe.compile_timings, exe.pass_timings = self.compile_timings, self.pass_timings
        return exe

    def dump_artifacts(self):
        """What ``--xla_dump_to`` writes for this executable: dump-file suffix -> data."""
        return {
            "-buffer-assignment.txt": self.assignment.to_text(),
            "-memory-usage-report.txt": self.assignment.memory_usage_report(),
            "-compile-times.txt": self.compile_times_report(),
            "ir-no-opt.ll": self.ir_text,
            "ir-with-opt.ll": self.optimized_ir_text,
            "o": self.jit_module.object_code,
        }

    def compile_times_report(self):
        """Seconds of each compile stage and HLO pass, and the kernel counts
        (the ``-compile-times.txt`` dump)."""
        lines = [f"compile times of module {self.module.name} (cpu)", "", "stages:"]
        for name, value in (self.compile_timings or {}).items():
            lines.append(f"  {name:<24} {value:10.4f} s" if isinstance(value, float)
                         else f"  {name:<24} {value:10d}")
        lines += ["", "HLO passes in pipeline order (seconds summed over runs; a",
                  "sub-pipeline's total first, then its passes as pipeline/pass):"]
        for name, seconds in (self.pass_timings or {}).items():
            lines.append(f"  {name:<48} {seconds:10.4f} s")
        return "\n".join(lines) + "\n"

    def execute(self, *args, donated=(), timeout=None):
        """Runs the module on NumPy arrays (see ``_execute_hooked``).

        A module with while loops can be stopped: run from the main thread,
        Ctrl-C sets the executable's cancel flag (``_CtrlC``), which every
        while loop tests on each iteration, so the execution stops within a
        loop iteration (a single kernel runs to its end) and
        KeyboardInterrupt is raised; with a ``timeout`` (seconds) it runs
        on a worker thread while this one waits, and the timeout (or
        Ctrl-C) sets the flag, then DeadlineExceededError (or
        KeyboardInterrupt) is raised. Other modules always finish."""
        fast = self._fast
        if fast is not None and timeout is None and not self._loops and \
                self.dynamic_binding is None and not self.execute_hooks and \
                profiler._active is None and profiler._process is None and \
                fast.accepts(args, donated):
            # What the calls below come to for such arguments, without them.
            result = fast.run(args)
            if result is not None:
                return result
        if timeout is not None:
            return self._execute_interruptibly(args, donated, timeout)
        if self._loops and threading.current_thread() is threading.main_thread():
            watch = _ctrl_c_watch()
            # Only where Ctrl-C raises KeyboardInterrupt (Python's default
            # handler): a handler of the program's own may mean to carry on.
            if (watch is not None and watch.flag is None
                    and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
                return self._execute_watched(args, donated, watch)
            return self._execute_interruptibly(args, donated, timeout)
        return self._execute_hooked(args, donated)

    def prepared_call(self, donated=()):
        """``Executable.prepared_call``: ``_FastPath``'s run without its
        per-call checks of the arguments' types, dtypes and shapes (the
        caller's guarantee); contiguity and alignment are still checked by
        the C++ call. None for what ``execute`` runs otherwise: modules with
        while loops (Ctrl-C stops them), dynamic shapes, collectives, or
        an aliased parameter that is not donated (it would be copied)."""
        fast = self._fast
        if fast is None or self._loops or self.dynamic_binding is not None or \
                not set(fast.aliased) <= set(donated):
            return None
        return fast.prepared(self)

    def _execute_watched(self, args, donated, watch):
        """Runs on this (the main) thread while ``watch`` turns a Ctrl-C into
        the cancel flag (``_CtrlC``): the loop stops within an iteration, and
        Python's pending SIGINT raises KeyboardInterrupt as the call returns."""
        flag = self._cancel.view(np.int32)
        flag[0] = 0
        with watch.watching(flag):
            try:
                result = self._execute_hooked(args, donated)
            finally:
                stopped = bool(flag[0])
                flag[0] = 0
        if stopped:   # normally raised already, by Python's handler as the call returned
            raise KeyboardInterrupt
        return result

    def _execute_interruptibly(self, args, donated, timeout):
        from xla.errors import DeadlineExceededError
        flag = self._cancel.view(np.int32)
        box = {}
        # Waited on instead of Thread.join: a join that KeyboardInterrupt
        # interrupts can mark the thread stopped while it still runs
        # (CPython 3.11), and the loop would go on after the flag's reset.
        done = threading.Event()

        def work():
            try:
                box["result"] = self._execute_hooked(args, donated)
            except BaseException as e:   # noqa: BLE001 - re-raised on the caller's thread
                box["error"] = e
            finally:
                done.set()

        def stop():
            flag[0] = 1
            while True:
                try:
                    done.wait()
                    return
                except KeyboardInterrupt:   # another Ctrl-C: the loop stops all the same
                    continue

        flag[0] = 0
        _start(work)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not done.is_set():
                wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
                done.wait(wait)
                if deadline is not None and not done.is_set() and time.monotonic() >= deadline:
                    stop()
                    raise DeadlineExceededError(
                        f"execution of {self.module.name} exceeded its timeout of {timeout:g} s "
                        "and was stopped")
        except KeyboardInterrupt:
            stop()
            raise
        finally:
            if done.is_set():
                flag[0] = 0
        if "error" in box:
            raise box["error"]
        return box["result"]

    def _execute_hooked(self, args, donated=()):
        """Runs the module on NumPy arrays; a tuple result comes back as a tuple.

        ``donated``: numbers of parameters whose arrays the caller gives up
        (``xla.jit``'s ``donate_argnums``). A result the module's
        ``input_output_alias`` places in such a parameter's allocation is
        written straight into that array, which is returned as the result,
        when it is a writeable, 16-byte aligned, row-major array of the
        parameter's exact type; otherwise (and for parameters not donated,
        e.g. when replaying a dump with aliases) the parameter is copied
        first and the caller's array is left alone."""
        if self.execute_hooks or profiler._active is not None or profiler._process is not None:
            recorded = copy_args(args) if donated and self.execute_hooks else args
            start = time.perf_counter_ns()
            result = self._execute(args, donated)
            profiler.record_execution(self.module.name, start, time.perf_counter_ns())
            for hook in self.execute_hooks:
                hook(recorded, result)
            return result
        return self._execute(args, donated)

    def _execute(self, args, donated):
        binding = self.dynamic_binding
        if binding is not None:
            return binding.unpad_result(self._execute_padded(binding.pad_arguments(args), donated))
        return self._execute_padded(args, donated)

    def _execute_padded(self, args, donated):
        fast = self._fast
        if fast is not None and fast.accepts(args, donated):
            result = fast.run(args)
            if result is not None:
                return result
        entry = self.module.entry
        params = entry.parameters
        if len(args) != len(params):
            raise InvalidArgumentError(
                f"module {self.module.name} takes {len(params)} argument(s), got {len(args)}")
        checked = [_check_arg(a, p.shape, f"argument {i} ({p.name})")
                   for i, (a, p) in enumerate(zip(args, params))]
        memory = dict(self._persistent)
        in_place = {}   # allocation index -> the donated array written in place
        for index, (number, shape_index) in self._parameters.items():
            value = checked[number]
            for i in shape_index or ():
                value = value[i]
            param_shape = params[number].shape.subshape(shape_index or ())
            if not param_shape.is_array:
                memory[index] = aligned_bytes(self._sizes[index])
                continue
            array = to_physical(np.asarray(value), param_shape)
            if (self.assignment.allocations[index].maybe_live_out and number in donated
                    and not shape_index and array is args[number] and array.flags.writeable
                    and array.ctypes.data % 16 == 0):
                in_place[index] = array
            elif array.ctypes.data % 16 or self.assignment.allocations[index].maybe_live_out:
                copy = aligned_bytes(array.nbytes)
                copy[:] = array.reshape(-1).view(np.uint8)
                array = copy
            memory[index] = array
        for index in self._outputs:
            memory[index] = aligned_bytes(self._sizes[index])
        table = [memory[i].ctypes.data if i in memory else 0 for i in range(self._num_allocations)]
        table.append(self._cancel.ctypes.data)
        with self._lock:
            cpu_execute(self._address, table)
            if self._collectives:
                from xla.backends.cpu import collectives
                error = collectives.take_error()
                if error is not None:
                    raise error
            root = entry.root_instruction
            return self._result(root, root.shape, (), memory, in_place)

    def _result(self, root, shape, index, memory, in_place=None):
        if shape.is_tuple:
            return tuple(self._result(root, s, index + (i,), memory, in_place)
                         for i, s in enumerate(shape.tuple_shapes))
        if not shape.is_array:
            from xla.hlo.evaluator.registry import TOKEN
            return TOKEN
        buffer = self.assignment.buffer(root, index)
        alloc = buffer.allocation
        raw = memory[alloc.index]
        if in_place and alloc.index in in_place and buffer.offset == 0 \
                and raw.shape == shape.dimensions and raw.dtype == shape.dtype:
            return raw
        raw = raw.reshape(-1).view(np.uint8) if raw.dtype != np.uint8 else raw
        nbytes = buffer.shape.byte_size()
        flat = raw[buffer.offset:buffer.offset + nbytes].view(shape.dtype)
        value = from_physical(flat, shape)
        if alloc.index not in self._outputs or value.base is None:
            value = np.array(value)
        return value


class _Worker:
    """The thread interruptible executions run on, kept between calls:
    starting a thread costs about 100 us, handing work to a waiting one a
    few. One execution at a time; a second that finds it busy gets a thread
    of its own."""

    def __init__(self):
        self.busy = threading.Lock()
        self.ready = threading.Event()
        self.task = None
        self.thread = threading.Thread(target=self._run, name="xla-execute", daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            self.ready.wait()
            self.ready.clear()
            task, self.task = self.task, None
            try:
                task()
            finally:
                self.busy.release()

    def submit(self, task):
        if not self.busy.acquire(blocking=False):
            return False
        self.task = task
        self.ready.set()
        return True


_worker = None
_worker_lock = threading.Lock()


class _CtrlC:
    """Ctrl-C during an execution on the main thread, without moving the
    execution to another thread (a hand-off costs tens of microseconds per
    call): while it runs, Python's own C-level SIGINT handler writes to a
    wakeup pipe (``signal.set_wakeup_fd``) that a watcher thread reads, and
    the watcher sets the running execution's cancel flag, which every while
    loop tests on each iteration. A wakeup fd already set (asyncio's) gets
    the bytes forwarded and is restored afterwards."""

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        self.flag = None
        self.forward = -1
        threading.Thread(target=self._watch, name="xla-ctrl-c", daemon=True).start()

    def _watch(self):
        while True:
            data = os.read(self.read_fd, 64)
            flag, forward = self.flag, self.forward
            if flag is not None and signal.SIGINT in data:
                flag[0] = 1
            if forward != -1:
                try:
                    os.write(forward, data)
                except OSError:
                    pass

    @contextlib.contextmanager
    def watching(self, flag):
        self.flag = flag
        self.forward = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        try:
            yield
        finally:
            signal.set_wakeup_fd(self.forward)
            self.forward = -1
            self.flag = None


_ctrl_c = None


def _ctrl_c_watch():
    """The process's ``_CtrlC`` (made on first use; None where no pipe can be made)."""
    global _ctrl_c
    if _ctrl_c is None:
        try:
            _ctrl_c = _CtrlC()
        except OSError:
            return None
    return _ctrl_c


def _start(task):
    """Runs ``task`` (which catches what it raises) on another thread."""
    global _worker
    with _worker_lock:
        if _worker is None or not _worker.thread.is_alive():
            _worker = _Worker()
        worker = _worker
    if not worker.submit(task):
        threading.Thread(target=task, name="xla-execute", daemon=True).start()


def literal_array_at(instr, index):
    """The array at ``index`` of a (possibly tuple) constant."""
    if not index:
        return literal_array(instr)
    literal = instr.literal
    shape = instr.shape
    for i in index:
        literal, shape = literal[i], shape.tuple_shapes[i]
    from xla.hlo.ir import HloInstruction
    return literal_array(HloInstruction.create_constant(literal, shape))


class _FastPath:
    """The per-call path when arguments need no conversion.

    Built when every parameter is an array in its own row-major parameter
    allocation, and every result leaf fills an output allocation of its own
    or a parameter's whole allocation (``input_output_alias``: the
    parameter is ``aliased``, written with the result). A call whose
    arguments are C-contiguous NumPy arrays of exactly the parameter dtypes
    and shapes, the aliased ones donated and writeable, then costs a few
    checks, one ``np.empty`` per result and one C++ call
    (``ExecutableState.try_run``: table, arena and constants prepared once,
    GIL released; contiguity and 16-byte alignment checked there, and an
    array that fails them declined without an exception); an aliased
    parameter's array is that result. Anything else takes the general path.
    ``prepared`` is the same call for a caller that checked the arguments'
    types itself (``CpuExecutable.prepared_call``), in C++
    (``PreparedCpuCall``: outputs allocated, checked and picked there; what
    xla.jit's ``JitDispatch`` runs).
    """

    def __init__(self, state, signature, outputs, result, aliased=()):
        self.state = state
        self.signature = signature  # [(dtype, dims)] per parameter
        self.outputs = outputs  # [(dtype, dims) or byte count] per output allocation
        # index into outputs (or -1 - parameter number), or a nested tuple of them
        self.result = result
        self.aliased = aliased  # parameter numbers whose allocation holds a result
        self.run = self._runner()

    @staticmethod
    def build(exe):
        entry = exe.module.entry
        params = entry.parameters
        arg_slots, aliased = [], []
        for number, p in enumerate(params):
            shape = p.shape
            if not shape.is_array or major_to_minor(shape) != list(range(shape.rank)):
                return None
            alloc = exe.assignment.buffer(p, ()).allocation
            if alloc.kind != "parameter" or alloc.parameter_index not in ((), None):
                return None
            if alloc.maybe_live_out:
                aliased.append(number)
            arg_slots.append(alloc.index)
        if len(set(arg_slots)) != len(arg_slots):
            return None
        output_slots = list(exe._outputs)
        position = {a: i for i, a in enumerate(output_slots)}
        outputs = [exe._sizes[a] for a in output_slots]
        root = entry.root_instruction

        def leaf(shape, index):
            if shape.is_tuple:
                parts = [leaf(s, index + (i,)) for i, s in enumerate(shape.tuple_shapes)]
                return None if None in parts else tuple(parts)
            if not shape.is_array or major_to_minor(shape) != list(range(shape.rank)):
                return None
            buffer = exe.assignment.buffer(root, index)
            slot = buffer.allocation.index
            if slot in arg_slots:     # a donated parameter's array holds it
                number = arg_slots.index(slot)
                p = params[number].shape
                if number not in aliased or buffer.offset != 0 or \
                        (p.dtype, p.dimensions) != (shape.dtype, shape.dimensions):
                    return None
                return -1 - number
            if slot not in position or buffer.offset != 0 or exe._sizes[slot] != shape.byte_size():
                return None
            k = position[slot]
            if not isinstance(outputs[k], int):
                return None  # two leaves in one allocation
            outputs[k] = (shape.dtype, shape.dimensions)
            return k

        result = leaf(root.shape, ())
        if result is None:
            return None
        arena = [(a.index, 0) for a in exe.assignment.allocations if a.kind == "preallocated-temp"]
        arena_size = max([exe._sizes[i] for i, _ in arena], default=0)
        state = ExecutableState(exe._address, exe._num_allocations + 1, arg_slots, output_slots,
                                arena_size, arena, alignment=16)
        state.set_slot(exe._num_allocations, exe._cancel)
        for index, memory in exe._persistent.items():
            if exe.assignment.allocations[index].kind == "constant":
                state.set_slot(index, memory)
        signature = [(p.shape.dtype, p.shape.dimensions) for p in params]
        return _FastPath(state, signature, outputs, result, tuple(aliased))

    def accepts(self, args, donated=()):
        """The arguments are NumPy arrays of the parameters' dtypes and
        shapes, the aliased ones donated and writeable (contiguity and
        alignment: ``run``'s C++ call checks them)."""
        if len(args) != len(self.signature):
            return False
        for a, (dtype, dims) in zip(args, self.signature):
            if type(a) is not np.ndarray or a.shape != dims or a.dtype != dtype:
                return False
        for n in self.aliased:
            if n not in donated or not args[n].flags.writeable:
                return False
        return True

    def _runner(self):
        """``run(args)``: the result, or None where the general path must
        run (an argument not C-contiguous or aligned, which the C++ call
        declines before running anything; no memory for an output)."""
        try_run = getattr(self.state, "try_run", None)
        if try_run is None:    # an extension built before try_run: its errors are slower
            state_run = self.state.run

            def try_run(args, buffers):
                try:
                    state_run(args, buffers)
                except ValueError:
                    return False
                return True
        outputs = [((o,), _BYTE) if isinstance(o, int) else (o[1], o[0]) for o in self.outputs]
        # (allocator, shape, dtype): np.empty, or the output buffer cache's
        # for the large ones (chosen once: a call into it costs more).
        outputs = [(_allocator(shape, dtype), shape, dtype) for shape, dtype in outputs]
        pick = _picker(self.result)
        if len(outputs) == 1 and self.result == 0:   # one array in the one output allocation
            (empty, shape, dtype), = outputs

            def run(args):
                try:
                    out = empty(shape, dtype)
                except MemoryError:
                    return None
                return out if try_run(args, (out,)) else None
            return run

        def run(args):
            try:
                buffers = tuple([empty(shape, dtype) for empty, shape, dtype in outputs])
            except MemoryError:
                return None
            return pick(buffers, args) if try_run(args, buffers) else None
        return run

    def prepared(self, exe):
        """``CpuExecutable.prepared_call``'s callable (see there): a
        ``PreparedCpuCall`` (python/cpu_runtime_bindings.cc: this run in
        C++, which xla.jit's ``JitDispatch`` calls without Python), or
        where the extension predates it, the same in Python."""
        if PreparedCpuCall is not None:
            outputs = [((o,), _BYTE) if isinstance(o, int) else (tuple(o[1]), o[0])
                       for o in self.outputs]
            return PreparedCpuCall(self.state, outputs, self.result, list(self.aliased),
                                   [(exe, "execute_hooks"), (profiler, "_active"),
                                    (profiler, "_process")])
        run, aliased = self.run, self.aliased

        def call(args):
            if exe.execute_hooks or profiler._active is not None or profiler._process is not None:
                return None
            for n in aliased:
                if not args[n].flags.writeable:
                    return None
            return run(args)
        return call


_BYTE = np.dtype(np.uint8)


def _picker(result):
    """A function of (buffers, args) that picks ``_FastPath.result`` out of
    them: an index into the output buffers, or -1 - parameter number (its
    argument), or a nested tuple of those."""
    if isinstance(result, tuple):
        if all(isinstance(r, int) for r in result):
            return lambda buffers, args: tuple([buffers[r] if r >= 0 else args[-1 - r]
                                                for r in result])
        parts = [_picker(r) for r in result]
        return lambda buffers, args: tuple([p(buffers, args) for p in parts])
    if result >= 0:
        return lambda buffers, args: buffers[result]
    number = -1 - result
    return lambda buffers, args: args[number]
