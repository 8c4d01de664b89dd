// The CPU executor (see executor.h).
#include "xla/backends/cpu/runtime/executor.h"

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace xla_cpu_runtime {
namespace {

constexpr size_t kArenaAlignment = 64;

std::unique_ptr<uint8_t, void (*)(void*)> AllocateArena(int64_t size) {
  const size_t bytes =
      (static_cast<size_t>(size) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  if (bytes == 0) return {nullptr, std::free};
  void* p = std::aligned_alloc(kArenaAlignment, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return {static_cast<uint8_t*>(p), std::free};
}

}  // namespace

Executor::Executor(EntryFunction fn, int64_t num_slots, std::vector<int64_t> arg_slots,
                   std::vector<int64_t> output_slots, int64_t arena_size,
                   std::vector<std::pair<int64_t, int64_t>> arena_slots)
    : fn_(fn),
      arg_slots_(std::move(arg_slots)),
      output_slots_(std::move(output_slots)),
      arena_size_(arena_size),
      arena_slots_(std::move(arena_slots)),
      arena_(nullptr, std::free) {
  if (fn_ == nullptr) throw std::invalid_argument("fn_address must not be 0");
  if (num_slots < 0) throw std::invalid_argument("num_slots must be >= 0");
  if (arena_size < 0) throw std::invalid_argument("arena_size must be >= 0");
  table_.assign(static_cast<size_t>(num_slots), nullptr);
  kinds_.assign(static_cast<size_t>(num_slots), SlotKind::kUnset);
  for (int64_t slot : arg_slots_) Claim(slot, SlotKind::kArg);
  for (int64_t slot : output_slots_) Claim(slot, SlotKind::kOutput);
  for (const auto& [slot, offset] : arena_slots_) {
    Claim(slot, SlotKind::kArena);
    if (offset < 0 || offset > arena_size_) {
      throw std::invalid_argument("arena offset " + std::to_string(offset) + " of slot " +
                                  std::to_string(slot) + " is outside the arena of " +
                                  std::to_string(arena_size_) + " bytes");
    }
  }
  arena_ = AllocateArena(arena_size_);
  PointIntoArena(table_.data(), arena_.get());
}

void Executor::SetFixed(int64_t slot, void* address) {
  CheckSlot(slot);
  if (kinds_[slot] != SlotKind::kUnset && kinds_[slot] != SlotKind::kFixed) {
    throw std::invalid_argument("slot " + std::to_string(slot) +
                                " is an argument, output or arena slot");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  table_[slot] = address;
  kinds_[slot] = SlotKind::kFixed;
}

void Executor::CheckSlot(int64_t slot) const {
  if (slot < 0 || slot >= static_cast<int64_t>(table_.size())) {
    throw std::invalid_argument("slot " + std::to_string(slot) + " is outside the table of " +
                                std::to_string(table_.size()) + " slots");
  }
}

void Executor::Claim(int64_t slot, SlotKind kind) {
  CheckSlot(slot);
  if (kinds_[slot] != SlotKind::kUnset) {
    throw std::invalid_argument("slot " + std::to_string(slot) + " is given more than once");
  }
  kinds_[slot] = kind;
}

void Executor::PointIntoArena(void** table, uint8_t* arena) const {
  for (const auto& [slot, offset] : arena_slots_) table[slot] = arena + offset;
}

Executor::Call::Call(Executor& executor)
    : executor_(executor),
      lock_(executor.mutex_, std::try_to_lock),
      private_arena_(nullptr, std::free),
      table_(executor.table_.data()) {
  if (!lock_.owns_lock()) {
    private_table_ = executor.table_;  // the fixed entries
    private_arena_ = AllocateArena(executor.arena_size_);
    executor.PointIntoArena(private_table_.data(), private_arena_.get());
    table_ = private_table_.data();
  }
}

void Executor::Call::Run() {
  executor_.fn_(table_);
  if (lock_.owns_lock()) lock_.unlock();
}

}  // namespace xla_cpu_runtime
