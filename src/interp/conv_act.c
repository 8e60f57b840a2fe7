/* The activation a conv applies to its own output when fuse.c paired
 * them (r->fuse), in place on the conv's fp32 output after the
 * convolution: relu / clip as the activation kernels compute them (a NaN
 * stays NaN), SiLU as its sigmoid and mul kernels compute it (in fp16
 * programs with their roundings), hard swish as sigmoid_hard and mul do
 * (in fp16 programs with their roundings too). Used by the oneDNN path (conv_dnnl.c) and conv.c's depthwise
 * loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"
#include "interp/vmath.h"

static void finish_silu(float *out, int64_t n, bool fp16) {
  /* the sigmoid and the product in one pass (vmath.h: the same bits; in
   * fp16 programs with the conv's output and the sigmoid rounded) */
  if (fp16) interp_vswish_fp16(out, out, n);
  else interp_vswish(out, out, n);
}

/* fp32 hard swish: sigmoid_hard's product and sum (rounded to fp32 each),
 * its clamp (written as two selects so that it vectorizes; NaN stays NaN),
 * the mul's product. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HS_AVX 1
/* The same operations 8 at a time (AVX without FMA: the product and the
 * sum round separately). max_ps(0, t) is 0 > t ? 0 : t and min_ps(1, t) is
 * 1 < t ? 1 : t: the scalar selects, NaN included. */
__attribute__((target("avx"))) static int64_t hswish_avx(float *v, int64_t n, float a, float b) {
  __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(v + i);
    __m256 t = _mm256_add_ps(_mm256_mul_ps(va, x), vb);
    t = _mm256_min_ps(one, _mm256_max_ps(zero, t));
    _mm256_storeu_ps(v + i, _mm256_mul_ps(x, t));
  }
  return i;
}
#endif

static void finish_hswish(float *out, int64_t n, float a, float b) {
#ifdef HS_AVX
  if (interp_cpu(INTERP_CPU_AVX)) {
    int64_t done = hswish_avx(out, n, a, b);
    out += done, n -= done;
  }
#endif
  float g[256];
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t m = n - i0 < 256 ? n - i0 : 256;
    float *v = out + i0;
    for (int64_t i = 0; i < m; i++) {
      float t = a * v[i];
      t = t + b;
      t = t < 0 ? 0.0f : t;
      g[i] = t > 1 ? 1.0f : t;
    }
    for (int64_t i = 0; i < m; i++) v[i] = v[i] * g[i];
  }
}

/* fp16 hard swish, with the roundings of the three fp16 ops: the conv's
 * output, sigmoid_hard's product and its clamped sum (alpha and beta
 * themselves rounded to fp16, as its kernel takes them), the mul's product
 * (rounded at the op's end). */
static void finish_hswish_fp16_scalar(float *out, int64_t n, float a, float b);

#ifdef HS_AVX
/* The same operations 16 at a time, each rounding to fp16 in registers
 * (AVX-512F's conversions round as the scalar code does for non-NaN
 * values); a group with a NaN, or a value that is infinite as fp16, is
 * left to the scalar code (returns how many floats it did). Finite fp16
 * values keep every later step finite (no NaN to convert). */
__attribute__((target("avx512f"))) static int64_t hswish_fp16_avx512(float *v, int64_t n, float a, float b) {
  __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b), zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  const __m512 inf = _mm512_set1_ps(INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 x = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(v + i), _MM_FROUND_TO_NEAREST_INT));
    if (_mm512_cmp_ps_mask(_mm512_abs_ps(x), inf, _CMP_NLT_UQ)) break; /* NaN, or +-inf as fp16: the scalar code */
    __m512 t = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_mul_ps(x, va), _MM_FROUND_TO_NEAREST_INT));
    t = _mm512_min_ps(one, _mm512_max_ps(zero, _mm512_add_ps(t, vb)));
    t = _mm512_cvtph_ps(_mm512_cvtps_ph(t, _MM_FROUND_TO_NEAREST_INT));
    _mm512_storeu_ps(v + i, _mm512_mul_ps(x, t));
  }
  return i;
}
#endif

static void finish_hswish_fp16(float *out, int64_t n, float a, float b) {
  a = mil_fp16_to_fp32(mil_fp32_to_fp16(a));
  b = mil_fp16_to_fp32(mil_fp32_to_fp16(b));
#ifdef HS_AVX
  while (interp_cpu(INTERP_CPU_AVX512F) && n >= 16) { /* vector groups up to a non-finite one, which the scalar code takes */
    int64_t done = hswish_fp16_avx512(out, n, a, b);
    out += done, n -= done;
    if (n >= 16) {
      finish_hswish_fp16_scalar(out, 16, a, b);
      out += 16, n -= 16;
    }
  }
#endif
  finish_hswish_fp16_scalar(out, n, a, b);
}

/* fp16 hard swish in portable code (a and b already fp16 values) */
static void finish_hswish_fp16_scalar(float *out, int64_t n, float a, float b) {
  float t[1024];
  for (int64_t i0 = 0; i0 < n; i0 += 1024) {
    size_t m = (size_t)(n - i0 < 1024 ? n - i0 : 1024);
    float *v = out + i0;
    mil_fp16_round_array(v, m); /* the conv's output as the program stores it */
    for (size_t i = 0; i < m; i++) t[i] = v[i] * a;
    mil_fp16_round_array(t, m); /* the product rounded */
    for (size_t i = 0; i < m; i++) {
      float s = t[i] + b;
      t[i] = s < 0 ? 0.0f : s > 1 ? 1.0f : s;
    }
    mil_fp16_round_array(t, m); /* the gate rounded */
    for (size_t i = 0; i < m; i++) v[i] = v[i] * t[i];
  }
}

/* relu (lo 0, hi inf) and clip as their kernels compute them (a NaN stays
 * NaN): 16 lanes at a time where the CPU has AVX-512F, 8 with AVX2, else 4. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void clamp(float *out, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; i++) {
    float v = out[i] < lo ? lo : out[i];
    out[i] = v > hi ? hi : v;
  }
}

/* A residual add (and its relu / clip): out + skip in fp32, as the add's
 * kernel computes it (addition commutes bit for bit); in fp16 programs the
 * conv's output and the skip as the program stores them (the sum is
 * rounded at the op's end: relu and clip with fp16 bounds commute with that
 * rounding). */
static void finish_add(float *out, int64_t n, const interp_fuse_ent *e, const mil_value *skip, int64_t off) {
  float t[1024];
  float lo = e->post == INTERP_FUSE_RELU ? 0.0f : e->lo, hi = e->post == INTERP_FUSE_RELU ? INFINITY : e->hi;
  for (int64_t i0 = 0; i0 < n; i0 += 1024) {
    size_t m = (size_t)(n - i0 < 1024 ? n - i0 : 1024);
    float *v = out + i0;
    const float *y;
    if (e->fp16) {
      mil_fp16_round_array(v, m);
      mil_fp16_to_fp32_array((const uint16_t *)mil_value_data(skip) + off + i0, t, m);
      y = t;
    } else {
      y = (const float *)mil_value_data(skip) + off + i0;
    }
    for (size_t i = 0; i < m; i++) v[i] = v[i] + y[i];
    if (e->post != INTERP_FUSE_NONE) clamp(v, (int64_t)m, lo, hi); /* while the chunk is in the cache */
  }
}

bool interp_conv_act(interp_run *r, bool post_op, float *out, int64_t n, int64_t off) {
  if (!r->fuse) return true;
  if (r->fuse->kind == INTERP_FUSE_ADD) {
    finish_add(out, n, r->fuse, r->fuse_skip, off);
  } else if (r->fuse->kind == INTERP_FUSE_SILU) {
    finish_silu(out, n, r->fuse->fp16);
  } else if (r->fuse->kind == INTERP_FUSE_HSWISH) {
    if (r->fuse->fp16) finish_hswish_fp16(out, n, r->fuse->lo, r->fuse->hi);
    else finish_hswish(out, n, r->fuse->lo, r->fuse->hi);
  } else if (!post_op) {
    clamp(out, n, r->fuse->kind == INTERP_FUSE_RELU ? 0.0f : r->fuse->lo,
          r->fuse->kind == INTERP_FUSE_RELU ? INFINITY : r->fuse->hi);
  }
  r->fused = true;
  return true;
}

