// The arrays compiled CPU code writes its results into, the large ones from
// a cache of buffers (output_buffers.cc).
#ifndef XLA_PYTHON_OUTPUT_BUFFERS_H_
#define XLA_PYTHON_OUTPUT_BUFFERS_H_

#include <pybind11/pybind11.h>

#include <cstddef>

namespace xla_python {

// A new C-contiguous, writeable, uninitialized NumPy array of dtype `descr`
// (borrowed) and dimensions dims[0..nd): from the cache where it holds at
// least kMinCachedOutputBytes, else from NumPy's allocator. nullptr with a
// Python error set (MemoryError where no memory is left).
PyObject* NewOutputArray(PyObject* descr, int nd, const Py_intptr_t* dims);

// Arrays smaller than this come from NumPy's allocator: glibc neither maps
// them nor trims the heap when they are freed (a free below 64 KiB never
// trims), so their pages stay for the next malloc. From 8 MiB down to
// this size since 2026-11-28: several results of 64 KiB-8 MiB in one call
// were trimmed away and faulted in again every call (output_buffers.cc).
constexpr size_t kMinCachedOutputBytes = size_t{32} << 10;

void RegisterOutputBuffers(pybind11::module_& m);

}  // namespace xla_python

#endif  // XLA_PYTHON_OUTPUT_BUFFERS_H_
