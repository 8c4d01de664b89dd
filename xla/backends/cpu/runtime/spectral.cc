// The CPU runtime's symmetric eigendecomposition, singular value
// decomposition, LU and QR factorizations (see cpu_runtime.h). Eigen's
// Householder tridiagonalization and bidiagonalization, then implicit-shift
// QR iterations (givens_qr.h; LAPACK's dsteqr and dbdsqr): for the
// eigenvectors always (Eigen's own tridiagonal QR rotates them through a
// mostly scalar loop: 1.1 -> 0.6 ms at n = 100), for singular values and
// vectors up to kGivensSvdMax columns, Eigen's BDCSVD (divide and conquer)
// above it. A matrix at least twice as tall as wide is first factored a =
// QR, a wide one done transposed. On a working copy of each matrix,
// batches over the pool. An ISA variant unit (kernels.h, isa_variant.h);
// the C entry points are in isa.cc.
#include "xla/backends/cpu/runtime/isa_variant.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <Eigen/QR>
#include <Eigen/SVD>

#include "xla/backends/cpu/runtime/cpu_runtime.h"
#include "xla/backends/cpu/runtime/givens_qr.h"

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace {

template <typename T>
constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();

// A dense r x c matrix at `p`, row-major or column-major.
template <typename T>
using RowMap = Eigen::Map<RowMajorMatrix<T>>;
template <typename T>
using ColMap = Eigen::Map<ColMajorMatrix<T>>;
template <typename T>
using ConstRowMap = Eigen::Map<const RowMajorMatrix<T>>;
template <typename T>
using ConstColMap = Eigen::Map<const ColMajorMatrix<T>>;

// out = value (an Eigen expression) into the r x c matrix at p, in its layout.
template <typename T, typename Expr>
void Store(T* p, int64_t r, int64_t c, bool col_major, const Expr& value) {
  if (col_major) {
    ColMap<T>(p, r, c) = value;
  } else {
    RowMap<T>(p, r, c) = value;
  }
}

template <typename T>
void Fill(T* p, int64_t count, T value) {
  if (p != nullptr) std::fill(p, p + count, value);
}

// ---------------------------------------------------------------------------
// syevd: a = V diag(w) V^T from one triangle of a.

template <typename T>
struct SyevdContext {
  const T* a;
  T* v;
  T* w;
  int32_t* info;
  int64_t n;
  bool lower, col_major, vectors;
};

template <typename T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// w, and v's columns where `vectors`, from the lower triangle of `work`
// (which is scaled in place). False where the QR iterations did not converge
// or the matrix is not finite.
template <typename T>
bool SymmetricEigen(ColMajorMatrix<T>& work, bool vectors,
                    Eigen::Tridiagonalization<ColMajorMatrix<T>>& tri, Vector<T>& w,
                    ColMajorMatrix<T>& v) {
  const int64_t n = work.rows();
  // Scaled to a largest entry of one, as Eigen's solver does: the shifts
  // square entries.
  T scale = T(0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = j; i < n; ++i) scale = std::max(scale, std::abs(work(i, j)));
  }
  if (!std::isfinite(scale)) return false;
  if (scale == T(0)) scale = T(1);
  work.template triangularView<Eigen::Lower>() /= scale;
  tri.compute(work);
  w = tri.diagonal();
  Vector<T> e = tri.subDiagonal();
  if (vectors) v = tri.matrixQ();
  const givens_qr::Columns<T> q{vectors ? v.data() : nullptr, n, n};
  if (!givens_qr::TridiagonalQr<T>(w.data(), e.data(), n, q)) return false;
  w *= scale;
  return true;
}

template <typename T>
void SyevdBatch(void* raw, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const SyevdContext<T>*>(raw);
  const int64_t n = c.n;
  ColMajorMatrix<T> work(n, n), vectors;
  Vector<T> values;
  Eigen::Tridiagonalization<ColMajorMatrix<T>> tri(n);
  for (int64_t b = begin; b < end; ++b) {
    const T* a = c.a + b * n * n;
    T* v = c.v + b * n * n;
    T* w = c.w + b * n;
    // The lower triangle is read: the upper one is its transpose. A
    // column-major matrix is the row-major map of its transpose.
    const bool read_lower = c.lower != c.col_major;
    if (read_lower) {
      work.template triangularView<Eigen::Lower>() = ConstRowMap<T>(a, n, n);
    } else {
      work.template triangularView<Eigen::Lower>() = ConstRowMap<T>(a, n, n).transpose();
    }
    const bool ok = SymmetricEigen<T>(work, c.vectors, tri, values, vectors);
    if (c.info != nullptr) c.info[b] = ok ? 0 : 1;
    if (!ok) {
      Fill(w, n, kNaN<T>);
      Fill(v, n * n, kNaN<T>);
      continue;
    }
    Eigen::Map<Vector<T>>(w, n) = values;
    if (c.vectors) {
      Store(v, n, n, c.col_major, vectors);
    } else if (v != a) {
      std::copy(a, a + n * n, v);
    }
  }
}

template <typename T>
void Syevd(const T* a, T* v, T* w, int32_t* info, int64_t batch, int64_t n, int32_t flags) {
  if (batch <= 0) return;
  if (n <= 0) {
    Fill(info, batch, int32_t{0});
    return;
  }
  SyevdContext<T> ctx{a, v, w, info, n, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0};
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (n * n * n));
  __xla_cpu_parallel_for(&SyevdBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// gesdd: a = U diag(s) Vt.

template <typename T>
struct GesddContext {
  const T* a;
  T* s;
  T* u;
  T* vt;
  int32_t* info;
  int64_t m, n;
  bool vectors, full, col_major;
};

// Up to this many columns (of a matrix at least as tall as wide, after the
// QR below), Golub-Kahan QR iterations on the bidiagonal matrix, above it
// BDCSVD, whose divide and conquer spends most of a small matrix's time in
// its secular equation (one thread, AMD EPYC, thin U and V of 1.5 n x n:
// n = 40 0.50 -> 0.15 ms, 150 8.7 -> 4.0 ms, 300 37 -> 25 ms; values only
// 0.42 -> 0.09, 5.9 -> 1.7 and 27 -> 10 ms). Values only take the QR
// iterations at every size (O(n^2) after the bidiagonalization, as
// LAPACK's gesdd with jobz N: f32[512, 512] 23 -> 13.5 ms, XLA:CPU 12.5).
constexpr int64_t kGivensSvdMax = 256;

// a = U diag(s) V^T for m >= n <= kGivensSvdMax: Householder
// bidiagonalization of a scaled copy, then QR iterations (givens_qr.h).
template <typename T>
bool BidiagonalSvd(const ColMajorMatrix<T>& a, bool vectors, bool full, Vector<T>& s,
                   ColMajorMatrix<T>& u, ColMajorMatrix<T>& v) {
  using Mat = ColMajorMatrix<T>;
  const int64_t m = a.rows(), n = a.cols();
  T scale = a.cwiseAbs().maxCoeff();
  if (scale == T(0)) scale = T(1);
  Eigen::internal::UpperBidiagonalization<Mat> bidiagonal(a / scale);
  auto band = bidiagonal.bidiagonal();
  s = band.diagonal();
  Vector<T> e = band.template diagonal<1>();
  if (vectors) {
    u = Mat::Identity(m, full ? m : n);
    u.applyOnTheLeft(bidiagonal.householderU());
    v = bidiagonal.householderV();
  }
  const givens_qr::Columns<T> cu{vectors ? u.data() : nullptr, m, m};
  const givens_qr::Columns<T> cv{vectors ? v.data() : nullptr, n, n};
  if (!givens_qr::BidiagonalQr<T>(s.data(), e.data(), n, cu, cv)) return false;
  s *= scale;
  return true;
}

// a = U diag(s) V^T; U m x m (full) or m x min(m, n), V likewise. A matrix
// at least twice as tall as wide is first factored a = QR (Householder), R's
// SVD taken and U = Q [U_R, 0; 0, I] (polyfit's 2000 x 6 Vandermonde: 150
// -> 60 us with BDCSVD). A wide one is done transposed. False where the
// solver did not converge. `a` is finite.
template <typename T>
bool Svd(const ColMajorMatrix<T>& a, bool vectors, bool full, Vector<T>& s, ColMajorMatrix<T>& u,
         ColMajorMatrix<T>& v) {
  using Mat = ColMajorMatrix<T>;
  const int64_t m = a.rows(), n = a.cols();
  if (m < n) {
    return Svd<T>(a.transpose(), vectors, full, s, v, u);
  }
  if (m >= 2 * n) {
    Eigen::HouseholderQR<Mat> qr(a);
    Mat r = qr.matrixQR().topRows(n).template triangularView<Eigen::Upper>();
    Mat ur;
    if (!Svd<T>(r, vectors, true, s, ur, v)) return false;
    if (vectors) {
      u = Mat::Identity(m, full ? m : n);
      u.topLeftCorner(n, n) = ur;
      u.applyOnTheLeft(qr.householderQ());
    }
    return true;
  }
  if (n <= kGivensSvdMax || !vectors) return BidiagonalSvd<T>(a, vectors, full, s, u, v);
  unsigned int options = 0;
  if (vectors) {
    options = full ? (Eigen::ComputeFullU | Eigen::ComputeFullV)
                   : (Eigen::ComputeThinU | Eigen::ComputeThinV);
  }
  Eigen::BDCSVD<Mat> svd(a, options);
  if (svd.info() != Eigen::Success) return false;
  s = svd.singularValues();
  if (vectors) {
    u = svd.matrixU();
    v = svd.matrixV();
  }
  return true;
}

template <typename T>
void GesddBatch(void* raw, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const GesddContext<T>*>(raw);
  const int64_t m = c.m, n = c.n, k = std::min(m, n);
  const int64_t ucols = c.full ? m : k, vrows = c.full ? n : k;
  ColMajorMatrix<T> work(m, n), u, v;
  Vector<T> sv;
  for (int64_t b = begin; b < end; ++b) {
    const T* a = c.a + b * m * n;
    T* s = c.s + b * k;
    T* ub = c.u != nullptr ? c.u + b * m * ucols : nullptr;
    T* vt = c.vt != nullptr ? c.vt + b * vrows * n : nullptr;
    if (c.col_major) {
      work = ConstColMap<T>(a, m, n);
    } else {
      work = ConstRowMap<T>(a, m, n);
    }
    // Eigen reports success for a matrix with NaN or infinity: LAPACK's
    // gesdd does not converge there.
    const bool ok = work.allFinite() && Svd<T>(work, c.vectors, c.full, sv, u, v);
    if (c.info != nullptr) c.info[b] = ok ? 0 : 1;
    if (!ok) {
      Fill(s, k, kNaN<T>);
      Fill(ub, m * ucols, kNaN<T>);
      Fill(vt, vrows * n, kNaN<T>);
      continue;
    }
    Eigen::Map<Vector<T>>(s, k) = sv;
    if (c.vectors) {
      Store(ub, m, ucols, c.col_major, u);
      Store(vt, vrows, n, c.col_major, v.transpose());
    } else {
      Fill(ub, m * ucols, T(0));
      Fill(vt, vrows * n, T(0));
    }
  }
}

template <typename T>
void Gesdd(const T* a, T* s, T* u, T* vt, int32_t* info, int64_t batch, int64_t m, int64_t n,
           int32_t flags) {
  if (batch <= 0) return;
  if (m <= 0 || n <= 0) {
    Fill(info, batch, int32_t{0});
    return;
  }
  GesddContext<T> ctx{a, s, u, vt, info, m, n, (flags & 1) != 0, (flags & 2) != 0,
                      (flags & 4) != 0};
  const int64_t k = std::min(m, n);
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (m * n * k));
  __xla_cpu_parallel_for(&GesddBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// getrf: a = P L U by partial pivoting, Eigen's blocked LU (the pivot of
// column k: the first row of largest |a[i, k]|, i >= k, as LAPACK's idamax).

template <typename T>
struct GetrfContext {
  const T* a;
  T* lu;
  int32_t* ipiv;
  int32_t* info;
  int64_t m, n;
  bool col_major;
  bool parallel;  // one matrix at a time, its trailing updates over the pool
};

// Right-looking blocked LU of the column-major m x n `lu` (leading
// dimension m) whose trailing updates run over the pool: each panel of
// kPanel columns is factored by Eigen's blocked LU, then every other
// column takes the panel's row swaps and, right of the panel, the unit
// lower solve and the GEMM update, in slabs of columns. The same
// algorithm as Eigen's blocked_lu (the same pivots up to rounding), which
// runs it on one thread: jnp.linalg.det of f64[512, 512] 5.3 -> 1.8 ms on
// two cores.
// Returns the first zero pivot's index, or -1; pivots as Eigen's.
constexpr int64_t kPanel = 64;

template <typename T>
struct LuUpdate {
  T* lu;
  const int* pivots;  // of the panel, absolute rows
  int64_t m, n, k0, bs, slab;
};

template <typename T>
void LuUpdateSlabs(void* raw, int64_t begin, int64_t end) {
  const auto& u = *static_cast<const LuUpdate<T>*>(raw);
  using Stride = Eigen::OuterStride<>;
  using Block = Eigen::Map<ColMajorMatrix<T>, 0, Stride>;
  const int64_t m = u.m, k0 = u.k0, bs = u.bs, right = k0 + bs;
  // Columns outside the panel: [0, k0) then [right, n), numbered together.
  const int64_t others = u.n - bs;
  for (int64_t s = begin; s < end; ++s) {
    const int64_t lo = s * u.slab, hi = std::min(others, lo + u.slab);
    for (int64_t part = 0; part < 2; ++part) {
      // part 0: the slab's columns left of the panel; part 1: right of it.
      const int64_t c0 = part == 0 ? lo : std::max(lo, k0) + bs;
      const int64_t c1 = part == 0 ? std::min(hi, k0) : hi + bs;
      if (c0 >= c1) continue;
      for (int64_t c = c0; c < c1; ++c) {
        T* col = u.lu + c * m;
        for (int64_t i = 0; i < bs; ++i) std::swap(col[k0 + i], col[u.pivots[k0 + i]]);
      }
      if (part == 0) continue;
      const int64_t w = c1 - c0;
      Block l11(u.lu + k0 * m + k0, bs, bs, Stride(m));
      Block a12(u.lu + c0 * m + k0, bs, w, Stride(m));
      l11.template triangularView<Eigen::UnitLower>().solveInPlace(a12);
      if (m > right) {
        Block l21(u.lu + k0 * m + right, m - right, bs, Stride(m));
        Block a22(u.lu + c0 * m + right, m - right, w, Stride(m));
        a22.noalias() -= l21 * a12;
      }
    }
  }
}

template <typename T>
Eigen::Index ParallelLu(T* lu, int64_t m, int64_t n, int* pivots) {
  using Impl = Eigen::internal::partial_lu_impl<T, Eigen::ColMajor, int>;
  const int64_t k = std::min(m, n);
  Eigen::Index first_zero = -1;
  for (int64_t k0 = 0; k0 < k; k0 += kPanel) {
    const int64_t bs = std::min(kPanel, k - k0);
    int transpositions = 0;
    const Eigen::Index zero =
        Impl::blocked_lu(m - k0, bs, lu + k0 * m + k0, m, pivots + k0, transpositions);
    if (zero >= 0 && first_zero < 0) first_zero = k0 + zero;
    for (int64_t i = 0; i < bs; ++i) pivots[k0 + i] += static_cast<int>(k0);
    const int64_t others = n - bs;
    if (others <= 0) continue;
    // Slabs of >= 32 columns, about two per thread.
    const int64_t slab = std::max<int64_t>(32, (others + 2 * PoolNumThreads() - 1) /
                                                   (2 * PoolNumThreads()));
    LuUpdate<T> u{lu, pivots, m, n, k0, bs, slab};
    __xla_cpu_parallel_for(&LuUpdateSlabs<T>, &u, (others + slab - 1) / slab, 1);
  }
  return first_zero;
}

template <typename T>
void GetrfBatch(void* raw, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const GetrfContext<T>*>(raw);
  const int64_t m = c.m, n = c.n, k = std::min(m, n);
  ColMajorMatrix<T> work(m, n);
  std::vector<int> pivots(k);
  using Impl = Eigen::internal::partial_lu_impl<T, Eigen::ColMajor, int>;
  for (int64_t b = begin; b < end; ++b) {
    const T* a = c.a + b * m * n;
    if (c.col_major) {
      work = ConstColMap<T>(a, m, n);
    } else {
      work = ConstRowMap<T>(a, m, n);
    }
    int transpositions = 0;
    const Eigen::Index zero =
        c.parallel ? ParallelLu(work.data(), m, n, pivots.data())
                   : Impl::blocked_lu(m, n, work.data(), m, pivots.data(), transpositions);
    Store(c.lu + b * m * n, m, n, c.col_major, work);
    for (int64_t j = 0; j < k; ++j) c.ipiv[b * k + j] = pivots[j] + 1;
    if (c.info != nullptr) c.info[b] = zero < 0 ? 0 : static_cast<int32_t>(zero + 1);
  }
}

template <typename T>
void Getrf(const T* a, T* lu, int32_t* ipiv, int32_t* info, int64_t batch, int64_t m, int64_t n,
           int32_t flags) {
  if (batch <= 0) return;
  if (m <= 0 || n <= 0) {
    Fill(info, batch, int32_t{0});
    return;
  }
  // A matrix large enough shares its updates out where the batch does not
  // fill the pool.
  const bool parallel = std::min(m, n) >= 4 * kPanel && batch < PoolNumThreads();
  GetrfContext<T> ctx{a, lu, ipiv, info, m, n, (flags & 1) != 0, parallel};
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (m * n * std::min(m, n)));
  __xla_cpu_parallel_for(&GetrfBatch<T>, &ctx, batch, min_chunk);
}

// ---------------------------------------------------------------------------
// geqrf / orgqr: Householder QR in LAPACK's form (Eigen's reflectors are
// LAPACK's dlarfg: H = I - tau v v^T, v[0] = 1, beta on the diagonal), and
// Q's first n columns from it.

template <typename T>
struct QrContext {
  const T* a;
  const T* tau_in;
  T* out;
  T* tau;
  int64_t m, n, k;
  bool col_major;
};

// Reflectors per block: HouseholderQR's 48 leave most of a 100 x 60
// matrix to the unblocked panel (one thread, AMD EPYC: geqrf 71 -> 47 us,
// orgqr 57 -> 39 us).
constexpr int64_t kQrBlock = 16;

template <typename T>
void GeqrfBatch(void* raw, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const QrContext<T>*>(raw);
  const int64_t m = c.m, n = c.n, k = std::min(m, n);
  ColMajorMatrix<T> work(m, n);
  Vector<T> tau(k), temp(n);
  using Impl = Eigen::internal::householder_qr_inplace_blocked<ColMajorMatrix<T>, Vector<T>>;
  for (int64_t b = begin; b < end; ++b) {
    if (c.col_major) {
      work = ConstColMap<T>(c.a + b * m * n, m, n);
    } else {
      work = ConstRowMap<T>(c.a + b * m * n, m, n);
    }
    Impl::run(work, tau, kQrBlock, temp.data());
    Store(c.out + b * m * n, m, n, c.col_major, work);
    Eigen::Map<Vector<T>>(c.tau + b * k, k) = tau;
  }
}

// q = H_0 ... H_{k-1} I (m x n), the reflectors' blocks applied last first:
// each acts on rows from its first on, and the columns left of that are
// still the identity's, which it leaves alone, so only the trailing
// columns are touched (as LAPACK's dorgqr).
template <typename T>
void HouseholderProduct(const ColMajorMatrix<T>& v, const Vector<T>& tau, ColMajorMatrix<T>& q,
                        Vector<T>& workspace) {
  const int64_t m = q.rows(), n = q.cols(), k = tau.size();
  q.setIdentity();
  const int64_t block = k > kQrBlock ? kQrBlock : 1;
  for (int64_t stop = k; stop > 0;) {
    const int64_t start = std::max<int64_t>(0, stop - block);
    auto trailing = q.block(start, start, m - start, n - start);
    if (stop - start == 1) {
      trailing.applyHouseholderOnTheLeft(v.col(start).tail(m - start - 1), tau(start),
                                         workspace.data());
    } else {
      Eigen::internal::apply_block_householder_on_the_left(
          trailing, v.block(start, start, m - start, stop - start), tau.segment(start, stop - start),
          true);
    }
    stop = start;
  }
}

template <typename T>
void OrgqrBatch(void* raw, int64_t begin, int64_t end) {
  const auto& c = *static_cast<const QrContext<T>*>(raw);
  const int64_t m = c.m, n = c.n, k = c.k;
  ColMajorMatrix<T> v(m, n), q(m, n);
  Vector<T> tau(k), workspace(n);
  for (int64_t b = begin; b < end; ++b) {
    if (c.col_major) {
      v = ConstColMap<T>(c.a + b * m * n, m, n);
    } else {
      v = ConstRowMap<T>(c.a + b * m * n, m, n);
    }
    tau = Eigen::Map<const Vector<T>>(c.tau_in + b * k, k);
    HouseholderProduct<T>(v, tau, q, workspace);
    Store(c.out + b * m * n, m, n, c.col_major, q);
  }
}

template <typename T>
void Geqrf(const T* a, T* out, T* tau, int64_t batch, int64_t m, int64_t n, int32_t flags) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  QrContext<T> ctx{a, nullptr, out, tau, m, n, std::min(m, n), (flags & 1) != 0};
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (m * n * std::min(m, n)));
  __xla_cpu_parallel_for(&GeqrfBatch<T>, &ctx, batch, min_chunk);
}

template <typename T>
void Orgqr(const T* a, const T* tau, T* out, int64_t batch, int64_t m, int64_t n, int64_t k,
           int32_t flags) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  QrContext<T> ctx{a, tau, out, nullptr, m, n, k, (flags & 1) != 0};
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (m * n * std::max<int64_t>(k, 1)));
  __xla_cpu_parallel_for(&OrgqrBatch<T>, &ctx, batch, min_chunk);
}

}  // namespace

void SyevdF32(const float* a, float* v, float* w, int32_t* info, int64_t batch, int64_t n,
              int32_t flags) {
  Syevd(a, v, w, info, batch, n, flags);
}

void SyevdF64(const double* a, double* v, double* w, int32_t* info, int64_t batch, int64_t n,
              int32_t flags) {
  Syevd(a, v, w, info, batch, n, flags);
}

void GesddF32(const float* a, float* s, float* u, float* vt, int32_t* info, int64_t batch,
              int64_t m, int64_t n, int32_t flags) {
  Gesdd(a, s, u, vt, info, batch, m, n, flags);
}

void GesddF64(const double* a, double* s, double* u, double* vt, int32_t* info, int64_t batch,
              int64_t m, int64_t n, int32_t flags) {
  Gesdd(a, s, u, vt, info, batch, m, n, flags);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {

void GetrfF32(const float* a, float* lu, int32_t* ipiv, int32_t* info, int64_t batch, int64_t m,
              int64_t n, int32_t flags) {
  Getrf(a, lu, ipiv, info, batch, m, n, flags);
}

void GetrfF64(const double* a, double* lu, int32_t* ipiv, int32_t* info, int64_t batch, int64_t m,
              int64_t n, int32_t flags) {
  Getrf(a, lu, ipiv, info, batch, m, n, flags);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {

void GeqrfF32(const float* a, float* out, float* tau, int64_t batch, int64_t m, int64_t n,
              int32_t flags) {
  Geqrf(a, out, tau, batch, m, n, flags);
}

void GeqrfF64(const double* a, double* out, double* tau, int64_t batch, int64_t m, int64_t n,
              int32_t flags) {
  Geqrf(a, out, tau, batch, m, n, flags);
}

void OrgqrF32(const float* a, const float* tau, float* out, int64_t batch, int64_t m, int64_t n,
              int64_t k, int32_t flags) {
  Orgqr(a, tau, out, batch, m, n, k, flags);
}

void OrgqrF64(const double* a, const double* tau, double* out, int64_t batch, int64_t m,
              int64_t n, int64_t k, int32_t flags) {
  Orgqr(a, tau, out, batch, m, n, k, flags);
}

}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime
