// Bindings for scheduling and buffer assignment (csrc/scheduler.h,
// csrc/buffer_assignment.h): arrays in, arrays out, one call per computation
// (scheduling) or per module (buffer assignment). Integer arguments may be
// NumPy arrays or sequences of ints; malformed input raises ValueError. The
// GIL is released while the core runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "csrc/buffer_assignment.h"
#include "csrc/graph.h"
#include "csrc/scheduler.h"
#include "python/array_args.h"

namespace py = pybind11;

namespace {

using I64Array = xla_python::Array<int64_t>;
using U8Array = xla_python::Array<uint8_t>;
using xla_python::ToNumpy;

template <typename ArrayT>
ArrayT AsArray(py::handle value, const char* name) {
  return xla_python::AsIntegerArray<typename ArrayT::value_type>(value, name);
}

// Keeps the scheduler's arrays alive and validated while the core runs.
struct CheckedSchedule {
  I64Array offsets, indices, bytes, ordering_offsets, ordering_indices;
  U8Array alias;
  xla_core::ScheduleInput input;

  CheckedSchedule(py::handle offsets_arg, py::handle indices_arg, py::handle bytes_arg,
                  py::handle alias_arg, int64_t root, py::handle ordering_offsets_arg,
                  py::handle ordering_indices_arg)
      : offsets(AsArray<I64Array>(offsets_arg, "offsets")),
        indices(AsArray<I64Array>(indices_arg, "indices")),
        bytes(AsArray<I64Array>(bytes_arg, "bytes_defined")),
        alias(AsArray<U8Array>(alias_arg, "is_alias")) {
    std::string error = xla_core::ValidateGraph(offsets.data(), offsets.size(), indices.data(),
                                                indices.size());
    if (!error.empty()) throw py::value_error(error);
    input.operands = xla_core::MakeOperandGraph(offsets.data(), offsets.size(), indices.data());
    if (!ordering_offsets_arg.is_none()) {
      ordering_offsets = AsArray<I64Array>(ordering_offsets_arg, "ordering_offsets");
      ordering_indices = AsArray<I64Array>(ordering_indices_arg, "ordering_indices");
      error = xla_core::ValidateGraph(ordering_offsets.data(), ordering_offsets.size(),
                                      ordering_indices.data(), ordering_indices.size());
      if (!error.empty()) throw py::value_error("ordering: " + error);
      input.ordering = xla_core::MakeOperandGraph(ordering_offsets.data(), ordering_offsets.size(),
                                                  ordering_indices.data());
    }
    input.bytes_defined = bytes.data();
    input.is_alias = alias.data();
    input.root = root;
    error = xla_core::ValidateScheduleInput(input, bytes.size(), alias.size());
    if (!error.empty()) throw py::value_error(error);
  }
};

py::array_t<int64_t> ListSchedule(py::handle offsets, py::handle indices, py::handle bytes,
                                  py::handle alias, int64_t root, py::handle ordering_offsets,
                                  py::handle ordering_indices) {
  CheckedSchedule checked(offsets, indices, bytes, alias, root, ordering_offsets, ordering_indices);
  // Cyclic operand or ordering edges leave no valid schedule.
  const int64_t on_cycle = xla_core::FindCycle(checked.input.operands);
  if (on_cycle >= 0) {
    throw py::value_error("the graph has a cycle through node " + std::to_string(on_cycle));
  }
  std::vector<int64_t> sequence;
  {
    py::gil_scoped_release release;
    sequence = xla_core::ListSchedule(checked.input);
  }
  if (checked.input.ordering.num_nodes != 0) {
    std::vector<int64_t> position(sequence.size());
    for (size_t k = 0; k < sequence.size(); ++k) position[sequence[k]] = static_cast<int64_t>(k);
    const auto& g = checked.input.ordering;
    for (int64_t node = 0; node < g.num_nodes; ++node) {
      for (int64_t i = g.operand_begin(node); i < g.operand_end(node); ++i) {
        if (position[g.operand_indices[i]] > position[node]) {
          throw py::value_error("the ordering edges form a cycle with the operand edges at node " +
                                std::to_string(node));
        }
      }
    }
  }
  return ToNumpy<int64_t>(std::move(sequence));
}

int64_t SequencePeakMemory(py::handle offsets, py::handle indices, py::handle bytes,
                           py::handle alias, int64_t root, py::handle sequence_arg) {
  CheckedSchedule checked(offsets, indices, bytes, alias, root, py::none(), py::none());
  I64Array sequence = AsArray<I64Array>(sequence_arg, "sequence");
  const int64_t n = checked.input.operands.num_nodes;
  std::vector<uint8_t> seen(n, 0);
  if (sequence.size() != n) throw py::value_error("sequence must list every node once");
  for (py::ssize_t k = 0; k < sequence.size(); ++k) {
    const int64_t node = sequence.data()[k];
    if (node < 0 || node >= n || seen[node]) throw py::value_error("sequence must list every node once");
    seen[node] = 1;
  }
  py::gil_scoped_release release;
  return xla_core::SequencePeakMemory(checked.input, sequence.data(), sequence.size());
}

py::dict AssignBuffers(py::handle sizes_arg, py::handle alignments_arg, py::handle starts_arg,
                       py::handle ends_arg, py::handle colocations_arg, py::handle kinds_arg,
                       const std::string& fit) {
  I64Array sizes = AsArray<I64Array>(sizes_arg, "sizes");
  I64Array alignments = AsArray<I64Array>(alignments_arg, "alignments");
  I64Array starts = AsArray<I64Array>(starts_arg, "starts");
  I64Array ends = AsArray<I64Array>(ends_arg, "ends");
  I64Array colocations = AsArray<I64Array>(colocations_arg, "colocations");
  I64Array kinds = AsArray<I64Array>(kinds_arg, "kinds");
  const py::ssize_t n = sizes.size();
  for (const auto* a : {&alignments, &starts, &ends, &colocations, &kinds}) {
    if (a->size() != n) throw py::value_error("every buffer array must have one entry per buffer");
  }
  xla_core::BufferAssignmentInput in;
  in.num_buffers = static_cast<size_t>(n);
  in.sizes = sizes.data();
  in.alignments = alignments.data();
  in.starts = starts.data();
  in.ends = ends.data();
  in.colocations = colocations.data();
  in.kinds = kinds.data();
  if (fit == "best") {
    in.fit = xla_core::kBestFit;
  } else if (fit == "first") {
    in.fit = xla_core::kFirstFit;
  } else {
    throw py::value_error("fit must be 'best' or 'first'; got '" + fit + "'");
  }
  const std::string error = xla_core::ValidateBufferAssignmentInput(in);
  if (!error.empty()) throw py::value_error(error);
  xla_core::BufferAssignmentResult r;
  {
    py::gil_scoped_release release;
    r = xla_core::AssignBuffers(in);
  }
  py::dict out;
  out["slot"] = ToNumpy<int64_t>(std::move(r.slot));
  out["allocation"] = ToNumpy<int64_t>(std::move(r.allocation));
  out["offset"] = ToNumpy<int64_t>(std::move(r.offset));
  out["slot_size"] = ToNumpy<int64_t>(std::move(r.slot_size));
  out["slot_start"] = ToNumpy<int64_t>(std::move(r.slot_start));
  out["slot_end"] = ToNumpy<int64_t>(std::move(r.slot_end));
  out["slot_kind"] = ToNumpy<int64_t>(std::move(r.slot_kind));
  out["slot_allocation"] = ToNumpy<int64_t>(std::move(r.slot_allocation));
  out["slot_offset"] = ToNumpy<int64_t>(std::move(r.slot_offset));
  out["allocation_size"] = ToNumpy<int64_t>(std::move(r.allocation_size));
  out["allocation_kind"] = ToNumpy<int64_t>(std::move(r.allocation_kind));
  out["arena_allocation"] = r.arena_allocation;
  out["arena_size"] = r.arena_size;
  out["peak_temp_bytes"] = r.peak_temp_bytes;
  out["packing"] = r.packing == xla_core::kPackedBySweep ? "sweep" : "global-decreasing-size";
  return out;
}

}  // namespace

void RegisterBufferAssignment(py::module_& m) {
  m.def("list_schedule", &ListSchedule, py::arg("offsets"), py::arg("indices"),
        py::arg("bytes_defined"), py::arg("is_alias"), py::arg("root") = -1,
        py::arg("ordering_offsets") = py::none(), py::arg("ordering_indices") = py::none(),
        "Returns a memory-minimizing order of the nodes (XLA's ListScheduler; see "
        "csrc/scheduler.h): operands and ordering predecessors first, greedily the ready "
        "node freeing the most bytes net of what it defines, ties by node id.");
  m.def("sequence_peak_memory", &SequencePeakMemory, py::arg("offsets"), py::arg("indices"),
        py::arg("bytes_defined"), py::arg("is_alias"), py::arg("root"), py::arg("sequence"),
        "The scheduler's peak-memory estimate for a given order of the nodes.");
  m.def("assign_buffers", &AssignBuffers, py::arg("sizes"), py::arg("alignments"),
        py::arg("starts"), py::arg("ends"), py::arg("colocations"), py::arg("kinds"),
        py::arg("fit") = "best",
        "Packs logical buffers into allocations (see csrc/buffer_assignment.h). Kinds: 0 temp, "
        "1 parameter, 2 constant, 3 output. Returns a dict of int64 arrays: per buffer slot, "
        "allocation, offset; per slot slot_size/start/end/kind/allocation/offset; per "
        "allocation allocation_size/kind; and arena_allocation, arena_size, peak_temp_bytes, and packing ('global-decreasing-size' or 'sweep', the heuristic whose arena was kept).");
}
