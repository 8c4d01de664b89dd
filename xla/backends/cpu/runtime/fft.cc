// The CPU runtime's FFT (see cpu_runtime.h).
#include "xla/backends/cpu/runtime/internal.h"

#include <algorithm>
#include <complex>
#include <vector>

#include <unsupported/Eigen/FFT>

namespace {

using xla_cpu_runtime::ColMajorMatrix;
using xla_cpu_runtime::GetRuntime;
using xla_cpu_runtime::kMinParallelMacs;
using xla_cpu_runtime::PoolForCaller;
using xla_cpu_runtime::RowMajorMatrix;
using xla_cpu_runtime::Runtime;

// ---------------------------------------------------------------------------
// FFT: successive 1-D transforms along each axis with Eigen's FFT module.

// One 1-D transform; Eigen's kissfft cannot take length 1 (the identity).
template <typename T>
void Transform(Eigen::FFT<T>& fft, std::vector<std::complex<T>>& result,
               const std::vector<std::complex<T>>& line, bool inverse) {
  if (line.size() == 1) {
    result = line;
  } else if (inverse) {
    fft.inv(result, line);
  } else {
    fft.fwd(result, line);
  }
}

// One complex transform of every line along `axis` of the row-major array
// `data` with dimensions `dims`, in place.
template <typename T>
void FftAxis(Eigen::FFT<T>& fft, std::complex<T>* data, const std::vector<int64_t>& dims,
             size_t axis, bool inverse) {
  int64_t stride = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) stride *= dims[d];
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  const int64_t n = dims[axis];
  std::vector<std::complex<T>> line(n), result(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < stride; ++i) {
      std::complex<T>* base = data + o * n * stride + i;
      for (int64_t j = 0; j < n; ++j) line[j] = base[j * stride];
      Transform(fft, result, line, inverse);
      for (int64_t j = 0; j < n; ++j) base[j * stride] = result[j];
    }
  }
}

template <typename T>
struct FftContext {
  const void* in;
  void* out;
  int32_t rank;
  const int64_t* lengths;
  int32_t kind;
};

template <typename T>
void FftBatch(void* raw, int64_t begin, int64_t end) {
  using C = std::complex<T>;
  const auto& ctx = *static_cast<const FftContext<T>*>(raw);
  const int32_t rank = ctx.rank;
  const int64_t last = ctx.lengths[rank - 1];
  const int64_t half = last / 2 + 1;
  // The complex side's dimensions: the lengths, the last one halved for
  // the real transforms.
  std::vector<int64_t> dims(ctx.lengths, ctx.lengths + rank);
  const bool real = ctx.kind >= 2;
  if (real) dims[rank - 1] = half;
  int64_t complex_size = 1, real_size = 1;
  for (int32_t d = 0; d < rank; ++d) {
    complex_size *= dims[d];
    real_size *= ctx.lengths[d];
  }
  const int64_t lines = complex_size / dims[rank - 1];
  Eigen::FFT<T> fft;
  std::vector<C> work(complex_size), line(last), result(last);
  for (int64_t b = begin; b < end; ++b) {
    if (ctx.kind <= 1) {  // FFT, IFFT
      const C* in = static_cast<const C*>(ctx.in) + b * complex_size;
      C* out = static_cast<C*>(ctx.out) + b * complex_size;
      std::copy(in, in + complex_size, out);
      for (int32_t a = 0; a < rank; ++a) FftAxis(fft, out, dims, a, ctx.kind == 1);
    } else if (ctx.kind == 2) {  // RFFT: the last axis real -> half, then the others
      const T* in = static_cast<const T*>(ctx.in) + b * real_size;
      C* out = static_cast<C*>(ctx.out) + b * complex_size;
      for (int64_t l = 0; l < lines; ++l) {
        for (int64_t j = 0; j < last; ++j) line[j] = C(in[l * last + j], 0);
        Transform(fft, result, line, false);
        std::copy(result.begin(), result.begin() + half, out + l * half);
      }
      for (int32_t a = 0; a + 1 < rank; ++a) FftAxis(fft, out, dims, a, false);
    } else {  // IRFFT: the other axes first, then half -> real along the last
      const C* in = static_cast<const C*>(ctx.in) + b * complex_size;
      T* out = static_cast<T*>(ctx.out) + b * real_size;
      std::copy(in, in + complex_size, work.begin());
      for (int32_t a = 0; a + 1 < rank; ++a) FftAxis(fft, work.data(), dims, a, true);
      for (int64_t l = 0; l < lines; ++l) {
        const C* h = work.data() + l * half;
        // The full Hermitian spectrum: X[k] = conj(X[n - k]) above n/2.
        for (int64_t k = 0; k < last; ++k) line[k] = k < half ? h[k] : std::conj(h[last - k]);
        Transform(fft, result, line, true);
        for (int64_t j = 0; j < last; ++j) out[l * last + j] = result[j].real();
      }
    }
  }
}

template <typename T>
void Fft(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths,
         int32_t kind) {
  if (batch <= 0 || rank <= 0) return;
  int64_t size = 1;
  for (int32_t d = 0; d < rank; ++d) size *= lengths[d];
  if (size == 0) return;
  FftContext<T> ctx{in, out, rank, lengths, kind};
  // Whole transforms per task; small ones together.
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 14) / size);
  __xla_cpu_parallel_for(&FftBatch<T>, &ctx, batch, min_chunk);
}

}  // namespace

extern "C" {

void __xla_cpu_fft_f32(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind) {
  Fft<float>(in, out, batch, rank, lengths, kind);
}

void __xla_cpu_fft_f64(const void* in, void* out, int64_t batch, int32_t rank,
                       const int64_t* lengths, int32_t kind) {
  Fft<double>(in, out, batch, rank, lengths, kind);
}

}  // extern "C"
