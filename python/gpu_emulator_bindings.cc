// The GPU emulator's block scheduler (xla/backends/gpu/runtime), for
// xla/backends/gpu/emulator.py: addresses in, an error message out.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "xla/backends/gpu/runtime/block_scheduler.h"

namespace py = pybind11;

void RegisterGpuEmulator(py::module_& m) {
  m.def(
      "gpu_emulator_run_block",
      [](uintptr_t entry, uintptr_t args, int32_t block_size, int32_t ctaid, int32_t grid,
         bool reverse) {
        std::string error;
        {
          py::gil_scoped_release release;
          error = xla_gpu_emulator::RunBlock(
              reinterpret_cast<xla_gpu_emulator::ThreadEntry>(entry),
              reinterpret_cast<void* const*>(args), block_size, ctaid, grid, reverse);
        }
        return error;
      },
      py::arg("entry"), py::arg("args"), py::arg("block_size"), py::arg("ctaid"),
      py::arg("grid"), py::arg("reverse") = false,
      "Runs block `ctaid` of an emulated kernel: `entry(args, context)` per thread, as fibers "
      "with barrier and warp-shuffle semantics. Returns '' or what went wrong.");
}
