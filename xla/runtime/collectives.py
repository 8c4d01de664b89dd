"""Running one program on many devices in one process: the communicator
that collectives rendezvous through, the per-thread device context, and
``ReplicatedExecutable``.

``xla.compile(module, platform, num_replicas=N, num_partitions=M)`` compiles
the module once and makes one executable per device (``Executable.for_device``:
the interpreter's is reentrant; the CPU's gets its own temporary memory).
``execute(per_device_args)`` runs device ``d = replica * M + partition`` on
its own thread with ``per_device_args[d]``, and returns the results in the
same order. While a device runs, ``current_device()`` (a thread-local) is its
``DeviceContext``: the backends read their replica and partition from it,
and their collectives exchange values through it.

The communicator is a rendezvous: every participant of a collective hands
in its value under the same key and waits for the others; each then gets all
values in group order. A participant that fails aborts the rendezvous, so
the others raise instead of waiting forever; so does one that waits longer
than ``timeout`` seconds (a program whose devices disagree about which
collectives they run).

``run_collective`` is what a backend's collective does once its operands
are host arrays: the evaluator's handler for the instruction, on this
thread's device. The CPU's runtime calls it on views of its buffers; the
GPU's collective thunks on copies staged through the host.
"""
import threading

import numpy as np

from xla.errors import InvalidArgumentError, XlaError

_local = threading.local()

# The instructions a backend runs through ``run_collective``.
COLLECTIVE_OPCODES = frozenset(["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                "collective-permute", "collective-broadcast", "replica-id",
                                "partition-id"])


def current_device():
    """The DeviceContext of the execution running on this thread, or None."""
    return getattr(_local, "device", None)


def _evaluator():
    """The evaluator state of this thread's current execution (its
    collective counters key the rendezvous, so a new execution, which has a
    new DeviceContext, starts them afresh)."""
    from xla.hlo.evaluator import Evaluator
    device = current_device()
    state = getattr(_local, "evaluator", None)
    if state is None or state[0] is not device:
        state = _local.evaluator = (device, Evaluator(device=device))
    return state[1]


def run_collective(instr, operands, outs):
    """Runs collective ``instr`` (one of ``COLLECTIVE_OPCODES``) for the
    device this thread executes (``current_device()``; None: one device,
    where every group is the device itself): ``operands`` are the array
    leaves of its operands, ``outs`` writable row-major arrays, one per
    leaf of its result, which get the result. The semantics are the
    evaluator's (``xla.hlo.evaluator.ops_collectives``); an all-reduce whose
    transport reduces by itself (MPI) writes into ``outs`` directly."""
    from xla.hlo.evaluator.ops_collectives import all_reduce_into
    from xla.hlo.evaluator.registry import HANDLERS
    if instr.opcode not in COLLECTIVE_OPCODES:
        raise InvalidArgumentError(f"{instr.opcode} {instr.name} is not a collective")
    evaluator = _evaluator()
    if instr.opcode == "all-reduce" and all_reduce_into(instr, evaluator, operands, outs):
        return
    value = HANDLERS[instr.opcode](instr, [np.array(a) for a in operands], evaluator)
    leaves = list(value) if instr.shape.is_tuple else [value]
    if len(leaves) != len(outs):
        raise InvalidArgumentError(f"{instr.opcode} {instr.name}: {len(leaves)} result leaves, "
                                   f"{len(outs)} buffers")
    for leaf, out in zip(leaves, outs):
        np.copyto(out, np.asarray(leaf, out.dtype).reshape(out.shape))


class _Slot:
    def __init__(self, n):
        self.values = [None] * n
        self.arrived = 0
        self.left = 0


class InProcessCommunicator:
    """Rendezvous among threads of one process."""

    def __init__(self, num_devices, timeout=300.0):
        self.num_devices = num_devices
        self.timeout = timeout
        self._cond = threading.Condition()
        self._slots = {}
        self._error = None

    def abort(self, error):
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    def exchange(self, key, participants, me, value):
        """Hands in ``value`` as participant ``me`` (an index into
        ``participants``); returns every participant's value."""
        n = len(participants)
        with self._cond:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = _Slot(n)
            slot.values[me] = value
            slot.arrived += 1
            if slot.arrived == n:
                self._cond.notify_all()
            ok = self._cond.wait_for(lambda: slot.arrived == n or self._error is not None,
                                     timeout=self.timeout)
            if self._error is not None:
                raise InvalidArgumentError(f"collective {key[0]} abandoned: another device "
                                           f"failed ({self._error})")
            if not ok:
                error = InvalidArgumentError(
                    f"collective {key[0]}: {slot.arrived} of {n} participants arrived within "
                    f"{self.timeout:g} s (do all devices run the same collectives?)")
                self._error = error
                self._cond.notify_all()
                raise error
            values = list(slot.values)
            slot.left += 1
            if slot.left == n:
                del self._slots[key]
            return values


class ReplicatedExecutable:
    """One program on ``num_replicas x num_partitions`` devices of a platform."""

    def __init__(self, executables, num_replicas, num_partitions, timeout=300.0):
        if len(executables) != num_replicas * num_partitions:
            raise InvalidArgumentError("one executable per device is needed")
        self.executables = executables
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions
        self.timeout = timeout
        self.module = executables[0].module
        self.platform = executables[0].platform

    @property
    def num_devices(self):
        return self.num_replicas * self.num_partitions

    def execute(self, per_device_args):
        """``per_device_args[d]``: the arguments of device d (replica d // M,
        partition d % M); returns the list of results, one per device.
        In a multi-process job (``xla.distributed``), the arguments and the
        result of this process's one device."""
        from xla.runtime import distributed
        if distributed.process_count() > 1:
            return self._execute_in_job(list(per_device_args))
        n = self.num_devices
        per_device_args = list(per_device_args)
        if len(per_device_args) != n:
            raise InvalidArgumentError(f"{n} devices ({self.num_replicas} replicas x "
                                       f"{self.num_partitions} partitions) need {n} argument "
                                       f"lists, got {len(per_device_args)}")
        from xla.hlo.evaluator.ops_collectives import DeviceContext
        comm = InProcessCommunicator(n, self.timeout)
        results, errors = [None] * n, [None] * n

        def run(d):
            replica, partition = divmod(d, self.num_partitions)

            def exchange(key, participants, value):
                return comm.exchange(key, participants, participants.index((replica, partition)),
                                     value)
            _local.device = DeviceContext(replica, partition, self.num_replicas,
                                          self.num_partitions, exchange)
            try:
                args = per_device_args[d]
                results[d] = self.executables[d].execute(*(args if isinstance(args, (list, tuple))
                                                           else (args,)))
            except BaseException as e:   # noqa: BLE001 - re-raised below, on the caller's thread
                errors[d] = e
                comm.abort(e)
            finally:
                _local.device = None

        threads = [threading.Thread(target=run, args=(d,), name=f"xla-device-{d}") for d in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        first = next((e for e in errors if e is not None and not _is_abandoned(e)), None)
        first = first or next((e for e in errors if e is not None), None)
        if first is not None:
            raise first
        return results

    def _execute_in_job(self, per_device_args):
        from xla.runtime import distributed
        n, processes = self.num_devices, distributed.process_count()
        if n != processes:
            raise InvalidArgumentError(f"{n} devices ({self.num_replicas} replicas x "
                                       f"{self.num_partitions} partitions) in a job of {processes} "
                                       "processes: one device per process is needed")
        if len(per_device_args) != 1:
            raise InvalidArgumentError(f"in a job of {processes} processes, execute takes the "
                                       f"arguments of this process's device only ([args]), got "
                                       f"{len(per_device_args)} lists")
        from xla.hlo.evaluator.ops_collectives import DeviceContext
        d = distributed.process_index()
        replica, partition = divmod(d, self.num_partitions)
        mpi = distributed.MpiExchange(self.num_partitions)
        _local.device = DeviceContext(replica, partition, self.num_replicas, self.num_partitions,
                                      mpi.exchange, mpi.all_reduce)
        try:
            args = per_device_args[0]
            return [self.executables[d].execute(*(args if isinstance(args, (list, tuple))
                                                  else (args,)))]
        except BaseException as e:
            # The other processes would wait for this one at their next
            # collective: end the job (MPI_Abort), as MPI programs do.
            import sys
            print(f"xla: process {d} failed, aborting the MPI job: {type(e).__name__}: {e}",
                  file=sys.stderr, flush=True)
            distributed.abort(1)
            raise
        finally:
            _local.device = None


def _is_abandoned(error):
    return isinstance(error, XlaError) and "abandoned" in str(error)
