/* argsort, topk (iOS15, iOS16, iOS17), non_zero, range_1d and cumsum of the
 * tensor_operation family. Mirrors coremltools ops/defs/iOS15, iOS16, iOS17
 * tensor_operation.py; folding follows the numpy calls coremltools makes
 * (np.argsort, np.take_along_axis, np.nonzero, np.arange, np.cumsum),
 * including their dtype rules (fp16 / fp32 arithmetic rounds per step). */
#include <math.h>
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/tensor_operation_internal.h"

/* numpy computes fp16 arithmetic in float and rounds the result to half. */
static float h16(float x) { return mil_fp16_to_fp32(mil_fp32_to_fp16(x)); }
static float r16(double x) { return mil_fp16_to_fp32(mil_fp64_to_fp16(x)); }

/* acc + x rounded like numpy's add in dtype dt. */
static double add_in(mil_dtype dt, double acc, double x) {
  if (dt == MIL_DT_FP16) return h16((float)acc + (float)x);
  if (dt == MIL_DT_FP32) return (double)((float)acc + (float)x);
  return acc + x;
}

/* ---- argsort / topk ---- */

typedef struct sort_key {
  double k;
  int64_t i;
} sort_key;

/* numpy order: ascending, NaN last; ties keep index order (stable). */
static bool key_less(const sort_key *a, const sort_key *b) {
  bool an = isnan(a->k), bn = isnan(b->k);
  if (an || bn) return !an && bn;
  return a->k < b->k;
}

static void merge_sort(sort_key *a, sort_key *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(a, tmp, h);
  merge_sort(a + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = key_less(&a[j], &a[i]) ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* Sorted lane indices of x along axis: idx[outer][k][inner] layout equal to
 * x's; descending sorts -x like coremltools. */
static int64_t *argsort_value(mil_infer_ctx *c, const mil_value *x, int64_t axis, bool ascending) {
  int64_t shape[TOP_RANK];
  int32_t rank;
  if (!op_value_shape(x, shape, &rank) || rank == 0) return NULL;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return NULL;
  int64_t L = shape[axis], inner = 1, outer = 1;
  for (int32_t d = (int32_t)axis + 1; d < rank; d++) inner *= shape[d];
  for (int32_t d = 0; d < axis; d++) outer *= shape[d];
  int64_t *idx = op_tmp_alloc(c, (size_t)(x->numel ? x->numel : 1) * sizeof *idx);
  sort_key *keys = op_tmp_alloc(c, (size_t)(L ? L : 1) * sizeof *keys);
  sort_key *tmp = op_tmp_alloc(c, (size_t)(L ? L : 1) * sizeof *tmp);
  if (!idx || !keys || !tmp) {
    op_tmp_free(c, idx, (size_t)(x->numel ? x->numel : 1) * sizeof *idx);
    idx = NULL;
    goto out;
  }
  bool is_int = mil_dtype_is_int(x->type->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      for (int64_t l = 0; l < L; l++) {
        double v = mil_value_get_f64(x, (o * L + l) * inner + in);
        if (!ascending) v = (is_int && x->type->dtype == MIL_DT_INT32 && v == (double)INT32_MIN) ? v : -v;
        keys[l] = (sort_key){v, l};
      }
      merge_sort(keys, tmp, L);
      for (int64_t l = 0; l < L; l++) idx[(o * L + l) * inner + in] = keys[l].i;
    }
out:
  op_tmp_free(c, keys, (size_t)(L ? L : 1) * sizeof *keys);
  op_tmp_free(c, tmp, (size_t)(L ? L : 1) * sizeof *tmp);
  return idx;
}

mil_status to_infer_argsort(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t axis;
  bool asc;
  if (!op_int_or(c, "axis", -1, &axis) || !op_bool_or(c, "ascending", false, &asc)) return MIL_ERR_TYPE;
  if (x->rank >= 0 && (axis < -x->rank || axis >= x->rank) && x->rank > 0)
    return op_fail(c, "input 'axis' (%lld) is out of range for %s", (long long)axis, op_tstr(c, x));
  op_set_out(c, 0, op_tensor(c, MIL_DT_INT32, x->rank, x->dims));
  return MIL_OK;
}

mil_status to_fold_argsort(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t axis, shape[TOP_RANK];
  int32_t rank;
  bool asc;
  if (!x || !op_int_or(c, "axis", -1, &axis) || !op_bool_or(c, "ascending", false, &asc)) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  int64_t *idx = argsort_value(c, x, axis, asc);
  if (!idx) return MIL_OK;
  mil_value *v = op_new_value(c, MIL_DT_INT32, rank, shape, false);
  for (int64_t k = 0; v && k < x->numel; k++) mil_value_set_i64(v, k, idx[k]);
  op_set_val(c, 0, v);
  op_tmp_free(c, idx, (size_t)(x->numel ? x->numel : 1) * sizeof *idx);
  return MIL_OK;
}

mil_status to_defaults_argsort(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", -1);
  return st ? st : op_add_default_bool(c, "ascending", false);
}

/* topk parameters common to all variants. */
typedef struct topk_args {
  int64_t k, axis;
  bool ascending, return_indices;
  mil_dtype idx_dt;
} topk_args;

static mil_status topk_read(mil_infer_ctx *c, topk_args *a) {
  if (!op_int_or(c, "k", 1, &a->k) || !op_int_or(c, "axis", -1, &a->axis) ||
      !op_bool_or(c, "ascending", false, &a->ascending) || !op_bool_or(c, "return_indices", true, &a->return_indices))
    return MIL_ERR_TYPE;
  a->idx_dt = MIL_DT_INT32;
  if (c->opset >= MIL_IOS17) {
    bool has = op_has(c, "output_indices_dtype");
    if (!a->return_indices && has)
      return op_fail(c, "In iOS17 topk op, \"output_indices_dtype\" can only be set when \"return_indices=True\".");
    if (a->return_indices && has) {
      const char *s = op_str(c, "output_indices_dtype", NULL);
      if (!s || (strcmp(s, "int32") && strcmp(s, "uint16")))
        return op_fail(c, "\"topk\" op invalid output_indices_dtype: \"%s\". Valid options are: {'int32', 'uint16'}",
                       s ? s : "?");
      a->idx_dt = strcmp(s, "int32") ? MIL_DT_UINT16 : MIL_DT_INT32;
    }
  }
  return MIL_OK;
}

mil_status to_infer_topk(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  topk_args a;
  mil_status st;
  if ((st = topk_read(c, &a))) return st;
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  if (a.axis < -x->rank || a.axis >= x->rank)
    return op_fail(c, "input 'axis' (%lld) is out of range for %s", (long long)a.axis, op_tstr(c, x));
  int64_t ax = a.axis < 0 ? a.axis + x->rank : a.axis;
  if (x->dims[ax].size >= 0 && a.k > x->dims[ax].size)
    return op_fail(c, "K=%lld is greater than size of the given axis=%lld (x is %s)", (long long)a.k,
                   (long long)a.axis, op_tstr(c, x));
  mil_dim d[TOP_RANK];
  for (int32_t i = 0; i < x->rank; i++) d[i] = x->dims[i];
  d[ax] = op_dim(a.k);
  int32_t nout = c->opset >= MIL_IOS16 && !a.return_indices ? 1 : 2;
  if (c->def->n_outputs < 0 && (st = to_set_n_out(c, nout))) return st;
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  if (nout == 2) op_set_out(c, 1, op_tensor(c, a.idx_dt, x->rank, d));
  return MIL_OK;
}

mil_status to_fold_topk(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  topk_args a;
  mil_diag *saved = c->diag;
  c->diag = NULL;
  mil_status st = topk_read(c, &a);
  c->diag = saved;
  if (!x || st || !op_foldable_dtype(x->type->dtype)) return MIL_OK;
  int64_t xs[TOP_RANK], os[TOP_RANK];
  int32_t rank;
  if (!op_value_shape(x, xs, &rank)) return MIL_OK;
  int64_t ax = a.axis < 0 ? a.axis + rank : a.axis;
  if (rank == 0 || ax < 0 || ax >= rank || a.k < 0 || a.k > xs[ax]) return MIL_OK;
  int64_t *idx = argsort_value(c, x, ax, a.ascending);
  if (!idx) return MIL_OK;
  memcpy(os, xs, sizeof(int64_t) * (size_t)rank);
  os[ax] = a.k;
  int64_t L = xs[ax], inner = 1;
  for (int32_t d = (int32_t)ax + 1; d < rank; d++) inner *= xs[d];
  mil_value *vals = op_new_value(c, x->type->dtype, rank, os, false);
  mil_value *ind = c->n_out > 1 ? op_new_value(c, a.idx_dt, rank, os, false) : NULL;
  for (int64_t k = 0; vals && k < vals->numel; k++) {
    int64_t in = k % inner, l = (k / inner) % a.k, o = k / inner / a.k;
    int64_t src_l = idx[(o * L + l) * inner + in];
    op_copy_elem(vals, k, x, (o * L + src_l) * inner + in);
    if (ind) mil_value_set_i64(ind, k, src_l);
  }
  op_set_val(c, 0, vals);
  if (c->n_out > 1) {
    op_set_val(c, 1, ind);
    if (!c->val[1]) c->val[0] = NULL; /* all outputs or none */
  }
  op_tmp_free(c, idx, (size_t)(x->numel ? x->numel : 1) * sizeof *idx);
  return MIL_OK;
}

mil_status to_defaults_topk(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "k", 1);
  if (!st) st = op_add_default_int(c, "axis", -1);
  if (!st) st = op_add_default_bool(c, "ascending", false);
  if (c->def->opset < MIL_IOS16) return st;
  if (!st) st = op_add_default_bool(c, "sort", true);
  bool ri = op_bool(c, "return_indices", true);
  if (!st) st = op_add_default_bool(c, "return_indices", true);
  if (c->def->opset >= MIL_IOS17 && ri && !st) st = op_add_default_str(c, "output_indices_dtype", "int32");
  return st;
}

/* ---- non_zero ---- */

static int64_t count_nonzero(const mil_value *x) {
  int64_t n = 0;
  for (int64_t i = 0; i < x->numel; i++) n += mil_value_get_f64(x, i) != 0;
  return n;
}

mil_status to_infer_non_zero(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  const mil_value *v = op_in_value(c, "x");
  mil_dim d[2] = {v && op_foldable_dtype(v->type->dtype) ? op_dim(count_nonzero(v)) : op_dim_sym(c), op_dim(x->rank)};
  op_set_out(c, 0, op_tensor(c, MIL_DT_INT32, 2, d));
  return MIL_OK;
}

mil_status to_fold_non_zero(mil_infer_ctx *c) {
  const mil_value *x = op_in_value(c, "x");
  int64_t xs[TOP_RANK];
  int32_t rank;
  if (!x || !op_foldable_dtype(x->type->dtype)) return MIL_OK;
  if (!op_value_shape(x, xs, &rank)) return MIL_OK;
  int64_t os[2] = {count_nonzero(x), rank}, k = 0;
  mil_value *v = op_new_value(c, MIL_DT_INT32, 2, os, false);
  for (int64_t i = 0; v && i < x->numel; i++) {
    if (mil_value_get_f64(x, i) == 0) continue;
    int64_t rem = i;
    for (int32_t d = rank - 1; d >= 0; d--) {
      mil_value_set_i64(v, k * rank + d, rem % xs[d]);
      rem /= xs[d];
    }
    k++;
  }
  op_set_val(c, 0, v);
  return MIL_OK;
}

/* ---- range_1d ---- */

/* (end - start) / step in the dtype's arithmetic (numpy scalars). */
static double range_count(mil_dtype dt, double start, double end, double step) {
  if (dt == MIL_DT_FP16) return h16(h16((float)end - (float)start) / (float)step);
  if (dt == MIL_DT_FP32) return (double)((float)((float)end - (float)start) / (float)step);
  return (end - start) / step;
}

mil_status to_infer_range_1d(mil_infer_ctx *c) {
  mil_dtype dt = op_type(c, "start")->dtype;
  if (op_type(c, "end")->dtype != dt || op_type(c, "step")->dtype != dt)
    return op_fail(c, "All inputs to the range operation must have same input types.");
  op_symval sv[3];
  const char *names[3] = {"start", "end", "step"};
  bool have = true;
  for (int i = 0; i < 3 && have; i++) have = op_in_symval(c, names[i], 0, &sv[i]) && sv[i].n == 1;
  mil_dim d;
  if (!have) {
    d = op_dim_sym(c);
  } else if (op_symval_has_sym(&sv[0]) || op_symval_has_sym(&sv[1]) || op_symval_has_sym(&sv[2])) {
    /* (end - 0) / 1 simplifies to end */
    bool plain = sv[0].e[0].kind == OP_SYM_KNOWN && sv[0].e[0].x == 0 && sv[2].e[0].kind == OP_SYM_KNOWN &&
                 sv[2].e[0].x == 1 && sv[1].e[0].kind == OP_SYM_NAMED;
    d = plain ? op_sym_dim(c, &sv[1].e[0]) : op_dim_sym(c);
  } else {
    if (sv[2].e[0].x == 0) return op_fail(c, "input 'step' must not be 0");
    double n = ceil(range_count(dt, sv[0].e[0].x, sv[1].e[0].x, sv[2].e[0].x));
    if (!(n >= 0) || n > 1e15)
      return op_fail(c, "range_1d(start=%g, end=%g, step=%g) has no valid length (%g)", sv[0].e[0].x, sv[1].e[0].x,
                     sv[2].e[0].x, n);
    d = op_dim((int64_t)n);
  }
  op_set_out(c, 0, op_tensor(c, dt, 1, &d));
  return MIL_OK;
}

mil_status to_fold_range_1d(mil_infer_ctx *c) {
  const mil_value *s = op_val(c, "start"), *e = op_val(c, "end"), *st = op_val(c, "step");
  if (!s || !e || !st || s->numel < 1 || e->numel < 1 || st->numel < 1) return MIL_OK;
  mil_dtype dt = c->out[0]->dtype;
  double a = mil_value_get_f64(s, 0), b = mil_value_get_f64(e, 0), h = mil_value_get_f64(st, 0);
  if (h == 0) return MIL_OK;
  double cnt = range_count(dt, a, b, h);
  if (cnt > 1024.0 * 1024.0 / 4.0) return MIL_OK; /* coremltools' MAX_SIZE_CONSTANT_FOLDING */
  int64_t n = cnt > 0 ? (int64_t)ceil(cnt) : 0;
  mil_value *v = op_new_value(c, dt, 1, &n, false);
  if (!v) return MIL_OK;
  if (dt == MIL_DT_INT32) {
    for (int64_t i = 0; i < n; i++) mil_value_set_i64(v, i, (int64_t)a + i * (int64_t)h);
  } else if (dt == MIL_DT_FP32) {
    float f0 = (float)a, f1 = (float)a + (float)h, delta = f1 - f0;
    for (int64_t i = 0; i < n; i++) mil_value_set_f64(v, i, i == 0 ? f0 : i == 1 ? f1 : f0 + (float)i * delta);
  } else {
    float f0 = r16(a), f1 = h16(r16(a) + r16(h)), delta = f1 - f0;
    for (int64_t i = 0; i < n; i++) mil_value_set_f64(v, i, i == 0 ? f0 : i == 1 ? f1 : (double)(f0 + (float)i * delta));
  }
  op_set_val(c, 0, v);
  return MIL_OK;
}

/* ---- cumsum ---- */

mil_status to_infer_cumsum(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t axis;
  bool b;
  if (!op_int_or(c, "axis", 0, &axis) || !op_bool_or(c, "exclusive", false, &b) || !op_bool_or(c, "reverse", false, &b))
    return MIL_ERR_TYPE;
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  if (axis < -1 || axis > x->rank - 1)
    return op_fail(c, "axis should be in the range [-1, %d], got %lld", x->rank - 1, (long long)axis);
  op_set_out(c, 0, x);
  return MIL_OK;
}

mil_status to_fold_cumsum(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t axis, shape[TOP_RANK];
  int32_t rank;
  bool excl, rev;
  if (!x || !op_int_or(c, "axis", 0, &axis) || !op_bool_or(c, "exclusive", false, &excl) ||
      !op_bool_or(c, "reverse", false, &rev))
    return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return MIL_OK;
  mil_dtype dt = x->type->dtype;
  mil_value *v = op_new_value(c, dt, rank, shape, x->type->is_scalar);
  if (!v) return MIL_OK;
  int64_t L = shape[axis], inner = 1, outer = 1;
  for (int32_t d = (int32_t)axis + 1; d < rank; d++) inner *= shape[d];
  for (int32_t d = 0; d < axis; d++) outer *= shape[d];
  bool is_int = mil_dtype_is_int(dt);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double acc = 0;
      int64_t iacc = 0; /* numpy accumulates small ints in the platform integer */
      for (int64_t step = 0; step < L; step++) {
        int64_t l = rev ? L - 1 - step : step;
        int64_t at = (o * L + l) * inner + in;
        if (excl) {
          if (is_int) mil_value_set_i64(v, at, iacc);
          else mil_value_set_f64(v, at, acc);
        }
        if (is_int) iacc += mil_value_get_i64(x, at);
        else acc = add_in(dt, acc, mil_value_get_f64(x, at));
        if (!excl) {
          if (is_int) mil_value_set_i64(v, at, iacc);
          else mil_value_set_f64(v, at, acc);
        }
      }
    }
  op_set_val(c, 0, v);
  return MIL_OK;
}

mil_status to_defaults_cumsum(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", 0);
  if (!st) st = op_add_default_bool(c, "exclusive", false);
  return st ? st : op_add_default_bool(c, "reverse", false);
}
