// The interface between xla.jit's per-signature native call (JitCall,
// jit_call_bindings.cc) and an executable's prepared call (the CPU
// backend's, cpu_runtime_bindings.cc): the frontend matches the arguments
// against the signature and converts Python scalars; the executable checks
// layout, allocates its outputs and runs.
#ifndef XLA_PYTHON_PREPARED_CALL_H_
#define XLA_PYTHON_PREPARED_CALL_H_

#include <pybind11/pybind11.h>

#include <cstddef>

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

}  // namespace xla_python

#endif  // XLA_PYTHON_PREPARED_CALL_H_
