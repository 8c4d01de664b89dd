// The CPU runtime's general (non-symmetric) eigendecomposition, LAPACK's
// geev (see cpu_runtime.h): Eigen's EigenSolver for real matrices (real
// Schur form by Hessenberg reduction and Francis double-shift QR) and
// ComplexEigenSolver for complex ones (complex Schur form), after
// LAPACK's balancing, then each eigenvector scaled as LAPACK's geev scales
// them. Compiled for the
// baseline ISA only: it is no hot kernel, and four element types of
// Eigen's solvers per ISA variant would multiply the build (its Hessenberg
// QR is mostly scalar; jnp.linalg.eigvals of f64[128, 128] runs at 0.34x
// XLA:CPU's LAPACK here).
#include "xla/backends/cpu/runtime/internal.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include <Eigen/Eigenvalues>

namespace {

using xla_cpu_runtime::ColMajorMatrix;
using xla_cpu_runtime::RowMajorMatrix;

template <typename S>
struct GeevContext {
  const S* a;
  void* w;    // real input: the real parts (R); complex input: the values (C)
  void* wi;   // real input: the imaginary parts; else null
  void* vl;   // zeroed (left eigenvectors are not computed)
  void* vr;
  int32_t* info;
  int64_t n;
  bool col_major, right;
};

// Each column of `v` to unit 2-norm, then multiplied by the phase that
// makes its largest-magnitude component (the first such) real and
// positive: LAPACK's geev makes the vectors of unit norm with their
// largest component real, and leaves the sign of a real one as its
// algorithm found it (Eigen's is as arbitrary: it is fixed here).
template <typename R>
void ScaleAsGeev(ColMajorMatrix<std::complex<R>>& v) {
  for (int64_t j = 0; j < v.cols(); ++j) {
    auto col = v.col(j);
    const R norm = col.norm();
    if (!(norm > R(0))) continue;
    col /= norm;
    Eigen::Index k = 0;
    col.cwiseAbs2().maxCoeff(&k);
    const std::complex<R> big = col(k);
    col *= std::conj(big) / std::abs(big);
    col(k) = std::complex<R>(std::abs(big), R(0));
  }
}

// Balances `a` in place, a <- D^-1 a D with D = diag(d) of powers of two
// (exact), so that each row and its column have about the same 1-norm
// off the diagonal: the scaling step of LAPACK's gebal (Parlett and
// Reinsch), which geev applies first and Eigen's solvers do not. The
// eigenvalues are unchanged and their accuracy follows the norm of the
// balanced matrix (a companion matrix of np.roots with coefficients far
// apart in magnitude); the eigenvectors of `a` are D times the balanced
// matrix's.
template <typename S, typename R>
void Balance(ColMajorMatrix<S>& a, Eigen::Matrix<R, Eigen::Dynamic, 1>& d) {
  const int64_t n = a.rows();
  d.setOnes(n);
  constexpr R kRadix = R(2);
  for (bool converged = false; !converged;) {
    converged = true;
    for (int64_t i = 0; i < n; ++i) {
      R c = 0, r = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (j == i) continue;
        c += std::abs(a(j, i));
        r += std::abs(a(i, j));
      }
      if (c == R(0) || r == R(0)) continue;
      const R s = c + r;
      R f = 1;
      for (R g = r / kRadix; c < g && f < R(1) / std::numeric_limits<R>::epsilon(); ) {
        f *= kRadix;
        c *= kRadix * kRadix;
      }
      for (R g = r * kRadix; c > g && f > std::numeric_limits<R>::epsilon(); ) {
        f /= kRadix;
        c /= kRadix * kRadix;
      }
      if ((c + r) / f < R(0.95) * s) {
        converged = false;
        d(i) *= f;
        a.row(i) /= f;
        a.col(i) *= f;
      }
    }
  }
}

template <typename S>
void GeevBatch(void* raw, int64_t begin, int64_t end) {
  using R = typename Eigen::NumTraits<S>::Real;
  using C = std::complex<R>;
  constexpr bool kComplex = !std::is_same<S, R>::value;
  constexpr R kNaN = std::numeric_limits<R>::quiet_NaN();
  const auto& c = *static_cast<const GeevContext<S>*>(raw);
  const int64_t n = c.n;
  ColMajorMatrix<S> work(n, n);
  ColMajorMatrix<C> vectors;
  Eigen::Matrix<C, Eigen::Dynamic, 1> values;
  using Solver = typename std::conditional<kComplex, Eigen::ComplexEigenSolver<ColMajorMatrix<S>>,
                                           Eigen::EigenSolver<ColMajorMatrix<S>>>::type;
  Solver solver(n);
  Eigen::Matrix<R, Eigen::Dynamic, 1> scale;
  for (int64_t b = begin; b < end; ++b) {
    const S* a = c.a + b * n * n;
    if (c.col_major) {
      work = Eigen::Map<const ColMajorMatrix<S>>(a, n, n);
    } else {
      work = Eigen::Map<const RowMajorMatrix<S>>(a, n, n);
    }
    // jaxlib's kernel does not call LAPACK on a matrix with NaN or an
    // infinity and reports info -4; Eigen would iterate on it.
    int32_t info = work.allFinite() ? 0 : -4;
    if (info == 0) {
      Balance<S, R>(work, scale);
      solver.compute(work, c.right);
      if (solver.info() != Eigen::Success) info = 1;
    }
    if (c.info != nullptr) c.info[b] = info;
    if (info == 0) {
      values = solver.eigenvalues();
      if (c.right) {
        vectors = scale.template cast<C>().asDiagonal() * solver.eigenvectors();
        ScaleAsGeev<R>(vectors);
      }
    } else {
      values.setConstant(n, C(kNaN, kNaN));
      if (c.right) vectors.setConstant(n, n, C(kNaN, kNaN));
    }
    if (kComplex) {
      std::copy(values.data(), values.data() + n, static_cast<C*>(c.w) + b * n);
    } else {
      R* wr = static_cast<R*>(c.w) + b * n;
      R* wi = static_cast<R*>(c.wi) + b * n;
      for (int64_t i = 0; i < n; ++i) {
        wr[i] = values(i).real();
        wi[i] = values(i).imag();
      }
    }
    if (c.vl != nullptr) {
      C* vl = static_cast<C*>(c.vl) + b * n * n;
      std::fill(vl, vl + n * n, C(0));
    }
    if (c.vr != nullptr) {
      C* vr = static_cast<C*>(c.vr) + b * n * n;
      if (!c.right) {
        std::fill(vr, vr + n * n, C(0));
      } else if (c.col_major) {
        Eigen::Map<ColMajorMatrix<C>>(vr, n, n) = vectors;
      } else {
        Eigen::Map<RowMajorMatrix<C>>(vr, n, n) = vectors;
      }
    }
  }
}

template <typename S>
void Geev(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info, int64_t batch,
          int64_t n, int32_t flags) {
  if (batch <= 0) return;
  if (n <= 0) {
    if (info != nullptr) std::fill(info, info + batch, int32_t{0});
    return;
  }
  GeevContext<S> ctx{static_cast<const S*>(a), w, wi, vl, vr, info, n, (flags & 1) != 0,
                     (flags & 2) != 0};
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 15) / (n * n * n));
  __xla_cpu_parallel_for(&GeevBatch<S>, &ctx, batch, min_chunk);
}

}  // namespace

extern "C" {

void __xla_cpu_geev_f32(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                        int64_t batch, int64_t n, int32_t flags) {
  Geev<float>(a, w, wi, vl, vr, info, batch, n, flags);
}

void __xla_cpu_geev_f64(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                        int64_t batch, int64_t n, int32_t flags) {
  Geev<double>(a, w, wi, vl, vr, info, batch, n, flags);
}

void __xla_cpu_geev_c64(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                        int64_t batch, int64_t n, int32_t flags) {
  Geev<std::complex<float>>(a, w, wi, vl, vr, info, batch, n, flags);
}

void __xla_cpu_geev_c128(const void* a, void* w, void* wi, void* vl, void* vr, int32_t* info,
                         int64_t batch, int64_t n, int32_t flags) {
  Geev<std::complex<double>>(a, w, wi, vl, vr, info, batch, n, flags);
}

}  // extern "C"
