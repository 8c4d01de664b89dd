"""DLPack capsules for memory NumPy cannot describe: device memory.

Host memory goes through NumPy's own DLPack support (``np.from_dlpack``,
``ndarray.__dlpack__``). A GPU's memory needs capsules of our own, made and
read here with ctypes, following the DLPack 1.0 C header (dlpack.h):

- ``export(...)`` wraps an address, shape and dtype in a
  ``DLManagedTensorVersioned`` (capsule name ``"dltensor_versioned"``),
  flagged read-only (our buffers are immutable values), keeping ``owner``
  alive until the consumer calls the deleter, or until the capsule is
  dropped unconsumed.
- ``consume(producer, stream)`` calls ``producer.__dlpack__`` (DLPack 1.0
  first, the unversioned protocol if the producer does not take
  ``max_version``), reads the tensor, renames the capsule ``used_...`` as
  the protocol asks, and returns an ``Imported`` whose ``release()`` (or
  garbage collection) calls the producer's deleter.

Only what the backends need is supported: row-major tensors (``strides``
absent or row-major), one lane, the dtypes in ``_CODES``.
"""
import ctypes
import functools
import threading

import numpy as np

# DLDeviceType values (dlpack.h).
KDL_CPU = 1
KDL_CUDA = 2

# DLDataTypeCode values (dlpack.h).
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_READ_ONLY = 1 << 0      # DLPACK_FLAG_BITMASK_READ_ONLY

@functools.lru_cache(maxsize=None)
def _codes():
    """(code, bits) for each dtype a capsule may hold, and back."""
    import ml_dtypes
    table = {np.dtype(np.bool_): (_BOOL, 8), np.dtype(ml_dtypes.bfloat16): (_BFLOAT, 16)}
    for kind, code in (("i", _INT), ("u", _UINT)):
        for bits in (8, 16, 32, 64):
            table[np.dtype(f"{kind}{bits // 8}")] = (code, bits)
    for t in (np.float16, np.float32, np.float64):
        table[np.dtype(t)] = (_FLOAT, np.dtype(t).itemsize * 8)
    for t in (np.complex64, np.complex128):
        table[np.dtype(t)] = (_COMPLEX, np.dtype(t).itemsize * 8)
    return table, {v: k for k, v in table.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# The C API for capsules, with argument types that never touch reference
# counts (the destructor runs while its capsule is being freed).
_api = ctypes.PyDLL(None)
_new = _api.PyCapsule_New
_new.restype, _new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_is_valid_raw = _api.PyCapsule_IsValid
_is_valid_raw.restype, _is_valid_raw.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]
_pointer_raw = _api.PyCapsule_GetPointer
_pointer_raw.restype, _pointer_raw.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pointer.restype, _pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype, _set_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]

# Capsule names must outlive their capsules: module-level buffers.
_NAMES = {n: ctypes.create_string_buffer(n) for n in (
    b"dltensor", b"used_dltensor", b"dltensor_versioned", b"used_dltensor_versioned")}

_lock = threading.Lock()
_exported = {}           # address of a managed tensor -> (struct, shape array, owner)


@_DELETER
def _delete_exported(address):
    with _lock:
        _exported.pop(address, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # A capsule dropped without a consumer: its tensor is still ours to free.
    name = _NAMES[b"dltensor_versioned"]
    if _is_valid_raw(capsule, name):
        _delete_exported(_pointer_raw(capsule, name))


def export(address, shape, dtype, device_type, device_id, owner):
    """A DLPack 1.0 capsule of row-major memory at ``address`` (read-only);
    ``owner`` is kept alive until the consumer is done with it."""
    table, _ = _codes()
    dtype = np.dtype(dtype)
    if dtype not in table:
        raise BufferError(f"DLPack has no type for {dtype}")
    code, bits = table[dtype]
    shape_array = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    managed = DLManagedTensorVersioned()
    managed.version = DLPackVersion(1, 0)
    managed.deleter = _delete_exported
    managed.flags = _READ_ONLY
    t = managed.dl_tensor
    t.data = address
    t.device = DLDevice(device_type, device_id)
    t.ndim = len(shape)
    t.dtype = DLDataType(code, bits, 1)
    t.shape = shape_array
    t.strides = None           # row-major
    t.byte_offset = 0
    key = ctypes.addressof(managed)
    with _lock:
        _exported[key] = (managed, shape_array, owner)
    return _new(key, _NAMES[b"dltensor_versioned"], ctypes.cast(_capsule_destructor,
                                                                 ctypes.c_void_p))


def exported_count():
    """How many exported tensors are still held for a consumer (for tests)."""
    with _lock:
        return len(_exported)


class Imported:
    """A tensor taken from a producer: ``address`` (of its first element),
    ``shape``, ``dtype``, ``device`` (type, id), ``read_only``.
    ``release()`` hands it back (the producer's deleter); dropping the
    last reference does the same."""

    def __init__(self, managed_address, deleter, tensor, read_only):
        self._managed, self._deleter = managed_address, deleter
        _, by_code = _codes()
        key = (tensor.dtype.code, tensor.dtype.bits)
        if tensor.dtype.lanes != 1 or key not in by_code:
            self.release()
            raise BufferError(f"DLPack tensor of type code {tensor.dtype.code}, "
                              f"{tensor.dtype.bits} bits x {tensor.dtype.lanes} lanes: not supported")
        self.dtype = by_code[key]
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        self.device = (tensor.device.device_type, tensor.device.device_id)
        self.address = (tensor.data or 0) + tensor.byte_offset
        self.read_only = read_only
        self.strides = None
        if tensor.strides:
            self.strides = tuple(tensor.strides[i] for i in range(tensor.ndim))

    @property
    def row_major(self):
        if self.strides is None:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def release(self):
        deleter, self._deleter = self._deleter, None
        if deleter:
            _DELETER(deleter)(self._managed)

    def __del__(self):
        self.release()


def consume(producer, stream=None):
    """Takes ``producer``'s tensor through ``__dlpack__`` (see the module doc)."""
    kwargs = {} if stream is None else {"stream": stream}
    try:
        capsule = producer.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:           # a producer of the unversioned protocol only
        capsule = producer.__dlpack__(**kwargs)
    for name, used, struct in ((b"dltensor_versioned", b"used_dltensor_versioned",
                                DLManagedTensorVersioned),
                               (b"dltensor", b"used_dltensor", DLManagedTensor)):
        if _is_valid(capsule, _NAMES[name]):
            address = _pointer(capsule, _NAMES[name])
            managed = struct.from_address(address)
            _set_name(capsule, _NAMES[used])
            read_only = bool(getattr(managed, "flags", 0) & _READ_ONLY)
            deleter = ctypes.cast(managed.deleter, ctypes.c_void_p).value
            return Imported(address, deleter, managed.dl_tensor, read_only)
    raise BufferError(f"{type(producer).__name__}.__dlpack__ returned something that is "
                      "not a DLPack capsule")


def to_numpy(producer):
    """A NumPy array sharing the host memory of a DLPack ``producer``:
    NumPy's own ``from_dlpack``, or for dtypes NumPy has no DLPack code for
    (bfloat16, an ml_dtypes type), a view of the capsule's memory that
    releases it when the last view goes."""
    try:
        return np.from_dlpack(producer)
    except (BufferError, TypeError, RuntimeError) as e:
        first = e
    try:
        tensor = consume(producer)
    except (BufferError, TypeError):
        raise first from None
    if tensor.device[0] != KDL_CPU or not tensor.row_major:
        tensor.release()
        raise first
    raw = (ctypes.c_char * max(1, tensor.nbytes)).from_address(tensor.address)
    raw._import = tensor
    array = np.frombuffer(raw, dtype=tensor.dtype,
                          count=int(np.prod(tensor.shape, dtype=np.int64))).reshape(tensor.shape)
    if tensor.read_only:
        array.flags.writeable = False
    return array


def export_host(array):
    """A read-only DLPack 1.0 capsule of a row-major host array, made here:
    for dtypes NumPy's own ``__dlpack__`` cannot export (bfloat16)."""
    if not array.flags.c_contiguous:
        raise BufferError("only row-major arrays are exported here")
    return export(array.ctypes.data, array.shape, array.dtype, KDL_CPU, 0, owner=array)
