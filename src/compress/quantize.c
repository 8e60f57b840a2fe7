/* Linear quantization parameters: coremltools/optimize/_utils.py
 * (get_quant_range, quantize_weight_by_dtype, compute_qparams_by_dtype)
 * with numpy's arithmetic: every step rounded to the weight's precision
 * (fp16 weights compute in fp16), np.round = round half to even. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "compress/compress_internal.h"

static void quant_range(mil_dtype dt, mil_cmode mode, int32_t *lo, int32_t *hi) {
  int bits = mil_dtype_bits(dt);
  int32_t maxq = 1 << bits;
  if (mil_dtype_is_unsigned(dt)) {
    *lo = 0;
    *hi = maxq - 1 - (mode == MIL_CMODE_LINEAR_SYMMETRIC);
  } else {
    *lo = -maxq / 2 + (mode == MIL_CMODE_LINEAR_SYMMETRIC);
    *hi = maxq / 2 - 1;
  }
}

/* numpy's float -> int cast of a rounded, clipped value (NaN gives 0 on the
 * platforms coremltools runs on). */
static inline int32_t to_int(float x) { return x != x ? 0 : (int32_t)x; }

/* np.round (rint, half to even) without a libm call: adding and removing
 * 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer in the
 * current (nearest-even) mode; larger values, infinities and NaN go through
 * rintf. */
static inline float round_even(float v) {
  if (fabsf(v) < 4194304.0f) {
    float t = v + 12582912.0f;
    return t - 12582912.0f; /* the sign of a zero result is lost; the integer is the same */
  }
  return rintf(v);
}

/* The smallest and largest of x[0..n) as a left-to-right scan with strict
 * comparisons finds them (the first of equal values, so the sign of a zero
 * extreme is that of its first occurrence); true when an element is NaN.
 * Eight lanes keep the loop free of a dependency chain (and vectorizable);
 * lanes can only disagree with the scan on which zero comes first, which a
 * rescan settles. */
static bool run_min_max(const float *x, int64_t n, float *lo, float *hi) {
  bool nan;
  cw_scan_range(x, n, lo, hi, &nan, NULL);
  if (*lo == 0.0f || *hi == 0.0f)
    for (int64_t j = 0; j < n; j++)
      if (x[j] == 0.0f) {
        if (*lo == 0.0f) *lo = x[j];
        if (*hi == 0.0f) *hi = x[j];
        break;
      }
  return nan;
}

/* q[i] = int(clip(np.round(x[i] / sc) + z, flo, fhi)) for fp32 weights,
 * NaN -> 0. The rounding adds and removes 1.5 * 2^23, exact (half to even)
 * below 2^22 in magnitude; anything larger, infinities included, clips to
 * flo or fhi either way (|flo|, |fhi| < 2^16), so no rintf branch is needed
 * and the loop vectorizes. */
static void quantize_run(const float *x, int64_t n, float sc, float z, float flo, float fhi, int32_t *q) {
  int64_t i = 0;
#if defined(__SSE2__)
  /* the same steps four at a time; max/min clamp (they would turn NaN into
   * flo, so NaN lanes are zeroed by the ordered mask taken before) */
  const __m128 vs = _mm_set1_ps(sc), vz = _mm_set1_ps(z), vc = _mm_set1_ps(12582912.0f);
  const __m128 vlo = _mm_set1_ps(flo), vhi = _mm_set1_ps(fhi);
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_div_ps(_mm_loadu_ps(x + i), vs);
    v = _mm_add_ps(_mm_sub_ps(_mm_add_ps(v, vc), vc), vz);
    __m128 ord = _mm_cmpord_ps(v, v);
    v = _mm_min_ps(_mm_max_ps(v, vlo), vhi);
    _mm_storeu_si128((__m128i *)(q + i), _mm_and_si128(_mm_cvttps_epi32(v), _mm_castps_si128(ord)));
  }
#endif
  for (; i < n; i++) {
    float v = x[i] / sc;
    v = (v + 12582912.0f) - 12582912.0f;
    v = v + z;
    v = v < flo ? flo : v;
    v = v > fhi ? fhi : v;
    q[i] = v != v ? 0 : (int32_t)v;
  }
}

void cw_qparams_free(cw_qparams *q) {
  free(q->q);
  free(q->scale);
  free(q->zp);
  memset(q, 0, sizeof *q);
}

/* Runs BODY for every run of consecutive elements [i0, i0 + len) of one
 * block b, in row-major order (a run is one block's stretch of the last
 * axis). */
#define FOR_EACH_RUN(w, bs, ss, ...)                                                       \
  do {                                                                                     \
    int32_t r_ = (w)->rank;                                                                \
    int64_t last_ = r_ ? (w)->shape[r_ - 1] : 1, rows_ = last_ ? (w)->n / last_ : 0;       \
    int64_t blast_ = r_ && (bs)[r_ - 1] > 0 ? (bs)[r_ - 1] : last_;                        \
    int64_t idx_[MIL_CFG_MAX_RANK] = {0};                                                  \
    for (int64_t row_ = 0; row_ < rows_; row_++) {                                         \
      int64_t base_ = 0;                                                                   \
      for (int32_t a_ = 0; a_ + 1 < r_; a_++)                                              \
        base_ = base_ * (ss)[a_] + ((bs)[a_] > 0 ? idx_[a_] / (bs)[a_] : 0);               \
      base_ *= r_ ? (ss)[r_ - 1] : 1;                                                      \
      for (int64_t j0_ = 0; j0_ < last_; j0_ += blast_) {                                  \
        int64_t b = base_ + ((bs)[r_ - 1] > 0 ? j0_ / blast_ : 0);                         \
        int64_t i0 = row_ * last_ + j0_, len = blast_;                                     \
        __VA_ARGS__                                                                        \
      }                                                                                    \
      for (int32_t a_ = r_ - 2; a_ >= 0; a_--) {                                           \
        if (++idx_[a_] < (w)->shape[a_]) break;                                            \
        idx_[a_] = 0;                                                                      \
      }                                                                                    \
    }                                                                                      \
  } while (0)

bool cw_quantize(const cw_weight *w, mil_dtype dt, mil_cmode mode, const int64_t *bs, cw_qparams *out,
                 bool *oom) {
  memset(out, 0, sizeof *out);
  *oom = false;
  int32_t rank = w->rank;
  if (rank < 1) return false;
  int64_t nb = 1;
  for (int32_t a = 0; a < rank; a++) {
    if (bs[a] > 0) {
      if (w->shape[a] % bs[a] != 0) return false;
      out->scale_shape[a] = w->shape[a] / bs[a];
    } else {
      out->scale_shape[a] = 1;
    }
    nb *= out->scale_shape[a];
  }
  out->n_scale = nb;
  const int64_t *ss = out->scale_shape;
  float *mn = malloc((size_t)nb * sizeof *mn), *mx = malloc((size_t)nb * sizeof *mx);
  out->q = malloc((size_t)(w->n ? w->n : 1) * sizeof *out->q);
  out->scale = malloc((size_t)nb * sizeof *out->scale);
  bool want_zp = mode == MIL_CMODE_LINEAR || mil_dtype_is_unsigned(dt);
  if (want_zp) out->zp = malloc((size_t)nb * sizeof *out->zp);
  if (!mn || !mx || !out->q || !out->scale || (want_zp && !out->zp)) {
    free(mn), free(mx);
    cw_qparams_free(out);
    *oom = true;
    return false;
  }
  for (int64_t b = 0; b < nb; b++) mn[b] = INFINITY, mx[b] = -INFINITY;
  const float *x = w->w;
  FOR_EACH_RUN(w, bs, ss, {
    float rlo, rhi;
    bool nan = run_min_max(x + i0, len, &rlo, &rhi);
    /* runs combine as the elements do: strict comparisons keep the earlier */
    float lo = rlo < mn[b] ? rlo : mn[b], hi = rhi > mx[b] ? rhi : mx[b];
    mn[b] = nan || isnan(mn[b]) ? NAN : lo;
    mx[b] = nan || isnan(mx[b]) ? NAN : hi;
  });
  int32_t qlo, qhi;
  quant_range(dt, mode, &qlo, &qhi);
  float *zpf = want_zp ? mn : NULL; /* reuse mn for the float zero points */
  for (int64_t b = 0; b < nb; b++) {
    float lo, hi;
    if (mode == MIL_CMODE_LINEAR_SYMMETRIC) {
      float m = fmaxf(fabsf(mn[b]), fabsf(mx[b]));
      if (isnan(mn[b])) m = NAN;
      lo = -m, hi = m;
    } else {
      lo = isnan(mn[b]) ? NAN : fminf(0.0f, mn[b]);
      hi = isnan(mx[b]) ? NAN : fmaxf(0.0f, mx[b]);
    }
    float range = cw_r(w, hi - lo);
    out->scale[b] = cw_r(w, range / (float)(qhi - qlo));
    if (mode == MIL_CMODE_LINEAR) {
      float num = cw_r(w, cw_r(w, (float)qlo * hi) - cw_r(w, (float)qhi * lo));
      float z = rintf(cw_r(w, num / range));
      if (z < qlo) z = (float)qlo;
      if (z > qhi) z = (float)qhi;
      zpf[b] = z;
    } else if (want_zp) {
      zpf[b] = (float)(qhi / 2);
    }
  }
  int32_t *q = out->q;
  const float *scale = out->scale;
  float flo = (float)qlo, fhi = (float)qhi;
  if (w->is_half) {
    FOR_EACH_RUN(w, bs, ss, {
      float sc = scale[b], z = zpf ? zpf[b] : 0.0f;
      for (int64_t i = i0; i < i0 + len; i++) {
        float v = round_even(cw_h(x[i] / sc));
        if (zpf) v = cw_h(v + z);
        v = v < flo ? flo : v > fhi ? fhi : v;
        q[i] = to_int(v);
      }
    });
  } else {
    FOR_EACH_RUN(w, bs, ss, { quantize_run(x + i0, len, scale[b], zpf ? zpf[b] : 0.0f, flo, fhi, q + i0); });
  }
  if (want_zp)
    for (int64_t b = 0; b < nb; b++) out->zp[b] = to_int(zpf[b]);
  free(mn), free(mx);
  return true;
}
