// Conversions between NumPy arrays and the C++ core's flat vectors, shared
// by every binding file: checked 1-D integer arrays in, owned arrays out.
#ifndef XLA_PYTHON_ARRAY_ARGS_H_
#define XLA_PYTHON_ARRAY_ARGS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xla_python {

namespace py = pybind11;

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

// `value` as a contiguous 1-D array of T. Raises TypeError unless it is an
// integer array (bool too when `allow_bool`), ValueError unless it is 1-D
// and, when `expected_size` >= 0, of that many entries. Empty arrays of any
// dtype are accepted (Python's [] becomes float64).
template <typename T>
Array<T> AsIntegerArray(py::handle value, const char* name, int64_t expected_size = -1,
                        bool allow_bool = true) {
  py::array array = py::array::ensure(value);
  if (!array) {
    throw py::type_error(std::string(name) + " must be a 1-D integer array; got " +
                         std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  }
  if (array.ndim() != 1) {
    throw py::value_error(std::string(name) + " must be a 1-D integer array; got " +
                          std::to_string(array.ndim()) + " dimensions");
  }
  const char kind = array.dtype().kind();
  if (array.size() > 0 && kind != 'i' && kind != 'u' && !(allow_bool && kind == 'b')) {
    throw py::type_error(std::string(name) + " must be a 1-D integer array; got dtype " +
                         std::string(py::str(array.dtype())));
  }
  if (expected_size >= 0 && array.size() != expected_size) {
    throw py::value_error(std::string(name) + " has " + std::to_string(array.size()) +
                          " entries; expected " + std::to_string(expected_size));
  }
  return Array<T>::ensure(array);
}

// A NumPy array that takes ownership of `values` (no copy).
template <typename NumpyT, typename T>
py::array_t<NumpyT> ToNumpy(std::vector<T>&& values) {
  static_assert(sizeof(NumpyT) == sizeof(T), "element sizes must match");
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<NumpyT>(static_cast<py::ssize_t>(owned->size()),
                             reinterpret_cast<const NumpyT*>(owned->data()), owner);
}

}  // namespace xla_python

#endif  // XLA_PYTHON_ARRAY_ARGS_H_
