// Bindings for the fusion decisions (csrc/fusion.h): one call per
// computation, arrays in, a dict of arrays out. Integer arguments may be
// NumPy arrays or sequences of ints; malformed input raises ValueError. The
// GIL is released while the core runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "csrc/fusion.h"
#include "python/array_args.h"
#include "csrc/graph.h"

namespace py = pybind11;

namespace {

template <typename T>
using Array = xla_python::Array<T>;
using xla_python::ToNumpy;

template <typename T>
Array<T> AsArray(py::handle value, const char* name, int64_t expected_size) {
  return xla_python::AsIntegerArray<T>(value, name, expected_size);
}

py::dict ComputeFusion(py::handle offsets_arg, py::handle indices_arg, py::handle kind_arg,
                       py::handle expensive_arg, py::handle bytes_arg, py::handle live_out_arg,
                       py::handle shape_key_arg, py::handle reads_own_index_arg,
                       int64_t max_operands, int64_t max_duplicates, bool multi_output,
                       int64_t sibling_min_bytes, bool fuse_singletons, int64_t max_depth,
                       int64_t max_emitted_ops, bool check) {
  Array<int64_t> offsets = AsArray<int64_t>(offsets_arg, "offsets", -1);
  Array<int64_t> indices = AsArray<int64_t>(indices_arg, "indices", -1);
  std::string error = xla_core::ValidateGraph(offsets.data(), static_cast<size_t>(offsets.size()),
                                              indices.data(), static_cast<size_t>(indices.size()));
  if (!error.empty()) throw py::value_error(error);
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  Array<int8_t> kind = AsArray<int8_t>(kind_arg, "kind", n);
  Array<uint8_t> expensive = AsArray<uint8_t>(expensive_arg, "expensive", n);
  Array<int64_t> bytes = AsArray<int64_t>(bytes_arg, "bytes", n);
  Array<uint8_t> live_out = AsArray<uint8_t>(live_out_arg, "live_out", n);
  Array<int64_t> shape_key = AsArray<int64_t>(shape_key_arg, "shape_key", n);
  Array<uint8_t> reads_own_index;
  if (!reads_own_index_arg.is_none()) {
    reads_own_index = AsArray<uint8_t>(reads_own_index_arg, "reads_own_index", n);
  }

  xla_core::FusionInput input;
  input.graph = xla_core::MakeOperandGraph(offsets.data(), static_cast<size_t>(offsets.size()),
                                           indices.data());
  input.kind = kind.data();
  input.expensive = expensive.data();
  input.bytes = bytes.data();
  input.live_out = live_out.data();
  input.shape_key = shape_key.data();
  if (!reads_own_index_arg.is_none()) input.reads_own_index = reads_own_index.data();
  error = xla_core::ValidateFusionInput(input);
  if (!error.empty()) throw py::value_error(error);

  xla_core::FusionOptions options;
  options.max_operands = max_operands;
  options.max_duplicates = max_duplicates;
  options.multi_output = multi_output;
  options.sibling_min_bytes = sibling_min_bytes;
  options.fuse_singletons = fuse_singletons;
  if (max_depth < 1 || max_emitted_ops < 1) {
    throw py::value_error("max_depth and max_emitted_ops must be at least 1");
  }
  options.max_depth = max_depth;
  options.max_emitted_ops = max_emitted_ops;

  xla_core::FusionResult result;
  {
    py::gil_scoped_release release;
    result = xla_core::ComputeFusion(input, options);
    if (check) error = xla_core::CheckFusionResult(input, result);
  }
  if (!error.empty()) throw std::runtime_error("fusion result is inconsistent: " + error);

  py::dict out;
  out["instruction_group"] = ToNumpy<int64_t>(std::move(result.instruction_group));
  out["unfused"] = ToNumpy<bool>(std::move(result.unfused));
  out["group_offsets"] = ToNumpy<int64_t>(std::move(result.group_offsets));
  out["group_members"] = ToNumpy<int64_t>(std::move(result.group_members));
  out["member_is_output"] = ToNumpy<bool>(std::move(result.member_is_output));
  out["group_kind"] = ToNumpy<int8_t>(std::move(result.group_kind));
  return out;
}

}  // namespace

void RegisterFusion(py::module_& m) {
  m.attr("MAX_FUSION_DEPTH") = xla_core::kMaxFusionDepth;
  m.attr("MAX_FUSION_EMITTED_OPS") = xla_core::kMaxFusionEmittedOps;
  m.def("compute_fusion", &ComputeFusion, py::arg("offsets"), py::arg("indices"),
        py::arg("kind"), py::arg("expensive"), py::arg("bytes"), py::arg("live_out"),
        py::arg("shape_key"), py::arg("reads_own_index") = py::none(),
        py::arg("max_operands") = 64, py::arg("max_duplicates") = 4,
        py::arg("multi_output") = true, py::arg("sibling_min_bytes") = 256,
        py::arg("fuse_singletons") = false, py::arg("max_depth") = xla_core::kMaxFusionDepth,
        py::arg("max_emitted_ops") = xla_core::kMaxFusionEmittedOps, py::arg("check") = false,
        "Decides the fusions of one computation (see csrc/fusion.h).\n\n"
        "Nodes are in post order; node i's operands are indices[offsets[i]:offsets[i+1]].\n"
        "kind: 0 unfusible, 1 loop-fusible, 2 reduce, 3 scalar constant. reads_own_index:\n"
        "1 where the instruction reads its operands at its own index (elementwise), or None\n"
        "for all. max_depth and max_emitted_ops bound each fusion. Returns a dict:\n"
        "instruction_group (home group or -1), unfused (bool: stays as is), group_offsets and\n"
        "group_members (CSR, members in post order), member_is_output (bool, aligned with\n"
        "group_members), group_kind (0 kLoop, 1 kInput). Groups come after what they read.\n"
        "check=True verifies the result's invariants (RuntimeError if broken).");
}
