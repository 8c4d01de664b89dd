"""Command buffers: a GPU executable's launch sequence replayed as one CUDA
graph, so that an execution costs one launch of host time instead of one
per kernel (XLA's command buffers, ``--xla_gpu_enable_command_buffer``).

A graph holds the addresses its kernels were captured with. Every execution
of an executable computes the addresses of all its allocations (arguments,
temporaries, outputs, constants, scratch) as the *key*; the stream-ordered
pool hands a repeated execution the same addresses for its temporaries and
outputs once the previous ones are freed, and a program calling with the
same argument buffers repeats the argument addresses, so keys repeat in the
loops where launch cost matters. The policy, per device:

- a key seen for the first time runs the thunks directly (capturing costs
  more than launching, and most one-off keys never come back);
- a key seen before is captured as a graph (``device.capture``: nothing runs
  while capturing), instantiated, kept, and launched;
- a key with a graph launches it (``device.launch_graph``).

At most ``CAPACITY`` graphs are kept per executable and device (the least
recently used is destroyed) and the last ``SEEN`` keys remembered.

Only straight-line thunk sequences are graphs: kernels and device copies
(``FUSION``), cuBLAS calls (``CUBLAS``), as the flag lists them. Host
control flow (while and conditional read values back), fft (its IRFFT
allocates a copy per call) and copies that stage through fresh buffers run
directly, always; so do sequences shorter than
``--xla_gpu_graph_min_graph_size``. The emulator implements capture by
recording and replaying the same operations with the same addresses, which
is how the policy is tested without a GPU.
"""
from collections import OrderedDict

CAPACITY = 8
SEEN = 64


def graphable(thunks, kinds):
    """Whether ``thunks`` is a straight line of thunks of the command types
    ``kinds`` (``--xla_gpu_enable_command_buffer``)."""
    from xla.backends.gpu.gemm import GemmThunk
    from xla.backends.gpu.kernel_emitter import CopyThunk, KernelThunk
    for t in thunks:
        if isinstance(t, list):
            if not graphable(t, kinds):
                return False
        elif isinstance(t, KernelThunk):
            if "FUSION" not in kinds:
                return False
        elif isinstance(t, CopyThunk):
            if "FUSION" not in kinds or not t.sequential:
                return False
        elif isinstance(t, GemmThunk):
            if "CUBLAS" not in kinds:
                return False
        else:
            return False
    return True


def command_count(thunks):
    """Launches, copies and library calls in ``thunks``."""
    return sum(command_count(t) if isinstance(t, list) else 1 for t in thunks)


class CommandBuffers:
    """One executable's graphs on one device, by key (see the module docstring).
    ``counts``: how many executions ran directly, were captured, replayed."""

    def __init__(self, device):
        self.device = device
        self.graphs = OrderedDict()
        self.seen = OrderedDict()
        self.counts = {"direct": 0, "captured": 0, "replayed": 0}

    def run(self, key, enqueue):
        """Runs the executable's thunks (``enqueue()`` enqueues them on the
        device's stream) for allocation addresses ``key``."""
        graph = self.graphs.get(key)
        if graph is None and key not in self.seen:
            self.seen[key] = None
            if len(self.seen) > SEEN:
                self.seen.popitem(last=False)
            self.counts["direct"] += 1
            enqueue()
            return
        if graph is None:
            graph = self.device.capture(enqueue)
            self.graphs[key] = graph
            if len(self.graphs) > CAPACITY:
                self.device.destroy_graph(self.graphs.popitem(last=False)[1])
            self.counts["captured"] += 1
        else:
            self.graphs.move_to_end(key)
            self.counts["replayed"] += 1
        self.device.launch_graph(graph)

    def __del__(self):
        for graph in getattr(self, "graphs", {}).values():
            self.device.destroy_graph(graph)
