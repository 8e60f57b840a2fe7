/* Vectorized fp32 exp, sigmoid, silu and the three forms of gelu
 * (interface, algorithm and error bounds: vmath.h). */
#include "interp/vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VM_X86 1
#endif

/* ln 2 = LN2_HI + LN2_LO; LN2_HI has 9 trailing zero bits, so n * LN2_HI is
 * exact for |n| <= 2^9. */
#define LN2_HI 0.693145751953125f
#define LN2_LO 1.42860682030941723212e-6f
#define LOG2E 1.44269504088896341f
#define X_MAX 89.0f   /* exp(89) overflows to +inf */
#define X_MIN -104.0f /* exp(-104) rounds to 0 */
/* Taylor coefficients 1/k!, k = 2..7 */
#define C2 0.5f
#define C3 0.166666666666666667f
#define C4 0.0416666666666666667f
#define C5 0.00833333333333333333f
#define C6 0.00138888888888888889f
#define C7 0.000198412698412698413f

static inline float pow2i(int32_t e) { /* 2^e for -126 <= e <= 127 */
  uint32_t b = (uint32_t)(e + 127) << 23;
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* ---------------- portable bodies ---------------- */

static inline float exp1(float x) {
  if (x != x) return x;
  x = x < X_MIN ? X_MIN : x > X_MAX ? X_MAX : x;
  float n = rintf(x * LOG2E);
  float r = x - n * LN2_HI;
  r = r - n * LN2_LO;
  float p = C7;
  p = p * r + C6;
  p = p * r + C5;
  p = p * r + C4;
  p = p * r + C3;
  p = p * r + C2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t ni = (int32_t)n, h = ni / 2, l = ni - h;
  return p * pow2i(h) * pow2i(l);
}

static void exp_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = exp1(x[i]);
}
static void sigmoid_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = 1.0f / (1.0f + exp1(-x[i]));
}
static void silu_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + exp1(-x[i]));
}
static void swish_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float sg = 1.0f / (1.0f + exp1(-x[i]));
    y[i] = x[i] * sg;
  }
}
static inline float round16(float v) { return mil_fp16_to_fp32(mil_fp32_to_fp16(v)); }
static void swish_fp16_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float v = round16(x[i]);
    float sg = round16(1.0f / (1.0f + exp1(-v)));
    y[i] = v * sg;
  }
}
static void gelu_sigm_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + exp1(-1.702f * x[i]));
}

/* gelu EXACT through erfc: z = |x| / sqrt 2, erfc(z) = t exp(-z^2 + P(t)),
 * t = 1 / (1 + z/2) (the Chebyshev fit of Numerical Recipes' erfcc,
 * fractional error below 1.2e-7), then x (1 - erfc(z)/2) for x >= 0 and
 * x erfc(z)/2 for x < 0: no cancellation in either tail. z above 9
 * (erfc below 4e-37) is taken as erfc 0. */
#define GE_C0 -1.26551223f
#define GE_C1 1.00002368f
#define GE_C2 0.37409196f
#define GE_C3 0.09678418f
#define GE_C4 -0.18628806f
#define GE_C5 0.27886807f
#define GE_C6 -1.13520398f
#define GE_C7 1.48851587f
#define GE_C8 -0.82215223f
#define GE_C9 0.17087277f
#define GE_ZMAX 9.0f
#define GE_XMAX 12.7279221f /* GE_ZMAX * sqrt 2 */
static inline float gelu_erf1(float x) {
  if (x != x) return x;
  float z = fabsf(x) * 0.70710678118654752f;
  float zc = z < GE_ZMAX ? z : GE_ZMAX;
  float t = 1.0f / (1.0f + 0.5f * zc);
  float p = GE_C9;
  p = p * t + GE_C8;
  p = p * t + GE_C7;
  p = p * t + GE_C6;
  p = p * t + GE_C5;
  p = p * t + GE_C4;
  p = p * t + GE_C3;
  p = p * t + GE_C2;
  p = p * t + GE_C1;
  p = p * t + GE_C0;
  /* -z^2 as -x^2/2 from |x| (no rounding of z in it), clamped with z */
  float ax = fminf(fabsf(x), GE_XMAX);
  float e = z < GE_ZMAX ? t * exp1(fmaf(-0.5f * ax, ax, p)) : 0.0f;
  return x >= 0 ? x * (1.0f - 0.5f * e) : x * (0.5f * e);
}
static void gelu_erf_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = gelu_erf1(x[i]);
}
/* gelu TANH_APPROXIMATION: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)),
 * u = sqrt(2/pi) (x + 0.044715 x^3) */
static void gelu_tanh_c(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float v = x[i], u2 = 1.5957691216057308f * (v + 0.044715f * v * v * v);
    y[i] = v / (1.0f + exp1(-u2));
  }
}

/* ---------------- AVX2 / FMA bodies ---------------- */

#ifdef VM_X86
#define VM_AVX2 __attribute__((target("avx2,fma")))

VM_AVX2 static inline __m256 exp8(__m256 x) {
  /* max(lo, x) and min(hi, .) return their second operand when it is NaN:
   * a NaN input stays NaN through the whole computation */
  x = _mm256_min_ps(_mm256_set1_ps(X_MAX), _mm256_max_ps(_mm256_set1_ps(X_MIN), x));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
  __m256 p = _mm256_set1_ps(C7);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(C2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i h = _mm256_srai_epi32(ni, 1), l = _mm256_sub_epi32(ni, h);
  __m256i bias = _mm256_set1_epi32(127);
  __m256 sh = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  __m256 sl = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(l, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, sh), sl);
}

/* `body` computes __m256 v from __m256 a (8 inputs); the tail goes through
 * a zero-padded block. */
#define VM_LOOP(name, body)                                            \
  VM_AVX2 static void name(const float *x, float *y, int64_t n) {     \
    int64_t i = 0;                                                     \
    for (; i + 8 <= n; i += 8) {                                       \
      __m256 a = _mm256_loadu_ps(x + i), v;                            \
      body;                                                            \
      _mm256_storeu_ps(y + i, v);                                      \
    }                                                                  \
    if (i < n) {                                                       \
      float t[8] = {0};                                                \
      memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                   \
      __m256 a = _mm256_loadu_ps(t), v;                                \
      body;                                                            \
      _mm256_storeu_ps(t, v);                                          \
      memcpy(y + i, t, (size_t)(n - i) * sizeof *t);                   \
    }                                                                  \
  }

#define ONE _mm256_set1_ps(1.0f)
#define NEG(a) _mm256_xor_ps(a, _mm256_set1_ps(-0.0f))
VM_LOOP(exp_avx2, v = exp8(a))
VM_LOOP(sigmoid_avx2, v = _mm256_div_ps(ONE, _mm256_add_ps(ONE, exp8(NEG(a)))))
VM_LOOP(silu_avx2, v = _mm256_div_ps(a, _mm256_add_ps(ONE, exp8(NEG(a)))))
VM_LOOP(gelu_sigm_avx2,
        v = _mm256_div_ps(a, _mm256_add_ps(ONE, exp8(_mm256_mul_ps(_mm256_set1_ps(-1.702f), a)))))

VM_AVX2 static inline __m256 gelu_erf8(__m256 x) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 z = _mm256_mul_ps(_mm256_and_ps(x, absmask), _mm256_set1_ps(0.70710678118654752f));
  __m256 zc = _mm256_min_ps(z, _mm256_set1_ps(GE_ZMAX));
  __m256 t = _mm256_div_ps(ONE, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), zc, ONE));
  __m256 p = _mm256_set1_ps(GE_C9);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C8));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C7));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C6));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C5));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C4));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C3));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C2));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C1));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(GE_C0));
  __m256 ax = _mm256_min_ps(_mm256_and_ps(x, absmask), _mm256_set1_ps(GE_XMAX));
  __m256 e = _mm256_mul_ps(t, exp8(_mm256_fnmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), ax), ax, p)));
  e = _mm256_and_ps(e, _mm256_cmp_ps(z, _mm256_set1_ps(GE_ZMAX), _CMP_LT_OQ)); /* 0 past ZMAX (and for NaN) */
  __m256 he = _mm256_mul_ps(_mm256_set1_ps(0.5f), e);
  __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m256 phi = _mm256_blendv_ps(_mm256_sub_ps(ONE, he), he, neg);
  return _mm256_mul_ps(x, phi); /* a NaN x stays NaN */
}
VM_LOOP(gelu_erf_avx2, v = gelu_erf8(a))
VM_LOOP(gelu_tanh_avx2, {
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(a, a), a);
  __m256 u2 = _mm256_mul_ps(_mm256_set1_ps(1.5957691216057308f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, a));
  v = _mm256_div_ps(a, _mm256_add_ps(ONE, exp8(NEG(u2))));
})
VM_LOOP(swish_avx2, v = _mm256_mul_ps(a, _mm256_div_ps(ONE, _mm256_add_ps(ONE, exp8(NEG(a))))))
#define R16(a) _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT))
/* fp16 SiLU; a group holding a NaN goes through the portable code (NaN
 * payloads as mil_fp32_to_fp16 keeps them; no other step makes a NaN that
 * is then rounded) */
__attribute__((target("avx2,fma,f16c"))) static void swish_fp16_avx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(x + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q))) {
      swish_fp16_c(x + i, y + i, 8);
      continue;
    }
    a = R16(a);
    __m256 sg = R16(_mm256_div_ps(ONE, _mm256_add_ps(ONE, exp8(NEG(a)))));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(a, sg));
  }
  swish_fp16_c(x + i, y + i, n - i);
}
#undef R16
#undef ONE
#undef NEG

/* ---------------- AVX-512 bodies ----------------
 * The AVX2 bodies' operations, 16 lanes at a time, in the same order
 * (min / max with the same operand order, so a NaN stays NaN; the same
 * fused multiply-adds; IEEE division): every result has the AVX2 body's
 * bits (tests/unit/test_interp_vmath.c compares them). */
#define VM_512 __attribute__((target("avx512f")))

VM_512 static inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(X_MAX), _mm512_max_ps(_mm512_set1_ps(X_MIN), x));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
  __m512 p = _mm512_set1_ps(C7);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(C2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512i ni = _mm512_cvtps_epi32(n);
  __m512i h = _mm512_srai_epi32(ni, 1), l = _mm512_sub_epi32(ni, h);
  __m512i bias = _mm512_set1_epi32(127);
  __m512 sh = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h, bias), 23));
  __m512 sl = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(l, bias), 23));
  return _mm512_mul_ps(_mm512_mul_ps(p, sh), sl);
}

/* `body` computes __m512 v from __m512 a (16 inputs); the tail through
 * masked loads (zeros past the end) and stores. */
#define VM_LOOP512(name, body)                                         \
  VM_512 static void name(const float *x, float *y, int64_t n) {      \
    int64_t i = 0;                                                     \
    for (; i + 16 <= n; i += 16) {                                     \
      __m512 a = _mm512_loadu_ps(x + i), v;                            \
      body;                                                            \
      _mm512_storeu_ps(y + i, v);                                      \
    }                                                                  \
    if (i < n) {                                                       \
      __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);                 \
      __m512 a = _mm512_maskz_loadu_ps(m, x + i), v;                   \
      body;                                                            \
      _mm512_mask_storeu_ps(y + i, m, v);                              \
    }                                                                  \
  }

#define ONE _mm512_set1_ps(1.0f)
#define NEG(a) _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)))
VM_LOOP512(exp_avx512, v = exp16(a))
VM_LOOP512(sigmoid_avx512, v = _mm512_div_ps(ONE, _mm512_add_ps(ONE, exp16(NEG(a)))))
VM_LOOP512(silu_avx512, v = _mm512_div_ps(a, _mm512_add_ps(ONE, exp16(NEG(a)))))
VM_LOOP512(gelu_sigm_avx512,
           v = _mm512_div_ps(a, _mm512_add_ps(ONE, exp16(_mm512_mul_ps(_mm512_set1_ps(-1.702f), a)))))
VM_LOOP512(swish_avx512, v = _mm512_mul_ps(a, _mm512_div_ps(ONE, _mm512_add_ps(ONE, exp16(NEG(a))))))
#define R16(a) _mm512_cvtph_ps(_mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT))
VM_512 static void swish_fp16_avx512(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 a = _mm512_loadu_ps(x + i);
    if (_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)) {
      swish_fp16_c(x + i, y + i, 16);
      continue;
    }
    a = R16(a);
    __m512 sg = R16(_mm512_div_ps(ONE, _mm512_add_ps(ONE, exp16(NEG(a)))));
    _mm512_storeu_ps(y + i, _mm512_mul_ps(a, sg));
  }
  swish_fp16_c(x + i, y + i, n - i);
}
#undef R16

VM_512 static inline __m512 gelu_erf16(__m512 x) {
  __m512 ax0 = _mm512_abs_ps(x);
  __m512 z = _mm512_mul_ps(ax0, _mm512_set1_ps(0.70710678118654752f));
  __m512 zc = _mm512_min_ps(z, _mm512_set1_ps(GE_ZMAX));
  __m512 t = _mm512_div_ps(ONE, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), zc, ONE));
  __m512 p = _mm512_set1_ps(GE_C9);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C8));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C7));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C6));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C5));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C4));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C3));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C2));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C1));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(GE_C0));
  __m512 ax = _mm512_min_ps(ax0, _mm512_set1_ps(GE_XMAX));
  __m512 e = _mm512_mul_ps(t, exp16(_mm512_fnmadd_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), ax), ax, p)));
  e = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(z, _mm512_set1_ps(GE_ZMAX), _CMP_LT_OQ), e); /* 0 past ZMAX (and for NaN) */
  __m512 he = _mm512_mul_ps(_mm512_set1_ps(0.5f), e);
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512 phi = _mm512_mask_blend_ps(neg, _mm512_sub_ps(ONE, he), he);
  return _mm512_mul_ps(x, phi); /* a NaN x stays NaN */
}
VM_LOOP512(gelu_erf_avx512, v = gelu_erf16(a))
VM_LOOP512(gelu_tanh_avx512, {
  __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(a, a), a);
  __m512 u2 = _mm512_mul_ps(_mm512_set1_ps(1.5957691216057308f), _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, a));
  v = _mm512_div_ps(a, _mm512_add_ps(ONE, exp16(NEG(u2))));
})
#undef ONE
#undef NEG
#endif

/* ---------------- dispatch ---------------- */

typedef void (*vm_fn)(const float *, float *, int64_t);
typedef struct vm_table {
  vm_fn exp, sigmoid, silu, gelu_sigm, gelu_erf, gelu_tanh, swish, swish_fp16;
  const char *name;
} vm_table;

static const vm_table k_portable = {exp_c,      sigmoid_c, silu_c,       gelu_sigm_c, gelu_erf_c,
                                    gelu_tanh_c, swish_c,  swish_fp16_c, "portable"};
#ifdef VM_X86
static const vm_table k_avx2 = {exp_avx2,       sigmoid_avx2,   silu_avx2,  gelu_sigm_avx2,
                                gelu_erf_avx2,  gelu_tanh_avx2, swish_avx2, swish_fp16_avx2, "AVX2"};
static const vm_table k_avx512 = {exp_avx512,      sigmoid_avx512,   silu_avx512,  gelu_sigm_avx512,
                                  gelu_erf_avx512, gelu_tanh_avx512, swish_avx512, swish_fp16_avx512, "AVX-512"};
#endif
static const vm_table *g_vm = &k_portable;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The body for `body` (INTERP_VM_*), or NULL when this CPU lacks it. */
static const vm_table *table(int body) {
  if (body == INTERP_VM_PORTABLE) return &k_portable;
#ifdef VM_X86
  bool avx2 = interp_cpu(INTERP_CPU_AVX2_FMA), avx512 = avx2 && interp_cpu(INTERP_CPU_AVX512F);
  if (body == INTERP_VM_AVX512 || (body == INTERP_VM_AUTO && avx512)) return avx512 ? &k_avx512 : NULL;
  if (body == INTERP_VM_AVX2 || body == INTERP_VM_AUTO) return avx2 ? &k_avx2 : body == INTERP_VM_AUTO ? &k_portable : NULL;
  return NULL;
#else
  return body == INTERP_VM_AUTO ? &k_portable : NULL;
#endif
}

static void pick(void) { g_vm = table(INTERP_VM_AUTO); }

static const vm_table *vm(void) {
  pthread_once(&g_once, pick);
  return g_vm;
}

bool interp_vmath_force(int body) {
  pthread_once(&g_once, pick);
  const vm_table *t = table(body);
  if (t) g_vm = t;
  return t != NULL;
}

const char *interp_vmath_body(void) { return vm()->name; }
bool interp_vmath_simd(void) { return vm() != &k_portable; }

void interp_vexp(const float *x, float *y, int64_t n) { vm()->exp(x, y, n); }
void interp_vsigmoid(const float *x, float *y, int64_t n) { vm()->sigmoid(x, y, n); }
void interp_vsilu(const float *x, float *y, int64_t n) { vm()->silu(x, y, n); }
void interp_vgelu_sigm(const float *x, float *y, int64_t n) { vm()->gelu_sigm(x, y, n); }
void interp_vgelu_erf(const float *x, float *y, int64_t n) { vm()->gelu_erf(x, y, n); }
void interp_vgelu_tanh(const float *x, float *y, int64_t n) { vm()->gelu_tanh(x, y, n); }
void interp_vswish(const float *x, float *y, int64_t n) { vm()->swish(x, y, n); }
void interp_vswish_fp16(const float *x, float *y, int64_t n) { vm()->swish_fp16(x, y, n); }
