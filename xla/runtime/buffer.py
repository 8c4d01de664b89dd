"""Buffer: an array resident on a device (PJRT's ``PjRtBuffer``, JAX's
``jax.Array`` on one device).

A buffer is an immutable value: its shape, dtype and device never change,
and its contents change only by being given up (``donate``) to an
execution, after which it is deleted and every use raises. Reading it back
(``to_numpy()``, ``np.asarray(buffer)``) waits for pending work
(``block_until_ready``) and copies device memory to the host, unless the
device memory is host memory (``HostBuffer``), where it is a read-only view.

Backends subclass ``Buffer`` for memory they manage; a platform whose
device memory is host memory (``Capabilities.host_buffers``) uses
``HostBuffer``, and its executables take NumPy arrays directly.
"""
import numpy as np

from xla.errors import InvalidArgumentError


class Buffer:
    """The interface every backend's buffers implement.

    Subclasses implement ``_read`` (device -> host copy into a new NumPy
    array) and ``_free``; they may override ``block_until_ready`` when
    execution is asynchronous. ``shape`` is a tuple of ints, ``dtype`` a
    NumPy dtype, ``device`` the ``xla.runtime.Device`` holding it.
    """

    def __init__(self, shape, dtype, device):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.device = device
        self._deleted = False

    # ----- what a backend implements ----------------------------------------------
    def _read(self):
        raise NotImplementedError

    def _free(self):
        pass

    # ----- the interface ----------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def is_deleted(self):
        return self._deleted

    def check_live(self, what="buffer"):
        """Raises InvalidArgumentError when the buffer was deleted or donated."""
        if self._deleted:
            raise InvalidArgumentError(
                f"{what} {self.dtype}{list(self.shape)} on {self.device} was deleted or donated "
                "to an earlier execution and cannot be used")

    def block_until_ready(self):
        """Waits until every computation writing this buffer is done; returns self."""
        self.check_live()
        return self

    def to_numpy(self):
        """The buffer's value as a NumPy array (a copy, or a read-only view of
        host memory)."""
        self.check_live()
        self.block_until_ready()
        return self._read()

    def delete(self):
        """Frees the device memory now; later uses raise."""
        if not self._deleted:
            self._deleted = True
            self._free()

    def mark_donated(self):
        """Called by an execution that took this buffer's memory: it is
        deleted without freeing (the memory now belongs to a result)."""
        self._deleted = True

    # ----- DLPack: zero-copy exchange with NumPy, PyTorch, JAX... ---------------
    def __dlpack__(self, **kwargs):
        """A DLPack capsule of this buffer's memory (where the backend can
        export it; host memory: always, without a copy)."""
        raise BufferError(f"buffers on {self.device} cannot be exported through DLPack")

    def __dlpack_device__(self):
        raise BufferError(f"buffers on {self.device} cannot be exported through DLPack")

    def __array__(self, dtype=None, copy=None):
        value = self.to_numpy()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        return np.array(value, copy=True) if copy else value

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d buffer")
        return self.shape[0]

    def __repr__(self):
        if self._deleted:
            return f"Buffer({self.dtype}{list(self.shape)}, deleted, device={self.device})"
        return f"Buffer({self.to_numpy()!r}, device={self.device})"

    # Reading a value out: these make a buffer usable where NumPy expects a scalar.
    def __float__(self):
        return float(self.to_numpy())

    def __int__(self):
        return int(self.to_numpy())

    def __bool__(self):
        return bool(self.to_numpy())

    def __getitem__(self, index):
        return self.to_numpy()[index]

    @property
    def T(self):
        return self.to_numpy().T


def _reads_back(name):
    """Arithmetic on a buffer reads it back and computes with NumPy (the
    result is a NumPy array): buffers stand in for arrays in user code."""
    op = getattr(np.ndarray, name)

    def method(self, *args):
        return op(self.to_numpy(), *(a.to_numpy() if isinstance(a, Buffer) else a for a in args))
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__or__", "__ror__",
              "__xor__", "__rxor__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(Buffer, _name, _reads_back(_name))
Buffer.__hash__ = None


class HostBuffer(Buffer):
    """A buffer in host memory: a NumPy array the device computes on in
    place (the CPU and the interpreter). ``to_numpy()`` is a read-only view,
    not a copy; ``array`` is the array an executable reads."""

    def __init__(self, array, device):
        array = np.asarray(array)
        super().__init__(array.shape, array.dtype, device)
        self.array = array

    def _read(self):
        view = self.array.view()
        view.flags.writeable = False
        return view

    def __dlpack__(self, **kwargs):
        """The buffer's memory, shared and read-only (DLPack 1.0's read-only
        flag; a consumer that cannot take it gets a BufferError)."""
        self.check_live()
        view = self._read()
        try:
            return view.__dlpack__(**kwargs)
        except BufferError:
            # NumPy exports no bfloat16: the capsule is made here (DLPack 1.0).
            from xla.runtime.dlpack import export_host
            if tuple(kwargs.get("max_version") or (0, 0)) < (1, 0):
                raise
            return export_host(view)

    def __dlpack_device__(self):
        return (1, 0)   # kDLCPU, device 0

    def _free(self):
        self.array = None

    def mark_donated(self):
        super().mark_donated()
        self.array = None
