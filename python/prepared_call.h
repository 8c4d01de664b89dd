// The interface between xla.jit's per-signature native call (JitCall,
// jit_call_bindings.cc) and an executable's prepared call (the CPU
// backend's, cpu_runtime_bindings.cc): the frontend matches the arguments
// against the signature and converts Python scalars; the executable checks
// layout, allocates its outputs and runs.
#ifndef XLA_PYTHON_PREPARED_CALL_H_
#define XLA_PYTHON_PREPARED_CALL_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace xla_python {

// One parameter's argument: a NumPy array (`array`, of exactly the
// parameter's dtype and shape: the caller's guarantee), or, where `array`
// is null, `data`: the parameter's bytes, aligned to 16 (a converted
// Python scalar).
struct CallArg {
  PyObject* array;
  const void* data;
};

class PreparedCall {
 public:
  virtual ~PreparedCall() = default;
  // What executing on `args` (one per parameter) returns, or a null object,
  // having run nothing, where this call must take the general path (an
  // array not C-contiguous or aligned, a donated one read-only, hooks or a
  // profile active, no memory for an output).
  virtual pybind11::object Call(const CallArg* args, size_t count) = 0;
};

// A guard on the native call paths: an (object, attribute name) pair
// whose value must be falsy for the call to go on (a trace active, hooks
// set, ...).
using FalsyGuards = std::vector<std::pair<pybind11::object, pybind11::str>>;

inline FalsyGuards MakeFalsyGuards(std::vector<std::pair<pybind11::object, std::string>> pairs) {
  FalsyGuards guards;
  for (auto& [object, name] : pairs) guards.emplace_back(std::move(object), pybind11::str(name));
  return guards;
}

// Whether any guard's attribute is truthy now (a Python error propagates).
inline bool AnyGuardSet(const FalsyGuards& guards) {
  for (const auto& [object, name] : guards) {
    PyObject* value = PyObject_GetAttr(object.ptr(), name.ptr());
    if (value == nullptr) throw pybind11::error_already_set();
    const int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    if (truth < 0) throw pybind11::error_already_set();
    if (truth) return true;
  }
  return false;
}

}  // namespace xla_python

#endif  // XLA_PYTHON_PREPARED_CALL_H_
