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

// Arrays smaller than this come from NumPy's allocator: glibc keeps freed
// blocks below its mmap threshold (at most 32 MiB) for the next malloc.
constexpr size_t kMinCachedOutputBytes = size_t{8} << 20;

void RegisterOutputBuffers(pybind11::module_& m);

}  // namespace xla_python

#endif  // XLA_PYTHON_OUTPUT_BUFFERS_H_
