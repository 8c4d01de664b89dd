// Implicit-shift QR on a symmetric tridiagonal matrix (its eigenvalues and
// eigenvectors) and on an upper bidiagonal one (its singular values and
// vectors), for spectral.cc's small matrices: Eigen's tridiagonal QR
// applies each rotation to the vectors through a loop that peels to 64-byte
// alignment (at n = 100 most of it scalar), and its BDCSVD spends most of a
// 40 x 40 bidiagonal in the secular equation. (LAPACK's divide and
// conquer hands blocks of up to 25 to QR iterations: dsteqr, dlasdq.)
//
// The algorithms are Golub and Van Loan's (Matrix Computations, 4th ed.):
// the symmetric QR step with Wilkinson's shift (8.3.5) and the Golub-Kahan
// SVD step (8.6.2), with its chase of a zero diagonal entry. Off-diagonal
// entries are negligible below eps (|d_i| + |d_i+1|); a diagonal entry of
// the bidiagonal matrix below eps ||B|| counts as zero (a backward error of
// eps ||B||, as LAPACK's absolute accuracy). Rotations G = [c s; -s c] act
// on the columns of the accumulated vectors: x <- c x - s y, y <- s x + c y.
//
// Included only by spectral.cc (an ISA variant unit: isa_variant.h).
#ifndef XLA_BACKENDS_CPU_RUNTIME_GIVENS_QR_H_
#define XLA_BACKENDS_CPU_RUNTIME_GIVENS_QR_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include <Eigen/Core>

namespace xla_cpu_runtime {
namespace XLA_CPU_ISA_NAMESPACE {
namespace givens_qr {

// x <- c x - s y, y <- s x + c y over n contiguous elements (unaligned
// vector loads: no scalar peeling).
template <typename T>
inline void Rotate(T* __restrict x, T* __restrict y, int64_t n, T c, T s) {
  using Packet = typename Eigen::internal::packet_traits<T>::type;
  constexpr int64_t kWidth = Eigen::internal::packet_traits<T>::size;
  const Packet pc = Eigen::internal::pset1<Packet>(c);
  const Packet ps = Eigen::internal::pset1<Packet>(s);
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    const Packet xi = Eigen::internal::ploadu<Packet>(x + i);
    const Packet yi = Eigen::internal::ploadu<Packet>(y + i);
    Eigen::internal::pstoreu(x + i, Eigen::internal::psub(Eigen::internal::pmul(pc, xi),
                                                         Eigen::internal::pmul(ps, yi)));
    Eigen::internal::pstoreu(y + i, Eigen::internal::padd(Eigen::internal::pmul(ps, xi),
                                                         Eigen::internal::pmul(pc, yi)));
  }
  for (; i < n; ++i) {
    const T xi = x[i], yi = y[i];
    x[i] = c * xi - s * yi;
    y[i] = s * xi + c * yi;
  }
}

// c, s with [c s; -s c]^T [a; b] = [r; 0]; returns r.
template <typename T>
inline T Givens(T a, T b, T& c, T& s) {
  if (b == T(0)) {
    c = T(1);
    s = T(0);
    return a;
  }
  // std::hypot's care costs more than the rest of a QR step; it is needed
  // only where a^2 + b^2 would lose precision to underflow or overflow.
  const T r2 = a * a + b * b;
  const T r = r2 >= std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon() &&
                      r2 <= std::numeric_limits<T>::max() / 2
                  ? std::sqrt(r2)
                  : std::hypot(a, b);
  c = a / r;
  s = -b / r;
  return r;
}

// Column-major vectors: `count` columns of `rows` elements, `ld` apart, or
// none (data == nullptr).
template <typename T>
struct Columns {
  T* data;
  int64_t rows, ld;
  void Rotate(int64_t i, int64_t j, T c, T s) const {
    if (data != nullptr) givens_qr::Rotate(data + i * ld, data + j * ld, rows, c, s);
  }
  void Negate(int64_t i) const {
    if (data != nullptr) {
      for (int64_t r = 0; r < rows; ++r) data[i * ld + r] = -data[i * ld + r];
    }
  }
  void Swap(int64_t i, int64_t j) const {
    if (data != nullptr) std::swap_ranges(data + i * ld, data + i * ld + rows, data + j * ld);
  }
};

template <typename T>
inline bool Negligible(T e, T d0, T d1) {
  return std::abs(e) <= std::numeric_limits<T>::epsilon() * (std::abs(d0) + std::abs(d1)) ||
         std::abs(e) <= std::numeric_limits<T>::min();
}

// The symmetric tridiagonal matrix with diagonal d[0, n) and off-diagonal
// e[0, n - 1) becomes diag(d), eigenvalues ascending, with q's columns
// rotated alike (q: the tridiagonalization's Q, or none). False where 30 n
// steps did not converge.
template <typename T>
bool TridiagonalQr(T* d, T* e, int64_t n, const Columns<T>& q) {
  int64_t end = n - 1, steps = 0;
  while (end > 0) {
    if (Negligible(e[end - 1], d[end - 1], d[end])) {
      e[end - 1] = T(0);
      --end;
      continue;
    }
    int64_t start = end - 1;
    while (start > 0 && !Negligible(e[start - 1], d[start - 1], d[start])) --start;
    if (start > 0) e[start - 1] = T(0);
    if (++steps > 30 * n) return false;
    // Wilkinson's shift: the eigenvalue of the trailing 2 x 2 nearer d[end].
    const T td = (d[end - 1] - d[end]) / 2, b = e[end - 1];
    T mu = d[end];
    if (td == T(0)) {
      mu -= std::abs(b);
    } else {
      mu -= b * (b / (td + std::copysign(std::hypot(td, b), td)));
    }
    T x = d[start] - mu, z = e[start];
    for (int64_t k = start; k < end; ++k) {
      T c, s;
      const T r = Givens(x, z, c, s);
      if (k > start) e[k - 1] = r;
      // G^T [d_k e_k; e_k d_k+1] G, and the bulge below the next entry.
      const T a = d[k], bk = e[k], d1 = d[k + 1];
      const T p = c * a - s * bk, q1 = c * bk - s * d1;
      d[k] = c * p - s * q1;
      e[k] = s * p + c * q1;
      d[k + 1] = s * (s * a + c * bk) + c * (s * bk + c * d1);
      if (k + 1 < end) {
        z = -s * e[k + 1];
        e[k + 1] *= c;
      }
      x = e[k];
      q.Rotate(k, k + 1, c, s);
    }
  }
  // Ascending, by selection (n swaps of vectors at most).
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t j = std::min_element(d + i, d + n) - d;
    if (j != i) {
      std::swap(d[i], d[j]);
      q.Swap(i, j);
    }
  }
  return true;
}

// The upper bidiagonal matrix B with diagonal d[0, n) and superdiagonal
// e[0, n - 1) becomes diag(d) = U^T B V, singular values descending and
// nonnegative; u's columns are rotated by U and v's by V (either may be
// none). False where 75 n steps did not converge.
template <typename T>
bool BidiagonalQr(T* d, T* e, int64_t n, const Columns<T>& u, const Columns<T>& v) {
  T norm = T(0);
  for (int64_t i = 0; i < n; ++i) norm = std::max(norm, std::abs(d[i]));
  for (int64_t i = 0; i + 1 < n; ++i) norm = std::max(norm, std::abs(e[i]));
  const T dtol = std::numeric_limits<T>::epsilon() * norm;
  int64_t hi = n - 1, steps = 0;
  while (hi > 0) {
    if (Negligible(e[hi - 1], d[hi - 1], d[hi])) {
      e[hi - 1] = T(0);
      --hi;
      continue;
    }
    int64_t lo = hi - 1;
    while (lo > 0 && !Negligible(e[lo - 1], d[lo - 1], d[lo])) --lo;
    if (lo > 0) e[lo - 1] = T(0);
    // A zero on the diagonal: rotate its row's (or, last, its column's)
    // off-diagonal entry away, which splits the block.
    int64_t zero = -1;
    for (int64_t i = lo; i <= hi; ++i) {
      if (std::abs(d[i]) <= dtol) {
        d[i] = T(0);
        zero = i;
        break;
      }
    }
    if (zero >= 0 && zero < hi) {
      T f = e[zero];
      e[zero] = T(0);
      for (int64_t j = zero + 1; j <= hi && f != T(0); ++j) {
        T c, s;
        d[j] = Givens(d[j], f, c, s);
        u.Rotate(j, zero, c, s);
        if (j < hi) {
          f = s * e[j];
          e[j] *= c;
        }
      }
      continue;
    }
    if (zero == hi) {
      T f = e[hi - 1];
      e[hi - 1] = T(0);
      for (int64_t j = hi - 1; j >= lo && f != T(0); --j) {
        T c, s;
        d[j] = Givens(d[j], f, c, s);
        v.Rotate(j, hi, c, s);
        if (j > lo) {
          f = s * e[j - 1];
          e[j - 1] *= c;
        }
      }
      continue;
    }
    if (++steps > 75 * n) return false;
    // The shift: the eigenvalue of B^T B's trailing 2 x 2 nearer its last.
    const T dm = d[hi - 1], em = e[hi - 1], dn = d[hi];
    const T em1 = hi - 1 > lo ? e[hi - 2] : T(0);
    const T t11 = dm * dm + em1 * em1, t12 = dm * em, t22 = dn * dn + em * em;
    const T td = (t11 - t22) / 2;
    T mu = t22;
    if (t12 != T(0)) {
      const T h = std::hypot(td, t12);
      mu -= t12 * (t12 / (td + (td >= T(0) ? h : -h)));
    }
    T y = d[lo] * d[lo] - mu, z = d[lo] * e[lo];
    for (int64_t k = lo; k < hi; ++k) {
      T c, s;
      // Columns k, k + 1: zeroes the bulge above (k - 1, k + 1), makes one
      // below the diagonal at (k + 1, k).
      T r = Givens(y, z, c, s);
      if (k > lo) e[k - 1] = r;
      const T dk = d[k], ek = e[k];
      d[k] = c * dk - s * ek;
      e[k] = s * dk + c * ek;
      T below = -s * d[k + 1];
      d[k + 1] *= c;
      v.Rotate(k, k + 1, c, s);
      // Rows k, k + 1: zeroes it, makes one at (k, k + 2).
      d[k] = Givens(d[k], below, c, s);
      const T ek2 = e[k], dk1 = d[k + 1];
      e[k] = c * ek2 - s * dk1;
      d[k + 1] = s * ek2 + c * dk1;
      u.Rotate(k, k + 1, c, s);
      if (k + 1 < hi) {
        y = e[k];
        z = -s * e[k + 1];
        e[k + 1] *= c;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (d[i] < T(0)) {
      d[i] = -d[i];
      v.Negate(i);
    }
  }
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t j = std::max_element(d + i, d + n) - d;
    if (j != i) {
      std::swap(d[i], d[j]);
      u.Swap(i, j);
      v.Swap(i, j);
    }
  }
  return true;
}

}  // namespace givens_qr
}  // namespace XLA_CPU_ISA_NAMESPACE
}  // namespace xla_cpu_runtime

#endif  // XLA_BACKENDS_CPU_RUNTIME_GIVENS_QR_H_
