// Bindings for the CPU runtime (xla/backends/cpu/runtime/cpu_runtime.h) and for calling
// JIT-compiled CPU code, `void fn(void** buffer_table)`, from Python: cpu_execute,
// and ExecutableState over the runtime's executor (executor.h).
//
// A buffer is a NumPy array (its data pointer is used in place; it must be
// C-contiguous and aligned, and writable where the code writes it: ValueError
// otherwise) or an int (a raw address, e.g. into a preallocated arena). Calls
// release the GIL while the compiled code runs. Addresses are not checked
// beyond that: passing buffers smaller than the code expects corrupts memory,
// which ExecutableState's optional byte sizes guard against.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/executor.h"
#include "xla/backends/cpu/runtime/kernels.h"
#include "python/output_buffers.h"
#include "python/prepared_call.h"

namespace py = pybind11;

namespace {

using xla_cpu_runtime::EntryFunction;

enum class Access { kRead, kWrite };

std::string TypeName(py::handle value) {
  return py::str(py::type::handle_of(value).attr("__name__"));
}

// The address of one buffer, checked as the module comment says. `what` and
// `index` name it in errors; expected_nbytes < 0 skips the size check.
void* BufferAddress(py::handle value, const char* what, size_t index, Access access,
                    uintptr_t alignment, int64_t expected_nbytes) {
  const auto& api = py::detail::npy_api::get();
  PyObject* obj = value.ptr();
  void* address;
  if (api.PyArray_Check_(obj)) {
    const auto* proxy = py::detail::array_proxy(obj);
    const int flags = proxy->flags;
    if ((flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) == 0) {
      throw py::value_error(std::string(what) + " " + std::to_string(index) +
                            " must be a C-contiguous array");
    }
    if ((flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) == 0) {
      throw py::value_error(std::string(what) + " " + std::to_string(index) +
                            " must be an aligned array");
    }
    if (access == Access::kWrite && (flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) == 0) {
      throw py::value_error(std::string(what) + " " + std::to_string(index) +
                            " must be a writable array");
    }
    if (expected_nbytes >= 0) {
      const auto nbytes = static_cast<int64_t>(py::reinterpret_borrow<py::array>(value).nbytes());
      if (nbytes != expected_nbytes) {
        throw py::value_error(std::string(what) + " " + std::to_string(index) + " has " +
                              std::to_string(nbytes) + " bytes; expected " +
                              std::to_string(expected_nbytes));
      }
    }
    address = proxy->data;
  } else if (PyLong_Check(obj)) {
    address = PyLong_AsVoidPtr(obj);
    if (address == nullptr && PyErr_Occurred()) throw py::error_already_set();
  } else {
    throw py::type_error(std::string(what) + " " + std::to_string(index) +
                         " must be a NumPy array or an int address; got " + TypeName(value));
  }
  if (alignment > 1 && reinterpret_cast<uintptr_t>(address) % alignment != 0) {
    throw py::value_error(std::string(what) + " " + std::to_string(index) + " at address " +
                          std::to_string(reinterpret_cast<uintptr_t>(address)) +
                          " is not aligned to " + std::to_string(alignment) + " bytes");
  }
  return address;
}

// BufferAddress's checks of an array, answered instead of raised: the
// array's data, or nullptr where `value` is not a NumPy array, or is not
// C-contiguous, aligned (to its dtype and to `alignment`), writable where
// written, or of `expected_nbytes` bytes (when >= 0).
void* UsableArrayData(PyObject* obj, Access access, uintptr_t alignment, int64_t expected_nbytes) {
  const auto& api = py::detail::npy_api::get();
  if (!api.PyArray_Check_(obj)) return nullptr;
  const auto* proxy = py::detail::array_proxy(obj);
  const int flags = proxy->flags;
  if ((flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) == 0 ||
      (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) == 0) {
    return nullptr;
  }
  if (access == Access::kWrite && (flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) == 0) {
    return nullptr;
  }
  if (expected_nbytes >= 0 &&
      static_cast<int64_t>(py::reinterpret_borrow<py::array>(obj).nbytes()) != expected_nbytes) {
    return nullptr;
  }
  if (alignment > 1 && reinterpret_cast<uintptr_t>(proxy->data) % alignment != 0) return nullptr;
  return proxy->data;
}

// A new reference to `value` as a tuple (the same object for a tuple): its
// items stay alive while the GIL is released, whatever happens to a list.
py::tuple AsTuple(py::handle value, const char* name) {
  if (PyTuple_Check(value.ptr())) return py::reinterpret_borrow<py::tuple>(value);
  if (!PyList_Check(value.ptr())) {
    throw py::type_error(std::string(name) + " must be a list or tuple; got " + TypeName(value));
  }
  PyObject* tuple = PyList_AsTuple(value.ptr());
  if (tuple == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::tuple>(tuple);
}

EntryFunction AsFunction(uintptr_t address) {
  if (address == 0) throw py::value_error("fn_address must not be 0");
  return reinterpret_cast<EntryFunction>(address);
}

void CpuExecute(uintptr_t fn_address, py::handle buffers_arg) {
  EntryFunction fn = AsFunction(fn_address);
  py::tuple buffers = AsTuple(buffers_arg, "buffers");
  const size_t count = PyTuple_GET_SIZE(buffers.ptr());
  constexpr size_t kInline = 16;
  void* inline_table[kInline];
  std::vector<void*> heap_table;
  void** table = inline_table;
  if (count > kInline) {
    heap_table.resize(count);
    table = heap_table.data();
  }
  for (size_t i = 0; i < count; ++i) {
    // Any buffer may be written: the table does not say which.
    table[i] = BufferAddress(PyTuple_GET_ITEM(buffers.ptr(), i), "buffer", i, Access::kRead, 1, -1);
  }
  py::gil_scoped_release release;
  fn(table);
}

// The executor (xla/backends/cpu/runtime/executor.h) with NumPy arrays for
// buffers: arrays become checked addresses, and fixed slots' arrays are
// kept alive here.
class ExecutableState {
 public:
  ExecutableState(uintptr_t fn_address, int64_t num_slots, std::vector<int64_t> arg_slots,
                  std::vector<int64_t> output_slots, int64_t arena_size,
                  std::vector<std::pair<int64_t, int64_t>> arena_slots,
                  std::vector<int64_t> arg_nbytes, std::vector<int64_t> output_nbytes,
                  uintptr_t alignment)
      : executor_(AsFunction(fn_address), num_slots, std::move(arg_slots),
                  std::move(output_slots), arena_size, std::move(arena_slots)),
        arg_nbytes_(std::move(arg_nbytes)),
        output_nbytes_(std::move(output_nbytes)),
        alignment_(alignment == 0 ? 1 : alignment),
        constants_(static_cast<size_t>(num_slots)) {
    CheckSizes(arg_nbytes_, executor_.num_args(), "arg_nbytes");
    CheckSizes(output_nbytes_, executor_.num_outputs(), "output_nbytes");
  }

  // Fixes a slot that is neither an argument, an output nor in the arena
  // (e.g. a constant); an array is kept alive by the state.
  void SetSlot(int64_t slot, py::object value) {
    void* address = BufferAddress(value, "slot", static_cast<size_t>(std::max<int64_t>(slot, 0)),
                                  Access::kRead, alignment_, -1);
    executor_.SetFixed(slot, address);
    constants_[slot] = std::move(value);
  }

  void Run(py::handle args_arg, py::handle outputs_arg) {
    py::tuple args = AsTuple(args_arg, "args");
    py::tuple outputs = AsTuple(outputs_arg, "outputs");
    const size_t num_args = PyTuple_GET_SIZE(args.ptr());
    const size_t num_outputs = PyTuple_GET_SIZE(outputs.ptr());
    if (num_args != executor_.num_args()) {
      throw py::value_error("expected " + std::to_string(executor_.num_args()) + " args; got " +
                            std::to_string(num_args));
    }
    if (num_outputs != executor_.num_outputs()) {
      throw py::value_error("expected " + std::to_string(executor_.num_outputs()) +
                            " outputs; got " + std::to_string(num_outputs));
    }
    xla_cpu_runtime::Executor::Call call(executor_);
    for (size_t i = 0; i < num_args; ++i) {
      call.SetArg(i, BufferAddress(PyTuple_GET_ITEM(args.ptr(), i), "arg", i, Access::kRead,
                                   alignment_, arg_nbytes_.empty() ? -1 : arg_nbytes_[i]));
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      call.SetOutput(i, BufferAddress(PyTuple_GET_ITEM(outputs.ptr(), i), "output", i,
                                      Access::kWrite, alignment_,
                                      output_nbytes_.empty() ? -1 : output_nbytes_[i]));
    }
    py::gil_scoped_release release;
    call.Run();   // releases the executor's table before the GIL is taken back
  }

  // Run for NumPy arrays only, where a caller expects some to be unusable
  // (a strided view, an offset slice): false, having run nothing, where one
  // fails BufferAddress's checks, instead of raising (a raised error costs
  // microseconds). Wrong counts still raise.
  bool TryRun(py::handle args_arg, py::handle outputs_arg) {
    py::tuple args = AsTuple(args_arg, "args");
    py::tuple outputs = AsTuple(outputs_arg, "outputs");
    const size_t num_args = PyTuple_GET_SIZE(args.ptr());
    const size_t num_outputs = PyTuple_GET_SIZE(outputs.ptr());
    if (num_args != executor_.num_args() || num_outputs != executor_.num_outputs()) {
      throw py::value_error("expected " + std::to_string(executor_.num_args()) + " args and " +
                            std::to_string(executor_.num_outputs()) + " outputs; got " +
                            std::to_string(num_args) + " and " + std::to_string(num_outputs));
    }
    constexpr size_t kInline = 16;
    void* inline_addresses[kInline];
    std::vector<void*> heap_addresses;
    void** addresses = inline_addresses;
    if (num_args + num_outputs > kInline) {
      heap_addresses.resize(num_args + num_outputs);
      addresses = heap_addresses.data();
    }
    for (size_t i = 0; i < num_args; ++i) {
      addresses[i] = UsableArrayData(PyTuple_GET_ITEM(args.ptr(), i), Access::kRead, alignment_,
                                     arg_nbytes_.empty() ? -1 : arg_nbytes_[i]);
      if (addresses[i] == nullptr) return false;
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      void* address = UsableArrayData(PyTuple_GET_ITEM(outputs.ptr(), i), Access::kWrite,
                                      alignment_, output_nbytes_.empty() ? -1 : output_nbytes_[i]);
      if (address == nullptr) return false;
      addresses[num_args + i] = address;
    }
    xla_cpu_runtime::Executor::Call call(executor_);
    for (size_t i = 0; i < num_args; ++i) call.SetArg(i, addresses[i]);
    for (size_t i = 0; i < num_outputs; ++i) call.SetOutput(i, addresses[num_args + i]);
    {
      py::gil_scoped_release release;
      call.Run();
    }
    return true;
  }

  // Runs on addresses the caller checked (PreparedCpuCall), GIL released.
  void RunChecked(void* const* args, void* const* outputs) {
    xla_cpu_runtime::Executor::Call call(executor_);
    for (size_t i = 0; i < executor_.num_args(); ++i) call.SetArg(i, args[i]);
    for (size_t i = 0; i < executor_.num_outputs(); ++i) call.SetOutput(i, outputs[i]);
    py::gil_scoped_release release;
    call.Run();
  }

  size_t num_args() const { return executor_.num_args(); }
  size_t num_outputs() const { return executor_.num_outputs(); }
  uintptr_t alignment() const { return alignment_; }
  uintptr_t arena_address() const { return executor_.arena_address(); }
  int64_t arena_size() const { return executor_.arena_size(); }
  int64_t num_slots() const { return executor_.num_slots(); }

 private:
  static void CheckSizes(const std::vector<int64_t>& sizes, size_t slots, const char* name) {
    if (!sizes.empty() && sizes.size() != slots) {
      throw py::value_error(std::string(name) + " must be empty or have one entry per slot");
    }
  }

  xla_cpu_runtime::Executor executor_;
  std::vector<int64_t> arg_nbytes_;
  std::vector<int64_t> output_nbytes_;
  uintptr_t alignment_;
  std::vector<py::object> constants_;
};

// CpuExecutable.prepared_call's call (xla/backends/cpu/executable.py,
// _FastPath): one output array per output allocation (shape, dtype), the
// executable's result picked from them and the arguments (`result`: an
// index into the outputs, or -1 - parameter number, or a nested tuple of
// those), the `aliased` parameters' arrays written (so checked writable),
// and `guards`: (object, attribute) pairs that must be falsy at each call
// (execute hooks, an active profile), else the call is declined.
class PreparedCpuCall : public xla_python::PreparedCall {
 public:
  PreparedCpuCall(py::object state, std::vector<std::pair<std::vector<ssize_t>, py::dtype>> outputs,
                  py::object result, std::vector<int64_t> aliased,
                  std::vector<std::pair<py::object, std::string>> guards)
      : state_object_(std::move(state)), outputs_(std::move(outputs)) {
    state_ = state_object_.cast<ExecutableState*>();
    if (outputs_.size() != state_->num_outputs()) {
      throw py::value_error("PreparedCpuCall: expected " + std::to_string(state_->num_outputs()) +
                            " outputs; got " + std::to_string(outputs_.size()));
    }
    writes_.assign(state_->num_args(), false);
    for (int64_t n : aliased) {
      if (n < 0 || static_cast<size_t>(n) >= writes_.size()) {
        throw py::value_error("PreparedCpuCall: aliased parameter out of range");
      }
      writes_[n] = true;
    }
    result_ = Parse(result);
    guards_ = xla_python::MakeFalsyGuards(std::move(guards));
  }

  py::object Call(const xla_python::CallArg* args, size_t count) override {
    if (xla_python::AnyGuardSet(guards_)) return py::object();
    const size_t num_args = state_->num_args();
    if (count != num_args) {
      throw py::value_error("prepared call: expected " + std::to_string(num_args) +
                            " arguments; got " + std::to_string(count));
    }
    const uintptr_t alignment = state_->alignment();
    constexpr size_t kInline = 16;
    void* inline_addresses[kInline];
    std::vector<void*> heap_addresses;
    void** addresses = inline_addresses;
    if (num_args + outputs_.size() > kInline) {
      heap_addresses.resize(num_args + outputs_.size());
      addresses = heap_addresses.data();
    }
    for (size_t i = 0; i < num_args; ++i) {
      if (args[i].array != nullptr) {
        addresses[i] = UsableArrayData(args[i].array, writes_[i] ? Access::kWrite : Access::kRead,
                                       alignment, -1);
      } else {
        addresses[i] = writes_[i] || reinterpret_cast<uintptr_t>(args[i].data) % alignment != 0
                           ? nullptr
                           : const_cast<void*>(args[i].data);
      }
      if (addresses[i] == nullptr) return py::object();
    }
    std::vector<py::object> outs;
    outs.reserve(outputs_.size());
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const auto& [dims, dtype] = outputs_[k];
      PyObject* out = xla_python::NewOutputArray(dtype.ptr(), static_cast<int>(dims.size()),
                                                 dims.data());
      if (out == nullptr) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
          PyErr_Clear();
          return py::object();
        }
        throw py::error_already_set();
      }
      outs.push_back(py::reinterpret_steal<py::object>(out));
      addresses[num_args + k] = UsableArrayData(out, Access::kWrite, alignment, -1);
      if (addresses[num_args + k] == nullptr) return py::object();
    }
    state_->RunChecked(addresses, addresses + num_args);
    return Pick(result_, outs, args);
  }

  // For Python callers (jit's CallPlan): a sequence of NumPy arrays; None
  // where declined (or an item is not a NumPy array).
  py::object CallArrays(py::handle arrays_arg) {
    py::tuple arrays = AsTuple(arrays_arg, "args");
    const size_t count = PyTuple_GET_SIZE(arrays.ptr());
    const auto& api = py::detail::npy_api::get();
    std::vector<xla_python::CallArg> args(count);
    for (size_t i = 0; i < count; ++i) {
      PyObject* item = PyTuple_GET_ITEM(arrays.ptr(), i);
      if (!api.PyArray_Check_(item)) return py::none();
      args[i] = {item, nullptr};
    }
    py::object result = Call(args.data(), count);
    if (!result) return py::none();
    return result;
  }

 private:
  struct Node {
    int64_t index = 0;           // a leaf's output index, or -1 - parameter number
    std::vector<Node> children;  // a tuple's
    bool tuple = false;
  };

  Node Parse(py::handle value) {
    Node node;
    if (PyTuple_Check(value.ptr())) {
      node.tuple = true;
      for (py::handle item : value) node.children.push_back(Parse(item));
      return node;
    }
    node.index = value.cast<int64_t>();
    if (node.index >= 0 ? static_cast<size_t>(node.index) >= outputs_.size()
                        : static_cast<size_t>(-1 - node.index) >= writes_.size()) {
      throw py::value_error("PreparedCpuCall: result index out of range");
    }
    return node;
  }

  static py::object Pick(const Node& node, const std::vector<py::object>& outs,
                         const xla_python::CallArg* args) {
    if (!node.tuple) {
      if (node.index >= 0) return outs[node.index];
      PyObject* array = args[-1 - node.index].array;
      if (array == nullptr) throw py::value_error("prepared call: an aliased argument is no array");
      return py::reinterpret_borrow<py::object>(array);
    }
    py::tuple tuple(node.children.size());
    for (size_t i = 0; i < node.children.size(); ++i) {
      PyTuple_SET_ITEM(tuple.ptr(), i, Pick(node.children[i], outs, args).release().ptr());
    }
    return tuple;
  }

  py::object state_object_;
  ExecutableState* state_;
  std::vector<std::pair<std::vector<ssize_t>, py::dtype>> outputs_;
  std::vector<bool> writes_;
  Node result_;
  xla_python::FalsyGuards guards_;
};

py::dict CpuRuntimeSymbols() {
  int64_t count = 0;
  const XlaCpuRuntimeSymbol* symbols = __xla_cpu_runtime_symbols(&count);
  py::dict result;
  for (int64_t i = 0; i < count; ++i) {
    result[py::str(symbols[i].name)] = py::int_(reinterpret_cast<uintptr_t>(symbols[i].address));
  }
  return result;
}

std::string CpuRuntimeIsa() {
  const char* error = nullptr;
  const char* isa = __xla_cpu_runtime_isa(&error);
  if (isa == nullptr) throw py::value_error(error != nullptr ? error : "no CPU runtime ISA");
  return isa;
}

py::list CpuRuntimeIsas() {
  py::list result;
  for (const xla_cpu_runtime::IsaKernels* variant : xla_cpu_runtime::AllIsaKernels()) {
    if (xla_cpu_runtime::MissingCpuFeatures(*variant).empty()) result.append(variant->name);
  }
  return result;
}

}  // namespace

void RegisterCpuRuntime(py::module_& m) {
  m.def("cpu_runtime_symbols", &CpuRuntimeSymbols,
        "Returns {name: address} for every CPU runtime entry point that generated code may call "
        "(register each with llvmlite.binding.add_symbol).");
  m.def("cpu_runtime_isa", &CpuRuntimeIsa,
        "The ISA variant of the CPU runtime's matmul and convolution kernels this process\n"
        "uses: 'baseline', 'avx2' or 'avx512' (the widest the CPU supports, or the one the\n"
        "environment variable XLA_CPU_RUNTIME_ISA names). ValueError when that names one\n"
        "that is unknown, not built or not supported by this CPU.");
  m.def("cpu_runtime_isas", &CpuRuntimeIsas,
        "The ISA variants of the CPU runtime's kernels that this build has and this CPU runs,\n"
        "narrowest first (the values XLA_CPU_RUNTIME_ISA may take here).");
  m.def("cpu_runtime_num_threads", &__xla_cpu_runtime_num_threads,
        "The CPU runtime's thread count (XLA_CPU_NUM_THREADS, or the CPUs this process may "
        "use).");
  m.def(
      "set_cpu_runtime_num_threads",
      [](int32_t num_threads) {
        py::gil_scoped_release release;
        __xla_cpu_runtime_set_num_threads(num_threads);
      },
      py::arg("num_threads"),
      "Replaces the CPU runtime's thread pool (num_threads <= 0: the default). Not while "
      "compiled code runs.");
  m.def("cpu_execute", &CpuExecute, py::arg("fn_address"), py::arg("buffers"),
        "Calls the compiled `void fn(void** buffer_table)` at fn_address with a table of the\n"
        "buffers' addresses, in order. Each buffer is a C-contiguous, aligned NumPy array (its\n"
        "data, in place) or an int address. The GIL is released during the call.");

  py::class_<ExecutableState>(
      m, "ExecutableState",
      "Per-executable state for calling compiled CPU code once per execute: the entry\n"
      "function, a reusable buffer table of num_slots entries and a 64-byte-aligned temp\n"
      "arena of arena_size bytes (zeroed once). arena_slots are (slot, byte offset) pairs\n"
      "pointing into the arena; arg_slots and output_slots are filled by run(); other slots\n"
      "can be fixed with set_slot(). arg_nbytes / output_nbytes, when given, are checked\n"
      "against the arrays' sizes; every array and address must be aligned to `alignment`.")
      .def(py::init<uintptr_t, int64_t, std::vector<int64_t>, std::vector<int64_t>, int64_t,
                    std::vector<std::pair<int64_t, int64_t>>, std::vector<int64_t>,
                    std::vector<int64_t>, uintptr_t>(),
           py::arg("fn_address"), py::arg("num_slots"), py::arg("arg_slots"),
           py::arg("output_slots"), py::arg("arena_size") = 0,
           py::arg("arena_slots") = std::vector<std::pair<int64_t, int64_t>>(),
           py::arg("arg_nbytes") = std::vector<int64_t>(),
           py::arg("output_nbytes") = std::vector<int64_t>(), py::arg("alignment") = 1)
      .def("run", &ExecutableState::Run, py::arg("args"), py::arg("outputs"),
           "Calls the function with args and outputs (lists or tuples of arrays or int\n"
           "addresses) in their slots. The GIL is released during the call.")
      .def("try_run", &ExecutableState::TryRun, py::arg("args"), py::arg("outputs"),
           "run for NumPy arrays only that returns False, having run nothing, where an array\n"
           "fails run's checks (layout, alignment, writability, size) instead of raising;\n"
           "True once the function ran.")
      .def("set_slot", &ExecutableState::SetSlot, py::arg("slot"), py::arg("buffer"),
           "Fixes a slot that is not an argument, output or arena slot (e.g. a constant).")
      .def_property_readonly("arena_address", &ExecutableState::arena_address)
      .def_property_readonly("arena_size", &ExecutableState::arena_size)
      .def_property_readonly("num_slots", &ExecutableState::num_slots);

  py::class_<xla_python::PreparedCall>(
      m, "PreparedCall",
      "An executable's prepared call (python/prepared_call.h): what xla.jit's native call\n"
      "plan (JitDispatch) runs.");
  py::class_<PreparedCpuCall, xla_python::PreparedCall>(
      m, "PreparedCpuCall",
      "CpuExecutable.prepared_call's call over an ExecutableState: outputs, a list of\n"
      "(shape, dtype), one new array per output allocation and call; result, the\n"
      "executable's result (an output index, -1 - parameter number for an aliased\n"
      "parameter's array, or a nested tuple of those); aliased, the parameters written\n"
      "(their arrays must be writable); guards, (object, attribute) pairs that must be\n"
      "falsy at each call, else the call is declined.")
      .def(py::init<py::object, std::vector<std::pair<std::vector<ssize_t>, py::dtype>>,
                    py::object, std::vector<int64_t>,
                    std::vector<std::pair<py::object, std::string>>>(),
           py::arg("state"), py::arg("outputs"), py::arg("result"), py::arg("aliased"),
           py::arg("guards"))
      .def("__call__", &PreparedCpuCall::CallArrays, py::arg("args"),
           "Runs on a sequence of NumPy arrays of exactly the parameters' dtypes and shapes\n"
           "(the caller's guarantee): the result, or None, having run nothing, where one is\n"
           "not C-contiguous or aligned, an aliased one not writable, a guard is set or an\n"
           "output cannot be allocated.");
}
