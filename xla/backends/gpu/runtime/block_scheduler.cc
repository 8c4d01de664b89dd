#include "xla/backends/gpu/runtime/block_scheduler.h"

#include <ucontext.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <vector>

namespace xla_gpu_emulator {
namespace {

constexpr int kWarp = 32;
constexpr uint32_t kFullMask = 0xFFFFFFFFu;

enum class State { kReady, kBarrier, kShuffle, kDone };

const char* StateName(State s) {
  switch (s) {
    case State::kReady: return "running";
    case State::kBarrier: return "at a barrier";
    case State::kShuffle: return "at a shuffle";
    case State::kDone: return "ended";
  }
  return "?";
}

struct Shuffle {
  int32_t mode = 0;
  uint32_t mask = 0;
  int32_t value = 0;
  int32_t arg = 0;
  int32_t c = 0;
};

struct Block {
  ThreadEntry entry;
  void* const* args;
  int32_t size;
  std::vector<ThreadContext> contexts;
  std::vector<ucontext_t> fibers;
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<State> state;
  std::vector<Shuffle> shuffles;
  std::vector<int32_t> received;
  ucontext_t scheduler;
  int32_t current = 0;
  std::string error;
};

thread_local Block* starting = nullptr;  // the block whose fiber is being entered

void Yield(Block* b, int64_t t) { swapcontext(&b->fibers[t], &b->scheduler); }

void Barrier(ThreadContext* ctx) {
  Block* b = static_cast<Block*>(ctx->block);
  b->state[ctx->thread] = State::kBarrier;
  Yield(b, ctx->thread);
}

int32_t ShuffleCall(ThreadContext* ctx, int32_t mode, uint32_t mask, int32_t value, int32_t arg,
                    int32_t c) {
  Block* b = static_cast<Block*>(ctx->block);
  int64_t t = ctx->thread;
  if (mask != kFullMask || c != 0x1F || mode < kBfly || mode > kIdx) {
    std::ostringstream os;
    os << "the GPU emulator runs full-warp shuffles only (thread " << t << ": mode " << mode
       << ", member mask 0x" << std::hex << mask << ", c 0x" << c << ")";
    b->error = os.str();
    b->state[t] = State::kBarrier;  // never resumed: the block has failed
    Yield(b, t);
    return value;
  }
  b->state[t] = State::kShuffle;
  b->shuffles[t] = Shuffle{mode, mask, value, arg, c};
  Yield(b, t);
  return b->received[t];
}

void FiberMain() {
  Block* b = starting;
  int32_t t = b->current;
  b->entry(b->args, &b->contexts[t]);
  b->state[t] = State::kDone;
  Yield(b, t);  // never resumed
}

// Warps all of whose lanes wait at a shuffle exchange their values; whether
// any did. Sets b->error when a warp is only partly at a shuffle.
bool Exchange(Block* b) {
  bool released = false;
  for (int32_t base = 0; base < b->size; base += kWarp) {
    int32_t end = std::min(base + kWarp, b->size);
    int32_t waiting = 0, other = -1;
    for (int32_t t = base; t < end; ++t) {
      if (b->state[t] == State::kShuffle) {
        ++waiting;
      } else if (other < 0) {
        other = t;
      }
    }
    if (waiting == 0) continue;
    if (other >= 0) {
      std::ostringstream os;
      os << "threads of the warp of thread " << base << " wait at a shuffle that thread "
         << other << " (" << StateName(b->state[other])
         << ") does not reach: a shuffle of the full warp every lane must reach";
      b->error = os.str();
      return false;
    }
    const Shuffle& first = b->shuffles[base];
    for (int32_t t = base; t < end; ++t) {
      const Shuffle& s = b->shuffles[t];
      if (s.mode != first.mode || s.c != first.c) {
        b->error = "the lanes of a warp meet at different shuffles";
        return false;
      }
    }
    for (int32_t t = base; t < end; ++t) {
      const Shuffle& s = b->shuffles[t];
      int32_t lane = t - base, src = lane;
      switch (s.mode) {
        case kBfly: src = lane ^ s.arg; break;
        case kDown: src = lane + s.arg; break;
        case kUp: src = lane - s.arg; break;
        case kIdx: src = s.arg; break;
      }
      if (src < 0 || src >= kWarp || base + src >= end) src = lane;
      b->received[t] = b->shuffles[base + src].value;
    }
    for (int32_t t = base; t < end; ++t) b->state[t] = State::kReady;
    released = true;
  }
  return released;
}

}  // namespace

std::string RunBlock(ThreadEntry entry, void* const* args, int32_t block_size, int32_t ctaid,
                     int32_t grid, bool reverse, size_t stack_bytes) {
  if (block_size <= 0) return "a block needs at least one thread";
  Block b;
  b.entry = entry;
  b.args = args;
  b.size = block_size;
  b.contexts.resize(block_size);
  b.fibers.resize(block_size);
  b.stacks.resize(block_size);
  b.state.assign(block_size, State::kReady);
  b.shuffles.resize(block_size);
  b.received.assign(block_size, 0);
  for (int32_t t = 0; t < block_size; ++t) {
    ThreadContext& ctx = b.contexts[t];
    ctx.tid_x = t;
    ctx.ctaid_x = ctaid;
    ctx.ntid_x = block_size;
    ctx.nctaid_x = grid;
    ctx.barrier = &Barrier;
    ctx.thread = t;
    ctx.shuffle = &ShuffleCall;
    ctx.block = &b;
    b.stacks[t].reset(new char[stack_bytes]);
    if (getcontext(&b.fibers[t]) != 0) return "getcontext failed";
    b.fibers[t].uc_stack.ss_sp = b.stacks[t].get();
    b.fibers[t].uc_stack.ss_size = stack_bytes;
    b.fibers[t].uc_link = &b.scheduler;
    makecontext(&b.fibers[t], &FiberMain, 0);
  }
  std::vector<bool> started(block_size, false);
  for (;;) {
    for (int32_t k = 0; k < block_size; ++k) {
      int32_t t = reverse ? block_size - 1 - k : k;
      if (b.state[t] != State::kReady) continue;
      b.current = t;
      if (!started[t]) {
        started[t] = true;
        starting = &b;
      }
      swapcontext(&b.scheduler, &b.fibers[t]);
      if (!b.error.empty()) return b.error;
    }
    // Every thread waits or has ended: the synchronization points resolve.
    bool released = Exchange(&b);
    if (!b.error.empty()) return b.error;
    if (released) continue;
    int32_t barrier = -1, done = -1;
    for (int32_t t = 0; t < block_size; ++t) {
      if (b.state[t] == State::kBarrier && barrier < 0) barrier = t;
      if (b.state[t] == State::kDone && done < 0) done = t;
    }
    if (barrier < 0) return "";  // every thread has ended
    if (done >= 0) {
      std::ostringstream os;
      os << "thread " << done << " of a block ended while thread " << barrier
         << " waits at a barrier: a barrier every thread of the block must reach";
      return os.str();
    }
    for (int32_t t = 0; t < block_size; ++t) {
      if (b.state[t] == State::kBarrier) b.state[t] = State::kReady;
    }
  }
}

}  // namespace xla_gpu_emulator
