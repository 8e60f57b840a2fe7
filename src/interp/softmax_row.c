/* softmax over one contiguous fp32 row (activation.c's softmax along its
 * innermost axis, the attention rows of a transformer):
 *
 *   mx  = the largest element (a NaN never wins)
 *   t_j = x_j - mx;  e_j = exp(max(t_j, -87.33)) (interp_vexp), or 0 where
 *         t_j < -87.33 (exp below fp32's smallest normal: an attention
 *         mask's -inf among them, and subnormal arithmetic kept out of exp)
 *   sum = the e_j in double, in 8 lanes (lane k takes j = k mod 8, the
 *         tail after the last full 8 goes to lane 0), the lanes added as
 *         ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
 *   y_j = e_j * (float)(1 / sum)
 *
 * The portable body writes this as plain loops; the AVX-512 body does the
 * same operations 16 (8 for the double sums) at a time, with the same
 * operand orders (max keeps the running maximum when an element is NaN;
 * the clamp keeps a NaN), so its results are the portable body's bits
 * (tests/unit/test_interp_softmax.c compares them). */
#include <math.h>

#include "interp/interp_internal.h"
#include "interp/vmath.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SM_X86 1
#endif

#define FLUSH -87.33f /* exp(-87.33) = 1.18e-38, fp32's smallest normal */

static double lanes_sum(const double s8[8]) {
  return ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
}

void interp_softmax_row_portable(const float *s, float *d, int64_t n) {
  float m8[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  float mx = -INFINITY;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; k++) m8[k] = s[j + k] > m8[k] ? s[j + k] : m8[k];
  for (; j < n; j++) m8[0] = s[j] > m8[0] ? s[j] : m8[0];
  for (int k = 0; k < 8; k++) mx = m8[k] > mx ? m8[k] : mx;
  for (j = 0; j < n; j++) {
    float t = s[j] - mx;
    d[j] = t < FLUSH ? FLUSH : t;
  }
  interp_vexp(d, d, n);
  for (j = 0; j < n; j++) d[j] = s[j] - mx < FLUSH ? 0.0f : d[j];
  double s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (j = 0; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; k++) s8[k] += d[j + k];
  for (; j < n; j++) s8[0] += d[j];
  float inv = (float)(1.0 / lanes_sum(s8));
  for (j = 0; j < n; j++) d[j] *= inv;
}

#ifdef SM_X86
#define SM_512 __attribute__((target("avx512f")))

SM_512 static bool row_avx512(const float *s, float *d, int64_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) m = _mm512_max_ps(_mm512_loadu_ps(s + j), m); /* a NaN element: m kept */
  float mx = _mm512_reduce_max_ps(m);
  for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
  __m512 vmx = _mm512_set1_ps(mx), fl = _mm512_set1_ps(FLUSH);
  for (j = 0; j + 16 <= n; j += 16) /* max(FLUSH, t): a NaN t stays */
    _mm512_storeu_ps(d + j, _mm512_max_ps(fl, _mm512_sub_ps(_mm512_loadu_ps(s + j), vmx)));
  for (; j < n; j++) {
    float t = s[j] - mx;
    d[j] = t < FLUSH ? FLUSH : t;
  }
  interp_vexp(d, d, n);
  __m512d acc = _mm512_setzero_pd();
  for (j = 0; j + 16 <= n; j += 16) {
    __mmask16 low = _mm512_cmp_ps_mask(_mm512_sub_ps(_mm512_loadu_ps(s + j), vmx), fl, _CMP_LT_OQ);
    __m512 e = _mm512_maskz_mov_ps((__mmask16)~low, _mm512_loadu_ps(d + j));
    _mm512_storeu_ps(d + j, e);
    acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  double s8[8];
  _mm512_storeu_pd(s8, acc);
  for (; j < n; j++) d[j] = s[j] - mx < FLUSH ? 0.0f : d[j];
  for (j = n / 16 * 16; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; k++) s8[k] += d[j + k];
  for (; j < n; j++) s8[0] += d[j];
  float inv = (float)(1.0 / lanes_sum(s8));
  __m512 vinv = _mm512_set1_ps(inv);
  for (j = 0; j + 16 <= n; j += 16) _mm512_storeu_ps(d + j, _mm512_mul_ps(_mm512_loadu_ps(d + j), vinv));
  for (; j < n; j++) d[j] *= inv;
  return true;
}
#endif

bool interp_softmax_row_avx512(const float *s, float *d, int64_t n) {
#ifdef SM_X86
  if (interp_cpu(INTERP_CPU_AVX512F)) return row_avx512(s, d, n);
#endif
  (void)s, (void)d, (void)n;
  return false;
}

void interp_softmax_row(const float *s, float *d, int64_t n) {
  if (!interp_softmax_row_avx512(s, d, n)) interp_softmax_row_portable(s, d, n);
}
