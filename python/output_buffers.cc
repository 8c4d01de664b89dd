// A cache of the buffers compiled CPU code writes its results into.
//
// A result array is fresh memory for each call, and glibc gives memory back
// to the kernel more eagerly than a caller of compiled code would expect:
// above its mmap threshold (128 KiB at first, raised up to 32 MiB as mapped
// blocks are freed) malloc maps new pages and free unmaps them, and below
// it a free of 64 KiB or more trims the heap's free top beyond the trim
// threshold (twice the mmap threshold). Either way the next call's results
// are new pages, which the kernel faults in and zeroes as the code first
// writes them: a 64 MiB result took 3.8-4.0 ms where the same kernel took
// 2.1 ms writing into pages it had written before (f32 GELU over 2^24
// elements), and two 1 MiB results of one call 570 us where 20 us was the
// kernel (eight of 256 KiB: 286 us, sixty-four of 64 KiB: 1,050 us; two
// threads, Zen 5 VM). Here an array of at least kMinCachedOutputBytes gets
// its memory from this cache: a capsule owning the buffer is the array's
// base, and when the last array using it (views included: their base is
// the capsule too) is gone, the capsule's destructor gives the buffer back
// instead of freeing it, for the next result of the same size. The cache
// holds at most XLA_CPU_OUTPUT_CACHE_BYTES of idle buffers (default 1 GiB,
// or an eighth of the machine's memory where less; 0: no cache), the
// oldest freed first when a newer one does not fit; buffers in use do not
// count. Arrays are uninitialized, as np.empty's are.
#include "python/output_buffers.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace py = pybind11;

namespace xla_python {
namespace {

constexpr size_t kAlignment = 64;
constexpr const char* kCapsuleName = "xla_cpu_output_buffer";
// The default limit: 1 GiB, or an eighth of the machine's memory where
// that is less.
size_t DefaultLimit() {
  size_t limit = size_t{1} << 30;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    limit = std::min(limit, static_cast<size_t>(pages) / 8 * static_cast<size_t>(page_size));
  }
  return limit;
}

// The limit XLA_CPU_OUTPUT_CACHE_BYTES sets (a decimal byte count), the
// default where it is unset; `error` says what is wrong with another value.
size_t LimitFromEnvironment(std::string* error) {
  const char* text = std::getenv("XLA_CPU_OUTPUT_CACHE_BYTES");
  if (text == nullptr || *text == '\0') return DefaultLimit();
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*text < '0' || *text > '9' || end == nullptr || *end != '\0' || errno == ERANGE) {
    *error = std::string("XLA_CPU_OUTPUT_CACHE_BYTES='") + text +
             "' is not a byte count (a decimal integer; 0 turns the output buffer cache off)";
    return 0;
  }
  return static_cast<size_t>(value);
}

class Cache {
 public:
  Cache() : limit_(LimitFromEnvironment(&error_)) {}

  size_t limit() const { return limit_; }
  // Why XLA_CPU_OUTPUT_CACHE_BYTES cannot be used; empty where it can.
  const std::string& error() const { return error_; }

  // A buffer of `size` bytes (a multiple of kAlignment): a cached one of
  // that size (the newest: still in cache), else a new one; nullptr where
  // there is no memory.
  void* Take(size_t size) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto found = by_size_.find(size);
      if (found != by_size_.end()) {
        const auto block = found->second.back();
        found->second.pop_back();
        if (found->second.empty()) by_size_.erase(found);
        void* data = block->data;
        idle_.erase(block);
        idle_bytes_ -= size;
        ++hits_;
        return data;
      }
      ++misses_;
    }
    return std::aligned_alloc(kAlignment, size);
  }

  // `data` (of `size` bytes) is free again: kept, the oldest idle buffers
  // freed to make room, or freed where it alone is over the limit.
  void Give(void* data, size_t size) {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (size > limit_) {
        drop.push_back(data);
      } else {
        while (idle_bytes_ + size > limit_) {
          // The oldest idle buffer is the oldest of its size too.
          const Block oldest = idle_.front();
          auto same = by_size_.find(oldest.size);
          same->second.pop_front();
          if (same->second.empty()) by_size_.erase(same);
          idle_.pop_front();
          idle_bytes_ -= oldest.size;
          drop.push_back(oldest.data);
        }
        idle_.push_back({data, size});
        by_size_[size].push_back(std::prev(idle_.end()));
        idle_bytes_ += size;
      }
    }
    for (void* d : drop) std::free(d);
  }

  void Clear() {
    std::list<Block> idle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle.swap(idle_);
      by_size_.clear();
      idle_bytes_ = 0;
    }
    for (const Block& b : idle) std::free(b.data);
  }

  py::dict Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    py::dict stats;
    stats["limit_bytes"] = limit_;
    stats["idle_bytes"] = idle_bytes_;
    stats["idle_buffers"] = idle_.size();
    stats["hits"] = hits_;
    stats["misses"] = misses_;
    return stats;
  }

 private:
  struct Block {
    void* data;
    size_t size;
  };
  std::mutex mu_;
  std::list<Block> idle_;   // oldest first
  // Each size's idle buffers in idle_, oldest first: Take finds one without
  // a walk over every idle buffer (up to limit_ / kMinCachedOutputBytes).
  std::unordered_map<size_t, std::deque<std::list<Block>::iterator>> by_size_;
  size_t idle_bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
  std::string error_;
  const size_t limit_;
};

// Never destroyed: capsules may give buffers back while the process exits.
Cache& TheCache() {
  static Cache* cache = new Cache();
  return *cache;
}

void GiveBack(PyObject* capsule) {
  void* data = PyCapsule_GetPointer(capsule, kCapsuleName);
  const auto size = reinterpret_cast<size_t>(PyCapsule_GetContext(capsule));
  if (data == nullptr) return;
  if (size == 0) {   // its size never set (NewOutputArray's failure path): not for reuse
    std::free(data);
    return;
  }
  TheCache().Give(data, size);
}

}  // namespace

PyObject* NewOutputArray(PyObject* descr, int nd, const Py_intptr_t* dims) {
  const auto& api = py::detail::npy_api::get();
  size_t nbytes = static_cast<size_t>(py::reinterpret_borrow<py::dtype>(descr).itemsize());
  for (int i = 0; i < nd; ++i) nbytes *= static_cast<size_t>(dims[i]);
  Cache& cache = TheCache();
  if (nbytes >= kMinCachedOutputBytes && !cache.error().empty()) {
    PyErr_SetString(PyExc_ValueError, cache.error().c_str());
    return nullptr;
  }
  if (nbytes < kMinCachedOutputBytes || cache.limit() == 0) {
    Py_INCREF(descr);   // stolen by NumPy
    return api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, nullptr, 0,
                                     nullptr);
  }
  const size_t size = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = cache.Take(size);
  if (data == nullptr) return PyErr_NoMemory();
  PyObject* capsule = PyCapsule_New(data, kCapsuleName, &GiveBack);
  if (capsule == nullptr || PyCapsule_SetContext(capsule, reinterpret_cast<void*>(size)) != 0) {
    if (capsule == nullptr) {
      cache.Give(data, size);
    } else {
      Py_DECREF(capsule);   // gives it back
    }
    return nullptr;
  }
  Py_INCREF(descr);
  PyObject* array = api.PyArray_NewFromDescr_(
      api.PyArray_Type_, descr, nd, dims, nullptr, data,
      py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_ |
          py::detail::npy_api::NPY_ARRAY_WRITEABLE_,
      nullptr);
  if (array == nullptr) {
    Py_DECREF(capsule);
    return nullptr;
  }
  if (api.PyArray_SetBaseObject_(array, capsule) != 0) {   // steals capsule, even on failure
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

void RegisterOutputBuffers(py::module_& m) {
  m.def(
      "cpu_output_array",
      [](const std::vector<ssize_t>& shape, const py::object& dtype_like) {
        const py::dtype dtype = py::dtype::from_args(dtype_like);
        std::vector<Py_intptr_t> dims(shape.begin(), shape.end());
        for (Py_intptr_t d : dims) {
          if (d < 0) throw py::value_error("cpu_output_array: negative dimension");
        }
        PyObject* array = NewOutputArray(dtype.ptr(), static_cast<int>(dims.size()), dims.data());
        if (array == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(array);
      },
      py::arg("shape"), py::arg("dtype"),
      "A new uninitialized C-contiguous array for a compiled CPU executable's result: from the "
      "cache of output buffers where it holds at least CPU_OUTPUT_CACHE_MIN_BYTES "
      "(python/output_buffers.cc).");
  m.attr("CPU_OUTPUT_CACHE_MIN_BYTES") = kMinCachedOutputBytes;
  m.def("cpu_output_cache_stats", []() { return TheCache().Stats(); },
        "The output buffer cache: limit_bytes, idle_bytes, idle_buffers, hits, misses.");
  m.def("cpu_output_cache_clear", []() { TheCache().Clear(); },
        "Frees the output buffer cache's idle buffers.");
}

}  // namespace xla_python
