// The CPU runtime's Cholesky factorization and triangular solve (see
// cpu_runtime.h). An ISA variant unit: compiled once per variant
// (kernels.h, isa_variant.h); the C entry points that dispatch to a variant
// are in isa.cc.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include <Eigen/Cholesky>

#include "xla/backends/cpu/runtime/cpu_runtime.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

// ---------------------------------------------------------------------------
// Cholesky: Eigen's blocked LLT (its panels go through GEMM) on a lower-form
// copy of each matrix, batches over the pool. Complex matrices are
// Hermitian: a = L L^H = U^H U.

template <typename T>
struct CholeskyContext {
  const T* a;
  T* out;
  int32_t* info;
  int64_t n;
  bool lower;
  bool potrf;
};

template <typename T>
void CholeskyBatch(void* raw, int64_t begin, int64_t end) {
  using Mat = RowMajorMatrix<T>;
  const auto& c = *static_cast<const CholeskyContext<T>*>(raw);
  const int64_t n = c.n;
  Mat w(n, n);
  for (int64_t b = begin; b < end; ++b) {
    Eigen::Map<const Mat> a(c.a + b * n * n, n, n);
    Eigen::Map<Mat> out(c.out + b * n * n, n, n);
    // The factor of the upper form is the adjoint of the lower form's.
    if (c.lower) {
      w.template triangularView<Eigen::Lower>() = a;
    } else {
      w.template triangularView<Eigen::Lower>() = a.adjoint();
    }
    // Eigen stops at a pivot that is not > 0 but lets NaN through: the
    // first NaN on the diagonal is a failed pivot too (NaN spreads down
    // and right, never up).
    int64_t failed = Eigen::internal::llt_inplace<T, Eigen::Lower>::blocked(w);
    const int64_t scan = failed < 0 ? n : failed;
    for (int64_t j = 0; j < scan; ++j) {
      if (std::isnan(std::real(w(j, j)))) {
        failed = j;
        break;
      }
    }
    if (c.info != nullptr) c.info[b] = static_cast<int32_t>(failed < 0 ? 0 : failed + 1);
    if (c.potrf) {
      // The factor in its triangle, the rest (everything if it failed) as a was.
      if (c.out != c.a) out = a;
      if (failed >= 0) continue;
      if (c.lower) {
        out.template triangularView<Eigen::Lower>() = w;
      } else {
        out.template triangularView<Eigen::Upper>() = w.adjoint();
      }
    } else if (failed >= 0) {
      out.setConstant(T(std::numeric_limits<typename Eigen::NumTraits<T>::Real>::quiet_NaN()));
    } else if (c.lower) {
      out = w.template triangularView<Eigen::Lower>();
    } else {
      out = w.adjoint().template triangularView<Eigen::Upper>();
    }
  }
}

template <typename T>
void Cholesky(const T* a, T* out, int32_t* info, int64_t batch, int64_t n, int32_t lower,
              int32_t potrf) {
  if (batch <= 0 || n <= 0) return;
  CholeskyContext<T> ctx{a, out, info, n, lower != 0, potrf != 0};
  // Whole matrices per task; small ones together.
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (n * n * n));
  __xla_cpu_parallel_for(&CholeskyBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// Triangular solve: Eigen's blocked TRSM, in place in `out`. The
// right-hand sides (the columns of x for a left solve, its rows for a right
// one) are independent: tasks are (matrix, slab of right-hand sides), so a
// single large system spreads over the pool too (an inverse's 512 x 512:
// each thread solves its 256 columns).

template <typename T>
struct TrsmContext {
  const T* a;
  const T* b;
  T* out;
  const T* alpha;
  int64_t m, n;
  bool left, lower, unit, transpose, conjugate;
  int64_t slabs;  // tasks per matrix
};

template <int Mode, typename A, typename X>
void SolveTriangular(const A& a, X& x, bool left) {
  if (left) {
    a.template triangularView<Mode>().template solveInPlace<Eigen::OnTheLeft>(x);
  } else {
    a.template triangularView<Mode>().template solveInPlace<Eigen::OnTheRight>(x);
  }
}

// op(a) is triangular in the `lower` triangle (else the upper one).
template <typename A, typename X>
void SolveTriangular(const A& a, X& x, bool left, bool lower, bool unit) {
  if (lower) {
    if (unit) {
      SolveTriangular<Eigen::UnitLower>(a, x, left);
    } else {
      SolveTriangular<Eigen::Lower>(a, x, left);
    }
  } else if (unit) {
    SolveTriangular<Eigen::UnitUpper>(a, x, left);
  } else {
    SolveTriangular<Eigen::Upper>(a, x, left);
  }
}

// Solves for the right-hand sides `x` (a block of the result) from `b` (the
// same block of b, or null when b is the result).
template <typename T, typename A, typename X, typename B>
void SolveSlab(const TrsmContext<T>& c, const A& a, X x, const B& b, bool copy) {
  if (copy) x = b;
  if (c.alpha != nullptr) x *= *c.alpha;
  // The transpose of a triangle is the opposite triangle.
  if (c.transpose && c.conjugate) {
    SolveTriangular(a.adjoint(), x, c.left, !c.lower, c.unit);
  } else if (c.conjugate) {
    SolveTriangular(a.conjugate(), x, c.left, c.lower, c.unit);
  } else if (c.transpose) {
    SolveTriangular(a.transpose(), x, c.left, !c.lower, c.unit);
  } else {
    SolveTriangular(a, x, c.left, c.lower, c.unit);
  }
}

template <typename T>
void TrsmBatch(void* raw, int64_t begin, int64_t end) {
  using Mat = RowMajorMatrix<T>;
  const auto& c = *static_cast<const TrsmContext<T>*>(raw);
  const int64_t k = c.left ? c.m : c.n;
  const int64_t rhs = c.left ? c.n : c.m;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t b = task / c.slabs, slab = task % c.slabs;
    const int64_t lo = slab * rhs / c.slabs, count = (slab + 1) * rhs / c.slabs - lo;
    Eigen::Map<const Mat> a(c.a + b * k * k, k, k);
    Eigen::Map<Mat> x(c.out + b * c.m * c.n, c.m, c.n);
    Eigen::Map<const Mat> bm(c.b + b * c.m * c.n, c.m, c.n);
    const bool copy = c.out != c.b;
    if (c.left) {
      SolveSlab(c, a, x.middleCols(lo, count), bm.middleCols(lo, count), copy);
    } else {
      SolveSlab(c, a, x.middleRows(lo, count), bm.middleRows(lo, count), copy);
    }
  }
}

template <typename T>
void Trsm(const T* a, const T* b, T* out, const T* alpha, int64_t batch, int64_t m, int64_t n,
          int32_t flags) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  TrsmContext<T> ctx{a,
                     b,
                     out,
                     alpha,
                     m,
                     n,
                     (flags & 1) != 0,
                     (flags & 2) != 0,
                     (flags & 4) != 0,
                     (flags & 8) != 0,
                     (flags & 16) != 0,
                     1};
  const int64_t k = ctx.left ? m : n;
  const int64_t rhs = ctx.left ? n : m;
  const int64_t work = k * k * rhs;  // multiply-adds per matrix
  // Slabs of at least 32 right-hand sides and 2^22 multiply-adds, so that
  // fewer matrices than threads still share out.
  const int64_t threads = PoolNumThreads();
  if (batch < threads && work >= (int64_t{1} << 23)) {
    ctx.slabs = std::max<int64_t>(1, std::min({(threads + batch - 1) / batch, rhs / 32,
                                               work >> 22}));
  }
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (work / ctx.slabs));
  __xla_cpu_parallel_for(&TrsmBatch<T>, &ctx, batch * ctx.slabs, min_chunk);
}

}  // namespace


void CholeskyF32(const float* a, float* out, int32_t* info, int64_t batch, int64_t n,
                 int32_t lower, int32_t potrf) {
  Cholesky(a, out, info, batch, n, lower, potrf);
}

void CholeskyF64(const double* a, double* out, int32_t* info, int64_t batch,
                 int64_t n, int32_t lower, int32_t potrf) {
  Cholesky(a, out, info, batch, n, lower, potrf);
}

void TrsmF32(const float* a, const float* b, float* out, const float* alpha,
             int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Trsm(a, b, out, alpha, batch, m, n, flags);
}

void TrsmF64(const double* a, const double* b, double* out, const double* alpha,
             int64_t batch, int64_t m, int64_t n, int32_t flags) {
  Trsm(a, b, out, alpha, batch, m, n, flags);
}

void CholeskyC64(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,
                 int32_t lower, int32_t potrf) {
  using C = std::complex<float>;
  Cholesky(static_cast<const C*>(a), static_cast<C*>(out), info, batch, n, lower, potrf);
}

void CholeskyC128(const void* a, void* out, int32_t* info, int64_t batch, int64_t n,
                  int32_t lower, int32_t potrf) {
  using C = std::complex<double>;
  Cholesky(static_cast<const C*>(a), static_cast<C*>(out), info, batch, n, lower, potrf);
}

void TrsmC64(const void* a, const void* b, void* out, const void* alpha,
             int64_t batch, int64_t m, int64_t n, int32_t flags) {
  using C = std::complex<float>;
  Trsm(static_cast<const C*>(a), static_cast<const C*>(b), static_cast<C*>(out),
       static_cast<const C*>(alpha), batch, m, n, flags);
}

void TrsmC128(const void* a, const void* b, void* out, const void* alpha,
              int64_t batch, int64_t m, int64_t n, int32_t flags) {
  using C = std::complex<double>;
  Trsm(static_cast<const C*>(a), static_cast<const C*>(b), static_cast<C*>(out),
       static_cast<const C*>(alpha), batch, m, n, flags);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
