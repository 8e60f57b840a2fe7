/* ONNX TfIdfVectorizer (opset 9) on integer input (pool_int64s; string
 * pools are refused: Core ML programs hold no string tensors). As ONNX
 * Runtime counts: unigrams once, n-grams (n >= 2, n in [min_gram_length,
 * max_gram_length]) once per skip distance d = 1 .. max_skip_count + 1,
 * an n-gram at i being x[i], x[i + d], ..., x[i + (n - 1) d]. For each
 * (n, d), with M = L - (n - 1) d start positions:
 *   S [B, M, n]        the n shifted column sets of X stacked
 *   hits [B, G_n]      sum over M of all_j(S[.., j] == pool gram[g, j])
 * then the pool-ordered counts go to their ngram_indexes through a
 * one-hot matmul; mode TF = counts, IDF = (count > 0) * weight, TFIDF =
 * count * weight (weights indexed by output position, as ONNX Runtime
 * reads them; default 1). A 1-D X is one row. */
#include <string.h>

#include "onnx/import/import_internal.h"

#define TFIDF_MAX_GRAM 8

/* [start, start + step, ...] (count values) */
static mil_value *positions(onnx_ctx *c, int64_t start, int64_t count, int64_t step) {
  mil_value *v = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, &count, false, NULL);
  for (int64_t i = 0; v && i < count; i++) mil_value_set_i64(v, i, start + i * step);
  return v;
}

/* hits [B, G] of the G pool n-grams (pool [G, n]) in rows x [B, L] at skip distance d */
static mil_var *gram_hits(onnx_ctx *c, mil_var *x, int64_t L, const int64_t *pool, int64_t G, int64_t n, int64_t d) {
  int64_t M = L - (n - 1) * d;
  if (M <= 0) return NULL;
  mil_var *cols[TFIDF_MAX_GRAM];
  for (int64_t j = 0; j < n; j++) {
    mil_var *s = ONNX_OP(c, "gather", A("x", x), K("indices", positions(c, j * d, M, 1)), K("axis", onnx_i32(c, 1)));
    cols[j] = s ? ONNX_OP(c, "expand_dims", A("x", s), K("axes", onnx_i32s(c, 1, (int64_t[]){2}))) : NULL;
    if (!cols[j]) return NULL;
  }
  mil_var *S = n > 1 ? ONNX_OP(c, "concat", AT("values", cols, (int32_t)n), K("axis", onnx_i32(c, 2))) : cols[0];
  S = ONNX_OP(c, "expand_dims", A("x", S), K("axes", onnx_i32s(c, 1, (int64_t[]){2}))); /* [B, M, 1, n] */
  mil_value *pv = mil_value_new_tensor(c->p, MIL_DT_INT32, 2, (int64_t[]){G, n}, false, NULL);
  if (!pv) return NULL;
  for (int64_t i = 0; i < G * n; i++) mil_value_set_i64(pv, i, pool[i]);
  mil_var *eq = onnx_cast(c, ONNX_OP(c, "equal", A("x", S), K("y", pv)), MIL_DT_FP32); /* [B, M, G, n] */
  mil_var *all = ONNX_OP(c, "reduce_min", A("x", eq), K("axes", onnx_i32s(c, 1, (int64_t[]){3})), K("keep_dims", onnx_bool(c, false)));
  return ONNX_OP(c, "reduce_sum", A("x", all), K("axes", onnx_i32s(c, 1, (int64_t[]){1})), K("keep_dims", onnx_bool(c, false)));
}

static mil_status conv_tfidf(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  if (onnx_attr(n, "pool_strings")) return ONNX_UNSUP(c, "string pools (Core ML programs hold no string tensors)");
  const int64_t *pool, *counts, *oidx;
  int32_t np = onnx_attr_ints(n, "pool_int64s", &pool), nc = onnx_attr_ints(n, "ngram_counts", &counts),
          no = onnx_attr_ints(n, "ngram_indexes", &oidx);
  const float *wts;
  int32_t nw = onnx_attr_floats(n, "weights", &wts);
  int64_t gmin = onnx_attr_i(n, "min_gram_length", 1), gmax = onnx_attr_i(n, "max_gram_length", 1),
          skip = onnx_attr_i(n, "max_skip_count", 0);
  const char *mode = onnx_attr_s(c, n, "mode", "TF");
  if (np < 0 || nc < 1 || no < 1) return onnx_fail(c, MIL_ERR_INVALID, "pool_int64s, ngram_counts and ngram_indexes are required");
  if (gmin < 1 || gmax < gmin || gmax > TFIDF_MAX_GRAM || nc < gmax)
    return onnx_fail(c, MIL_ERR_INVALID, "gram lengths %lld..%lld do not fit ngram_counts (%d groups, at most %d)",
                     (long long)gmin, (long long)gmax, (int)nc, TFIDF_MAX_GRAM);
  if (strcmp(mode, "TF") != 0 && strcmp(mode, "IDF") != 0 && strcmp(mode, "TFIDF") != 0)
    return onnx_fail(c, MIL_ERR_INVALID, "mode must be TF, IDF or TFIDF, got '%s'", mode);
  int32_t r = onnx_rank(x);
  if (r != 1 && r != 2) return onnx_fail(c, MIL_ERR_INVALID, "X must be [C] or [N, C], got rank %d", (int)r);
  int64_t L = x->type->dims[r - 1].size;
  if (L < 0) return ONNX_UNSUP(c, "the row length must be known at conversion");
  if (r == 1) x = ONNX_OP(c, "expand_dims", A("x", x), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
  x = onnx_cast(c, x, MIL_DT_INT32);
  /* the grams in pool order: group k (length k + 1) spans pool[counts[k] .. counts[k + 1]) */
  int64_t total = 0, O = 0;
  for (int32_t k = 0; k < nc; k++) {
    int64_t end = k + 1 < nc ? counts[k + 1] : np;
    if (counts[k] > end || end > np || (end - counts[k]) % (k + 1))
      return onnx_fail(c, MIL_ERR_INVALID, "ngram_counts do not split pool_int64s into whole %d-grams", (int)(k + 1));
    total += (end - counts[k]) / (k + 1);
  }
  if (total != no) return onnx_fail(c, MIL_ERR_INVALID, "%lld pool n-grams but %d ngram_indexes", (long long)total, (int)no);
  for (int32_t i = 0; i < no; i++) O = oidx[i] + 1 > O ? oidx[i] + 1 : O;
  /* one-hot [total, O] of the output index, times the weight (IDF / TFIDF) */
  mil_value *map = mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){total, O}, false, NULL);
  if (!map) return MIL_ERR_NOMEM;
  for (int64_t g = 0; g < total; g++) {
    if (oidx[g] < 0) return onnx_fail(c, MIL_ERR_INVALID, "negative ngram_index %lld", (long long)oidx[g]);
    double w = strcmp(mode, "TF") != 0 && nw > 0 && oidx[g] < nw ? wts[oidx[g]] : 1;
    mil_value_set_f64(map, g * O + oidx[g], w);
  }
  mil_var *parts[TFIDF_MAX_GRAM];
  int32_t k_parts = 0;
  for (int32_t k = 0; k < gmax; k++) {
    int64_t len = k + 1, beg = counts[k], end = k + 1 < nc ? counts[k + 1] : np, G = (end - beg) / len;
    if (G == 0) continue;
    mil_var *h = NULL;
    if (len >= gmin)
      for (int64_t d = 1; d <= (len == 1 ? 1 : skip + 1); d++) {
        mil_var *hd = gram_hits(c, x, L, pool + beg, G, len, d);
        if (hd) h = h ? ONNX_OP(c, "add", A("x", h), A("y", hd)) : hd;
      }
    if (!h) {
      /* not counted: zeros [B, G] */
      mil_var *col = ONNX_OP(c, "gather", A("x", x), K("indices", positions(c, 0, G, 0)), K("axis", onnx_i32(c, 1)));
      h = ONNX_OP(c, "mul", A("x", onnx_cast(c, col, MIL_DT_FP32)), K("y", onnx_f32(c, 0)));
    }
    if (!h) return MIL_ERR_TYPE;
    parts[k_parts++] = h;
  }
  /* groups longer than max_gram_length: zeros too */
  int64_t counted = 0;
  for (int32_t k = 0; k < gmax; k++) counted += ((k + 1 < nc ? counts[k + 1] : np) - counts[k]) / (k + 1);
  if (counted < total) {
    mil_value *m2 = mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){counted, O}, false, NULL);
    if (!m2) return MIL_ERR_NOMEM;
    for (int64_t i = 0; i < counted * O; i++) mil_value_set_f64(m2, i, mil_value_get_f64(map, i));
    map = m2;
  }
  if (!k_parts) return ONNX_UNSUP(c, "no n-grams to count");
  mil_var *hits = k_parts > 1 ? ONNX_OP(c, "concat", AT("values", parts, k_parts), K("axis", onnx_i32(c, 1))) : parts[0];
  if (strcmp(mode, "IDF") == 0) hits = onnx_cast(c, ONNX_OP(c, "greater", A("x", hits), K("y", onnx_f32(c, 0))), MIL_DT_FP32);
  mil_var *y = ONNX_OP(c, "matmul", A("x", hits), K("y", map));
  if (r == 1) y = ONNX_OP(c, "squeeze", A("x", y), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
  return onnx_set_out(c, n, 0, y);
}

const onnx_op_entry onnx_ops_tfidf[] = {
    {"TfIdfVectorizer", "", 9, 0, conv_tfidf, "gather, concat, equal, reduce_min, reduce_sum, matmul"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
