/* Weight arithmetic of the fusion passes at memory speed: a conv weight
 * scaled per output channel (fuse_conv_batchnorm, fuse_conv_scale), a
 * weight negated (fuse_conv_bias, fuse_linear_bias) or taken as it is.
 *
 * coremltools computes these with numpy on the weight's array:
 * `conv_weight[i] * _scale` per channel, then `.astype(conv_weight_type)`.
 * An fp32 or fp16 weight becomes a deferred scaling of it
 * (mil_value_new_deferred_scale, src/core/deferred.c): the pass costs
 * O(channels), the vector loops there compute numpy's bytes when the value
 * is read (add_fp16_cast's range check, the weight writer, which streams
 * the fp16 cast of it straight from the source weight), and no fp32 copy
 * of the fused weight is ever held. Other dtypes are computed here
 * element by element (rare). A negated weight is computed at once by
 * flipping sign bits; an unchanged one is shared, not copied.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

bool pass_wrows_conv(const mil_type *t, bool deconv, int64_t groups, pass_wrows *L) {
  memset(L, 0, sizeof *L);
  if (!mil_type_is_tensor(t) || t->rank < 3 || groups <= 0) return false;
  int64_t n = 1, k = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0) return false;
    n *= t->dims[i].size;
    if (i >= 2) k *= t->dims[i].size;
  }
  int64_t s0 = t->dims[0].size, s1 = t->dims[1].size;
  if (deconv && s0 % groups != 0) return false;
  L->n = n;
  L->deconv = deconv;
  L->groups = groups;
  if (!deconv) {
    /* (Cout, Cin/groups, *K): channel i is the run of Cin/groups * K
     * elements starting at i * run */
    L->cout = s0;
    L->run = s1 * k;
    L->n_runs = L->run ? s0 : 0;
  } else {
    /* (Cin, Cout/groups, *K) seen as coremltools' transpose to
     * (Cout/groups, Cin, *K) reshaped to (Cout, Cin/groups, *K): the K
     * elements at (a, b) lie in row b * groups + a / (Cin/groups) */
    L->cout = s1 * groups;
    L->run = k;
    L->n_runs = k ? s0 * s1 : 0;
    L->bdim = s1;
    L->cpg = s0 / groups;
  }
  return true;
}

void pass_wrows_all(int64_t n, pass_wrows *L) {
  memset(L, 0, sizeof *L);
  L->n = n;
  L->cout = 1;
  L->run = n;
  L->n_runs = n > 0 ? 1 : 0;
}

/* The channel of run r. */
static inline int64_t run_row(const pass_wrows *L, int64_t r) {
  if (!L->deconv) return r;
  int64_t a = r / L->bdim, b = r % L->bdim;
  return b * L->groups + (L->cpg ? a / L->cpg : 0);
}

/* The element-by-element path: any numeric weight dtype. */
static void scale_generic(const mil_value *w, mil_value *out, const pass_wrows *L, const double *f, mil_dtype dt) {
  mil_dtype wdt = w->type->dtype;
  for (int64_t r = 0, e = 0; r < L->n_runs; r++) {
    double x = f[run_row(L, r)];
    for (int64_t j = 0; j < L->run; j++, e++)
      mil_value_set_f64(out, e, pass_np_round(pass_np_round(mil_value_get_f64(w, e) * x, dt), wdt));
  }
}

static mil_value *new_like(mil_program *p, const mil_value *w, mil_dtype dt) {
  const mil_type *t = w->type;
  int64_t shape[PASS_NP_MAX_RANK];
  if (t->rank > PASS_NP_MAX_RANK) return NULL;
  for (int32_t i = 0; i < t->rank; i++) shape[i] = t->dims[i].size;
  return mil_value_new_tensor_uninit(p, dt, t->rank, shape, t->rank == 0 && t->is_scalar);
}

bool pass_weight_numeric(const mil_value *w) {
  if (!w || w->kind != MIL_VAL_TENSOR || !w->type || w->type->rank < 0 || w->type->rank > PASS_NP_MAX_RANK)
    return false;
  mil_dtype dt = w->type->dtype;
  return dt != MIL_DT_STRING && dt != MIL_DT_BOOL && !mil_dtype_is_complex(dt);
}

mil_value *pass_weight_scale(mil_program *p, const mil_value *w, const pass_wrows *L, const double *f, mil_dtype dt) {
  if (!pass_weight_numeric(w) || w->numel != L->n) return NULL;
  mil_dtype wdt = w->type->dtype;
  if ((wdt == MIL_DT_FP32 || wdt == MIL_DT_FP16) && L->n > 0) {
    mil_scale_map map = {L->run, L->deconv ? L->bdim : L->n_runs, L->deconv ? L->groups : 1,
                         L->deconv && L->cpg > 0 ? L->cpg : 1};
    /* a deferred weight (say a cast) is computed first: a scaling reads plain bytes */
    if (mil_value_is_deferred(w) && !mil_value_data(w)) return NULL;
    mil_value *v = mil_value_new_deferred_scale(p, w, &map, f, L->cout, dt);
    if (v) return v;
  }
  mil_value *out = new_like(p, w, wdt == MIL_DT_FP64 ? MIL_DT_FP32 : wdt);
  if (!out || L->n == 0) return out;
  if (!mil_value_data(w) || !mil_value_data_mut(out)) return NULL;
  scale_generic(w, out, L, f, dt);
  return out;
}

mil_value *pass_weight_negate(mil_program *p, const mil_value *w) {
  if (!pass_weight_numeric(w)) return NULL;
  mil_dtype wdt = w->type->dtype, odt = wdt == MIL_DT_FP64 ? MIL_DT_FP32 : wdt;
  mil_value *out = new_like(p, w, odt);
  if (!out || w->numel == 0) return out;
  const void *src = mil_value_data(w);
  void *dst = mil_value_data_mut(out);
  if (!src || !dst) return NULL;
  size_t n = (size_t)w->numel;
  if (wdt == MIL_DT_FP32) {
    /* numpy's negative flips the sign bit (NaNs included) */
    const uint32_t *s = src;
    uint32_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = s[i] ^ 0x80000000u;
  } else if (wdt == MIL_DT_FP16) {
    const uint16_t *s = src;
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = (uint16_t)(s[i] ^ 0x8000u);
  } else {
    for (size_t i = 0; i < n; i++) mil_value_set_f64(out, (int64_t)i, -mil_value_get_f64(w, (int64_t)i));
  }
  return out;
}

const mil_value *pass_weight_as_const(mil_program *p, const mil_value *w) {
  if (!pass_weight_numeric(w)) return NULL;
  if (w->type->dtype != MIL_DT_FP64) return w; /* values are immutable: the new const shares it */
  mil_value *out = new_like(p, w, MIL_DT_FP32);
  if (!out || w->numel == 0) return out;
  const double *s = mil_value_data(w);
  float *d = mil_value_data_mut(out);
  if (!s || !d) return NULL;
  for (int64_t i = 0; i < w->numel; i++) d[i] = (float)s[i];
  return out;
}
