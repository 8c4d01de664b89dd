// The extension module xla._core: pybind11 glue over the C++ core in csrc/.
//
// Graphs cross the boundary as CSR arrays (see csrc/graph.h): `offsets` has
// num_nodes + 1 entries and `indices` lists each node's operands. Arguments
// may be NumPy integer arrays (int64 is used without a copy) or sequences of
// ints; malformed graphs raise ValueError naming the offending entry, and
// non-integer arrays raise TypeError. The GIL is released while the core runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "csrc/graph.h"
#include "csrc/version.h"
#include "python/array_args.h"
#include "python/output_buffers.h"

namespace py = pybind11;

// Scheduling and buffer assignment, defined in python/buffer_bindings.cc.
void RegisterBufferAssignment(py::module_& m);
// Fusion decisions, defined in python/fusion_bindings.cc.
void RegisterFusion(py::module_& m);
// The CPU runtime and calls into compiled CPU code, in python/cpu_runtime_bindings.cc.
void RegisterCpuRuntime(py::module_& m);
// The GPU emulator's block scheduler, in python/gpu_emulator_bindings.cc.
void RegisterGpuEmulator(py::module_& m);
// xla.jit's native call plans, in python/jit_call_bindings.cc.
void RegisterJitCall(py::module_& m);

namespace {

using IndexArray = xla_python::Array<int64_t>;
using xla_python::ToNumpy;

IndexArray AsIndexArray(py::handle value, const char* name) {
  return xla_python::AsIntegerArray<int64_t>(value, name, -1, /*allow_bool=*/false);
}

// Keeps the CSR arrays alive and checked for as long as the view is used.
struct CheckedGraph {
  IndexArray offsets;
  IndexArray indices;
  xla_core::OperandGraph graph;

  CheckedGraph(py::handle offsets_arg, py::handle indices_arg)
      : offsets(AsIndexArray(offsets_arg, "offsets")),
        indices(AsIndexArray(indices_arg, "indices")) {
    const std::string error =
        xla_core::ValidateGraph(offsets.data(), static_cast<size_t>(offsets.size()),
                                indices.data(), static_cast<size_t>(indices.size()));
    if (!error.empty()) throw py::value_error(error);
    graph = xla_core::MakeOperandGraph(offsets.data(), static_cast<size_t>(offsets.size()),
                                       indices.data());
  }

  IndexArray Roots(py::handle roots_arg) const {
    IndexArray roots = AsIndexArray(roots_arg, "roots");
    const std::string error =
        xla_core::ValidateRoots(graph, roots.data(), static_cast<size_t>(roots.size()));
    if (!error.empty()) throw py::value_error(error);
    return roots;
  }
};


py::array_t<int64_t> PostOrder(py::handle offsets, py::handle indices, py::handle roots) {
  CheckedGraph checked(offsets, indices);
  std::vector<int64_t> order;
  if (roots.is_none()) {
    py::gil_scoped_release release;
    order = xla_core::PostOrder(checked.graph);
  } else {
    IndexArray root_ids = checked.Roots(roots);
    py::gil_scoped_release release;
    order = xla_core::PostOrderFrom(checked.graph, root_ids.data(),
                                    static_cast<size_t>(root_ids.size()));
  }
  return ToNumpy<int64_t>(std::move(order));
}

int64_t FindCycle(py::handle offsets, py::handle indices) {
  CheckedGraph checked(offsets, indices);
  py::gil_scoped_release release;
  return xla_core::FindCycle(checked.graph);
}

py::array_t<bool> Reachable(py::handle offsets, py::handle indices, py::handle roots) {
  CheckedGraph checked(offsets, indices);
  IndexArray root_ids = checked.Roots(roots);
  std::vector<uint8_t> live;
  {
    py::gil_scoped_release release;
    live = xla_core::Reachable(checked.graph, root_ids.data(),
                               static_cast<size_t>(root_ids.size()));
  }
  return ToNumpy<bool>(std::move(live));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "The C++ core of the compiler. Graphs are passed as CSR arrays: node i's operands are "
      "indices[offsets[i]:offsets[i+1]], and offsets has num_nodes + 1 entries.";
  m.attr("__version__") = xla_core::kVersion;

  m.def("post_order", &PostOrder, py::arg("offsets"), py::arg("indices"),
        py::arg("roots") = py::none(),
        "Returns an int64 array of node ids, operands before users.\n\n"
        "Without roots: every node once, searching depth-first from each node that no node uses,\n"
        "in node-id order, visiting operands in operand order (then from any node left, which\n"
        "happens only on a cycle). With roots: only the nodes reachable from them, searching\n"
        "from each root in the order given.");
  m.def("find_cycle", &FindCycle, py::arg("offsets"), py::arg("indices"),
        "Returns a node that is, transitively, its own operand, or -1 if the graph is acyclic.");
  m.def("reachable", &Reachable, py::arg("offsets"), py::arg("indices"), py::arg("roots"),
        "Returns a bool array over nodes: True for the roots and everything they use, "
        "transitively (the live set for dead code elimination).");

  RegisterBufferAssignment(m);
  RegisterFusion(m);
  RegisterCpuRuntime(m);
  RegisterGpuEmulator(m);
  RegisterJitCall(m);
  xla_python::RegisterOutputBuffers(m);
}
