/* Weight sharing across the functions of a multifunction program:
 * coremltools' const_deduplication._deduplicate_const_across_functions
 * (coremltools/converters/mil/mil/passes/defs/cleanup/
 * const_deduplication.py). Consts of different functions cannot become one
 * op, so coremltools gives equal ones a common weight_id, which makes the
 * milproto writer emit one blob for them. Here the equal consts are given
 * one value: the writer (src/io/proto_value.c) writes a value viewing the
 * same bytes once and points every const at that blob.
 *
 * Equality is the pass's (find_constants with const_threshold 1): same
 * dtype and shape, then every element equal within an absolute 6e-8 for
 * fp16 and 1e-12 otherwise (bytes equal for integer and bool dtypes).
 * Strings and Python-bool scalars never take part. Candidates are grouped by
 * a hash of dtype, shape and leading bytes, so the comparisons stay few.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mil/value.h"
#include "utils/utils_internal.h"

#define HASH_BYTES 256

typedef struct cand {
  mil_var *var;
  uint64_t hash;
  int32_t func;
} cand;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static uint64_t value_hash(const mil_value *v, const void *data) {
  uint64_t h = 1469598103934665603ull;
  int32_t dt = (int32_t)v->type->dtype;
  h = fnv(h, &dt, sizeof dt);
  h = fnv(h, &v->type->rank, sizeof v->type->rank);
  for (int32_t i = 0; i < v->type->rank; i++) h = fnv(h, &v->type->dims[i].size, sizeof v->type->dims[i].size);
  h = fnv(h, &v->nbytes, sizeof v->nbytes);
  /* leading bytes only when the dtype compares bytewise: floats compare
   * with a tolerance, so their bytes may differ */
  mil_dtype t = v->type->dtype;
  if (t != MIL_DT_FP16 && t != MIL_DT_FP32 && t != MIL_DT_FP64)
    h = fnv(h, data, v->nbytes < HASH_BYTES ? v->nbytes : HASH_BYTES);
  return h;
}

/* The pass's np.allclose(rtol=0, atol) test, element by element. */
static bool values_equal(const mil_value *a, const mil_value *b) {
  if (a->type->dtype != b->type->dtype || a->nbytes != b->nbytes || a->numel != b->numel) return false;
  if (a->type->rank != b->type->rank) return false;
  for (int32_t i = 0; i < a->type->rank; i++)
    if (a->type->dims[i].size != b->type->dims[i].size) return false;
  const void *pa = mil_value_data(a), *pb = mil_value_data(b);
  if (!pa || !pb) return false;
  if (pa == pb || !memcmp(pa, pb, a->nbytes)) return true;
  switch (a->type->dtype) {
    case MIL_DT_FP16: {
      const uint16_t *x = pa, *y = pb;
      for (int64_t i = 0; i < a->numel; i++)
        if (!(fabsf(mil_fp16_to_fp32(x[i]) - mil_fp16_to_fp32(y[i])) <= 6e-8f)) return false;
      return true;
    }
    case MIL_DT_FP32: {
      const float *x = pa, *y = pb;
      for (int64_t i = 0; i < a->numel; i++)
        if (!(fabs((double)x[i] - (double)y[i]) <= 1e-12)) return false;
      return true;
    }
    case MIL_DT_FP64: {
      const double *x = pa, *y = pb;
      for (int64_t i = 0; i < a->numel; i++)
        if (!(fabs(x[i] - y[i]) <= 1e-12)) return false;
      return true;
    }
    default:
      return false;
  }
}

static bool candidate(const mil_op *op) {
  if (strcmp(op->type, "const") || op->n_outputs != 1) return false;
  const mil_value *v = op->outputs[0]->val;
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->dtype == MIL_DT_STRING) return false;
  if (v->py_bool || v->numel < 1 || mil_value_is_deferred(v)) return false;
  return true;
}

static int cmp_cand(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  return 0;
}

int64_t mil_utils_share_consts_across_functions(mil_program *p) {
  if (!p || p->n_functions < 2) return 0;
  size_t n = 0, cap = 64;
  cand *c = malloc(cap * sizeof *c);
  if (!c) return 0;
  for (int32_t f = 0; f < p->n_functions; f++) {
    mil_block *b = mil_function_body(p->functions[f]);
    for (mil_op *op = b ? b->first : NULL; op; op = op->next) {
      if (!candidate(op)) continue;
      const void *data = mil_value_data(op->outputs[0]->val);
      if (!data) continue;
      if (n == cap) {
        cand *nc = realloc(c, 2 * cap * sizeof *c);
        if (!nc) break;
        c = nc;
        cap *= 2;
      }
      c[n++] = (cand){op->outputs[0], value_hash(op->outputs[0]->val, data), f};
    }
  }
  qsort(c, n, sizeof *c, cmp_cand);
  int64_t shared = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && c[j].hash == c[i].hash) j++;
    /* within the run, each const shares the value of the first equal one
     * seen in an earlier function (or earlier in the same run) */
    for (size_t k = i + 1; k < j; k++) {
      for (size_t u = i; u < k; u++) {
        if (c[u].var->val == c[k].var->val) break; /* already shared */
        if (values_equal(c[u].var->val, c[k].var->val)) {
          mil_var_set_value(c[k].var, c[u].var->val);
          shared++;
          break;
        }
      }
    }
    i = j;
  }
  free(c);
  return shared;
}
