"""``xla.distributed``: running one program across processes, one device
each, under ``mpirun`` (see xla/runtime/distributed.py and docs/distributed.md)."""
from xla.runtime.distributed import (initialize, is_initialized, process_count,  # noqa: F401
                                     process_index, shutdown)

__all__ = ["initialize", "is_initialized", "process_count", "process_index", "shutdown"]
