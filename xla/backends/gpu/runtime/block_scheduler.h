// The GPU emulator's block scheduler: runs the threads of one block of an
// emulated kernel (compiled for the host by xla/backends/gpu/emulator.py)
// as fibers on the calling thread, with a GPU's synchronization semantics.
//
// Each thread of the block is a fiber (ucontext) with a stack of its own
// that calls `entry(args, context)`. One fiber runs at a time, in a fixed
// order (ascending or descending thread index), until it reaches a
// synchronization point or its end:
//
// - a barrier (`__syncthreads`): the block's threads meet; the block passes
//   it when every thread that has not ended waits there. A barrier that
//   some threads end without reaching is an error.
// - a warp shuffle (`shfl.sync`, full warp): the 32 threads 32w .. 32w+31
//   meet; when all of them wait at it, each gets the value of its source
//   lane (bfly: lane ^ arg, down: lane + arg, up: lane - arg, idx: arg; a
//   source outside the warp gives the lane its own value, as on a GPU). A
//   shuffle only some lanes reach, lanes at different shuffles, and member
//   masks or widths other than the full warp are errors.
//
// When no fiber can run, the warps whose lanes all wait at a shuffle
// exchange and run on; otherwise the barrier is passed. Every thread so
// finishes each phase before any thread starts the next, which is what the
// synchronization promises and nothing more: a missing barrier gives a
// wrong answer in at least one of the two orders, every time.
//
// Cost: a switch between fibers is a swapcontext (well under a microsecond);
// the earlier scheduler ran a host thread per GPU thread and handed the
// turn on through Python (tens of microseconds per switch).
#ifndef XLA_BACKENDS_GPU_RUNTIME_BLOCK_SCHEDULER_H_
#define XLA_BACKENDS_GPU_RUNTIME_BLOCK_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace xla_gpu_emulator {

// What an emulated thread reads: its special registers and the
// synchronization functions. The byte offsets are fixed: the emulator's IR
// loads tid.x at 0, ctaid.x at 4, ntid.x at 8, nctaid.x at 12, calls the
// barrier at 16 and the shuffle at 32.
struct ThreadContext {
  int32_t tid_x;
  int32_t ctaid_x;
  int32_t ntid_x;
  int32_t nctaid_x;
  void (*barrier)(ThreadContext*);
  int64_t thread;
  int32_t (*shuffle)(ThreadContext*, int32_t mode, uint32_t mask, int32_t value,
                     int32_t arg, int32_t c);
  void* block;  // the scheduler's state
};

static_assert(offsetof(ThreadContext, barrier) == 16, "layout read by the emulator's IR");
static_assert(offsetof(ThreadContext, shuffle) == 32, "layout read by the emulator's IR");

// The shuffle modes, in the order of the emulator's IR.
enum ShuffleMode : int32_t { kBfly = 0, kDown = 1, kUp = 2, kIdx = 3 };

// One thread of the kernel: the kernel called with its arguments and the
// thread's context.
using ThreadEntry = void (*)(void* const* args, ThreadContext* context);

// Runs block `ctaid` of `grid` blocks of `block_size` threads. Returns an
// empty string, or what went wrong (the block's remaining threads are then
// abandoned where they wait).
std::string RunBlock(ThreadEntry entry, void* const* args, int32_t block_size, int32_t ctaid,
                     int32_t grid, bool reverse, size_t stack_bytes = 512 * 1024);

}  // namespace xla_gpu_emulator

#endif  // XLA_BACKENDS_GPU_RUNTIME_BLOCK_SCHEDULER_H_
