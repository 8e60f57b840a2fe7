/* Kernels of the "normalization" family (coremltools
 * ops/defs/iOS15/normalization.py), fp32 with fp16 widened and rounded at
 * the output; statistics are accumulated in double:
 *
 *   batch_norm          (x - mean) / sqrt(variance + epsilon) * gamma + beta,
 *                       per channel (axis 1)
 *   instance_norm       the same with mean / variance over the spatial axes
 *                       of each (n, c)
 *   layer_norm          over the trailing axes listed in `axes` (other axis
 *                       sets go to value inference); gamma / beta have the
 *                       normalized shape
 *   local_response_norm x / (k + alpha / size * sum x_j^2)^beta over the
 *                       channels j in [i - size/2, i + (size-1)/2]
 * l2_norm runs through value inference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

/* Optional per-channel parameter as fp32 (NULL when absent). */
static bool param(interp_run *r, mil_infer_ctx *c, const char *name, int64_t n, const float **out, float **tmp) {
  *out = NULL;
  *tmp = NULL;
  if (!op_has(c, name)) return true;
  const mil_value *v = interp_fin(c, name);
  if (!v || v->numel != n) return false;
  *out = interp_f32(r, v, tmp);
  return *out != NULL;
}

static mil_status k_batch_norm(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  if (!x || x->type->rank < 2) return INTERP_DECLINE;
  int64_t n = x->type->dims[0].size, ch = x->type->dims[1].size, plane = n > 0 && ch > 0 ? x->numel / (n * ch) : 0;
  const float *mean, *var, *gamma, *beta;
  float *t[5] = {0};
  bool ok = param(r, c, "mean", ch, &mean, &t[0]) && param(r, c, "variance", ch, &var, &t[1]) &&
            param(r, c, "gamma", ch, &gamma, &t[2]) && param(r, c, "beta", ch, &beta, &t[3]) && mean && var;
  const float *xf = ok ? interp_f32(r, x, &t[4]) : NULL;
  interp_fout o;
  float *out = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!out) {
    for (int i = 0; i < 5; i++) free(t[i]);
    return ok ? interp_nomem(c) : INTERP_DECLINE;
  }
  double eps = op_f64(c, "epsilon", 1e-5);
  for (int64_t ci = 0; ci < ch; ci++) {
    float scale = (float)(1.0 / sqrt((double)var[ci] + eps)) * (gamma ? gamma[ci] : 1.0f);
    float shift = (beta ? beta[ci] : 0.0f) - mean[ci] * scale;
    for (int64_t b = 0; b < n; b++) {
      const float *s = xf + (b * ch + ci) * plane;
      float *d = out + (b * ch + ci) * plane;
      for (int64_t i = 0; i < plane; i++) d[i] = s[i] * scale + shift;
    }
  }
  for (int i = 0; i < 5; i++) free(t[i]);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

/* Normalizes rows of length len; gamma/beta indexed by position (per_pos)
 * or by row % ch (per channel). */
static void norm_rows(const float *x, float *y, int64_t rows, int64_t len, double eps, const float *gamma,
                      const float *beta, bool per_pos, int64_t ch) {
  for (int64_t rw = 0; rw < rows; rw++) {
    const float *s = x + rw * len;
    float *d = y + rw * len;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < len; i++) sum += s[i];
    double mean = len ? sum / (double)len : 0;
    for (int64_t i = 0; i < len; i++) sq += ((double)s[i] - mean) * ((double)s[i] - mean);
    double inv = 1.0 / sqrt((len ? sq / (double)len : 0) + eps);
    int64_t cidx = ch ? rw % ch : 0;
    for (int64_t i = 0; i < len; i++) {
      double v = ((double)s[i] - mean) * inv;
      int64_t p = per_pos ? i : cidx;
      if (gamma) v *= gamma[p];
      if (beta) v += beta[p];
      d[i] = (float)v;
    }
  }
}

static mil_status k_instance_norm(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  if (!x || x->type->rank < 3) return INTERP_DECLINE;
  int64_t n = x->type->dims[0].size, ch = x->type->dims[1].size, plane = n > 0 && ch > 0 ? x->numel / (n * ch) : 0;
  const float *gamma, *beta;
  float *t[3] = {0};
  bool ok = param(r, c, "gamma", ch, &gamma, &t[0]) && param(r, c, "beta", ch, &beta, &t[1]);
  const float *xf = ok ? interp_f32(r, x, &t[2]) : NULL;
  interp_fout o;
  float *out = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!out) {
    for (int i = 0; i < 3; i++) free(t[i]);
    return ok ? interp_nomem(c) : INTERP_DECLINE;
  }
  norm_rows(xf, out, n * ch, plane, op_f64(c, "epsilon", 1e-5), gamma, beta, false, ch);
  for (int i = 0; i < 3; i++) free(t[i]);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_layer_norm(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  if (!x) return INTERP_DECLINE;
  int32_t rank = x->type->rank;
  bool in_axes[MIL_INTERP_MAX_RANK] = {0};
  int64_t axes[MIL_INTERP_MAX_RANK];
  int na = op_has(c, "axes") ? op_ints(c, "axes", axes, MIL_INTERP_MAX_RANK) : -2;
  if (na == -1 || rank > MIL_INTERP_MAX_RANK) return INTERP_DECLINE;
  if (na == -2)
    for (int32_t i = 0; i < rank; i++) in_axes[i] = true;
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) return INTERP_DECLINE;
    in_axes[a] = true;
  }
  int32_t first = rank;
  while (first > 0 && in_axes[first - 1]) first--;
  for (int32_t i = 0; i < first; i++)
    if (in_axes[i]) return INTERP_DECLINE; /* not a trailing set of axes */
  int64_t len = 1;
  for (int32_t i = first; i < rank; i++) len *= x->type->dims[i].size;
  int64_t rows = len ? x->numel / len : 0;
  const float *gamma, *beta;
  float *t[3] = {0};
  bool ok = param(r, c, "gamma", len, &gamma, &t[0]) && param(r, c, "beta", len, &beta, &t[1]);
  const float *xf = ok ? interp_f32(r, x, &t[2]) : NULL;
  interp_fout o;
  float *out = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!out) {
    for (int i = 0; i < 3; i++) free(t[i]);
    return ok ? interp_nomem(c) : INTERP_DECLINE;
  }
  norm_rows(xf, out, rows, len, op_f64(c, "epsilon", 1e-5), gamma, beta, true, 0);
  for (int i = 0; i < 3; i++) free(t[i]);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_local_response_norm(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  if (!x || x->type->rank < 3) return INTERP_DECLINE;
  int64_t size = op_int(c, "size", 1);
  if (size < 1) return interp_fail(c, MIL_ERR_INVALID, "input 'size' must be positive, got %lld", (long long)size);
  double alpha = op_f64(c, "alpha", 1e-4), beta = op_f64(c, "beta", 0.75), k = op_f64(c, "k", 1.0);
  int64_t n = x->type->dims[0].size, ch = x->type->dims[1].size, plane = n > 0 && ch > 0 ? x->numel / (n * ch) : 0;
  float *tx;
  const float *xf = interp_f32(r, x, &tx);
  interp_fout o;
  float *out = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!out) {
    free(tx);
    return interp_nomem(c);
  }
  int64_t lo = size / 2, hi = (size - 1) / 2;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ci = 0; ci < ch; ci++)
      for (int64_t i = 0; i < plane; i++) {
        double sq = 0;
        for (int64_t j = ci - lo; j <= ci + hi; j++)
          if (j >= 0 && j < ch) {
            double v = xf[(b * ch + j) * plane + i];
            sq += v * v;
          }
        int64_t e = (b * ch + ci) * plane + i;
        out[e] = (float)(xf[e] / pow(k + alpha / (double)size * sq, beta));
      }
  free(tx);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

const interp_kernel interp_kernels_normalization[] = {
    {"batch_norm", k_batch_norm, 0},
    {"instance_norm", k_instance_norm, 0},
    {"layer_norm", k_layer_norm, 0},
    {"local_response_norm", k_local_response_norm, 0},
};
INTERP_FAMILY_COUNT(normalization);
