/* Op family "transformers": scaled_dot_product_attention (iOS18). Mirrors
 * coremltools ops/defs/iOS18/transformers.py, value inference included
 * (softmax(Q K^T / sqrt(E) + mask) V, a bool mask adding -inf where False),
 * computed in double and rounded once to the output dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

static mil_status sdpa_infer(mil_infer_ctx *c) {
  const mil_type *q = op_type(c, "query"), *k = op_type(c, "key"), *v = op_type(c, "value"),
                 *m = op_type(c, "attn_mask");
  if (q->rank != k->rank || q->rank != v->rank)
    return op_fail(c, "query, key and value must have the same rank, got query %s, key %s, value %s", op_tstr(c, q),
                   op_tstr(c, k), op_tstr(c, v));
  int32_t r = q->rank;
  if (r < 3)
    return op_fail(c, "query, key and value must have rank at least 3 (batch, sequence length, embedding), got %s",
                   op_tstr(c, q));
  if (r > OP_MAX_RANK) return op_fail(c, "input rank %d is too large", r);
  /* batch dims are compared only when none of the three is symbolic */
  bool any_sym = false;
  for (int32_t i = 0; i < r - 2; i++)
    any_sym |= q->dims[i].size < 0 || k->dims[i].size < 0 || v->dims[i].size < 0;
  if (!any_sym)
    for (int32_t i = 0; i < r - 2; i++)
      if (q->dims[i].size != k->dims[i].size || q->dims[i].size != v->dims[i].size)
        return op_fail(c, "query, key and value must have the same batch dimensions, got query %s, key %s, value %s",
                       op_tstr(c, q), op_tstr(c, k), op_tstr(c, v));
  const mil_dim *eq = &q->dims[r - 1], *ek = &k->dims[r - 1], *sk = &k->dims[r - 2], *sv = &v->dims[r - 2];
  if (eq->size >= 0 && ek->size >= 0 && eq->size != ek->size)
    return op_fail(c, "query and key must have the same embedding size, got query %s and key %s", op_tstr(c, q),
                   op_tstr(c, k));
  if (sk->size >= 0 && sv->size >= 0 && sk->size != sv->size)
    return op_fail(c, "key and value must have the same sequence length, got key %s and value %s", op_tstr(c, k),
                   op_tstr(c, v));
  if (m) {
    if (m->rank < 1) return op_fail(c, "input 'attn_mask' must have rank >= 1, got %s", op_tstr(c, m));
    const mil_dim *s_mask = &m->dims[m->rank - 1];
    if (s_mask->size >= 0 && sk->size >= 0 && s_mask->size != sk->size)
      return op_fail(c, "key and attn_mask must have the same sequence length, got key %s and attn_mask %s",
                     op_tstr(c, k), op_tstr(c, m));
    mil_dim tmp[OP_MAX_RANK];
    int32_t tr;
    const mil_type *qa = op_tensor(c, q->dtype, r - 1, q->dims), *ma = op_tensor(c, m->dtype, m->rank - 1, m->dims);
    mil_status st = op_broadcast(c, qa, ma, tmp, &tr);
    if (st != MIL_OK) return st;
  }
  mil_dim d[OP_MAX_RANK];
  memcpy(d, q->dims, (size_t)(r - 1) * sizeof *d);
  d[r - 1] = v->dims[r - 1];
  op_set_out(c, 0, op_tensor(c, q->dtype, r, d));
  return MIL_OK;
}

/* Offset of the mask element for batch coordinates of the query's (r-1)-dim
 * prefix (index bi over batch dims, row i), broadcast numpy-style. */
static int64_t mask_offset(const mil_value *mask, const int64_t *qshape, int32_t r, int64_t bi, int64_t i, int64_t j) {
  int32_t mr = mask->type->rank;
  /* full coordinate in the output (r dims): batch coords, i, j */
  int64_t coord[OP_MAX_RANK];
  int64_t rem = bi;
  for (int32_t a = r - 3; a >= 0; a--) {
    coord[a] = rem % qshape[a];
    rem /= qshape[a];
  }
  coord[r - 2] = i;
  coord[r - 1] = j;
  int64_t off = 0, stride = 1;
  for (int32_t a = mr - 1; a >= 0; a--) {
    int32_t oa = a + (r - mr);
    int64_t n = mask->type->dims[a].size;
    if (oa >= 0 && n != 1) off += coord[oa] * stride;
    stride *= n;
  }
  return off;
}

static mil_status sdpa_fold(mil_infer_ctx *c) {
  const mil_value *q = op_val(c, "query"), *k = op_val(c, "key"), *v = op_val(c, "value"), *m = op_val(c, "attn_mask");
  if (!q || !k || !v) return MIL_OK;
  /* a mask that is given but unknown is ignored, as coremltools does */
  mil_value *out = op_new_out_value(c, 0);
  if (!out) return MIL_OK;
  int32_t r = q->type->rank;
  if (m && m->type->rank > r) return MIL_OK; /* the broadcast would add leading dims; leave it to run time */
  int64_t qshape[OP_MAX_RANK];
  for (int32_t i = 0; i < r; i++) qshape[i] = q->type->dims[i].size;
  int64_t L = qshape[r - 2], E = qshape[r - 1], S = k->type->dims[r - 2].size, Ev = v->type->dims[r - 1].size;
  int64_t nb = 1;
  for (int32_t i = 0; i < r - 2; i++) nb *= qshape[i];
  double *w = malloc((size_t)(S ? S : 1) * sizeof *w);
  if (!w) return MIL_ERR_NOMEM;
  double scale = sqrt((double)E);
  bool bmask = m && m->type->dtype == MIL_DT_BOOL;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < L; i++) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; j++) {
        double s = 0;
        for (int64_t e = 0; e < E; e++)
          s += mil_value_get_f64(q, (b * L + i) * E + e) * mil_value_get_f64(k, (b * S + j) * E + e);
        s /= scale;
        if (m) {
          int64_t mo = mask_offset(m, qshape, r, b, i, j);
          if (bmask) s += mil_value_get_i64(m, mo) ? 0.0 : -INFINITY;
          else s += mil_value_get_f64(m, mo);
        }
        w[j] = s;
        if (s > mx) mx = s;
      }
      double sum = 0;
      for (int64_t j = 0; j < S; j++) sum += (w[j] = exp(w[j] - mx));
      for (int64_t e = 0; e < Ev; e++) {
        double acc = 0;
        for (int64_t j = 0; j < S; j++) acc += w[j] / sum * mil_value_get_f64(v, (b * S + j) * Ev + e);
        mil_value_set_f64(out, (b * L + i) * Ev + e, acc);
      }
    }
  free(w);
  c->val[0] = out;
  return MIL_OK;
}

#define TN MIL_IK_TENSOR
static const mil_input_spec k_sdpa[] = {
    IN_SPEC("query", TN, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("key", TN, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("value", TN, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("attn_mask", TN, MIL_DTS_BOOL | MIL_DTS_FLOAT, "M", MIL_IF_OPTIONAL, "None"),
};

const mil_op_def op_defs_transformers[] = {
    {"scaled_dot_product_attention", MIL_IOS18, "transformers", k_sdpa, (int32_t)(sizeof k_sdpa / sizeof k_sdpa[0]), 1,
     sdpa_infer, sdpa_fold, NULL,
     "softmax(query @ key^T / sqrt(E) + attn_mask) @ value over the last two axes"},
};
OP_FAMILY_COUNT(transformers);
