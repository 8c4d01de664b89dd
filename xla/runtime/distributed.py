"""Many processes, one device each, collectives over MPI.

Under ``mpirun -n P``, every process calls ``xla.distributed.initialize()``
(as with ``jax.distributed.initialize()``) and then runs the same program:
``xla.compile(module, platform, num_replicas=R, num_partitions=M)`` with
``R * M == P`` gives a ``ReplicatedExecutable`` whose ``execute`` takes the
arguments of this process's one device (``[args]``) and returns its result
(``[result]``); device ``d = replica * M + partition`` runs on rank ``d``.
``xla.pmap`` maps over the local leading axis (one slice per process) while
its collectives span all processes, as JAX's multi-process pmap does.

The collectives are the evaluator's (so the semantics are those of one
process), exchanging values with MPI: ``MpiExchange.exchange`` gathers
every rank's value and keeps those of the group (every process reaches
every collective in the same order, as SPMD programs do); an all-reduce
whose reducer is a plain add, multiply, maximum or minimum over a numeric
type goes through ``Allreduce`` on a communicator of the group instead, at
MPI's own speed. mpi4py (from PyPI, over the system's MPI: Open MPI from
Debian here) is imported only by ``initialize``.
"""
import threading

import numpy as np

from xla.errors import InvalidArgumentError

_lock = threading.Lock()
_state = None


class _State:
    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.groups = {}   # tuple of ranks -> communicator


def initialize():
    """Joins the MPI job this process was started in (``mpirun``); a
    single process without ``mpirun`` is a job of one. Idempotent."""
    global _state
    with _lock:
        if _state is None:
            try:
                from mpi4py import MPI
            except ImportError as e:
                raise InvalidArgumentError(
                    f"xla.distributed.initialize needs mpi4py and an MPI library ({e}); "
                    "`make setup` installs Open MPI and mpi4py") from None
            _state = _State(MPI.COMM_WORLD)
    return _state.rank


def is_initialized():
    return _state is not None


def process_index():
    return _state.rank if _state is not None else 0


def process_count():
    return _state.size if _state is not None else 1


def abort(code=1):
    """Ends every process of the job (MPI_Abort)."""
    if _state is not None and _state.size > 1:
        _state.comm.Abort(code)


def shutdown():
    """Forgets the job (tests); MPI itself finalizes at exit."""
    global _state
    with _lock:
        _state = None


_MPI_OPS = {"add": "SUM", "multiply": "PROD", "maximum": "MAX", "minimum": "MIN"}


class MpiExchange:
    """The DeviceContext exchange of this process's device, over MPI."""

    def __init__(self, num_partitions):
        if _state is None:
            raise InvalidArgumentError("xla.distributed.initialize() was not called")
        self.state = _state
        self.num_partitions = num_partitions

    def _rank(self, device):
        replica, partition = device
        return replica * self.num_partitions + partition

    def _group_comm(self, ranks):
        comm = self.state.groups.get(ranks)
        if comm is None:
            # Every rank takes part in the split (one color per group).
            world = self.state.comm
            everyone = world.allgather(ranks)
            colors = {g: i for i, g in enumerate(dict.fromkeys(everyone))}
            comm = world.Split(colors[ranks], ranks.index(self.state.rank))
            self.state.groups[ranks] = comm
        return comm

    def exchange(self, key, participants, value):
        """Every participant's value, in group order."""
        everyone = self.state.comm.allgather((key, value))
        ranks = [self._rank(p) for p in participants]
        values = []
        for r in ranks:
            their_key, their_value = everyone[r]
            if their_key != key:
                raise InvalidArgumentError(
                    f"collective {key[0]}: rank {r} is at collective {their_key[0]} instead "
                    "(do all processes run the same program?)")
            values.append(their_value)
        return values

    def all_reduce(self, key, participants, arrays, reducer, out=None):
        """The elementwise ``reducer`` over the participants' arrays with
        MPI's Allreduce (into ``out`` when given: contiguous arrays of the
        same shapes and types), or None where MPI has no such operation."""
        op_name = _MPI_OPS.get(reducer)
        if op_name is None or any(a.dtype.kind not in "iuf" or a.dtype.itemsize not in (4, 8)
                                  for a in arrays):
            return None
        from mpi4py import MPI
        comm = self._group_comm(tuple(self._rank(p) for p in participants))
        results = []
        for k, a in enumerate(arrays):
            a = np.ascontiguousarray(a)
            result = np.empty_like(a) if out is None else out[k]
            send = a
            if np.shares_memory(a, result):   # the result buffer is the operand's
                send = MPI.IN_PLACE if a.ctypes.data == result.ctypes.data else a.copy()
            comm.Allreduce(send, result, op=getattr(MPI, op_name))
            results.append(result)
        return results
