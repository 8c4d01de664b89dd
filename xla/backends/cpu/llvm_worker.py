"""A worker process that compiles LLVM IR kernels to native objects.

Run as a script by ``kernel_compiler`` (``python llvm_worker.py``), not
imported: it loads ``jit.py`` from this folder by path, so a worker starts
with llvmlite alone (no NumPy, no package import) and compiles exactly as
the parent would (``jit.compile_to_object``).

llvmlite serializes every LLVM call in a process with one lock; processes
compile in parallel with no shared state at all (threads do too, for the
few kernels compiled in the calling process: ``jit.compile_objects``). Protocol over stdin/stdout, all
integers little-endian: a request is ``u32 job, u32 opt_level, u32 skip,
u64 n`` (``skip``: the passes left out, ``jit.SKIP_*``) and ``n`` bytes of
IR text (modules separated by ``BATCH_SEPARATOR``, linked into one); the
reply is ``u32 job, u32 status (0 ok, 1 error),
u64 n`` and ``n`` bytes (the object, or the error message). End of input
ends the worker.
"""
import importlib.util
import os
import struct
import sys

REQUEST = struct.Struct("<IIIQ")
# Between the modules of one request, which are linked and compiled into
# one object.
BATCH_SEPARATOR = "\n; ----- xla next module -----\n"
REPLY = struct.Struct("<IIQ")


def _load_jit():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jit.py")
    spec = importlib.util.spec_from_file_location("_xla_cpu_jit_worker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_exact(stream, n):
    """``n`` bytes from ``stream``, or None at the end of input."""
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def main():
    jit = _load_jit()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = read_exact(stdin, REQUEST.size)
        if header is None:
            return 0
        job, opt_level, skip, n = REQUEST.unpack(header)
        text = read_exact(stdin, n)
        if text is None:
            return 0
        try:
            texts = text.decode().split(BATCH_SEPARATOR)
            payload, status = jit.compile_to_object(texts, opt_level, skip), 0
        except Exception as e:  # noqa: BLE001 - reported to the parent, which raises
            payload, status = f"{type(e).__name__}: {e}".encode(), 1
        stdout.write(REPLY.pack(job, status, len(payload)))
        stdout.write(payload)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
