/* Linear quantization parameters: coremltools/optimize/_utils.py
 * (get_quant_range, quantize_weight_by_dtype, compute_qparams_by_dtype)
 * with numpy's arithmetic: every step rounded to the weight's precision
 * (fp16 weights compute in fp16), np.round = round half to even. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
static int32_t to_int(float x) { return isnan(x) ? 0 : (int32_t)x; }

void cw_qparams_free(cw_qparams *q) {
  free(q->q);
  free(q->scale);
  free(q->zp);
  memset(q, 0, sizeof *q);
}

bool cw_quantize(const cw_weight *w, mil_dtype dt, mil_cmode mode, const int64_t *bs, cw_qparams *out,
                 bool *oom) {
  memset(out, 0, sizeof *out);
  *oom = false;
  int32_t rank = w->rank;
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
  float *mn = malloc((size_t)nb * sizeof *mn), *mx = malloc((size_t)nb * sizeof *mx);
  out->q = malloc((size_t)(w->n ? w->n : 1) * sizeof *out->q);
  out->scale = malloc((size_t)nb * sizeof *out->scale);
  int32_t *blk = malloc((size_t)(w->n ? w->n : 1) * sizeof *blk);
  bool want_zp = mode == MIL_CMODE_LINEAR || mil_dtype_is_unsigned(dt);
  if (want_zp) out->zp = malloc((size_t)nb * sizeof *out->zp);
  if (!mn || !mx || !out->q || !out->scale || !blk || (want_zp && !out->zp)) {
    free(mn), free(mx), free(blk);
    cw_qparams_free(out);
    *oom = true;
    return false;
  }
  /* block index of every element (row-major walk with a multi-index) */
  int64_t idx[MIL_CFG_MAX_RANK] = {0};
  for (int64_t b = 0; b < nb; b++) mn[b] = INFINITY, mx[b] = -INFINITY;
  for (int64_t i = 0; i < w->n; i++) {
    int64_t b = 0;
    for (int32_t a = 0; a < rank; a++) b = b * out->scale_shape[a] + (bs[a] > 0 ? idx[a] / bs[a] : 0);
    blk[i] = (int32_t)b;
    float x = w->w[i];
    if (isnan(x) || isnan(mn[b])) {
      mn[b] = mx[b] = NAN;
    } else {
      if (x < mn[b]) mn[b] = x;
      if (x > mx[b]) mx[b] = x;
    }
    for (int32_t a = rank - 1; a >= 0; a--) {
      if (++idx[a] < w->shape[a]) break;
      idx[a] = 0;
    }
  }
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
  for (int64_t i = 0; i < w->n; i++) {
    int32_t b = blk[i];
    float q = rintf(cw_r(w, w->w[i] / out->scale[b]));
    if (want_zp) q = cw_r(w, q + zpf[b]);
    if (q < qlo) q = (float)qlo;
    if (q > qhi) q = (float)qhi;
    out->q[i] = to_int(q);
  }
  if (want_zp)
    for (int64_t b = 0; b < nb; b++) out->zp[b] = to_int(zpf[b]);
  free(mn), free(mx), free(blk);
  return true;
}
