// The CPU executor: what one compiled executable needs per call, allocated
// once (the entry function, its buffer table with fixed entries filled in
// advance, and the temp arena), in plain C++. The Python bindings
// (python/cpu_runtime_bindings.cc) turn NumPy arrays into the addresses it
// takes; errors are std::invalid_argument.
#ifndef XLA_BACKENDS_CPU_RUNTIME_EXECUTOR_H_
#define XLA_BACKENDS_CPU_RUNTIME_EXECUTOR_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace xla_cpu_runtime {

// Generated code's entry point: `void fn(void** buffer_table)`.
using EntryFunction = void (*)(void**);

class Executor {
 public:
  // `num_slots` table entries: `arg_slots` and `output_slots` are filled per
  // call, `arena_slots` are (slot, byte offset) pairs pointing into a
  // 64-byte-aligned, zeroed arena of `arena_size` bytes, the rest may be
  // fixed with SetFixed. A slot may be claimed once.
  Executor(EntryFunction fn, int64_t num_slots, std::vector<int64_t> arg_slots,
           std::vector<int64_t> output_slots, int64_t arena_size,
           std::vector<std::pair<int64_t, int64_t>> arena_slots);

  // Fixes a slot that is neither an argument, an output nor in the arena
  // (e.g. a constant's address; the caller keeps it alive).
  void SetFixed(int64_t slot, void* address);

  // One call. Holds the executor's table while the call is being set up and
  // run; when another thread holds it, uses a private copy of the table (the
  // fixed entries) and a private arena, so concurrent calls are safe.
  class Call {
   public:
    explicit Call(Executor& executor);
    // Sets argument i / output i (in arg_slots / output_slots order).
    void SetArg(size_t i, void* address) { table_[executor_.arg_slots_[i]] = address; }
    void SetOutput(size_t i, void* address) { table_[executor_.output_slots_[i]] = address; }
    // Runs the entry function, then releases the executor's table.
    void Run();

   private:
    Executor& executor_;
    std::unique_lock<std::mutex> lock_;
    std::vector<void*> private_table_;
    std::unique_ptr<uint8_t, void (*)(void*)> private_arena_;
    void** table_;
  };

  size_t num_args() const { return arg_slots_.size(); }
  size_t num_outputs() const { return output_slots_.size(); }
  int64_t num_slots() const { return static_cast<int64_t>(table_.size()); }
  int64_t arena_size() const { return arena_size_; }
  uintptr_t arena_address() const { return reinterpret_cast<uintptr_t>(arena_.get()); }

 private:
  enum class SlotKind : uint8_t { kUnset, kArg, kOutput, kArena, kFixed };

  void CheckSlot(int64_t slot) const;
  void Claim(int64_t slot, SlotKind kind);
  void PointIntoArena(void** table, uint8_t* arena) const;

  EntryFunction fn_;
  std::vector<int64_t> arg_slots_;
  std::vector<int64_t> output_slots_;
  int64_t arena_size_;
  std::vector<std::pair<int64_t, int64_t>> arena_slots_;
  std::vector<void*> table_;
  std::vector<SlotKind> kinds_;
  std::unique_ptr<uint8_t, void (*)(void*)> arena_;
  std::mutex mutex_;
};

}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_EXECUTOR_H_
