/* Value-inference helpers shared by the elementwise, activation and
 * reduction families: numpy-style per-operation rounding, broadcast
 * iteration over known tensor values, and reading/writing elements.
 *
 * coremltools computes value inference with numpy in the inputs' dtypes:
 * fp32 arrays in float32, fp16 arrays in float16 (numpy evaluates each
 * half-precision operation in float32 and rounds the result to half), int32
 * in int32 with wrap-around. fold_rnd() reproduces that rounding after
 * each arithmetic step that numpy would perform. */
#ifndef MIL_OPS_FOLD_INTERNAL_H
#define MIL_OPS_FOLD_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/ops_internal.h"

/* x rounded the way a numpy array of dtype dt stores it (floats only;
 * other dtypes are returned unchanged). */
static inline double fold_rnd(mil_dtype dt, double x) {
  switch (dt) {
  case MIL_DT_FP32: return (double)(float)x;
  case MIL_DT_FP16: return (double)mil_fp16_to_fp32(mil_fp32_to_fp16((float)x));
  default: return x;
  }
}

/* The float sum of reduce_sum / reduce_mean (value inference and the
 * interpreter's kernel alike): the k-th element of a group (in the
 * input's order) is added in double to partial sum k % FOLD_SUM_LANES,
 * and the partial sums are combined pairwise, ((0+1)+(2+3))+((4+5)+(6+7)).
 * Eight independent sums let the kernel vectorize; both sides do exactly
 * these additions, so their results agree bit for bit. */
#define FOLD_SUM_LANES 8
static inline double fold_sum_lanes(const double *l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

static inline bool fold_is_float(mil_dtype dt) { return dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_FP64; }

/* Shape of a known tensor value (rank <= OP_MAX_RANK). */
static inline int32_t fold_shape(const mil_value *v, int64_t *shape) {
  int32_t r = v->type ? v->type->rank : 0;
  for (int32_t i = 0; i < r && i < OP_MAX_RANK; i++) shape[i] = v->type->dims[i].size;
  return r;
}

/* Broadcast iteration: walks the flat indices of an output of shape
 * `shape` (rank r) and keeps, for each of up to 3 inputs, the flat index of
 * the element that broadcasts to the current output position. */
typedef struct fold_iter {
  int32_t rank, n_in;
  int64_t shape[OP_MAX_RANK];
  int64_t idx[OP_MAX_RANK];
  int64_t stride[3][OP_MAX_RANK]; /* 0 on broadcast dims */
  int64_t off[3];
} fold_iter;

/* Sets up the iterator for inputs ins[0..n) (NULL entries stay at offset 0,
 * i.e. a scalar). Returns false when a rank exceeds OP_MAX_RANK or an input
 * does not broadcast to `shape`. */
static inline bool fold_iter_init(fold_iter *it, int32_t rank, const int64_t *shape, int n,
                                  const mil_value *const *ins) {
  memset(it, 0, sizeof *it);
  if (rank > OP_MAX_RANK || n > 3) return false;
  it->rank = rank;
  it->n_in = n;
  for (int32_t k = 0; k < rank; k++) it->shape[k] = shape[k];
  for (int j = 0; j < n; j++) {
    if (!ins[j]) continue;
    int64_t s[OP_MAX_RANK];
    int32_t r = fold_shape(ins[j], s);
    if (r > rank) return false;
    int64_t st = 1;
    for (int32_t k = r - 1; k >= 0; k--) {
      int32_t ok = k + (rank - r);
      if (s[k] != 1 && s[k] != shape[ok]) return false; /* does not broadcast into the output */
      it->stride[j][ok] = s[k] == 1 ? 0 : st;
      st *= s[k];
    }
  }
  return true;
}

/* Advances to the next output position. */
static inline void fold_iter_next(fold_iter *it) {
  for (int32_t k = it->rank - 1; k >= 0; k--) {
    it->idx[k]++;
    for (int j = 0; j < it->n_in; j++) it->off[j] += it->stride[j][k];
    if (it->idx[k] < it->shape[k]) return;
    for (int j = 0; j < it->n_in; j++) it->off[j] -= it->stride[j][k] * it->shape[k];
    it->idx[k] = 0;
  }
}

/* Output value for output i with the shape of c->out[i]; NULL when that type
 * is not static. */
static inline mil_value *fold_out(mil_infer_ctx *c, int i) { return op_new_out_value(c, i); }

/* Known value of input `name` only when it is a tensor value (not a list). */
static inline const mil_value *fold_tensor(const mil_infer_ctx *c, const char *name) {
  const mil_value *v = op_val(c, name);
  return v && v->kind == MIL_VAL_TENSOR && v->type && v->type->dtype != MIL_DT_STRING ? v : NULL;
}

/* Stores a float result the way numpy's astype to the output dtype would:
 * floats round to nearest, integers truncate toward zero (NaN and values
 * out of range become INT_MIN like numpy on x86), bool is "nonzero". */
static inline void fold_store_f64(mil_value *v, int64_t i, double x) {
  mil_dtype dt = v->type->dtype;
  if (fold_is_float(dt) || dt == MIL_DT_BOOL) {
    mil_value_set_f64(v, i, x);
    return;
  }
  if (isnan(x) || x >= 9.2233720368547758e18 || x < -9.2233720368547758e18) {
    mil_value_set_i64(v, i, dt == MIL_DT_INT32 ? INT32_MIN : INT64_MIN);
    return;
  }
  if (dt == MIL_DT_INT32 && (x >= 2147483648.0 || x <= -2147483649.0)) {
    mil_value_set_i64(v, i, INT32_MIN);
    return;
  }
  mil_value_set_i64(v, i, (int64_t)x);
}

#endif
