// xla.jit's repeated call in C++ (JitDispatch): the per-signature call plans
// of one jitted function (xla/frontend/call_plan.py, CallPlan.native), each
// matching positional arguments against its signature, converting Python
// scalars, checking the arguments written in place and running the
// executable's prepared call (prepared_call.h), so that a call costs one
// C++ call instead of the Python of building a key, converting and
// checking. Anything a plan cannot do as the Python CallPlan would (an
// array that is not C-contiguous, an argument written in place that is
// read-only or shares memory with another, a call the prepared call
// declines) returns `miss`, having run nothing: the caller then takes the
// Python path, which handles every case.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>
#include <new>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "python/prepared_call.h"

namespace py = pybind11;

namespace {

using xla_python::CallArg;
using xla_python::PreparedCall;

// The Python scalar types a signature's key names (call_plan.fast_key),
// each converted to its weak parameter dtype (bool, int64, float64,
// complex128), as np.array(value, dtype) does.
enum class ScalarKind { kBool, kInt, kFloat, kComplex };

struct Param {
  enum class Kind { kArray, kScalar, kStatic } kind;
  py::object type;            // kStatic: the value's exact type
  py::object value;           // kStatic: the value; kArray: the dtype
  std::vector<ssize_t> dims;  // kArray
  int64_t nbytes = 0;         // kArray
  ScalarKind scalar = ScalarKind::kFloat;
};

struct Plan {
  py::object prepared_object;
  PreparedCall* prepared;
  std::vector<Param> params;    // one per positional argument
  std::vector<size_t> in_place; // argument positions the executable writes into
  std::vector<size_t> written;  // argument positions of the leaves updated in place, in order
  size_t n_outputs;
  int out_kind;                 // 0: one array, 1: None, 2: a flat tuple, 3: a tree (finish)
  py::object finish;            // finish(leaves, result): CallPlan._finish
};

struct alignas(16) ScalarSlot {
  unsigned char bytes[16];
};

class JitDispatch {
 public:
  explicit JitDispatch(py::object miss) : miss_(std::move(miss)) {}

  // params: per positional argument, ("array", dtype, shape, nbytes),
  // ("scalar", type) or ("static", type, value).
  void Add(py::object prepared, py::sequence params, std::vector<size_t> in_place,
           std::vector<size_t> written, size_t n_outputs, int out_kind, py::object finish) {
    Plan plan;
    plan.prepared = prepared.cast<PreparedCall*>();
    plan.prepared_object = std::move(prepared);
    for (py::handle item : params) {
      py::tuple spec = py::reinterpret_borrow<py::tuple>(item);
      const std::string kind = spec[0].cast<std::string>();
      Param p;
      if (kind == "array") {
        p.kind = Param::Kind::kArray;
        p.value = spec[1];
        p.dims = spec[2].cast<std::vector<ssize_t>>();
        p.nbytes = spec[3].cast<int64_t>();
      } else if (kind == "scalar") {
        p.kind = Param::Kind::kScalar;
        PyObject* type = spec[1].ptr();
        if (type == reinterpret_cast<PyObject*>(&PyBool_Type)) {
          p.scalar = ScalarKind::kBool;
        } else if (type == reinterpret_cast<PyObject*>(&PyLong_Type)) {
          p.scalar = ScalarKind::kInt;
        } else if (type == reinterpret_cast<PyObject*>(&PyFloat_Type)) {
          p.scalar = ScalarKind::kFloat;
        } else if (type == reinterpret_cast<PyObject*>(&PyComplex_Type)) {
          p.scalar = ScalarKind::kComplex;
        } else {
          throw py::value_error("JitDispatch: a scalar is a bool, int, float or complex");
        }
      } else if (kind == "static") {
        p.kind = Param::Kind::kStatic;
        p.type = spec[1];
        p.value = spec[2];
      } else {
        throw py::value_error("JitDispatch: unknown parameter kind " + kind);
      }
      plan.params.push_back(std::move(p));
    }
    for (size_t i : in_place) CheckArray(plan, i);
    for (size_t i : written) CheckArray(plan, i);
    plan.in_place = std::move(in_place);
    plan.written = std::move(written);
    plan.n_outputs = n_outputs;
    if (out_kind < 0 || out_kind > 3) throw py::value_error("JitDispatch: out_kind is 0 to 3");
    plan.out_kind = out_kind;
    plan.finish = std::move(finish);
    plans_.push_back(std::make_shared<const Plan>(std::move(plan)));
  }

  // What must hold for any plan to run (the state a Python check would
  // read: no trace active, the debug options the plans were made under):
  // each (object, attribute) of `falsy` is falsy, each (object, attribute,
  // value) of `identical` is that very value.
  void SetGuards(std::vector<std::pair<py::object, std::string>> falsy,
                 std::vector<std::tuple<py::object, std::string, py::object>> identical) {
    falsy_ = xla_python::MakeFalsyGuards(std::move(falsy));
    identical_.clear();
    for (auto& [object, name, value] : identical) {
      identical_.emplace_back(std::move(object), py::str(name), std::move(value));
    }
  }

  py::object Call(py::handle args) {
    if (!PyTuple_Check(args.ptr()) || plans_.empty()) return miss_;
    if (xla_python::AnyGuardSet(falsy_)) return miss_;
    for (const auto& [object, name, expected] : identical_) {
      PyObject* value = PyObject_GetAttr(object.ptr(), name.ptr());
      if (value == nullptr) throw py::error_already_set();
      Py_DECREF(value);   // compared by identity only
      if (value != expected.ptr()) return miss_;
    }
    const size_t count = PyTuple_GET_SIZE(args.ptr());
    for (size_t i = 0; i < plans_.size(); ++i) {
      // Held here: the GIL is released while the plan runs, and another
      // thread may add or clear plans meanwhile.
      std::shared_ptr<const Plan> plan = plans_[i];
      if (plan->params.size() != count) continue;
      bool matched = false;
      py::object result = Run(*plan, args.ptr(), &matched);
      if (matched) return result ? result : miss_;   // signatures are disjoint
    }
    return miss_;
  }

  void Clear() { plans_.clear(); }
  size_t Size() const { return plans_.size(); }

 private:
  static void CheckArray(const Plan& plan, size_t i) {
    if (i >= plan.params.size() || plan.params[i].kind != Param::Kind::kArray) {
      throw py::value_error("JitDispatch: an argument written in place is an array parameter");
    }
  }

  // The call's result; *matched: whether the arguments are of this plan's
  // signature. Null where they are but the plan declines them.
  py::object Run(const Plan& plan, PyObject* args, bool* matched) {
    const auto& api = py::detail::npy_api::get();
    const size_t count = plan.params.size();
    constexpr size_t kInline = 16;
    CallArg inline_args[kInline];
    ScalarSlot inline_slots[kInline];
    std::vector<CallArg> heap_args;
    std::vector<ScalarSlot> heap_slots;
    CallArg* call_args = inline_args;
    ScalarSlot* slots = inline_slots;
    if (count > kInline) {
      heap_args.resize(count);
      heap_slots.resize(count);
      call_args = heap_args.data();
      slots = heap_slots.data();
    }
    size_t leaves = 0;
    bool usable = true;
    for (size_t i = 0; i < count; ++i) {
      PyObject* a = PyTuple_GET_ITEM(args, i);
      const Param& p = plan.params[i];
      switch (p.kind) {
        case Param::Kind::kStatic: {
          if (reinterpret_cast<PyObject*>(Py_TYPE(a)) != p.type.ptr()) return py::object();
          const int equal = PyObject_RichCompareBool(a, p.value.ptr(), Py_EQ);
          if (equal < 0) {
            PyErr_Clear();
            return py::object();
          }
          if (equal == 0) return py::object();
          break;
        }
        case Param::Kind::kArray: {
          if (Py_TYPE(a) != api.PyArray_Type_) return py::object();
          const auto* proxy = py::detail::array_proxy(a);
          if (static_cast<size_t>(proxy->nd) != p.dims.size() ||
              !std::equal(p.dims.begin(), p.dims.end(), proxy->dimensions)) {
            return py::object();
          }
          if (proxy->descr != p.value.ptr()) {
            const int equal = PyObject_RichCompareBool(proxy->descr, p.value.ptr(), Py_EQ);
            if (equal < 0) {
              PyErr_Clear();
              return py::object();
            }
            if (equal == 0) return py::object();
          }
          // Written-in-place checks below read the array's extent as
          // data..data+nbytes.
          if ((proxy->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) == 0) usable = false;
          call_args[leaves++] = {a, nullptr};
          break;
        }
        case Param::Kind::kScalar: {
          void* bytes = slots[leaves].bytes;
          switch (p.scalar) {
            case ScalarKind::kBool:
              if (Py_TYPE(a) != &PyBool_Type) return py::object();
              *static_cast<bool*>(bytes) = a == Py_True;
              break;
            case ScalarKind::kInt: {
              if (!PyLong_CheckExact(a)) return py::object();
              int overflow = 0;
              const long long value = PyLong_AsLongLongAndOverflow(a, &overflow);
              if (overflow != 0) return py::object();   // outside the key's int64 range
              if (value == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return py::object();
              }
              const int64_t v = value;
              std::memcpy(bytes, &v, sizeof(v));
              break;
            }
            case ScalarKind::kFloat: {
              if (!PyFloat_CheckExact(a)) return py::object();
              const double v = PyFloat_AS_DOUBLE(a);
              std::memcpy(bytes, &v, sizeof(v));
              break;
            }
            case ScalarKind::kComplex: {
              if (!PyComplex_CheckExact(a)) return py::object();
              const Py_complex c = PyComplex_AsCComplex(a);
              const std::complex<double> v(c.real, c.imag);
              std::memcpy(bytes, &v, sizeof(v));
              break;
            }
          }
          call_args[leaves++] = {nullptr, bytes};
          break;
        }
      }
    }
    *matched = true;
    if (!usable) return py::object();
    // jit's _writable: an argument written in place is writeable and shares
    // no memory with another array argument (arrays that own their memory
    // and are distinct objects share none; views are compared by extent,
    // as np.may_share_memory does).
    for (size_t i : plan.in_place) {
      PyObject* a = PyTuple_GET_ITEM(args, i);
      const auto* pa = py::detail::array_proxy(a);
      if ((pa->flags & py::detail::npy_api::NPY_ARRAY_WRITEABLE_) == 0) return py::object();
      const bool owner = pa->base == nullptr;
      const char* begin = pa->data;
      const char* end = begin + plan.params[i].nbytes;
      for (size_t j = 0; j < count; ++j) {
        if (j == i || plan.params[j].kind != Param::Kind::kArray) continue;
        PyObject* b = PyTuple_GET_ITEM(args, j);
        if (b == a) return py::object();
        const auto* pb = py::detail::array_proxy(b);
        if (owner && pb->base == nullptr) continue;
        const char* b_begin = pb->data;
        const char* b_end = b_begin + plan.params[j].nbytes;
        if (begin < end && b_begin < b_end && begin < b_end && b_begin < end) {
          return py::object();
        }
      }
    }
    py::object result = plan.prepared->Call(call_args, leaves);
    if (!result) return result;
    return Finish(plan, args, std::move(result));
  }

  // CallPlan._finish for the kinds it handles without Python; finish(leaves,
  // result) for the others (a tree, or a written argument's value that is
  // not the caller's array: it is copied back there).
  static py::object Finish(const Plan& plan, PyObject* args, py::object result) {
    py::object user = result;
    if (!plan.written.empty() && plan.out_kind != 3) {
      py::tuple values = PyTuple_Check(result.ptr())
                             ? py::reinterpret_borrow<py::tuple>(result)
                             : py::make_tuple(result);
      const size_t n = plan.n_outputs;
      bool same = PyTuple_GET_SIZE(values.ptr()) >= static_cast<ssize_t>(n + plan.written.size());
      for (size_t k = 0; same && k < plan.written.size(); ++k) {
        same = PyTuple_GET_ITEM(values.ptr(), n + k) == PyTuple_GET_ITEM(args, plan.written[k]);
      }
      if (!same) return CallFinish(plan, args, result);
      if (plan.out_kind == 0) {
        user = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(values.ptr(), 0));
      } else {
        PyObject* head = PyTuple_GetSlice(values.ptr(), 0, static_cast<ssize_t>(n));
        if (head == nullptr) throw py::error_already_set();
        user = py::reinterpret_steal<py::object>(head);
      }
    }
    switch (plan.out_kind) {
      case 0:
        return user;
      case 1:
        return py::none();
      case 2: {
        PyObject* tuple = PySequence_Tuple(user.ptr());
        if (tuple == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(tuple);
      }
      default:
        return CallFinish(plan, args, result);
    }
  }

  static py::object CallFinish(const Plan& plan, PyObject* args, const py::object& result) {
    py::list leaves;
    for (size_t i = 0; i < plan.params.size(); ++i) {
      if (plan.params[i].kind != Param::Kind::kStatic) {
        leaves.append(py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(args, i)));
      }
    }
    return plan.finish(leaves, result);
  }

  py::object miss_;
  std::vector<std::shared_ptr<const Plan>> plans_;
  xla_python::FalsyGuards falsy_;
  std::vector<std::tuple<py::object, py::str, py::object>> identical_;
};

// JitDispatch's call as a builtin function of one argument (METH_O) over a
// capsule of the dispatcher: a pybind11 method call costs about 0.2 us more,
// a tenth of what a jitted call of small arrays costs in all.
constexpr const char* kCapsuleName = "xla.JitDispatch";

PyObject* CallDispatch(PyObject* capsule, PyObject* args) {
  auto* dispatch = static_cast<JitDispatch*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (dispatch == nullptr) return nullptr;
  try {
    return dispatch->Call(args).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef kCallDispatch = {"jit_dispatch", CallDispatch, METH_O,
                             "JitDispatch's call (JitDispatch.caller)."};

py::object Caller(py::object self) {
  JitDispatch* dispatch = self.cast<JitDispatch*>();
  PyObject* capsule = PyCapsule_New(dispatch, kCapsuleName, [](PyObject* c) {
    Py_XDECREF(static_cast<PyObject*>(PyCapsule_GetContext(c)));
  });
  if (capsule == nullptr) throw py::error_already_set();
  // The capsule keeps the dispatcher alive.
  if (PyCapsule_SetContext(capsule, self.inc_ref().ptr()) != 0) {
    self.dec_ref();
    Py_DECREF(capsule);
    throw py::error_already_set();
  }
  PyObject* function = PyCFunction_New(&kCallDispatch, capsule);
  Py_DECREF(capsule);
  if (function == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(function);
}

}  // namespace

void RegisterJitCall(py::module_& m) {
  py::class_<JitDispatch>(
      m, "JitDispatch",
      "xla.jit's repeated call of one function (python/jit_call_bindings.cc): call plans\n"
      "added per signature; calling it with the positional arguments' tuple returns the\n"
      "result, or `miss`, having run nothing, where no plan matches or the matching one\n"
      "declines (the Python call path then runs).")
      .def(py::init<py::object>(), py::arg("miss"))
      .def("add", &JitDispatch::Add, py::arg("prepared"), py::arg("params"),
           py::arg("in_place"), py::arg("written"), py::arg("n_outputs"), py::arg("out_kind"),
           py::arg("finish"),
           "Adds a signature's plan: prepared, an executable's PreparedCall; params, per\n"
           "positional argument ('array', dtype, shape, nbytes), ('scalar', type) for a\n"
           "Python bool/int/float/complex (converted to bool/int64/float64/complex128) or\n"
           "('static', type, value); in_place, the positions of arrays the executable writes\n"
           "(checked writeable and sharing no memory with another argument); written, the\n"
           "positions of the arguments updated in place, whose values follow the n_outputs\n"
           "user outputs in the result; out_kind, 0: one array, 1: None, 2: a flat tuple,\n"
           "3: finish(leaves, result) builds it (also called where a written value is not\n"
           "the caller's array).")
      .def("set_guards", &JitDispatch::SetGuards, py::arg("falsy"), py::arg("identical"),
           "What must hold for any plan to run: each (object, attribute) of falsy is falsy\n"
           "and each (object, attribute, value) of identical is that value (identity);\n"
           "otherwise a call returns miss.")
      .def("__call__", &JitDispatch::Call, py::arg("args"))
      .def_property_readonly("caller", &Caller,
                             "The same call as a builtin function of the arguments' tuple (no\n"
                             "pybind11 dispatch: what xla.jit calls); it keeps this alive.")
      .def("clear", &JitDispatch::Clear)
      .def("__len__", &JitDispatch::Size);
}
