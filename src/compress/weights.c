/* Weights as float arrays and the values the compression passes build. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

float cw_h(float x) { return mil_fp16_to_fp32(mil_fp32_to_fp16(x)); }

bool cw_weight_read(const mil_value *v, cw_weight *out) {
  memset(out, 0, sizeof *out);
  const mil_type *t = v->type;
  if (!t || t->rank > MIL_CFG_MAX_RANK || t->rank < 0) return false;
  out->rank = t->rank;
  for (int32_t i = 0; i < t->rank; i++) out->shape[i] = t->dims[i].size;
  out->n = v->numel;
  out->dtype = t->dtype;
  out->is_half = t->dtype == MIL_DT_FP16;
  out->w = malloc((size_t)(out->n ? out->n : 1) * sizeof(float));
  if (!out->w) return false;
  const void *raw = mil_value_data(v);
  if (!raw && out->n) {
    free(out->w);
    out->w = NULL;
    return false;
  }
  switch (t->dtype) {
  case MIL_DT_FP16: mil_fp16_to_fp32_array(raw, out->w, (size_t)out->n); break;
  case MIL_DT_FP32: memcpy(out->w, raw, (size_t)out->n * sizeof(float)); break;
  default:
    for (int64_t i = 0; i < out->n; i++) out->w[i] = (float)mil_value_get_f64(v, i);
  }
  /* a weight read from the weight file is replaced: its pages need not stay resident */
  mil_value_release_pages(v);
  return true;
}

void cw_scan_range(const float *x, int64_t n, float *lo_out, float *hi_out, bool *nan_out, bool *inf_out) {
  /* eight independent lanes: no dependency chain, and the loop vectorizes */
  float lo[8], hi[8];
  int nan[8], inf[8];
  for (int k = 0; k < 8; k++) lo[k] = INFINITY, hi[k] = -INFINITY, nan[k] = 0, inf[k] = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) {
      float v = x[i + k];
      nan[k] |= v != v;
      inf[k] |= fabsf(v) == INFINITY;
      lo[k] = v < lo[k] ? v : lo[k];
      hi[k] = v > hi[k] ? v : hi[k];
    }
  for (; i < n; i++) {
    float v = x[i];
    nan[0] |= v != v;
    inf[0] |= fabsf(v) == INFINITY;
    lo[0] = v < lo[0] ? v : lo[0];
    hi[0] = v > hi[0] ? v : hi[0];
  }
  int any_nan = 0, any_inf = 0;
  for (int k = 0; k < 8; k++) {
    lo[0] = lo[k] < lo[0] ? lo[k] : lo[0];
    hi[0] = hi[k] > hi[0] ? hi[k] : hi[0];
    any_nan |= nan[k], any_inf |= inf[k];
  }
  *lo_out = lo[0], *hi_out = hi[0];
  if (nan_out) *nan_out = any_nan != 0;
  if (inf_out) *inf_out = any_inf != 0;
}

bool cw_weight_range(const cw_weight *w, float *lo, float *hi) {
  bool inf;
  cw_scan_range(w->w, w->n, lo, hi, NULL, &inf);
  return inf;
}

void cw_weight_free(cw_weight *w) {
  free(w->w);
  w->w = NULL;
}

mil_value *cw_float_value(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar,
                          const float *x) {
  mil_value *v = mil_value_new_tensor_uninit(p, dt, rank, shape, scalar);
  if (!v) return NULL;
  void *dst = mil_value_data_mut(v);
  if (!dst && v->numel) return NULL;
  if (dt == MIL_DT_FP16) mil_fp32_to_fp16_array(x, dst, (size_t)v->numel);
  else if (dt == MIL_DT_FP32) memcpy(dst, x, (size_t)v->numel * sizeof(float));
  else
    for (int64_t i = 0; i < v->numel; i++) mil_value_set_f64(v, i, x[i]);
  return v;
}

mil_value *cw_int_value(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar,
                        const int32_t *x) {
  mil_value *v = mil_value_new_tensor(p, dt, rank, shape, scalar, NULL);
  if (!v) return NULL;
  uint8_t *dst = mil_value_data_mut(v);
  if (!dst && v->numel) return NULL;
  int bits = mil_dtype_bits(dt);
  if (dt == MIL_DT_INT8 || dt == MIL_DT_UINT8) {
    for (int64_t i = 0; i < v->numel; i++) dst[i] = (uint8_t)x[i];
  } else if (bits == 4) {
    for (int64_t i = 0; i + 1 < v->numel; i += 2) dst[i >> 1] = (uint8_t)((x[i] & 15) | ((x[i + 1] & 15) << 4));
    if (v->numel & 1) dst[v->numel >> 1] = (uint8_t)(x[v->numel - 1] & 15);
  } else if (mil_dtype_is_subbyte(dt)) {
    uint32_t mask = (1u << bits) - 1;
    for (int64_t i = 0; i < v->numel; i++) mil_bits_set(dst, i, bits, (uint32_t)x[i] & mask);
  } else {
    for (int64_t i = 0; i < v->numel; i++) mil_value_set_i64(v, i, x[i]);
  }
  return v;
}

int cw_replace(cw_pass *c, mil_op *op, mil_var *new_var) {
  pass_replace_uses_after(op, op->outputs[0], new_var);
  mil_status st = pass_remove_ops(&op, 1, c->bld.d);
  return st == MIL_OK ? 1 : -(int)st;
}

int cw_replace_with_const(cw_pass *c, mil_op *op, const char *suffix, const cw_weight *w, const float *x) {
  char name[512];
  snprintf(name, sizeof name, "%s%s", op->name, suffix);
  mil_value *v = cw_float_value(c->bld.p, w->dtype, w->rank, w->shape, false, x);
  mil_var *nv = v ? pass_const_named_before(op, pass_bld_names(&c->bld), name, v) : NULL;
  if (!nv) return -(int)mil_diag_error(c->bld.d, MIL_ERR_NOMEM, "%s: out of memory", c->bld.pass);
  return cw_replace(c, op, nv);
}
