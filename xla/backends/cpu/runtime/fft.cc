// The CPU runtime's FFT (see cpu_runtime.h). An ISA variant unit (kernels.h,
// isa_variant.h); the C entry points are in isa.cc. The transform along each axis
// in turn, every line of the axis (across the batch too) shared over the
// pool in groups of kLanes lines.
//
// Power-of-two lengths up to 2^16 (UseLanes) run a Stockham transform
// (radix 4, one radix-2 stage for odd powers) vectorized across the
// group's lines: each group is
// gathered into split real/imaginary arrays [n][kLanes], so every butterfly
// is a vector operation on kLanes independent lines, and no bit reversal is
// needed. A real transform of even power-of-two length n is the complex
// transform of length n/2 of its even and odd samples packed as real and
// imaginary parts, untangled after (RFFT) or before (IRFFT). Other lengths
// (and length 1) run Eigen's FFT module (kissfft) line by line.
// On two cores of the AVX-512 variant: jnp.fft.fft2 of c64[512, 512]
// 8.4 -> 0.39 ms, jnp.fft.rfft of f32[256, 4096] along rows 5.6 -> 0.45 ms,
// jnp.fft.fft of c128[64, 4096] 1.78 -> 0.44 ms (XLA:CPU's DUCC: 0.6-0.8,
// 0.8, 0.4-2.1 ms).
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include <unsupported/Eigen/FFT>

#include "xla/backends/cpu/runtime/cpu_runtime.h"

// The 64-byte vector types below are used inside this file only: their
// calling convention (no AVX at the baseline ISA) does not matter.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

template <typename T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(64)));
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(64)));
};

// An array of 64-byte vectors on 64-byte boundaries, which the AVX-512
// variant's aligned loads and stores need. Not std::vector: its allocator
// is an inline template the variants share, and the copy linked is the
// baseline's, where GCC aligns these vector types to 16 bytes only.
template <typename V>
class VectorArray {
 public:
  explicit VectorArray(int64_t size = 0) { Reserve(size); }
  ~VectorArray() { std::free(data_); }
  VectorArray(const VectorArray&) = delete;
  VectorArray& operator=(const VectorArray&) = delete;

  // At least `size` vectors (contents not kept).
  void Reserve(int64_t size) {
    if (size <= size_) return;
    std::free(data_);
    data_ = static_cast<V*>(std::aligned_alloc(64, static_cast<size_t>(size) * sizeof(V)));
    if (data_ == nullptr) throw std::bad_alloc();
    size_ = size;
  }
  V* data() { return data_; }

 private:
  V* data_ = nullptr;
  int64_t size_ = 0;
};

// Lines per group: one 64-byte vector of each type.
template <typename T>
constexpr int64_t kLanes = 64 / sizeof(T);

bool PowerOfTwo(int64_t n) { return n >= 2 && (n & (n - 1)) == 0; }

// exp(-2 pi i q / n) for q < n, computed in double once per length.
template <typename T>
const std::complex<T>* Twiddles(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::unique_ptr<std::vector<std::complex<T>>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& table = cache[n];
  if (!table) {
    table = std::make_unique<std::vector<std::complex<T>>>(n);
    const double step = -2.0 * M_PI / static_cast<double>(n);
    for (int64_t q = 0; q < n; ++q) {
      (*table)[q] = std::complex<T>(static_cast<T>(std::cos(step * static_cast<double>(q))),
                                    static_cast<T>(std::sin(step * static_cast<double>(q))));
    }
  }
  return table->data();
}

// The Stockham transform of kLanes lines of power-of-two length n held as
// split arrays re()[j][lane], im()[j][lane]; ping-pongs with a second pair
// and leaves the result in re(), im() (which may then be the other pair:
// read them again after Run). Unscaled in both directions.
template <typename T>
class LaneFft {
 public:
  using V = typename Simd<T>::V;

  // `buffers`: four arrays of at least n vectors, the transform's while it
  // lives.
  LaneFft(int64_t n, bool inverse, V* const buffers[4])
      : n_(n),
        inverse_(inverse),
        tw_(Twiddles<T>(n)),
        re_(buffers[0]),
        im_(buffers[1]),
        re2_(buffers[2]),
        im2_(buffers[3]) {}

  int64_t n() const { return n_; }
  bool inverse() const { return inverse_; }
  V* re() { return re_; }
  V* im() { return im_; }

  void Run() {
    int log2n = 0;
    while ((int64_t{1} << log2n) < n_) ++log2n;
    V *xr = re_, *xi = im_, *yr = re2_, *yi = im2_;
    int64_t m = 1;
    if (log2n % 2 == 1) {
      Radix2(xr, xi, yr, yi, n_ / 2, m);
      std::swap(xr, yr);
      std::swap(xi, yi);
      m *= 2;
    }
    for (; m < n_; m *= 4) {
      Radix4(xr, xi, yr, yi, n_ / (4 * m), m);
      std::swap(xr, yr);
      std::swap(xi, yi);
    }
    if (xr != re_) {
      std::swap(re_, re2_);
      std::swap(im_, im2_);
    }
  }

 private:
  // The twiddle exp(-+2 pi i q / n).
  void Twiddle(int64_t q, T& wr, T& wi) const {
    wr = tw_[q].real();
    wi = inverse_ ? -tw_[q].imag() : tw_[q].imag();
  }

  void Radix2(const V* xr, const V* xi, V* __restrict yr, V* __restrict yi, int64_t l,
              int64_t m) const {
    for (int64_t j = 0; j < l; ++j) {
      T wr, wi;
      Twiddle(j * m, wr, wi);
      for (int64_t k = 0; k < m; ++k) {
        const int64_t a = k + j * m, b = a + l * m, o = k + 2 * j * m;
        const V dr = xr[a] - xr[b], di = xi[a] - xi[b];
        yr[o] = xr[a] + xr[b];
        yi[o] = xi[a] + xi[b];
        yr[o + m] = dr * wr - di * wi;
        yi[o + m] = dr * wi + di * wr;
      }
    }
  }

  void Radix4(const V* xr, const V* xi, V* __restrict yr, V* __restrict yi, int64_t l,
              int64_t m) const {
    const int64_t q = l * m;
    for (int64_t j = 0; j < l; ++j) {
      T w1r, w1i, w2r, w2i, w3r, w3i;
      Twiddle(j * m, w1r, w1i);
      Twiddle(2 * j * m, w2r, w2i);
      Twiddle(3 * j * m, w3r, w3i);
      for (int64_t k = 0; k < m; ++k) {
        const int64_t a = k + j * m, o = k + 4 * j * m;
        const V b0r = xr[a] + xr[a + 2 * q], b0i = xi[a] + xi[a + 2 * q];
        const V b1r = xr[a] - xr[a + 2 * q], b1i = xi[a] - xi[a + 2 * q];
        const V b2r = xr[a + q] + xr[a + 3 * q], b2i = xi[a + q] + xi[a + 3 * q];
        const V tr = xr[a + q] - xr[a + 3 * q], ti = xi[a + q] - xi[a + 3 * q];
        // b3 = -i t forward, +i t inverse.
        const V b3r = inverse_ ? -ti : ti, b3i = inverse_ ? tr : -tr;
        yr[o] = b0r + b2r;
        yi[o] = b0i + b2i;
        const V c1r = b1r + b3r, c1i = b1i + b3i;
        const V c2r = b0r - b2r, c2i = b0i - b2i;
        const V c3r = b1r - b3r, c3i = b1i - b3i;
        yr[o + m] = c1r * w1r - c1i * w1i;
        yi[o + m] = c1r * w1i + c1i * w1r;
        yr[o + 2 * m] = c2r * w2r - c2i * w2i;
        yi[o + 2 * m] = c2r * w2i + c2i * w2r;
        yr[o + 3 * m] = c3r * w3r - c3i * w3i;
        yi[o + 3 * m] = c3r * w3i + c3i * w3r;
      }
    }
  }

  int64_t n_;
  bool inverse_;
  const std::complex<T>* tw_;
  V *re_, *im_, *re2_, *im2_;
};

// One 1-D transform with Eigen's FFT; kissfft cannot take length 1 (the
// identity). Eigen scales the inverse by 1/n.
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

// What one transform along an axis reads and writes: `lines` lines of
// `n` elements, line L starting at (L / stride) * n * stride + L % stride
// with its elements `stride` apart (row-major arrays: the product of the
// dimensions before the axis times that after it). Real-side lines of
// RFFT/IRFFT are the rows of the real array (stride 1), their complex
// side rows of n/2 + 1.
template <typename T>
struct AxisJob {
  const void* in;
  void* out;
  int64_t lines, n, stride;
  int32_t kind;  // 0 FFT, 1 IFFT, 2 RFFT (real rows -> half), 3 IRFFT (half -> real rows)
};

template <typename T>
int64_t LineStart(const AxisJob<T>& job, int64_t line) {
  return (line / job.stride) * job.n * job.stride + line % job.stride;
}

// The lanes' data as scalars: element j of lane w at [j * kLanes + w].
template <typename T>
T* Scalars(typename Simd<T>::V* v) {
  return reinterpret_cast<T*>(v);
}

// Calls body(w, j) for every lane w < count and element j < n, in tiles of
// kTile elements (every lane of a tile before the next tile), so that the
// split side of a tile stays in L1 while each line is read or written in
// order.
constexpr int64_t kTile = 64;

template <typename F>
inline void ForLanes(int64_t count, int64_t n, F&& body) {
  for (int64_t j0 = 0; j0 < n; j0 += kTile) {
    const int64_t j1 = std::min(n, j0 + kTile);
    for (int64_t w = 0; w < count; ++w) {
      for (int64_t j = j0; j < j1; ++j) body(w, j);
    }
  }
}

// Zeros in `size` split vectors (re, im as scalars) where a group has fewer
// than kLanes lines: the unused lanes compute on zeros.
template <typename T>
void ClearWhenPartial(T* re, T* im, int64_t size, int64_t count) {
  if (count < kLanes<T>) {
    std::fill(re, re + size * kLanes<T>, T(0));
    std::fill(im, im + size * kLanes<T>, T(0));
  }
}

// Lines [first, first + count), count <= kLanes, of a complex transform
// (FFT, IFFT: in place in job.out) through the vectorized transform.
template <typename T>
void ComplexLanes(const AxisJob<T>& job, int64_t first, int64_t count, LaneFft<T>& fft) {
  using C = std::complex<T>;
  constexpr int64_t W = kLanes<T>;
  const int64_t n = job.n, s = job.stride;
  const bool inverse = job.kind == 1;
  T* re = Scalars<T>(fft.re());
  T* im = Scalars<T>(fft.im());
  C* data = static_cast<C*>(job.out);
  ClearWhenPartial(re, im, n, count);
  // Lines side by side in memory (an axis before the last: W consecutive
  // columns) gather a row of W at a time.
  const bool side_by_side = count == W && s >= W && first % s + W <= s;
  if (side_by_side) {
    const C* p = data + LineStart(job, first);
    for (int64_t j = 0; j < n; ++j) {
      const T* q = reinterpret_cast<const T*>(p + j * s);
      for (int64_t w = 0; w < W; ++w) {
        re[j * W + w] = q[2 * w];
        im[j * W + w] = q[2 * w + 1];
      }
    }
  } else {
    C* line[W];
    for (int64_t w = 0; w < count; ++w) line[w] = data + LineStart(job, first + w);
    ForLanes(count, n, [&](int64_t w, int64_t j) {
      re[j * W + w] = line[w][j * s].real();
      im[j * W + w] = line[w][j * s].imag();
    });
  }
  fft.Run();  // the result may be in the other buffers
  re = Scalars<T>(fft.re());
  im = Scalars<T>(fft.im());
  const T scale = inverse ? T(1) / static_cast<T>(n) : T(1);
  if (side_by_side) {
    C* p = data + LineStart(job, first);
    for (int64_t j = 0; j < n; ++j) {
      T* q = reinterpret_cast<T*>(p + j * s);
      for (int64_t w = 0; w < W; ++w) {
        q[2 * w] = re[j * W + w] * scale;
        q[2 * w + 1] = im[j * W + w] * scale;
      }
    }
  } else {
    C* line[W];
    for (int64_t w = 0; w < count; ++w) line[w] = data + LineStart(job, first + w);
    ForLanes(count, n, [&](int64_t w, int64_t j) {
      line[w][j * s] = C(re[j * W + w] * scale, im[j * W + w] * scale);
    });
  }
}

// A real transform's side of the half-length complex one: its n/2 + 1
// split outputs (RFFT) or inputs (IRFFT), and the twiddles of length n
// (looked up once per task).
template <typename T>
struct RealSide {
  typename Simd<T>::V* xr;
  typename Simd<T>::V* xi;
  const std::complex<T>* tw;
};

// RFFT rows [first, first + count) of real length n (a power of two >= 4):
// z = x[even] + i x[odd], Z = FFT_{n/2}(z), then for k = 0..n/2
// X[k] = (Z[k] + conj Z[n/2 - k]) / 2 - i/2 e^(-2 pi i k / n) (Z[k] - conj Z[n/2 - k]).
template <typename T>
void RealForwardLanes(const AxisJob<T>& job, int64_t first, int64_t count, LaneFft<T>& fft,
                      const RealSide<T>& side) {
  using C = std::complex<T>;
  using V = typename Simd<T>::V;
  V* xr = side.xr;
  V* xi = side.xi;
  constexpr int64_t W = kLanes<T>;
  const int64_t n = job.n, h = n / 2;
  T* zr = Scalars<T>(fft.re());
  T* zi = Scalars<T>(fft.im());
  ClearWhenPartial(zr, zi, h, count);
  const T* in = static_cast<const T*>(job.in);
  ForLanes(count, h, [&](int64_t w, int64_t j) {
    const T* row = in + (first + w) * n;
    zr[j * W + w] = row[2 * j];
    zi[j * W + w] = row[2 * j + 1];
  });
  fft.Run();  // the result may be in the other buffers
  const V* re = fft.re();
  const V* im = fft.im();
  const C* tw = side.tw;
  for (int64_t k = 0; k <= h; ++k) {
    const int64_t a = k % h, b = (h - k) % h;
    // Z[k] and conj(Z[h - k]).
    const V ar = re[a], ai = im[a], br = re[b], bi = -im[b];
    const V er = (ar + br) * T(0.5), ei = (ai + bi) * T(0.5);
    const V dr = (ar - br) * T(0.5), di = (ai - bi) * T(0.5);
    // -i e^(-2 pi i k / n) d = (wi - i wr) d with w = tw[k].
    const T wr = tw[k].real(), wi = tw[k].imag();
    xr[k] = er + dr * wi + di * wr;
    xi[k] = ei + di * wi - dr * wr;
  }
  const T* sr = Scalars<T>(xr);
  const T* si = Scalars<T>(xi);
  C* out = static_cast<C*>(job.out);
  ForLanes(count, h + 1, [&](int64_t w, int64_t k) {
    out[(first + w) * (h + 1) + k] = C(sr[k * W + w], si[k * W + w]);
  });
}

// IRFFT rows [first, first + count) back to real length n (a power of two
// >= 4): the imaginary parts of X[0] and X[n/2] dropped, for k < n/2
// Z[k] = E + i O, E = (X[k] + conj X[n/2 - k]) / 2,
// O = (X[k] - conj X[n/2 - k]) / 2 e^(2 pi i k / n); z = IFFT_{n/2}(Z) / (n/2)
// gives x[2k] + i x[2k + 1].
template <typename T>
void RealInverseLanes(const AxisJob<T>& job, int64_t first, int64_t count, LaneFft<T>& fft,
                      const RealSide<T>& side) {
  using C = std::complex<T>;
  using V = typename Simd<T>::V;
  V* xr = side.xr;
  V* xi = side.xi;
  constexpr int64_t W = kLanes<T>;
  const int64_t n = job.n, h = n / 2;
  T* sr = Scalars<T>(xr);
  T* si = Scalars<T>(xi);
  ClearWhenPartial(sr, si, h + 1, count);
  const C* in = static_cast<const C*>(job.in);
  ForLanes(count, h + 1, [&](int64_t w, int64_t k) {
    const C x = in[(first + w) * (h + 1) + k];
    sr[k * W + w] = x.real();
    si[k * W + w] = k == 0 || k == h ? T(0) : x.imag();
  });
  V* re = fft.re();
  V* im = fft.im();
  const C* tw = side.tw;
  for (int64_t k = 0; k < h; ++k) {
    const V ar = xr[k], ai = xi[k], br = xr[h - k], bi = -xi[h - k];
    const V er = (ar + br) * T(0.5), ei = (ai + bi) * T(0.5);
    const V dr = (ar - br) * T(0.5), di = (ai - bi) * T(0.5);
    // O = d * conj(tw[k]); Z = E + i O.
    const T wr = tw[k].real(), wi = -tw[k].imag();
    const V orr = dr * wr - di * wi, oi = dr * wi + di * wr;
    re[k] = er - oi;
    im[k] = ei + orr;
  }
  fft.Run();  // the result may be in the other buffers
  const T* zr = Scalars<T>(fft.re());
  const T* zi = Scalars<T>(fft.im());
  const T scale = T(1) / static_cast<T>(h);
  T* out = static_cast<T*>(job.out);
  ForLanes(count, h, [&](int64_t w, int64_t k) {
    T* row = out + (first + w) * n;
    row[2 * k] = zr[k * W + w] * scale;
    row[2 * k + 1] = zi[k * W + w] * scale;
  });
}

// Lines [first, first + count) with Eigen's FFT, one at a time.
template <typename T>
void KissLines(const AxisJob<T>& job, int64_t first, int64_t count) {
  using C = std::complex<T>;
  const int64_t n = job.n, s = job.stride;
  Eigen::FFT<T> fft;
  std::vector<C> line(n), result(n);
  for (int64_t l = first; l < first + count; ++l) {
    if (job.kind <= 1) {
      C* base = static_cast<C*>(job.out) + LineStart(job, l);
      for (int64_t j = 0; j < n; ++j) line[j] = base[j * s];
      Transform(fft, result, line, job.kind == 1);
      for (int64_t j = 0; j < n; ++j) base[j * s] = result[j];
    } else if (job.kind == 2) {
      const T* in = static_cast<const T*>(job.in) + l * n;
      for (int64_t j = 0; j < n; ++j) line[j] = C(in[j], 0);
      Transform(fft, result, line, false);
      std::copy(result.begin(), result.begin() + n / 2 + 1,
                static_cast<C*>(job.out) + l * (n / 2 + 1));
    } else {
      const C* h = static_cast<const C*>(job.in) + l * (n / 2 + 1);
      // The full Hermitian spectrum: X[k] = conj(X[n - k]) above n/2.
      for (int64_t k = 0; k < n; ++k) line[k] = k <= n / 2 ? h[k] : std::conj(h[n - k]);
      Transform(fft, result, line, true);
      T* out = static_cast<T*>(job.out) + l * n;
      for (int64_t j = 0; j < n; ++j) out[j] = result[j].real();
    }
  }
}

// Whether an axis's lines run the vectorized transform: power-of-two
// lengths (real: at least 4) up to kMaxLaneLength (a task's four split
// arrays hold kLanes lines: 16 MB at 2^16), and at least a quarter of a
// group of lines (fewer waste most lanes on zeros: one line of 4096
// through the lanes took 10x NumPy's time).
constexpr int64_t kMaxLaneLength = int64_t{1} << 16;

template <typename T>
bool UseLanes(const AxisJob<T>& job) {
  return PowerOfTwo(job.n) && (job.kind <= 1 || job.n >= 4) && job.n <= kMaxLaneLength &&
         job.lines * 4 >= kLanes<T>;
}

// The split arrays of a task: the transform's four, and for real
// transforms the n/2 + 1 outputs or inputs beside them. Lengths up to
// kKeptLength keep a thread's arrays from call to call (1.25 MB a thread
// at most), so small transforms do not allocate and fault in fresh pages
// every call; longer ones allocate per task.
constexpr int64_t kKeptLength = 4096;

template <typename T>
struct LaneArrays {
  VectorArray<typename Simd<T>::V> arrays[6];
};

template <typename T>
LaneArrays<T>& KeptArrays() {
  thread_local LaneArrays<T> kept;
  return kept;
}

template <typename T>
void AxisGroups(void* raw, int64_t begin, int64_t end) {
  using V = typename Simd<T>::V;
  const auto& job = *static_cast<const AxisJob<T>*>(raw);
  if (!UseLanes(job)) {
    for (int64_t g = begin; g < end; ++g) {
      const int64_t first = g * kLanes<T>;
      KissLines(job, first, std::min(kLanes<T>, job.lines - first));
    }
    return;
  }
  // This task's transform and (real transforms) the n/2 + 1 split outputs
  // or inputs beside it.
  const bool real = job.kind >= 2;
  const int64_t length = real ? job.n / 2 : job.n;
  LaneArrays<T> own;
  LaneArrays<T>& arrays = job.n <= kKeptLength ? KeptArrays<T>() : own;
  V* buffers[6];
  for (int i = 0; i < 6; ++i) {
    arrays.arrays[i].Reserve(i < 4 ? length : real ? length + 1 : 0);
    buffers[i] = arrays.arrays[i].data();
  }
  LaneFft<T> fft(length, job.kind == 1 || job.kind == 3, buffers);
  const RealSide<T> side{buffers[4], buffers[5], real ? Twiddles<T>(job.n) : nullptr};
  for (int64_t g = begin; g < end; ++g) {
    const int64_t first = g * kLanes<T>, count = std::min(kLanes<T>, job.lines - first);
    if (job.kind <= 1) {
      ComplexLanes(job, first, count, fft);
    } else if (job.kind == 2) {
      RealForwardLanes(job, first, count, fft, side);
    } else {
      RealInverseLanes(job, first, count, fft, side);
    }
  }
}

// Every line of one axis, in groups over the pool.
template <typename T>
void RunAxis(const AxisJob<T>& job) {
  if (job.lines <= 0 || job.n <= 0) return;
  const int64_t groups = (job.lines + kLanes<T> - 1) / kLanes<T>;
  // Groups of at least ~2^14 elements per task.
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 14) / (kLanes<T> * job.n));
  __xla_cpu_parallel_for(&AxisGroups<T>, const_cast<AxisJob<T>*>(&job), groups, min_chunk);
}

template <typename T>
void Fft(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths,
         int32_t kind) {
  using C = std::complex<T>;
  if (batch <= 0 || rank <= 0) return;
  int64_t size = 1;
  for (int32_t d = 0; d < rank; ++d) size *= lengths[d];
  if (size == 0) return;
  // The complex side's dimensions: the lengths, the last one halved for
  // the real transforms.
  std::vector<int64_t> dims(lengths, lengths + rank);
  const bool real = kind >= 2;
  const int64_t last = lengths[rank - 1];
  if (real) dims[rank - 1] = last / 2 + 1;
  int64_t complex_size = 1;
  for (int32_t d = 0; d < rank; ++d) complex_size *= dims[d];
  // A complex transform along axis a of `data` (all the batch).
  auto complex_axis = [&](void* data, int32_t a, bool inverse) {
    int64_t stride = 1;
    for (int32_t d = a + 1; d < rank; ++d) stride *= dims[d];
    RunAxis(AxisJob<T>{data, data, batch * complex_size / dims[a], dims[a], stride,
                       inverse ? 1 : 0});
  };
  const int64_t rows = batch * complex_size / dims[rank - 1];
  if (kind <= 1) {
    std::copy(static_cast<const C*>(in), static_cast<const C*>(in) + batch * complex_size,
              static_cast<C*>(out));
    for (int32_t a = rank - 1; a >= 0; --a) complex_axis(out, a, kind == 1);
  } else if (kind == 2) {  // RFFT: the last axis real -> half, then the others
    RunAxis(AxisJob<T>{in, out, rows, last, 1, 2});
    for (int32_t a = rank - 2; a >= 0; --a) complex_axis(out, a, false);
  } else {  // IRFFT: the other axes first, then half -> real along the last
    const void* half = in;
    std::vector<C> work;
    if (rank > 1) {
      work.assign(static_cast<const C*>(in), static_cast<const C*>(in) + batch * complex_size);
      for (int32_t a = 0; a + 1 < rank; ++a) complex_axis(work.data(), a, true);
      half = work.data();
    }
    RunAxis(AxisJob<T>{half, out, rows, last, 1, 3});
  }
}

}  // namespace

void FftF32(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths,
            int32_t kind) {
  Fft<float>(in, out, batch, rank, lengths, kind);
}

void FftF64(const void* in, void* out, int64_t batch, int32_t rank, const int64_t* lengths,
            int32_t kind) {
  Fft<double>(in, out, batch, rank, lengths, kind);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
