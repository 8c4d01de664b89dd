// The CPU runtime's 2-D convolution (see cpu_runtime.h). An ISA variant
// unit: compiled once per variant (kernels.h, isa_variant.h); the C entry
// points that dispatch to a variant are in isa.cc.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "xla/backends/cpu/runtime/conv_window.h"
#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// ---------------------------------------------------------------------------
// Convolution: im2col over blocks of output pixels, then one GEMM per feature
// group and block, blocks spread over the pool with parallel_for.

// Output pixels per im2col block: bounds the patch buffer of each thread.
constexpr int64_t kConvBlockPixels = 256;

// c[rows, n] = a[rows, k] * w[k, n], all row-major; w's and c's rows
// `w_stride` and `c_stride` apart (a feature group's columns). Eigen's
// product is measurably faster over plain maps, the ungrouped case.
template <typename T>
void GemmRows(const T* a, int64_t rows, int64_t k, const T* w, int64_t w_stride, int64_t n,
              T* c, int64_t c_stride) {
  Eigen::Map<const RowMajorMatrix<T>> am(a, rows, k);
  if (w_stride == n && c_stride == n) {
    SerialGemm(Eigen::Map<RowMajorMatrix<T>>(c, rows, n), am,
               Eigen::Map<const RowMajorMatrix<T>>(w, k, n), /*accumulate=*/false);
    return;
  }
  using Stride = Eigen::OuterStride<>;
  SerialGemm(Eigen::Map<RowMajorMatrix<T>, 0, Stride>(c, rows, n, Stride(c_stride)), am,
             Eigen::Map<const RowMajorMatrix<T>, 0, Stride>(w, k, n, Stride(w_stride)),
             /*accumulate=*/false);
}

// im2col of feature group g for output pixels [begin, end): one row of
// `patch` values per pixel at `dst`, (ky, kx, c) along the row.
template <typename T>
void Im2ColRows(const ConvContext<T>& ctx, int64_t begin, int64_t end, int64_t g, T* dst) {
  const ConvParams& p = ctx.p;
  const int64_t cg = p.in_c / p.groups;
  // Without groups and rhs dilation, a kernel row's taps read adjacent features.
  const bool adjacent_taps = p.groups == 1 && p.rhs_dilation_w == 1;
  const int64_t run = p.kernel_w * cg;
  GridCursor at(begin, p.out_h, p.out_w);
  for (int64_t r = begin; r < end; ++r, at.Next()) {
    const int64_t ox = at.x, oy = at.y, b = at.b;
    // lhs dilation is 1 here (Conv2D runs it by phases): a tap reads
    // input position o * stride - pad + k * rhs_dilation.
    for (int64_t ky = 0; ky < p.kernel_h; ++ky, dst += run) {
      const int64_t iy = oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h;
      if (iy < 0 || iy >= p.in_h) {
        FillRun(dst, run);
        continue;
      }
      const T* in_row = ctx.input + (b * p.in_h + iy) * p.in_w * p.in_c + g * cg;
      const int64_t ix0 = ox * p.stride_w - p.pad_w_lo;
      if (adjacent_taps && ix0 >= 0 && ix0 + p.kernel_w <= p.in_w) {
        CopyRun(in_row + ix0 * p.in_c, run, dst);   // the row's taps are one run
        continue;
      }
      for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
        const int64_t ix = ix0 + kx * p.rhs_dilation_w;
        if (ix < 0 || ix >= p.in_w) {
          FillRun(dst + kx * cg, cg);
        } else {
          CopyRun(in_row + ix * p.in_c, cg, dst + kx * cg);
        }
      }
    }
  }
}

template <typename T>
void ConvPixels(const ConvContext<T>& ctx, int64_t begin, int64_t end, std::vector<T>& patches) {
  const ConvParams& p = ctx.p;
  const int64_t cg = p.in_c / p.groups;
  const int64_t og = p.out_c / p.groups;
  const int64_t patch = p.kernel_h * p.kernel_w * cg;
  const int64_t rows = end - begin;
  patches.resize(static_cast<size_t>(rows * patch));
  for (int64_t g = 0; g < p.groups; ++g) {
    Im2ColRows(ctx, begin, end, g, patches.data());
    GemmRows(patches.data(), rows, patch, ctx.kernel + g * og, p.out_c, og,
             ctx.out + begin * p.out_c + g * og, p.out_c);
  }
}

// Convolutions of few output pixels and many features (a late layer at
// batch 1: 14 x 14 pixels, 3x3, 256 -> 256 features): the pixel blocks
// split over the pool leave each thread a few rows for which it packs
// all of the kernel (its GEMM's B). Instead every pixel's im2col row is
// written (over the pool) and one product of the runtime's matmul, which
// splits it along the output features, computes them (2 threads of the
// 2-core EPYC, that layer: ~0.80 -> ~0.56 ms; XLA:CPU ~0.68; [1, 28, 28,
// 128] -> 128, 784 pixels, 0.57-0.60 -> 0.54-0.55 ms; at ~1600 pixels
// level, so up to 1024). Where the f32 product takes the packed GEMM
// (AVX-512, 2^23 multiply-adds or more), whose elements are the same sums
// at any split.
constexpr int64_t kFewPixels = 4 * kConvBlockPixels;

template <typename T>
struct Im2ColContext {
  ConvContext<T> conv;
  T* patches;
  int64_t patch;
};

template <typename T>
void Im2ColBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const Im2ColContext<T>*>(ctx_ptr);
  Im2ColRows(ctx.conv, begin, end, 0, ctx.patches + begin * ctx.patch);
}

template <typename T>
bool FewPixelsProduct(const ConvContext<T>& ctx, int64_t pixels, int64_t patch) {
#if defined(__AVX512F__)
  const ConvParams& p = ctx.p;
  if constexpr (std::is_same<T, float>::value) {
    if (p.groups != 1 || pixels > kFewPixels ||
        pixels * patch * p.out_c < packed_gemm::kMinMacs) {
      return false;
    }
    std::vector<T> patches(static_cast<size_t>(pixels * patch));
    Im2ColContext<T> im2col{ctx, patches.data(), patch};
    __xla_cpu_parallel_for(&Im2ColBody<T>, &im2col, pixels, 16);
    MatmulF32(patches.data(), ctx.kernel, ctx.out, 1, pixels, patch, p.out_c, false, false);
    return true;
  }
#endif
  (void)ctx, (void)pixels, (void)patch;
  return false;
}

// Lhs dilation (the input gradient of a strided convolution) by phases:
// output positions o with the same o mod lhs_dilation read input elements
// (not holes) through the same kernel taps, so each phase (py, px) is a
// convolution over its own pixels with only those taps, packed into a
// kernel of its own. Without this, im2col fills the holes with zeros and
// the GEMM multiplies them: lhs_dilation_h * lhs_dilation_w times the work.
template <typename T>
struct ConvPhase {
  int64_t py, px, rows_y, cols_x;   // first output position; positions per axis
  std::vector<int64_t> taps_y, taps_x;
  // The input index tap t reads at the phase's first position: position j
  // of the phase (output oy = py + j * lhs_dilation_h) reads base_y[t] +
  // j * stride_h, an input element when in [0, in_h); likewise x.
  std::vector<int64_t> base_y, base_x;
  std::vector<T> kernel;            // [taps_y, taps_x, in_c / groups, out_c]
  int64_t begin, pixels;            // this phase's range of the task index
  int64_t row_begin;                // its first row (image, phase row) in the direct path's
};

// The taps of one axis whose position falls on an input element for the
// output positions congruent to `phase` modulo `lhs_dilation`.
inline std::vector<int64_t> PhaseTaps(int64_t phase, int64_t stride, int64_t pad_lo,
                                      int64_t kernel, int64_t rhs_dilation,
                                      int64_t lhs_dilation) {
  std::vector<int64_t> taps;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t pos = phase * stride - pad_lo + k * rhs_dilation;
    if (((pos % lhs_dilation) + lhs_dilation) % lhs_dilation == 0) taps.push_back(k);
  }
  return taps;
}

template <typename T>
struct PhasedConvContext {
  const T* input;
  T* out;
  ConvParams p;
  std::vector<ConvPhase<T>> phases;
};

template <typename T>
void PhasePixels(const PhasedConvContext<T>& ctx, const ConvPhase<T>& ph, int64_t begin,
                 int64_t end, std::vector<T>& patches, std::vector<T>& result) {
  const ConvParams& p = ctx.p;
  const int64_t cg = p.in_c / p.groups;
  const int64_t og = p.out_c / p.groups;
  const int64_t ntaps = static_cast<int64_t>(ph.taps_y.size() * ph.taps_x.size());
  const int64_t patch = ntaps * cg;
  const int64_t rows = end - begin;
  auto out_row = [&](const GridCursor& at) {
    const int64_t oy = ph.py + at.y * p.lhs_dilation_h, ox = ph.px + at.x * p.lhs_dilation_w;
    return ((at.b * p.out_h + oy) * p.out_w + ox) * p.out_c;
  };
  if (patch == 0) {
    GridCursor at(begin, ph.rows_y, ph.cols_x);
    for (int64_t r = 0; r < rows; ++r, at.Next()) {
      T* dst = ctx.out + out_row(at);
      std::fill(dst, dst + p.out_c, T(0));
    }
    return;
  }
  patches.resize(static_cast<size_t>(rows * patch));
  result.resize(static_cast<size_t>(rows * p.out_c));
  for (int64_t g = 0; g < p.groups; ++g) {
    GridCursor at(begin, ph.rows_y, ph.cols_x);
    for (int64_t r = 0; r < rows; ++r, at.Next()) {
      const int64_t b = at.b;
      T* dst = patches.data() + r * patch;
      for (int64_t by : ph.base_y) {
        const int64_t iy = by + at.y * p.stride_h;
        for (int64_t bx : ph.base_x) {
          const int64_t ix = bx + at.x * p.stride_w;
          if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) {
            FillRun(dst, cg);
          } else {
            CopyRun(ctx.input + ((b * p.in_h + iy) * p.in_w + ix) * p.in_c + g * cg, cg, dst);
          }
          dst += cg;
        }
      }
    }
    GemmRows(patches.data(), rows, patch, ph.kernel.data() + g * og, p.out_c, og,
             result.data() + g * og, p.out_c);
  }
  GridCursor at(begin, ph.rows_y, ph.cols_x);
  for (int64_t r = 0; r < rows; ++r, at.Next()) {
    const T* src = result.data() + r * p.out_c;
    std::copy(src, src + p.out_c, ctx.out + out_row(at));
  }
}

template <typename T>
void PhasedConvBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const PhasedConvContext<T>*>(ctx_ptr);
  std::vector<T> patches, result;
  for (const ConvPhase<T>& ph : ctx.phases) {
    const int64_t lo = std::max(begin, ph.begin), hi = std::min(end, ph.begin + ph.pixels);
    for (int64_t start = lo; start < hi; start += kConvBlockPixels) {
      PhasePixels(ctx, ph, start - ph.begin, std::min(hi, start + kConvBlockPixels) - ph.begin,
                  patches, result);
    }
  }
}

// Convolutions whose output is a few vectors of features wide (f32 on the
// AVX2 and AVX-512 variants, no feature groups: DirectFits): computed in
// register tiles of up to 8 output pixels of one image row, straight from
// the input, without im2col or a GEMM call. With 16 or 32 output features
// each patch element meets one or two kernel vectors, so Eigen's product
// spent as long packing the patches (and im2col copying them) as
// multiplying. Per (tap, input feature) the kernel row's vectors are
// loaded once and each pixel's input element broadcast; a pixel whose tap
// falls in the padding reads a row of zeros. Each output element is the
// sum over (ky, kx, c) in that order, as the GEMM path's row (results
// within f32 rounding of each other). On the 2-core EPYC, one thread,
// cnn_train's forward layers in its step: 3x3, 8 -> 16 features over 32
// images of 32x32 1.8-1.9 -> 1.15-1.2 ms; 3x3 stride 2, 16 -> 32, 1.2 ->
// 0.95 ms; alone, with the registers and runs below, 0.52-0.54 and
// 0.31-0.33 ms (docs/cpu_backend.md). Lhs dilation runs the same tiles
// per phase (PhasedDirectBody below).
//
// The direct paths here and FilterDirect (convolution_filter.cc) run where the variant's
// widest packet of T (DirectPacket, conv_window.h) has 16 lanes (AVX-512
// f32) or 8 (AVX2 f32).

// Output pixels per tile for kVecs vectors of features: the tile's
// accumulators, the kernel row's kVecs vectors and a broadcast in the
// variant's vector registers (16 ymm with AVX2, 32 zmm with AVX-512), at
// most 8 pixels.
template <typename T, int kVecs>
constexpr int DirectTilePixels() {
  constexpr int regs = sizeof(DirectPacket<T>) == 64 ? 32 : 16;
  return std::min(8, (regs - 1 - kVecs) / kVecs);
}

// The variant's half-width packet of T: 8 lanes of f32 on AVX-512.
template <typename T>
using DirectHalfPacket = typename Eigen::internal::packet_traits<T>::half;

// Whether the direct tiles take these parameters: f32 on AVX-512 (16
// lanes) with one to four vectors of output features, or 8 or 24 features
// in 8-lane vectors (the 32 registers hold 8 pixels of them); on AVX2 (8
// lanes) one to three vectors; no feature groups. AVX2's tile of four
// vectors has 2 pixels, and lost to im2col and Eigen's GEMM on the 2-core
// EPYC (cnn_train's strided layer, 32 features: 0.83-0.90 ms with the
// GEMM, 0.77-1.03 in tiles). (in_c bounds the row of zeros each task
// allocates for padded taps; the direct path was measured with 8 to 64
// input features only.)
constexpr int kMaxDirectVecs = 4;
template <typename T>
bool DirectFits(const ConvParams& p) {
  constexpr int L = kDirectLanes<T>;
  if (!std::is_same<T, float>::value || (L != 8 && L != 16)) return false;
  if (p.groups != 1 || p.in_c > 4096) return false;
  if (L == 16 && (p.out_c == 8 || p.out_c == 24)) return true;
  const int64_t vecs = p.out_c / L, max_vecs = L == 16 ? kMaxDirectVecs : 3;
  return p.out_c % L == 0 && vecs >= 1 && vecs <= max_vecs;
}

// The taps one output row of a direct tile reads: tap (r, s) of the
// rows x cols taps reads input row rows[r] (-1: padding, no term) at column
// cols[s] + x * stride_w for output pixel x of the row, through the kernel
// block kernel[(r * cols + s), in_c, out_c]. A convolution's row has the
// kernel's taps; a phase of lhs dilation those of its own packed kernel.
template <typename T>
struct DirectRow {
  const T* image;   // the row's image, [in_h, in_w, in_c]
  const int64_t* rows;
  int64_t n_rows;
  const int64_t* cols;
  int64_t n_cols;
  const T* kernel;
  int64_t in_w, in_c, stride_w, out_c;
  // cols[s] == cols[0] + s: a kernel row's taps read adjacent input
  // pixels, and its kernel blocks are adjacent too, so a tile whose pixels
  // read no padding takes the row's taps as one run of n_cols * in_c.
  bool adjacent_cols;
};

inline bool AdjacentCols(const int64_t* cols, int64_t n) {
  for (int64_t s = 1; s < n; ++s) {
    if (cols[s] != cols[0] + s) return false;
  }
  return true;
}

// Output pixels x0 .. x0 + count - 1 (count <= the tile's pixels) of a
// row, pixel t stored at out + t * out_step.
template <typename T, typename Packet, int kVecs>
void DirectTile(const DirectRow<T>& row, int64_t x0, int count, T* out, int64_t out_step,
                const T* zeros) {
  constexpr int L = Eigen::internal::unpacket_traits<Packet>::size;
  constexpr int kTile = DirectTilePixels<T, kVecs>();
  Packet acc[kTile][kVecs];
#pragma GCC unroll 8
  for (int t = 0; t < kTile; ++t)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[t][v] = Eigen::internal::pset1<Packet>(T(0));
  const int64_t in_c = row.in_c, out_c = row.out_c, in_w = row.in_w, stride_w = row.stride_w;
  const int64_t n_cols = row.n_cols;
  // Per run of taps the loop over c is as long as the run: cnn_train's
  // first layer (8 input features) spent a third of its time setting up
  // its 9 taps of 8 features each.
  const bool one_run = row.adjacent_cols && n_cols > 0 && count == kTile &&
                       row.cols[0] + x0 * stride_w >= 0 &&
                       row.cols[0] + (x0 + kTile - 1) * stride_w + n_cols <= in_w;
  const int64_t runs = one_run ? 1 : n_cols, run_len = one_run ? n_cols * in_c : in_c;
  for (int64_t r = 0; r < row.n_rows; ++r) {
    if (row.rows[r] < 0) continue;
    const T* in_row = row.image + row.rows[r] * in_w * in_c;
    for (int64_t s = 0; s < runs; ++s) {
      const T* src[kTile];
      const int64_t ix0 = row.cols[s] + x0 * stride_w;
#pragma GCC unroll 8
      for (int t = 0; t < kTile; ++t) {
        const int64_t ix = ix0 + t * stride_w;
        src[t] = t < count && ix >= 0 && ix < in_w ? in_row + ix * in_c : zeros;
      }
      const T* w_rows = row.kernel + (r * n_cols + s) * in_c * out_c;
      for (int64_t c = 0; c < run_len; ++c) {
        Packet w[kVecs];
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v)
          w[v] = Eigen::internal::ploadu<Packet>(w_rows + c * out_c + v * L);
#pragma GCC unroll 8
        for (int t = 0; t < kTile; ++t) {
          const Packet x = Eigen::internal::pset1<Packet>(src[t][c]);
#pragma GCC unroll 4
          for (int v = 0; v < kVecs; ++v) acc[t][v] = Eigen::internal::pmadd(x, w[v], acc[t][v]);
        }
      }
    }
  }
  // Every loop over acc has constant bounds (unrolled, `count` tested
  // inside): an index known only at run time kept the accumulators in
  // memory, stored and reloaded around every tap's loop over c.
#pragma GCC unroll 8
  for (int t = 0; t < kTile; ++t) {
    if (t >= count) break;
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) Eigen::internal::pstoreu(out + t * out_step + v * L, acc[t][v]);
  }
}

// A row's tiles: `width` pixels, pixel x at out + x * out_step.
template <typename T, typename Packet, int kVecs>
void DirectRowTilesOf(const DirectRow<T>& row, int64_t width, T* out, int64_t out_step,
                      const T* zeros) {
  constexpr int kTile = DirectTilePixels<T, kVecs>();
  for (int64_t x = 0; x < width; x += kTile) {
    const int count = static_cast<int>(std::min<int64_t>(kTile, width - x));
    DirectTile<T, Packet, kVecs>(row, x, count, out + x * out_step, out_step, zeros);
  }
}

template <typename T>
void DirectRowTiles(const DirectRow<T>& row, int64_t width, T* out, int64_t out_step,
                    const T* zeros) {
  static_assert(kMaxDirectVecs == 4, "one case per width");
  using Wide = DirectPacket<T>;
  if constexpr (kDirectLanes<T> == 16) {
    using Half = DirectHalfPacket<T>;
    if (row.out_c == 8) return DirectRowTilesOf<T, Half, 1>(row, width, out, out_step, zeros);
    if (row.out_c == 24) return DirectRowTilesOf<T, Half, 3>(row, width, out, out_step, zeros);
  }
  switch (row.out_c / kDirectLanes<T>) {
    case 1: return DirectRowTilesOf<T, Wide, 1>(row, width, out, out_step, zeros);
    case 2: return DirectRowTilesOf<T, Wide, 2>(row, width, out, out_step, zeros);
    case 3: return DirectRowTilesOf<T, Wide, 3>(row, width, out, out_step, zeros);
    default: return DirectRowTilesOf<T, Wide, 4>(row, width, out, out_step, zeros);
  }
}

// Output rows [begin, end) of (image, oy).
template <typename T>
void ConvDirectBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const ConvContext<T>*>(ctx_ptr);
  const ConvParams& p = ctx.p;
  const std::vector<T> zeros(static_cast<size_t>(p.in_c), T(0));
  std::vector<int64_t> rows(static_cast<size_t>(p.kernel_h)), cols(static_cast<size_t>(p.kernel_w));
  for (int64_t kx = 0; kx < p.kernel_w; ++kx) cols[kx] = kx * p.rhs_dilation_w - p.pad_w_lo;
  DirectRow<T> row{nullptr, rows.data(), p.kernel_h, cols.data(), p.kernel_w, ctx.kernel,
                   p.in_w,  p.in_c,      p.stride_w, p.out_c,
                   AdjacentCols(cols.data(), p.kernel_w)};
  for (int64_t r = begin; r < end; ++r) {
    const int64_t b = r / p.out_h, oy = r % p.out_h;
    for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h;
      rows[ky] = iy >= 0 && iy < p.in_h ? iy : -1;
    }
    row.image = ctx.input + b * p.in_h * p.in_w * p.in_c;
    DirectRowTiles(row, p.out_w, ctx.out + (b * p.out_h + oy) * p.out_w * p.out_c, p.out_c,
                   zeros.data());
  }
}

// Lhs dilation in direct tiles: rows [begin, end) of the phases' (image,
// phase row) rows, each phase's pixels of an output row, lhs_dilation_w
// pixels apart, read through its own taps and kernel. cnn_train's input
// gradient (3x3, 32 -> 16 features, 2x2 lhs dilation, 32 images of 16x16
// into 32x32; phases of 4, 2, 2 and 1 taps), 2-core EPYC, one thread:
// see docs/cpu_backend.md.
template <typename T>
void PhasedDirectBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const PhasedConvContext<T>*>(ctx_ptr);
  const ConvParams& p = ctx.p;
  const std::vector<T> zeros(static_cast<size_t>(p.in_c), T(0));
  std::vector<int64_t> rows;
  for (const ConvPhase<T>& ph : ctx.phases) {
    const int64_t lo = std::max(begin, ph.row_begin);
    const int64_t hi = std::min(end, ph.row_begin + p.batch * ph.rows_y);
    if (lo >= hi) continue;
    rows.resize(ph.base_y.size());
    const int64_t n_cols = static_cast<int64_t>(ph.base_x.size());
    DirectRow<T> row{nullptr,  rows.data(), static_cast<int64_t>(rows.size()),
                     ph.base_x.data(), n_cols, ph.kernel.data(), p.in_w, p.in_c, p.stride_w,
                     p.out_c,  AdjacentCols(ph.base_x.data(), n_cols)};
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = (r - ph.row_begin) / ph.rows_y, j = (r - ph.row_begin) % ph.rows_y;
      for (size_t t = 0; t < rows.size(); ++t) {
        const int64_t iy = ph.base_y[t] + j * p.stride_h;
        rows[t] = iy >= 0 && iy < p.in_h ? iy : -1;
      }
      row.image = ctx.input + b * p.in_h * p.in_w * p.in_c;
      const int64_t oy = ph.py + j * p.lhs_dilation_h;
      DirectRowTiles(row, ph.cols_x, ctx.out + ((b * p.out_h + oy) * p.out_w + ph.px) * p.out_c,
                     p.lhs_dilation_w * p.out_c, zeros.data());
    }
  }
}

template <typename T>
void PhasedConv2D(const T* input, const T* kernel, T* out, const ConvParams& p) {
  const int64_t cg = p.in_c / p.groups;
  PhasedConvContext<T> ctx{input, out, p, {}};
  int64_t total = 0, total_rows = 0, macs = 0;
  for (int64_t py = 0; py < std::min(p.lhs_dilation_h, p.out_h); ++py) {
    for (int64_t px = 0; px < std::min(p.lhs_dilation_w, p.out_w); ++px) {
      ConvPhase<T> ph;
      ph.py = py;
      ph.px = px;
      ph.rows_y = (p.out_h - py + p.lhs_dilation_h - 1) / p.lhs_dilation_h;
      ph.cols_x = (p.out_w - px + p.lhs_dilation_w - 1) / p.lhs_dilation_w;
      ph.taps_y = PhaseTaps(py, p.stride_h, p.pad_h_lo, p.kernel_h, p.rhs_dilation_h,
                            p.lhs_dilation_h);
      ph.taps_x = PhaseTaps(px, p.stride_w, p.pad_w_lo, p.kernel_w, p.rhs_dilation_w,
                            p.lhs_dilation_w);
      // Exact divisions: a phase's taps land on multiples of the dilation.
      for (int64_t ky : ph.taps_y) {
        ph.base_y.push_back((py * p.stride_h - p.pad_h_lo + ky * p.rhs_dilation_h) /
                            p.lhs_dilation_h);
      }
      for (int64_t kx : ph.taps_x) {
        ph.base_x.push_back((px * p.stride_w - p.pad_w_lo + kx * p.rhs_dilation_w) /
                            p.lhs_dilation_w);
      }
      for (int64_t ky : ph.taps_y) {
        for (int64_t kx : ph.taps_x) {
          const T* src = kernel + (ky * p.kernel_w + kx) * cg * p.out_c;
          ph.kernel.insert(ph.kernel.end(), src, src + cg * p.out_c);
        }
      }
      ph.begin = total;
      ph.pixels = p.batch * ph.rows_y * ph.cols_x;
      total += ph.pixels;
      ph.row_begin = total_rows;
      total_rows += p.batch * ph.rows_y;
      macs += ph.pixels * static_cast<int64_t>(ph.kernel.size());
      ctx.phases.push_back(std::move(ph));
    }
  }
  if (DirectFits<T>(p)) {
    const int64_t macs_per_row = std::max<int64_t>(1, macs / std::max<int64_t>(1, total_rows));
    __xla_cpu_parallel_for(&PhasedDirectBody<T>, &ctx, total_rows,
                           std::max<int64_t>(1, kMinParallelMacs / macs_per_row));
    return;
  }
  const int64_t macs_per_pixel = std::max<int64_t>(1, macs / std::max<int64_t>(1, total));
  const int64_t min_chunk = std::max<int64_t>(16, kMinParallelMacs / macs_per_pixel);
  __xla_cpu_parallel_for(&PhasedConvBody<T>, &ctx, total, min_chunk);
}

template <typename T>
void ConvBody(void* ctx_ptr, int64_t begin, int64_t end) {
  const auto& ctx = *static_cast<const ConvContext<T>*>(ctx_ptr);
  std::vector<T> patches;
  for (int64_t start = begin; start < end; start += kConvBlockPixels) {
    ConvPixels(ctx, start, std::min(end, start + kConvBlockPixels), patches);
  }
}

template <typename T>
void Conv2D(const T* input, const T* kernel, T* out, const ConvParams& p) {
  const int64_t pixels = p.batch * p.out_h * p.out_w;
  if (pixels <= 0 || p.out_c <= 0) return;
  if (p.groups <= 0 || p.in_c % p.groups != 0 || p.out_c % p.groups != 0) return;
  const int64_t patch = p.kernel_h * p.kernel_w * (p.in_c / p.groups);
  if (patch <= 0) {
    std::fill(out, out + pixels * p.out_c, T(0));
    return;
  }
  if (DepthwiseFits(p)) {   // convolution_depthwise.cc
    Conv2DDepthwise(input, kernel, out, p);
    return;
  }
  if (p.lhs_dilation_h > 1 || p.lhs_dilation_w > 1) {
    PhasedConv2D(input, kernel, out, p);
    return;
  }
  ConvContext<T> ctx{input, kernel, out, p};
  // Enough pixels per task that its GEMMs amortize the scheduling.
  const int64_t macs_per_pixel = patch * (p.out_c / p.groups) * p.groups;
  if (DirectFits<T>(p)) {
    const int64_t macs_per_row = std::max<int64_t>(1, macs_per_pixel * p.out_w);
    __xla_cpu_parallel_for(&ConvDirectBody<T>, &ctx, p.batch * p.out_h,
                           std::max<int64_t>(1, kMinParallelMacs / macs_per_row));
    return;
  }
  if (FewPixelsProduct(ctx, pixels, patch)) return;
  const int64_t min_chunk = std::max<int64_t>(16, kMinParallelMacs / std::max<int64_t>(1, macs_per_pixel));
  __xla_cpu_parallel_for(&ConvBody<T>, &ctx, pixels, min_chunk);
}

}  // namespace

void Conv2DF32(const float* input, const float* kernel, float* out, const ConvParams& p) {
  Conv2D(input, kernel, out, p);
}

void Conv2DF64(const double* input, const double* kernel, double* out, const ConvParams& p) {
  Conv2D(input, kernel, out, p);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
