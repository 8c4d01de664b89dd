"""Native code for kernels: deduplicated, cached and compiled in parallel.

A ``KernelCompiler`` serves one compilation. The IR emitter hands it each
distinct kernel (``submit(symbol, text)``, see ``kernels.py``) as soon as
the kernel is emitted; ``finish()`` returns ``{symbol: object bytes}``.
Each kernel is looked up, in order, in

1. this process's memory (``symbol`` and options -> object; a kernel
   compiled once in a process is never compiled again in it, up to
   ``MEMORY_CACHE_BYTES``);
2. the persistent cache, when the compilation has one: one entry per kernel,
   keyed by its fingerprint, the target, the options and the LLVM version,
   and not by the compiler's source hash, since the kernel's text is its
   whole input: an edit that changes one layer of a network recompiles that
   layer's kernels only;
3. else it is compiled: in this process when the compilation has only a
   few to compile (``PARALLEL_MIN_KERNELS``, or ``POOL_START_MIN_KERNELS``
   while no pool runs yet), in one batch per thread, a thread per idle CPU
   (``jit.compile_objects``: LLVM's optimization and code generation run
   outside llvmlite's process-wide lock, each thread in an LLVM context of
   its own); otherwise by a pool of worker processes (``llvm_worker.py``,
   one per core, ~0.2 s to start). Workers live as long as the process;
   they compile while the emitter goes on emitting. The pool starts only
   once emission has queued enough kernels, never ahead of the passes:
   started ahead for modules of 25,000 instructions or more, the workers'
   start slowed the passes on the 2-core machine more than it saved
   (40,000-instruction training steps of 9-69 distinct kernels, 2026-11-27:
   the MLPs 0.1-0.14 s faster and 0.3-0.4 s less CPU without it, the
   transformer stack within the noise; docs/compile_time.md). ``prestart``
   starts it on request. A thread per idle CPU: ``_idle_cpus``.

``--xla_cpu_compile_workers=N`` sets the pool's size and the threads' count
(-1, the default: one per CPU, at most 16; 0: always compile in this
process, on one thread). A pool of another size than the running one
replaces it.
"""
import atexit
import collections
import os
import sys
import threading
import warnings

import llvmlite

from xla.backends.cpu import jit
from xla.backends.cpu.kernels import is_small_kernel, sha256_hex
from xla.backends.cpu.llvm_worker import BATCH_SEPARATOR, REPLY, REQUEST, read_exact
from xla.errors import InternalError

# Kernels to compile before the worker pool is used: a running pool takes
# work from this many on; starting one (a process with llvmlite per core,
# ~0.2 s) pays off only from more.
PARALLEL_MIN_KERNELS = 4
POOL_START_MIN_KERNELS = 24
# Kernels compiled together in one LLVM module (see KernelCompiler).
BATCH_KERNELS = 8
# A kernel's persistent-cache entry: this prefix and the key of the entry
# holding its batch's object.
_BATCH_POINTER = b"XLABATCH:"
MEMORY_CACHE_BYTES = 256 << 20
# What a small kernel's compilation leaves out (kernels.SMALL_KERNEL_BYTES).
SMALL_KERNEL_SKIP = jit.SKIP_LSR | jit.SKIP_FULL_SIMPLIFICATION


def kernel_skip(text, skip=0):
    """What the compilation of the kernel ``text`` leaves out of LLVM's
    pipeline (``jit.SKIP_*``): ``skip``, the compilation's, and for a small
    kernel SMALL_KERNEL_SKIP as well."""
    return skip | (SMALL_KERNEL_SKIP if is_small_kernel(text) else 0)


def buffer_layout_fingerprint(assignment):
    """A hash of a buffer assignment (every allocation, its kind, size and
    the offset of each value in it): part of a driver's persistent-cache
    key, so a driver's code is only ever loaded for the buffer layout it
    was compiled for."""
    return sha256_hex(assignment.to_text().encode())


class _MemoryCache:
    """Object code by key, least recently used first out past a byte budget."""

    def __init__(self, budget):
        self.budget = budget
        self.entries = collections.OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            code = self.entries.get(key)
            if code is not None:
                self.entries.move_to_end(key)
            return code

    def put(self, key, code):
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = code
            self.size += len(code)
            while self.size > self.budget and len(self.entries) > 1:
                _, old = self.entries.popitem(last=False)
                self.size -= len(old)

    def clear(self):
        with self.lock:
            self.entries.clear()
            self.size = 0


memory_cache = _MemoryCache(MEMORY_CACHE_BYTES)


class _Worker:
    """One ``llvm_worker.py`` process and the thread that feeds it jobs."""

    def __init__(self, jobs):
        import subprocess   # here: a compilation without workers never needs it
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llvm_worker.py")
        self.process = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, bufsize=0)
        self.jobs = jobs
        self.thread = threading.Thread(target=self._serve, name="xla-cpu-llvm-worker", daemon=True)
        self.thread.start()

    def _serve(self):
        stdin, stdout = self.process.stdin, self.process.stdout
        while True:
            item = self.jobs.get()
            if item is None:
                return
            future, texts, opt_level, skip = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                data = BATCH_SEPARATOR.join(texts).encode()
                stdin.write(REQUEST.pack(0, opt_level, skip, len(data)) + data)
                stdin.flush()
                header = read_exact(stdout, REPLY.size)
                if header is None:
                    raise InternalError("a kernel compiler worker process died "
                                        f"(exit status {self.process.wait()})")
                _, status, n = REPLY.unpack(header)
                payload = read_exact(stdout, n)
                if payload is None:
                    raise InternalError("a kernel compiler worker process died mid-reply")
                if status:
                    raise InternalError("LLVM rejected a kernel: " + payload.decode(errors="replace"))
                future.set_result(payload)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting compilation
                future.set_exception(e)
                if self.process.poll() is not None:
                    # This worker is gone: fail the jobs it would have taken.
                    self._drain(e)
                    return

    def _drain(self, error):
        import queue
        while True:
            try:
                item = self.jobs.get_nowait()
            except queue.Empty:
                return
            if item is None:
                self.jobs.put(None)
                return
            future = item[0]
            if future.set_running_or_notify_cancel():
                future.set_exception(error)

    def close(self):
        import subprocess
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


class _Pool:
    def __init__(self, size):
        import queue   # the pool's modules are imported with the pool
        self.jobs = queue.Queue()
        self.workers = []
        try:
            for _ in range(size):
                self.workers.append(_Worker(self.jobs))
        except OSError:
            self.close()
            raise

    def submit(self, texts, opt_level, skip=0):
        """A Future of the object code of the modules ``texts`` linked
        (``jit.compile_to_object``'s arguments)."""
        import concurrent.futures
        future = concurrent.futures.Future()
        self.jobs.put((future, list(texts), opt_level, skip))
        return future

    def alive(self):
        return all(w.process.poll() is None for w in self.workers)

    def close(self):
        for _ in self.workers:
            self.jobs.put(None)
        for w in self.workers:
            w.close()


_pool = None
_pool_lock = threading.Lock()
_atexit_registered = False
_pool_unavailable = False


def _get_pool(size):
    """The process's worker pool of ``size`` workers (-1: one per CPU),
    started on first use; None for 0 workers or a one-core machine."""
    global _pool, _atexit_registered
    if size < 0:
        size = min(os.cpu_count() or 1, 16)
        if size < 2:
            return None
    if size == 0:
        return None
    with _pool_lock:
        if _pool is not None and (not _pool.alive() or len(_pool.workers) != size):
            _pool.close()
            _pool = None
        if _pool is None:
            try:
                _pool = _Pool(size)
            except OSError as e:
                # No worker can start (no interpreter to run, a process
                # limit): compile in this process, and say so once.
                global _pool_unavailable
                if not _pool_unavailable:
                    _pool_unavailable = True
                    warnings.warn(f"xla cpu: kernel compiler workers cannot start ({e}); "
                                  "compiling in this process", RuntimeWarning, stacklevel=2)
                return None
            if not _atexit_registered:
                atexit.register(_shutdown)
                _atexit_registered = True
        return _pool


def prestart(size=-1):
    """Starts the worker pool now (in the background: the processes load
    llvmlite while the caller goes on)."""
    _get_pool(size)


def _shutdown():
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.close()
            _pool = None


class KernelCompiler:
    """Object code for the kernels of one compilation (module docstring).

    ``options`` is a string that, with the target, determines the machine
    code for a given kernel text (opt level, fast math, ``skip``);
    ``transform`` rewrites a kernel's text before compiling (fast math);
    ``skip`` (``jit.SKIP_*``) names passes left out for every kernel, and a
    small kernel (``kernels.is_small_kernel``) also leaves out
    ``SMALL_KERNEL_SKIP``; batches hold kernels compiled alike. Kernels compile
    in batches of up to ``BATCH_KERNELS``, linked into one LLVM module and
    one object (fixed costs per module and codegen setup shared: 80 kernels
    of a varied-width MLP in 0.9 s instead of 1.7 s); kernel functions are
    ``weak_odr``, so two objects that both define a kernel (compiled in
    two batches) can be loaded together."""

    def __init__(self, opt_level, options, transform=None, cache=None, progress=None, workers=-1,
                 skip=0):
        self.opt_level = opt_level
        self.skip = skip
        self.workers = workers
        self.options = options
        self.transform = transform or (lambda text: text)
        self.cache = cache
        self.progress = progress
        self.target = jit.host_triple() + ":" + jit.host_cpu()
        self.objects = {}      # symbol -> object code (shared by a batch's kernels)
        self.queued = {}       # skip -> [(symbol, text)] waiting to be compiled
        self.batches = []      # (symbols, Future) sent to the worker pool
        self.pending = set()   # symbols queued or in a batch
        self._batch_objects = {}   # persistent-cache batch key -> object, read once
        self.pool = None
        self.stats = collections.Counter()

    def _memory_key(self, symbol):
        return (symbol, self.opt_level, self.options, self.target)

    def disk_key(self, symbol):
        return self._key("kernel", symbol)

    def _key(self, kind, name):
        text = "\0".join(["xla-cpu-" + kind, name, str(self.opt_level), self.options,
                          self.target, llvmlite.__version__])
        return kind + "-" + sha256_hex(text.encode())

    def submit(self, symbol, text):
        """Takes one kernel (``text`` None: only look it up in the caches)."""
        if symbol in self.objects or symbol in self.pending:
            return
        self.stats["kernels"] += 1
        code = memory_cache.get(self._memory_key(symbol))
        if code is not None:
            self.stats["memory_hits"] += 1
            self.objects[symbol] = code
            return
        if self.cache is not None:
            code = self._from_disk(symbol)
            if code is not None:
                self.stats["disk_hits"] += 1
                self.objects[symbol] = code
                memory_cache.put(self._memory_key(symbol), code)
                return
        if text is None:
            self.stats["missing"] += 1
            return
        skip = kernel_skip(text, self.skip)
        queue = self.queued.setdefault(skip, [])
        queue.append((symbol, text))
        self.pending.add(symbol)
        waiting = sum(len(q) for q in self.queued.values())
        if self.pool is None and (waiting >= POOL_START_MIN_KERNELS or
                                  (waiting >= PARALLEL_MIN_KERNELS and _pool is not None)):
            self.pool = _get_pool(self.workers)
        if self.pool is not None and len(queue) >= BATCH_KERNELS:
            self._dispatch(BATCH_KERNELS, [skip])

    def _from_disk(self, symbol):
        """The object holding ``symbol`` from the persistent cache: the
        kernel's entry names the batch entry that holds the object."""
        key = self.disk_key(symbol)
        pointer = self.cache.get(key)
        if pointer is None:
            return None
        if not pointer.startswith(_BATCH_POINTER):
            self.cache.discard(key, "not a kernel entry")
            return None
        batch_key = pointer[len(_BATCH_POINTER):].decode("ascii", "replace")
        code = self._batch_objects.get(batch_key)
        if code is None:
            code = self.cache.get(batch_key)
        if code is None:
            return None
        if not _valid_object(code, symbol):
            self.cache.discard(batch_key, "not an object defining " + symbol)
            return None
        from xla.backends.cpu import jit
        foreign = jit.foreign_symbols(code)
        if foreign:
            self.cache.discard(batch_key, f"it calls {', '.join(foreign[:5])}, which generated "
                                          "code never does")
            return None
        self._batch_objects[batch_key] = code
        return code

    def _take_batches(self, size, skips=None):
        """The kernels queued to compile with each of ``skips`` (default:
        all), ``size`` at a time: (skip, symbols, texts to compile)."""
        for skip in list(self.queued) if skips is None else skips:
            queued = self.queued.pop(skip, [])
            for k in range(0, len(queued), size):
                batch = queued[k:k + size]
                yield skip, [s for s, _ in batch], [self.transform(text) for _, text in batch]

    def _threads(self):
        """Threads compiling the kernels this process compiles itself: one
        per CPU it may run on that other work does not keep busy
        (``_idle_cpus``; ``--xla_cpu_compile_workers`` N > 0: at most N;
        0: one)."""
        if self.workers == 0:
            return 1
        cpus = _idle_cpus()
        return max(1, min(cpus, 16, self.workers if self.workers > 0 else cpus))

    def _balanced_batches(self, threads, skip):
        """The kernels queued to compile with ``skip`` in batches of at most
        ``BATCH_KERNELS``, a multiple of ``threads`` of them where there are
        kernels enough, of similar sizes (IR text length, longest first into
        the lightest batch): (symbols, texts to compile)."""
        queued = self.queued.pop(skip)
        n = max(threads, -(-len(queued) // BATCH_KERNELS))
        n = min(len(queued), -(-n // threads) * threads)
        batches = [([], [], [0]) for _ in range(n)]
        for symbol, text in sorted(queued, key=lambda q: -len(q[1])):
            symbols, texts, size = min((b for b in batches if len(b[0]) < BATCH_KERNELS),
                                       key=lambda b: b[2][0])
            symbols.append(symbol)
            texts.append(self.transform(text))
            size[0] += len(text)
        for symbols, texts, _ in batches:
            yield symbols, texts

    def _dispatch(self, size, skips=None):
        """Sends the queued kernels to the pool, ``size`` to a batch."""
        for skip, symbols, texts in self._take_batches(size, skips):
            self.batches.append((symbols, self.pool.submit(texts, self.opt_level, skip)))

    def cancel(self):
        """Drops what is still to compile (the compilation took another
        way); what the workers already started is dropped when done."""
        for _, future in self.batches:
            future.cancel()
        self.queued, self.batches, self.pending = {}, [], set()

    def finish(self):
        """``{symbol: object code}`` for every kernel submitted."""
        if self.pool is not None and self.queued:
            # The rest, spread over the workers.
            waiting = sum(len(q) for q in self.queued.values())
            size = max(1, min(BATCH_KERNELS, -(-waiting // len(self.pool.workers))))
            self._dispatch(size)
        total = len(self.pending)
        done = 0
        threads = self._threads() if self.queued else 1
        for skip in sorted(self.queued):   # no pool: compiled here, on threads (jit.compile_objects)
            batches = list(self._balanced_batches(threads, skip))
            for k in range(0, len(batches), threads):   # a batch per thread, then progress
                group = batches[k:k + threads]
                objects = jit.compile_objects([texts for _, texts in group], self.opt_level,
                                              threads, skip)
                for (symbols, _), code in zip(group, objects):
                    self._store(symbols, code)
                    done += len(symbols)
                    self._report(done, total)
        for symbols, future in self.batches:
            self._store(symbols, future.result())
            self.stats["compiled_in_workers"] += len(symbols)
            done += len(symbols)
            self._report(done, total)
        self.batches = []
        self.pending = set()
        return self.objects

    def _store(self, symbols, code):
        self.stats["compiled"] += len(symbols)
        batch_key = None
        if self.cache is not None:
            batch_key = self._key("batch", ",".join(sorted(symbols)))
            self.cache.put(batch_key, code)
        for symbol in symbols:
            self.objects[symbol] = code
            memory_cache.put(self._memory_key(symbol), code)
            if batch_key is not None:
                self.cache.put(self.disk_key(symbol), _BATCH_POINTER + batch_key.encode("ascii"))

    def _report(self, done, total):
        if self.progress is not None:
            self.progress(done, total)


def _idle_cpus():
    """The CPUs this process may run on less those other work keeps busy, at
    least 1: less the 1-minute load average, rounded, which also counts this
    process's own work of the last minute (such as the compiles before this
    one), so less one CPU of it for that where nothing else runs now
    (``_other_runnable``), and never less than what runs now. Threads beyond
    that gain no time and cost CPU: on the shared 2-core machine two threads
    took 7-26% more CPU than one, for no less wall time at a load of 4 and
    4-12% less at a load of 0.6-1.3 (docs/compile_time.md)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cpus
    others = _other_runnable()
    if others is not None:
        busy = min(busy, max(others, busy - 1))
    return max(1, min(cpus, int(cpus - busy + 0.5)))


def _other_runnable():
    """Tasks runnable now other than the calling thread (Linux:
    ``/proc/loadavg``), or None where that cannot be read."""
    try:
        with open("/proc/loadavg") as f:
            return max(0, int(f.read().split()[3].split("/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        return None


def _valid_object(code, symbol):
    try:
        jit._check_elf(code)  # noqa: SLF001 - the JIT's own object check
    except RuntimeError:
        return False
    return symbol in jit.defined_symbols(code)
