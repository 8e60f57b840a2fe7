/* get_weights_metadata (coremltools/optimize/coreml/
 * _post_training_quantization.py): every const of at least
 * weight_threshold elements with its sparsity (|w| <= 1e-12, compared at
 * the weight's precision), its number of distinct values (np.unique) and
 * the ops it feeds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

typedef struct meta_walk {
  int64_t threshold;
  mil_op **ops;
  int32_t n, cap;
} meta_walk;

static bool collect(meta_walk *w, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) return true;
  for (mil_op *op = b->first; op; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++)
      if (!collect(w, op->blocks[i], depth + 1)) return false;
    const mil_value *v = mil_op_is_const(op) && op->n_outputs == 1 ? op->outputs[0]->val : NULL;
    if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->rank < 1 || v->numel < w->threshold) continue;
    if (v->type->dtype == MIL_DT_STRING) continue;
    if (w->n == w->cap) {
      int32_t nc = w->cap ? w->cap * 2 : 64;
      mil_op **no = realloc(w->ops, (size_t)nc * sizeof *no);
      if (!no) return false;
      w->ops = no, w->cap = nc;
    }
    w->ops[w->n++] = op;
  }
  return true;
}

static int cmp_f(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
  return x < y ? -1 : x > y;
}

static bool describe(const mil_op *op, mil_weight_meta *m) {
  const mil_value *v = op->outputs[0]->val;
  m->name = op->name;
  m->type = v->type;
  m->size = v->numel;
  cw_weight w;
  if (!cw_weight_read(v, &w)) return false;
  float tiny = w.is_half ? 0.0f : (float)1e-12;
  int64_t zeros = 0;
  for (int64_t i = 0; i < w.n; i++) zeros += fabsf(w.w[i]) <= tiny;
  m->sparsity = w.n ? (double)zeros / (double)w.n : 0;
  qsort(w.w, (size_t)w.n, sizeof *w.w, cmp_f);
  int64_t u = 0;
  for (int64_t i = 0; i < w.n; i++)
    if (i == 0 || !(w.w[i] == w.w[i - 1] || (isnan(w.w[i]) && isnan(w.w[i - 1])))) u++;
  m->unique_values = u;
  cw_weight_free(&w);
  mil_op *kids[256];
  int32_t n = cw_children(op->outputs[0], kids, 256);
  if (n > 256) n = 256;
  m->children = malloc((size_t)(n ? n : 1) * sizeof *m->children);
  if (!m->children) return false;
  m->n_children = 0;
  for (int32_t i = n - 1; i >= 0; i--) { /* distinct consumers */
    bool seen = false;
    for (int32_t j = 0; j < m->n_children; j++) seen |= m->children[j] == kids[i];
    if (!seen) m->children[m->n_children++] = kids[i];
  }
  return true;
}

mil_status mil_weights_metadata(mil_program *p, int64_t weight_threshold, FILE *progress, mil_weight_meta **out,
                                int32_t *n_out, mil_diag *d) {
  *out = NULL;
  *n_out = 0;
  meta_walk w = {weight_threshold, NULL, 0, 0};
  bool ok = true;
  for (int32_t f = 0; f < p->n_functions && ok; f++) ok = collect(&w, mil_function_body(p->functions[f]), 0);
  mil_weight_meta *m = ok ? calloc((size_t)(w.n ? w.n : 1), sizeof *m) : NULL;
  for (int32_t i = 0; m && i < w.n; i++) {
    if (progress) fprintf(progress, "\r\033[K[%d/%d] %s", i + 1, w.n, w.ops[i]->name), fflush(progress);
    if (!describe(w.ops[i], &m[i])) {
      mil_weight_meta_free(m, w.n);
      m = NULL;
    }
  }
  if (progress) fprintf(progress, "\r\033[K"), fflush(progress);
  free(w.ops);
  if (!m) return mil_diag_error(d, MIL_ERR_NOMEM, "weights metadata: out of memory");
  *out = m;
  *n_out = w.n;
  return MIL_OK;
}

void mil_weight_meta_free(mil_weight_meta *m, int32_t n) {
  if (!m) return;
  for (int32_t i = 0; i < n; i++) free(m[i].children);
  free(m);
}
