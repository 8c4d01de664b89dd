/* Serial, portable C implementations of the CPU runtime's entry points
 * (xla/backends/cpu/runtime/cpu_runtime.h, same names, signatures and semantics), for objects
 * compiled ahead of time with `aot_compile --runtime_c`: link this file
 * with the object on any target with a C99 compiler, e.g.
 *
 *   cc -O2 -c xla_cpu_runtime.c && cc main.c NAME.o xla_cpu_runtime.o -lm
 *
 * No threads, no Eigen: plain loops, for portability rather than speed.
 * Symbols are weak, so a program that links the real runtime gets it.
 */
#include <stdint.h>

#if defined(__GNUC__)
#define XLA_AOT_WEAK __attribute__((weak))
#else
#define XLA_AOT_WEAK
#endif

XLA_AOT_WEAK void __xla_cpu_parallel_for(void (*body)(void* ctx, int64_t begin, int64_t end),
                                         void* ctx, int64_t n, int64_t min_chunk) {
  (void)min_chunk;
  if (n > 0) body(ctx, 0, n);
}

/* out[b] = op(lhs[b]) x op(rhs[b]); op(lhs) is m x k (stored k x m when
 * transposed), op(rhs) is k x n (stored n x k when transposed). */
#define XLA_AOT_MATMUL_REAL(NAME, T)                                                          \
  XLA_AOT_WEAK void NAME(const T* lhs, const T* rhs, T* out, int64_t batch, int64_t m,          \
                         int64_t k, int64_t n, int32_t transpose_lhs, int32_t transpose_rhs) {  \
    for (int64_t b = 0; b < batch; ++b) {                                                       \
      const T* l = lhs + b * m * k;                                                             \
      const T* r = rhs + b * k * n;                                                             \
      T* o = out + b * m * n;                                                                   \
      for (int64_t i = 0; i < m; ++i)                                                           \
        for (int64_t j = 0; j < n; ++j) {                                                       \
          T acc = 0;                                                                            \
          for (int64_t p = 0; p < k; ++p)                                                       \
            acc += (transpose_lhs ? l[p * m + i] : l[i * k + p]) *                              \
                   (transpose_rhs ? r[j * k + p] : r[p * n + j]);                               \
          o[i * n + j] = acc;                                                                   \
        }                                                                                       \
    }                                                                                           \
  }

XLA_AOT_MATMUL_REAL(__xla_cpu_matmul_f32, float)
XLA_AOT_MATMUL_REAL(__xla_cpu_matmul_f64, double)
/* s32 sums wrap modulo 2^32 as XLA's do: computed in uint32_t, where C
 * defines the wraparound. */
XLA_AOT_MATMUL_REAL(xla_aot_matmul_u32, uint32_t)
XLA_AOT_WEAK void __xla_cpu_matmul_s32(const int32_t* lhs, const int32_t* rhs, int32_t* out,
                                       int64_t batch, int64_t m, int64_t k, int64_t n,
                                       int32_t transpose_lhs, int32_t transpose_rhs) {
  xla_aot_matmul_u32((const uint32_t*)lhs, (const uint32_t*)rhs, (uint32_t*)out, batch, m, k, n,
                     transpose_lhs, transpose_rhs);
}

/* s8 x s8 -> s32: each product is exact, the sums wrap modulo 2^32. */
XLA_AOT_WEAK void __xla_cpu_matmul_s8_s32(const int8_t* lhs, const int8_t* rhs, int32_t* out,
                                          int64_t batch, int64_t m, int64_t k, int64_t n,
                                          int32_t transpose_lhs, int32_t transpose_rhs) {
  for (int64_t b = 0; b < batch; ++b) {
    const int8_t* l = lhs + b * m * k;
    const int8_t* r = rhs + b * k * n;
    int32_t* o = out + b * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint32_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (uint32_t)((int32_t)(transpose_lhs ? l[p * m + i] : l[i * k + p]) *
                            (int32_t)(transpose_rhs ? r[j * k + p] : r[p * n + j]));
        o[i * n + j] = (int32_t)acc;
      }
  }
}

/* bf16 x bf16 -> f32: operands are the bf16 bits; exact products, f32 sums. */
static float xla_aot_bf16(uint16_t bits) {
  union {
    uint32_t u;
    float f;
  } v;
  v.u = (uint32_t)bits << 16;
  return v.f;
}

XLA_AOT_WEAK void __xla_cpu_matmul_bf16_f32(const void* lhs_, const void* rhs_, float* out,
                                            int64_t batch, int64_t m, int64_t k, int64_t n,
                                            int32_t transpose_lhs, int32_t transpose_rhs) {
  const uint16_t* lhs = (const uint16_t*)lhs_;
  const uint16_t* rhs = (const uint16_t*)rhs_;
  for (int64_t b = 0; b < batch; ++b) {
    const uint16_t* l = lhs + b * m * k;
    const uint16_t* r = rhs + b * k * n;
    float* o = out + b * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += xla_aot_bf16(transpose_lhs ? l[p * m + i] : l[i * k + p]) *
                 xla_aot_bf16(transpose_rhs ? r[j * k + p] : r[p * n + j]);
        o[i * n + j] = acc;
      }
  }
}

/* Complex: interleaved (real, imag) pairs. */
#define XLA_AOT_MATMUL_COMPLEX(NAME, T)                                                        \
  XLA_AOT_WEAK void NAME(const void* lhs_, const void* rhs_, void* out_, int64_t batch,         \
                         int64_t m, int64_t k, int64_t n, int32_t transpose_lhs,                \
                         int32_t transpose_rhs) {                                               \
    const T* lhs = (const T*)lhs_;                                                              \
    const T* rhs = (const T*)rhs_;                                                              \
    T* out = (T*)out_;                                                                          \
    for (int64_t b = 0; b < batch; ++b) {                                                       \
      const T* l = lhs + 2 * b * m * k;                                                         \
      const T* r = rhs + 2 * b * k * n;                                                         \
      T* o = out + 2 * b * m * n;                                                               \
      for (int64_t i = 0; i < m; ++i)                                                           \
        for (int64_t j = 0; j < n; ++j) {                                                       \
          T re = 0, im = 0;                                                                     \
          for (int64_t p = 0; p < k; ++p) {                                                     \
            const T* x = l + 2 * (transpose_lhs ? p * m + i : i * k + p);                       \
            const T* y = r + 2 * (transpose_rhs ? j * k + p : p * n + j);                       \
            re += x[0] * y[0] - x[1] * y[1];                                                    \
            im += x[0] * y[1] + x[1] * y[0];                                                    \
          }                                                                                     \
          o[2 * (i * n + j)] = re;                                                              \
          o[2 * (i * n + j) + 1] = im;                                                          \
        }                                                                                       \
    }                                                                                           \
  }

XLA_AOT_MATMUL_COMPLEX(__xla_cpu_matmul_c64, float)
XLA_AOT_MATMUL_COMPLEX(__xla_cpu_matmul_c128, double)

/* 2-D convolution, NHWC input, HWIO kernel, NHWC output; see
 * xla/backends/cpu/runtime/cpu_runtime.h for the index arithmetic. */
static int64_t xla_aot_source(int64_t o, int64_t stride, int64_t pad_lo, int64_t kpos,
                              int64_t rhs_dilation, int64_t lhs_dilation, int64_t size) {
  int64_t d = o * stride - pad_lo + kpos * rhs_dilation;
  if (d < 0 || d % lhs_dilation != 0) return -1;
  d /= lhs_dilation;
  return d < size ? d : -1;
}

#define XLA_AOT_CONV2D(NAME, T)                                                                \
  XLA_AOT_WEAK void NAME(const T* input, const T* kernel, T* out, int64_t batch, int64_t in_h,  \
                         int64_t in_w, int64_t in_c, int64_t kernel_h, int64_t kernel_w,        \
                         int64_t out_c, int64_t out_h, int64_t out_w, int64_t stride_h,         \
                         int64_t stride_w, int64_t pad_h_lo, int64_t pad_w_lo,                  \
                         int64_t lhs_dilation_h, int64_t lhs_dilation_w,                        \
                         int64_t rhs_dilation_h, int64_t rhs_dilation_w,                        \
                         int64_t feature_group_count) {                                         \
    int64_t cg = in_c / feature_group_count;                                                    \
    int64_t og = out_c / feature_group_count;                                                   \
    for (int64_t b = 0; b < batch; ++b)                                                         \
      for (int64_t oy = 0; oy < out_h; ++oy)                                                    \
        for (int64_t ox = 0; ox < out_w; ++ox)                                                  \
          for (int64_t o = 0; o < out_c; ++o) {                                                 \
            int64_t g = o / og;                                                                 \
            T acc = 0;                                                                          \
            for (int64_t ky = 0; ky < kernel_h; ++ky) {                                         \
              int64_t iy = xla_aot_source(oy, stride_h, pad_h_lo, ky, rhs_dilation_h,           \
                                          lhs_dilation_h, in_h);                                \
              if (iy < 0) continue;                                                             \
              for (int64_t kx = 0; kx < kernel_w; ++kx) {                                       \
                int64_t ix = xla_aot_source(ox, stride_w, pad_w_lo, kx, rhs_dilation_w,         \
                                            lhs_dilation_w, in_w);                              \
                if (ix < 0) continue;                                                           \
                const T* in = input + ((b * in_h + iy) * in_w + ix) * in_c + g * cg;            \
                const T* ker = kernel + (ky * kernel_w + kx) * cg * out_c + o;                  \
                for (int64_t c = 0; c < cg; ++c) acc += in[c] * ker[c * out_c];                 \
              }                                                                                 \
            }                                                                                   \
            out[((b * out_h + oy) * out_w + ox) * out_c + o] = acc;                             \
          }                                                                                     \
  }

XLA_AOT_CONV2D(__xla_cpu_conv2d_f32, float)
XLA_AOT_CONV2D(__xla_cpu_conv2d_f64, double)

/* The same convolution in a kernel gradient's order: input [in_c, in_h,
 * in_w, batch], kernel [in_c, kernel_h, kernel_w, out_c], out [out_h, out_w,
 * batch, out_c]; feature_group_count is 1 (cpu_runtime.h). */
#define XLA_AOT_CONV2D_FILTER(NAME, T)                                                         \
  XLA_AOT_WEAK void NAME(const T* input, const T* kernel, T* out, int64_t batch, int64_t in_h,  \
                         int64_t in_w, int64_t in_c, int64_t kernel_h, int64_t kernel_w,        \
                         int64_t out_c, int64_t out_h, int64_t out_w, int64_t stride_h,         \
                         int64_t stride_w, int64_t pad_h_lo, int64_t pad_w_lo,                  \
                         int64_t lhs_dilation_h, int64_t lhs_dilation_w,                        \
                         int64_t rhs_dilation_h, int64_t rhs_dilation_w,                        \
                         int64_t feature_group_count) {                                         \
    (void)feature_group_count;                                                                  \
    for (int64_t oy = 0; oy < out_h; ++oy)                                                      \
      for (int64_t ox = 0; ox < out_w; ++ox)                                                    \
        for (int64_t b = 0; b < batch; ++b)                                                     \
          for (int64_t o = 0; o < out_c; ++o) {                                                 \
            T acc = 0;                                                                          \
            for (int64_t c = 0; c < in_c; ++c)                                                  \
              for (int64_t ky = 0; ky < kernel_h; ++ky) {                                       \
                int64_t iy = xla_aot_source(oy, stride_h, pad_h_lo, ky, rhs_dilation_h,         \
                                            lhs_dilation_h, in_h);                              \
                if (iy < 0) continue;                                                           \
                for (int64_t kx = 0; kx < kernel_w; ++kx) {                                     \
                  int64_t ix = xla_aot_source(ox, stride_w, pad_w_lo, kx, rhs_dilation_w,       \
                                              lhs_dilation_w, in_w);                            \
                  if (ix < 0) continue;                                                         \
                  acc += input[((c * in_h + iy) * in_w + ix) * batch + b] *                     \
                         kernel[((c * kernel_h + ky) * kernel_w + kx) * out_c + o];             \
                }                                                                               \
              }                                                                                 \
            out[((oy * out_w + ox) * batch + b) * out_c + o] = acc;                             \
          }                                                                                     \
  }

XLA_AOT_CONV2D_FILTER(__xla_cpu_conv2d_filter_f32, float)
XLA_AOT_CONV2D_FILTER(__xla_cpu_conv2d_filter_f64, double)
