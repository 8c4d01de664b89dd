// The CPU runtime's process-wide thread pool and parallel_for (see
// cpu_runtime.h), and the table of every runtime entry point.
#include "xla/backends/cpu/runtime/internal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#ifdef __linux__
#include <sched.h>
#endif

namespace xla_cpu_runtime {
namespace {

int DefaultNumThreads() {
  if (const char* env = std::getenv("XLA_CPU_NUM_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0) return static_cast<int>(std::min(value, 1024L));
  }
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
#endif
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

std::mutex g_runtime_mutex;
std::atomic<Runtime*> g_runtime{nullptr};
// Tasks queued by PoolSchedule that no worker has started yet: while there
// are any, parallel_for's helpers stop spinning (Help, below).
std::atomic<int64_t> g_queued_tasks{0};

Runtime* MakeRuntime(int num_threads) {
  auto* runtime = new Runtime;
  runtime->num_threads = num_threads;
  if (num_threads > 1) runtime->pool = std::make_unique<Eigen::ThreadPool>(num_threads);
  return runtime;
}

}  // namespace

Runtime* GetRuntime() {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  if (runtime != nullptr) return runtime;
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  runtime = g_runtime.load(std::memory_order_relaxed);
  if (runtime == nullptr) {
    runtime = MakeRuntime(DefaultNumThreads());
    g_runtime.store(runtime, std::memory_order_release);
  }
  return runtime;
}

Eigen::ThreadPool* PoolForCaller(Runtime* runtime) {
  Eigen::ThreadPool* pool = runtime->pool.get();
  if (pool == nullptr || pool->CurrentThreadId() >= 0) return nullptr;
  return pool;
}

int ThreadsForCaller() {
  Runtime* runtime = GetRuntime();
  return PoolForCaller(runtime) == nullptr ? 1 : runtime->num_threads;
}

void PoolSchedule(std::function<void()> fn) {
  Eigen::ThreadPool* pool = GetRuntime()->pool.get();
  if (pool == nullptr) {
    fn();
    return;
  }
  // parallel_for's helpers spinning between calls hold their workers: a
  // task queued behind them (Eigen's contraction shards) would wait up to
  // the spin window or run on the few workers left. Counted, the helpers
  // see it and give their workers back to the pool.
  g_queued_tasks.fetch_add(1, std::memory_order_relaxed);
  pool->Schedule([fn = std::move(fn)] {
    g_queued_tasks.fetch_sub(1, std::memory_order_relaxed);
    fn();
  });
}

int PoolNumThreads() { return GetRuntime()->num_threads; }

int PoolCurrentThreadId() {
  Eigen::ThreadPool* pool = GetRuntime()->pool.get();
  return pool == nullptr ? -1 : pool->CurrentThreadId();
}

}  // namespace xla_cpu_runtime

namespace {

using xla_cpu_runtime::DefaultNumThreads;
using xla_cpu_runtime::g_runtime;
using xla_cpu_runtime::g_runtime_mutex;
using xla_cpu_runtime::GetRuntime;
using xla_cpu_runtime::MakeRuntime;
using xla_cpu_runtime::PoolForCaller;
using xla_cpu_runtime::Runtime;

// ---------------------------------------------------------------------------
// parallel_for: chunks claimed dynamically from an atomic counter by the
// caller and up to num_threads - 1 helpers. The state is shared so that a
// helper that starts after all chunks are done finds nothing to do and
// touches nothing the caller owns.

struct ParallelForState {
  void (*body)(void*, int64_t, int64_t);
  void* ctx;
  int64_t n;
  int64_t chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::mutex mutex;
  std::condition_variable done;

  // Runs chunks until none are left to claim.
  void Work() {
    int64_t c;
    while ((c = next.fetch_add(1, std::memory_order_relaxed)) < num_chunks) {
      const int64_t begin = c * chunk;
      body(ctx, begin, std::min(n, begin + chunk));
      if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == num_chunks) {
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_all();
      }
    }
  }

  bool Finished() const { return finished.load(std::memory_order_acquire) == num_chunks; }
};

// Helpers that stay awake between parallel_for calls. A helper that has
// run out of chunks keeps polling for HelperSpin() for the next call's
// state (published in Latest()) before it returns to the pool, whose idle
// workers sleep: waking one costs tens to hundreds of microseconds on a
// VM whose idle virtual CPU halts, about the work of a whole 1200x1000
// f64 matrix-vector pass, so a parallel_for that follows another within
// the window (the kernels of one execution, the next call of a loop) finds
// a helper already running instead (as OpenBLAS's threads spin between
// calls). A call schedules only the helpers that are not spinning. A
// spinner may take a call's state after all its chunks are claimed: it
// then finds nothing to do (see ParallelForState). The spin is bounded, so
// the pool's destructor waits for it at most that long. A task waiting in
// the pool's queue (PoolSchedule: Eigen's contraction) ends every spin, so
// that the workers run it. XLA_CPU_POOL_SPIN_US (read once) sets the
// window; 0 turns the spinning off.
std::chrono::microseconds HelperSpin() {
  static const std::chrono::microseconds spin = [] {
    if (const char* env = std::getenv("XLA_CPU_POOL_SPIN_US")) {
      char* end = nullptr;
      const long value = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && value >= 0) {
        return std::chrono::microseconds(std::min(value, 1000000L));
      }
    }
    return std::chrono::microseconds(2000);
  }();
  return spin;
}

struct LatestCall {
  std::mutex mutex;
  std::shared_ptr<ParallelForState> state;
  std::atomic<uint64_t> generation{0};
  std::atomic<int64_t> spinning{0};
};

LatestCall& Latest() {
  static LatestCall* latest = new LatestCall;  // never destroyed: workers may outlive statics
  return *latest;
}

void Publish(const std::shared_ptr<ParallelForState>& state) {
  LatestCall& latest = Latest();
  {
    std::lock_guard<std::mutex> lock(latest.mutex);
    latest.state = state;
  }
  latest.generation.fetch_add(1, std::memory_order_seq_cst);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A helper: the chunks of `state`, then those of each call published
// within HelperSpin() of the last one it worked on.
void Help(std::shared_ptr<ParallelForState> state) {
  LatestCall& latest = Latest();
  uint64_t seen = latest.generation.load(std::memory_order_acquire);
  state->Work();
  state.reset();
  const auto spin = HelperSpin();
  if (spin.count() == 0) return;
  auto take = [&latest, &state] {
    std::lock_guard<std::mutex> lock(latest.mutex);
    state = latest.state;
  };
  latest.spinning.fetch_add(1, std::memory_order_seq_cst);
  auto deadline = std::chrono::steady_clock::now() + spin;
  for (int64_t i = 0;; ++i) {
    // A task waits for a worker (PoolSchedule): this one goes back.
    if (xla_cpu_runtime::g_queued_tasks.load(std::memory_order_relaxed) > 0) break;
    const uint64_t generation = latest.generation.load(std::memory_order_seq_cst);
    if (generation != seen) {
      seen = generation;
      take();
      if (state != nullptr) {
        state->Work();
        state.reset();
      }
      deadline = std::chrono::steady_clock::now() + spin;
      continue;
    }
    if ((i & 63) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      // Lets a thread waiting for this CPU run (returns at once when none is).
      std::this_thread::yield();
    }
    CpuRelax();
  }
  latest.spinning.fetch_sub(1, std::memory_order_seq_cst);
  // A call that counted this helper as spinning published before it read
  // the count (seq_cst on both sides): its state is seen here.
  if (latest.generation.load(std::memory_order_seq_cst) != seen) {
    take();
    if (state != nullptr) state->Work();
  }
}

}  // namespace

extern "C" {

int32_t __xla_cpu_runtime_num_threads(void) { return GetRuntime()->num_threads; }

void __xla_cpu_runtime_set_num_threads(int32_t num_threads) {
  const int wanted = num_threads > 0 ? num_threads : DefaultNumThreads();
  {
    // A pool of that size already: kept (building one costs ~2 ms, and
    // tests and benchmarks set the count around every measurement).
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    Runtime* current = g_runtime.load(std::memory_order_acquire);
    if (current != nullptr && current->num_threads == wanted) return;
  }
  Runtime* fresh = MakeRuntime(wanted);
  Runtime* old;
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    old = g_runtime.exchange(fresh, std::memory_order_acq_rel);
  }
  delete old;  // joins its workers
}

void __xla_cpu_parallel_for(void (*body)(void* ctx, int64_t begin, int64_t end), void* ctx,
                            int64_t n, int64_t min_chunk) {
  if (n <= 0) return;
  if (min_chunk < 1) min_chunk = 1;
  Runtime* runtime = GetRuntime();
  Eigen::ThreadPool* pool = n <= min_chunk ? nullptr : PoolForCaller(runtime);
  if (pool == nullptr) {
    body(ctx, 0, n);
    return;
  }
  const int64_t threads = runtime->num_threads;
  // About four chunks per thread balances uneven chunks without many claims.
  const int64_t chunk = std::max(min_chunk, (n + 4 * threads - 1) / (4 * threads));
  const int64_t num_chunks = (n + chunk - 1) / chunk;
  if (num_chunks == 1) {
    body(ctx, 0, n);
    return;
  }
  auto state = std::make_shared<ParallelForState>();
  state->body = body;
  state->ctx = ctx;
  state->n = n;
  state->chunk = chunk;
  state->num_chunks = num_chunks;
  const int64_t helpers = std::min(threads - 1, num_chunks - 1);
  Publish(state);
  // Spinning helpers take the state from Publish; the pool wakes the rest.
  const int64_t awake = Latest().spinning.load(std::memory_order_seq_cst);
  for (int64_t i = awake; i < helpers; ++i) {
    pool->Schedule([state] { Help(state); });
  }
  state->Work();
  if (!state->Finished()) {
    // Chunks still running on helpers: spin briefly (they are usually about
    // to finish), then sleep.
    for (int i = 0; i < 2000 && !state->Finished(); ++i) std::this_thread::yield();
    std::unique_lock<std::mutex> lock(state->mutex);
    state->done.wait(lock, [&] { return state->Finished(); });
  }
}

const XlaCpuRuntimeSymbol* __xla_cpu_runtime_symbols(int64_t* count) {
#define XLA_CPU_RUNTIME_SYMBOL(name) {#name, reinterpret_cast<void*>(&name)}
  static const XlaCpuRuntimeSymbol kSymbols[] = {
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_runtime_num_threads),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_parallel_for),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_addend_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_tiled_gemm_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_tiled_gemm_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_s32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_s8_s32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_bf16_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_c64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_matmul_c128),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_cholesky_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_cholesky_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_trsm_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_trsm_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_cholesky_c64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_cholesky_c128),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_trsm_c64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_trsm_c128),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_syevd_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_syevd_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_gesdd_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_gesdd_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_getrf_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_getrf_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_geqrf_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_geqrf_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_orgqr_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_orgqr_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_geev_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_geev_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_geev_c64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_geev_c128),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_filter_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_filter_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_depthwise_filter_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_conv2d_depthwise_filter_f64),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_fft_f32),
      XLA_CPU_RUNTIME_SYMBOL(__xla_cpu_fft_f64),
  };
#undef XLA_CPU_RUNTIME_SYMBOL
  if (count != nullptr) *count = static_cast<int64_t>(sizeof(kSymbols) / sizeof(kSymbols[0]));
  return kSymbols;
}

}  // extern "C"
